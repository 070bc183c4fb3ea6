"""``x[...]`` on a Variable: the ops Paddle 1.8 builds for each index (its op types, slots and attrs,
read from paddlepaddle 1.8.5), the shapes it declares, and values and gradients against NumPy."""
import numpy as np
import pytest

import fluidist as fluid

E = 10000000    # Paddle's open end of a slice
X = np.arange(60, dtype="float32").reshape(4, 3, 5)
I = 1           # the value of the int32 Variable ``i`` the cases index with

# (index as source, its NumPy equivalent, Paddle 1.8's declared shape, Paddle 1.8's ops:
#  (type, input slots, attrs))
CASES = [
    ("x[:, 0]", X[:, 0], (4, 5),
     [("slice", ["Input"], dict(axes=[1], starts=[0], ends=[1], decrease_axis=[1], infer_flags=[1]))]),
    ("x[1:3]", X[1:3], (2, 3, 5),
     [("slice", ["Input"], dict(axes=[0], starts=[1], ends=[3], decrease_axis=[], infer_flags=[1]))]),
    ("x[::-1]", X[::-1], (4, 3, 5), [("reverse", ["X"], dict(axis=[0]))]),
    ("x[-1]", X[-1], (3, 5),
     [("slice", ["Input"], dict(axes=[0], starts=[-1], ends=[E], decrease_axis=[0], infer_flags=[1]))]),
    ("x[0, 1]", X[0, 1], (5,),
     [("slice", ["Input"], dict(axes=[0, 1], starts=[0, 1], ends=[1, 2], decrease_axis=[0, 1], infer_flags=[1, 1]))]),
    ("x[0, 1, 2]", X[0, 1, 2].reshape(1), (1,),
     [("slice", ["Input"], dict(axes=[0, 1, 2], starts=[0, 1, 2], ends=[1, 2, 3], decrease_axis=[0, 1, 2],
                                infer_flags=[1, 1, 1]))]),
    ("x[:, :, -2:]", X[:, :, -2:], (4, 3, 2),
     [("slice", ["Input"], dict(axes=[2], starts=[-2], ends=[E], decrease_axis=[], infer_flags=[1]))]),
    ("x[1:3, ::-1]", X[1:3, ::-1], (2, 3, 5),
     [("slice", ["Input"], dict(axes=[0], starts=[1], ends=[3], decrease_axis=[], infer_flags=[1])),
      ("reverse", ["X"], dict(axis=[1]))]),
    ("x[3:0:-1]", X[3:0:-1], (3, 3, 5),
     [("strided_slice", ["Input"], dict(axes=[0], starts=[3], ends=[0], strides=[-1], decrease_axis=[],
                                        infer_flags=[1]))]),
    ("x[:, 1:-1:2]", X[:, 1:-1:2], (4, 1, 5),
     [("strided_slice", ["Input"], dict(axes=[1], starts=[1], ends=[-1], strides=[2], decrease_axis=[],
                                        infer_flags=[1]))]),
    ("x[-3:-1, ::-1, 1]", X[-3:-1, ::-1, 1], (2, 3),
     [("slice", ["Input"], dict(axes=[0, 2], starts=[-3, 1], ends=[-1, 2], decrease_axis=[2], infer_flags=[1, 1])),
      ("reverse", ["X"], dict(axis=[1]))]),
    ("x[np.int64(1)]", X[1], (3, 5),
     [("slice", ["Input"], dict(axes=[0], starts=[1], ends=[2], decrease_axis=[0], infer_flags=[1]))]),
    ("x[True]", X[1], (3, 5),
     [("slice", ["Input"], dict(axes=[0], starts=[1], ends=[2], decrease_axis=[0], infer_flags=[1]))]),
    ("x[0:10000]", X, (4, 3, 5),
     [("slice", ["Input"], dict(axes=[0], starts=[0], ends=[10000], decrease_axis=[], infer_flags=[1]))]),
    ("x[:]", X, (4, 3, 5), []),
    ("x[i]", X[I], (3, 5),
     [("fill_constant", [], dict(shape=[1], value=1.0)), ("elementwise_add", ["X", "Y"], dict(axis=-1)),
      ("slice", ["Input", "StartsTensorList", "EndsTensorList"],
       dict(axes=[0], starts=[-1], ends=[-1], decrease_axis=[0], infer_flags=[-1]))]),
    ("x[:, i]", X[:, I], (4, 5),
     [("fill_constant", [], dict(shape=[1], value=1.0)), ("elementwise_add", ["X", "Y"], dict(axis=-1)),
      ("slice", ["Input", "StartsTensorList", "EndsTensorList"],
       dict(axes=[1], starts=[-1], ends=[-1], decrease_axis=[1], infer_flags=[-1]))]),
    ("x[i:]", X[I:], (-1, 3, 5),
     [("slice", ["Input", "StartsTensorList"], dict(axes=[0], starts=[-1], ends=[E], decrease_axis=[],
                                                    infer_flags=[-1]))]),
    ("x[i, 1:2]", X[I, 1:2], (1, 5), None),     # Paddle: the flag of each axis decides its size
]


def _build(source):
    prog = fluid.Program()
    with fluid.program_guard(prog, fluid.Program()):
        x = fluid.data(name="x", shape=[4, 3, 5], dtype="float32")
        x.stop_gradient = False
        i = fluid.layers.fill_constant([1], "int32", I)
        first = len(prog.global_block().ops)
        y = eval(source, {"np": np, "x": x, "i": i})
    return prog, x, y, prog.global_block().ops[first:]


@pytest.mark.parametrize("source,want,shape,ops", CASES, ids=[c[0] for c in CASES])
def test_index_builds_paddles_ops_and_numpys_values(source, want, shape, ops):
    prog, x, y, built = _build(source)
    assert tuple(y.shape) == shape
    if ops is not None:
        assert [op.type for op in built] == [t for t, _, _ in ops]
        for op, (op_type, slots, attrs) in zip(built, ops):
            assert sorted(s for s, names in op.inputs.items() if names) == sorted(slots), op_type
            assert {k: op.attr(k) for k in attrs} == attrs, op_type
    out, = fluid.Executor(fluid.CPUPlace()).run(prog, feed={"x": X}, fetch_list=[y])
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("source", ["x[1:3, ::-1]", "x[3:0:-1, 1]", "x[:, 1:-1:2]", "x[i]", "x[-1, ::-1, 2:]"])
def test_index_gradient_is_numpys(source):
    prog, x, y, _ = _build(source)
    with fluid.program_guard(prog, fluid.Program()):
        w = fluid.layers.assign(np.random.RandomState(0).rand(*[d for d in y.shape]).astype("float32"))
        loss = fluid.layers.reduce_sum(y * w)
        grad, = fluid.backward.gradients([loss], [x])
    wv, g = fluid.Executor(fluid.CPUPlace()).run(prog, feed={"x": X}, fetch_list=[w, grad])
    want = np.zeros_like(X)
    np_index = eval(source.replace("x[", "want[").replace("i]", "%d]" % I).replace("[i", "[%d" % I))
    np_index += wv.reshape(np_index.shape)     # a view: the weights land where the index reads
    np.testing.assert_allclose(g, want)


def test_index_of_a_batch_axis_of_unknown_size():
    prog = fluid.Program()
    with fluid.program_guard(prog, fluid.Program()):
        x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        first, last, rows, picked = x[0], x[-1], x[1:3], x[:, 2]
    assert [first.shape, last.shape, rows.shape, picked.shape] == [(3,), (3,), (-1, 3), (-1,)]
    value = np.arange(15, dtype="float32").reshape(5, 3)
    outs = fluid.Executor(fluid.CPUPlace()).run(prog, feed={"x": value}, fetch_list=[first, last, rows, picked])
    for got, want in zip(outs, [value[0], value[-1], value[1:3], value[:, 2]]):
        np.testing.assert_array_equal(got, want)


# what Paddle 1.8 refuses: TypeError where it fails in Python (None, ..., a list, a string); its
# EnforceNotMet where its slice ops refuse (an empty slice, an index past the end, a float index)
@pytest.mark.parametrize("source,error", [
    ("x[None]", TypeError), ("x[...]", TypeError), ("x[[0, 1]]", TypeError), ("x['a']", TypeError),
    ("x[1.5]", TypeError), ("x[5]", IndexError), ("x[-5]", IndexError), ("x[0, 0, 0, 0]", IndexError),
    ("x[3:1]", ValueError), ("x[10:]", ValueError), ("x[2::-1]", ValueError), ("x[:2:-1]", ValueError),
    ("x[::-2]", ValueError), ("x[0:3:0]", ValueError), ("x[::0]", ValueError),
])
def test_index_paddle_refuses_is_refused(source, error):
    with pytest.raises(error, match="Variable index|selects nothing of an axis of size"):
        _build(source)


def test_empty_slice_of_an_axis_known_only_at_run_time_is_refused_as_in_paddle():
    prog = fluid.Program()
    with fluid.program_guard(prog, fluid.Program()):
        x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        y = x[5:7]
    assert y.shape == (-1, 3)
    with pytest.raises(ValueError, match="selects nothing of an axis of size 4"):
        fluid.Executor(fluid.CPUPlace()).run(prog, feed={"x": np.zeros((4, 3), "float32")}, fetch_list=[y])


def test_positive_step_without_bounds_is_a_strided_slice():
    """Paddle 1.8 asserts ``step == -1`` there; fluidist takes ``x[::2]`` (and ``x[::1]``) as NumPy does."""
    prog, x, y, built = _build("x[::2, ::1]")
    assert [op.type for op in built] == ["strided_slice"] and built[0].attr("strides") == [2]
    out, = fluid.Executor(fluid.CPUPlace()).run(prog, feed={"x": X}, fetch_list=[y])
    np.testing.assert_array_equal(out, X[::2])


def test_a_variable_is_not_iterable():
    x = fluid.data(name="x", shape=[None, 3], dtype="float32")
    with pytest.raises(TypeError, match="not iterable"):
        iter(x)
    with pytest.raises(TypeError):
        a, b = x


def test_reverse_after_an_int_index_reverses_numpys_axis():
    """Paddle 1.8 gives ``reverse`` the axes of ``x`` after the int has dropped one: its ``x[0, ::-1]``
    flips the last axis (``[[4, 3, 2, 1, 0], ...]``). fluidist counts them on the slice's output."""
    prog, x, y, built = _build("x[0, ::-1]")
    assert [op.type for op in built] == ["slice", "reverse"] and built[1].attr("axis") == [0]
    out, = fluid.Executor(fluid.CPUPlace()).run(prog, feed={"x": X}, fetch_list=[y])
    np.testing.assert_array_equal(out, X[0, ::-1])


def test_index_by_a_variable_holding_minus_one_takes_the_last_item():
    """``x[i]`` with ``i`` = -1 slices -1:0 from tensors; Paddle 1.8's slice and strided_slice kernels
    read that as the last item on an axis the index drops (both ops checked there; ``x[i, ::2]`` is
    fluidist's, Paddle asserting a step of -1 in an index)."""
    prog = fluid.Program()
    with fluid.program_guard(prog, fluid.Program()):
        x = fluid.data(name="x", shape=[4, 3, 5], dtype="float32")
        i = fluid.layers.fill_constant([1], "int32", -1)
        last, strided_last = x[i], x[i, ::2]
    assert prog.global_block().ops[-1].type == "strided_slice"
    got, got_strided = fluid.Executor(fluid.CPUPlace()).run(prog, feed={"x": X}, fetch_list=[last, strided_last])
    np.testing.assert_array_equal(got, X[-1])
    np.testing.assert_array_equal(got_strided, X[-1, ::2])
