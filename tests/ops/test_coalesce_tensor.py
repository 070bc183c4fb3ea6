"""coalesce_tensor: one flat buffer holding its inputs back to back, outputs as views of it, the
buffer kept across steps (as Paddle's fused gradient buffer) and not reused where that would be wrong."""
import numpy as np
import pytest

import fluidist as fluid


def _program():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        a = fluid.data("a", [2, 3], dtype="float32")
        b = fluid.data("b", [-1], dtype="float32")
        block = main.global_block()
        fused = block.create_var(name="fused", dtype="float32")
        oa = block.create_var(name="oa", dtype="float32")
        ob = block.create_var(name="ob", dtype="float32")
        block.append_op(type="coalesce_tensor", inputs={"Input": [a, b]},
                        outputs={"Output": [oa, ob], "FusedOutput": [fused]},
                        attrs={"copy_data": True, "dtype": "float32"})
        block.append_op(type="scale", inputs={"X": [fused]}, outputs={"Out": [fused]}, attrs={"scale": 2.0})
    return main


def test_outputs_are_views_and_the_buffer_lives_across_steps():
    main = _program()
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    buffers = []
    for step in range(3):
        a = np.arange(6, dtype="float32").reshape(2, 3) + step
        b = -np.arange(4, dtype="float32") - step
        fused, oa, ob = exe.run(main, feed={"a": a, "b": b}, fetch_list=["fused", "oa", "ob"], scope=scope)
        np.testing.assert_array_equal(fused, 2 * np.concatenate([a.ravel(), b]))
        # the in-place scale of the fused buffer shows in every output: they are views of it
        np.testing.assert_array_equal(oa, 2 * a)
        np.testing.assert_array_equal(ob, 2 * b)
        buffers.append(scope._find_value("fused"))
    assert buffers[0] is buffers[1] is buffers[2]


@pytest.mark.parametrize("shape_b", [[4], [5]])
def test_a_buffer_of_another_size_is_not_reused(shape_b):
    main = _program()
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    a = np.ones((2, 3), "float32")
    exe.run(main, feed={"a": a, "b": np.ones(4, "float32")}, scope=scope)
    first = scope._find_value("fused")
    b = np.full(shape_b, 3, "float32")
    fused, = exe.run(main, feed={"a": a, "b": b}, fetch_list=["fused"], scope=scope)
    np.testing.assert_array_equal(fused, 2 * np.concatenate([a.ravel(), b]))
    second = scope._find_value("fused")
    assert (first is second) == (shape_b == [4])
