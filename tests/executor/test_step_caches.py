"""What Executor.run keeps from one run to the next, and what makes it let go: the plan of the last
run (another program, an edit, the kernel wrapper, FLAGS_check_nan_inf read from the environment),
the feed shapes a plan took as they are, the placement of the values a block reads (a value set
between runs is placed again), and the shapes a bound elementwise gradient last saw (other shapes,
other broadcasts). Each is checked by what a user sees: the numbers, the errors, where values live."""
import numpy as np
import pytest

import fluidist as fluid
from fluidist.device.standin import StandinPlace
from fluidist.device.places import is_device_array

from test_codegen import batches, mlp_program
from kernel_wrappers import wrapped_kernels  # tests/kernel_wrappers.py


def _scaled(factor):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [None, 2])
        y = fluid.layers.scale(x, factor)
    return main, y


def test_runs_of_two_programs_in_turns_each_get_their_own_plan():
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    (a, ya), (b, yb) = _scaled(2.0), _scaled(-3.0)
    x = np.array([[1.0, 2.0]], "float32")
    for _ in range(3):
        np.testing.assert_array_equal(exe.run(a, feed={"x": x}, fetch_list=[ya], scope=scope)[0], [[2, 4]])
        np.testing.assert_array_equal(exe.run(b, feed={"x": x}, fetch_list=[yb], scope=scope)[0], [[-3, -6]])
    assert exe._plan(a, 0) is not exe._plan(b, 0)


def test_an_edit_between_runs_of_the_same_program_is_seen():
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    main, y = _scaled(2.0)
    x = np.array([[1.0, 2.0]], "float32")
    exe.run(main, feed={"x": x}, fetch_list=[y], scope=scope)
    main.global_block().ops[0]._set_attr("scale", 5.0)
    np.testing.assert_array_equal(exe.run(main, feed={"x": x}, fetch_list=[y], scope=scope)[0], [[5, 10]])


def test_a_kernel_wrapper_set_between_runs_wraps_the_next_run_and_unset_stops():
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    main, y = _scaled(2.0)
    x = np.array([[1.0, 2.0]], "float32")
    exe.run(main, feed={"x": x}, fetch_list=[y], scope=scope)
    seen = []
    with wrapped_kernels(lambda ctx, op: seen.append(op.type)):
        got = exe.run(main, feed={"x": x}, fetch_list=[y], scope=scope)[0]
    assert seen == ["scale"]
    np.testing.assert_array_equal(got, [[2, 4]])
    exe.run(main, feed={"x": x}, fetch_list=[y], scope=scope)
    assert seen == ["scale"]


def _log_of_fed():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [None, 2])
        y = fluid.layers.log(x)
    return main, y


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")
@pytest.mark.parametrize("on", ["1", "true", "ON", " yes "])
def test_the_nan_inf_flag_written_to_the_environment_between_runs_is_seen(monkeypatch, on):
    for k in ("FLAGS_check_nan_inf", "PADDLE_INF_NAN_SKIP_OP", "PADDLE_INF_NAN_SKIP_ROLE", "PADDLE_INF_NAN_SKIP_VAR"):
        monkeypatch.delenv(k, raising=False)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    main, y = _log_of_fed()
    bad = np.array([[0.0, 1.0]], "float32")     # log(0): -inf
    with np.errstate(divide="ignore"):
        assert np.isinf(exe.run(main, feed={"x": bad}, fetch_list=[y], scope=scope)[0]).any()
    monkeypatch.setenv("FLAGS_check_nan_inf", on)
    with pytest.raises(fluid.core.EnforceNotMet, match="find nan or inf in 'log_0.tmp_0', an output of op 'log'"):
        exe.run(main, feed={"x": bad}, fetch_list=[y], scope=scope)
    monkeypatch.setenv("PADDLE_INF_NAN_SKIP_OP", "log")          # (the skips are read with the flag on)
    exe.run(main, feed={"x": bad}, fetch_list=[y], scope=scope)
    monkeypatch.delenv("PADDLE_INF_NAN_SKIP_OP")
    monkeypatch.setenv("FLAGS_check_nan_inf", "0")
    exe.run(main, feed={"x": bad}, fetch_list=[y], scope=scope)
    monkeypatch.setenv("FLAGS_check_nan_inf", on)
    with pytest.raises(fluid.core.EnforceNotMet):
        exe.run(main, feed={"x": bad}, fetch_list=[y], scope=scope)
    monkeypatch.delenv("FLAGS_check_nan_inf")
    exe.run(main, feed={"x": bad}, fetch_list=[y], scope=scope)


def _train(place, sizes, way="bound"):
    """Losses and parameters of one SGD step per batch size in ``sizes`` (the small MLP)."""
    main, startup, loss = mlp_program()
    scope, exe = fluid.Scope(), fluid.Executor(place)
    exe.run(startup, scope=scope)
    with wrapped_kernels(on=way == "kernels"):
        losses = [np.array(exe.run(main, feed={"x": x, "y": y}, fetch_list=[loss], scope=scope)[0])
                  for n in sizes for x, y in batches("mlp", 1, n)]
    return losses, {p.name: np.array(scope.find_var(p.name).get_tensor()) for p in main.all_parameters()}


def test_batches_of_changing_sizes_give_the_bits_of_the_kernels():
    """The feed shapes a plan took as they are, and the shapes the bias gradients last saw, change
    with the batch: each step still gives what the kernels give."""
    sizes = [16, 8, 16, 1, 1, 5]
    bound, kernels = _train(fluid.CPUPlace(), sizes), _train(fluid.CPUPlace(), sizes, "kernels")
    for a, b in zip(bound[0], kernels[0]):
        np.testing.assert_array_equal(a, b)
    for name in bound[1]:
        np.testing.assert_array_equal(bound[1][name], kernels[1][name], err_msg=name)


def _broadcast_program(y_shape, axis, op):
    """``op`` of x [N, 4, 3] and a parameter y of ``y_shape`` at ``axis``, and the gradients of the
    mean of its result (times a fed weight, so that each element's gradient differs)."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 4, 3])
        x.stop_gradient = False
        w = fluid.data("w", [None, 4, 3])
        y = fluid.layers.create_parameter(list(y_shape), "float32", name="y",
                                          default_initializer=fluid.initializer.Constant(0.5))
        out = getattr(fluid.layers, op)(x, y, axis=axis)
        loss = fluid.layers.mean(fluid.layers.elementwise_mul(out, w))
        grads = fluid.backward.gradients([loss], [x, y])
    return main, startup, grads


@pytest.mark.parametrize("op", ["elementwise_add", "elementwise_sub"])
@pytest.mark.parametrize("y_shape, axis", [((3,), -1), ((4, 3), 1), ((4, 1), 1), ((4,), 1), ((4, 3), -1),
                                           ((5, 4, 3), -1), ((1, 4, 3), -1)])
def test_elementwise_gradients_of_broadcasts_in_turn_with_batch_sizes(op, y_shape, axis):
    """dX = dOut and dY = +-dOut summed to Y's shape, against NumPy, for broadcasts along the last,
    middle and leading axes, a Y as big as X, and batches whose size changes between runs."""
    main, startup, grads = _broadcast_program(y_shape, axis, op)
    scope, exe = fluid.Scope(), fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    r = np.random.RandomState(0)
    for n in (1, 5, 2, 5, 1) if y_shape[0] != 5 else (5, 5):
        x, w = r.randn(n, 4, 3).astype("float32"), r.randn(n, 4, 3).astype("float32")
        dx, dy = exe.run(main, feed={"x": x, "w": w}, fetch_list=grads, scope=scope)
        d = w / np.float32(w.size)
        np.testing.assert_allclose(dx, d, rtol=1e-6)
        full = (1,) * (3 - len(y_shape)) + tuple(y_shape) if axis == -1 else \
            (1,) * axis + tuple(y_shape) + (1,) * (3 - axis - len(y_shape))
        summed = tuple(i for i in range(3) if full[i] == 1 and d.shape[i] != 1)
        want = d.sum(axis=summed, keepdims=True).reshape(y_shape) * (1 if op == "elementwise_add" else -1)
        assert dy.shape == tuple(y_shape)
        np.testing.assert_allclose(dy, want, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("y_shape, axis", [((4, 3), 2), ((3,), 1)])
def test_an_elementwise_add_of_shapes_that_do_not_align_names_the_op(y_shape, axis):
    main, startup, grads = _broadcast_program(y_shape, axis, "elementwise_add")
    scope, exe = fluid.Scope(), fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    x = np.ones((2, 4, 3), "float32")
    with pytest.raises(ValueError, match=r"(cannot be aligned|could not be broadcast).* \(in op 0 'elementwise_add' "
                                         r"of block 0: X=x, Y=y -> Out=elementwise_add_0.tmp_0\)"):
        exe.run(main, feed={"x": x, "w": x}, fetch_list=grads, scope=scope)


@pytest.mark.cpu_only("runs the stand-in itself, against the CPU")
def test_device_arrays_fed_on_a_device_place_and_a_host_value_set_between_runs():
    """On the stand-in: device arrays of the accepted shape go in as they are, other shapes and host
    arrays are checked and copied; a parameter set from the host between runs is moved to the device
    by the next run; a device array of another dtype is refused as before."""
    place = StandinPlace(0)
    xp = place.xp
    main, startup, loss = mlp_program()
    scope, exe = fluid.Scope(), fluid.Executor(place)
    exe.run(startup, scope=scope)
    cpu_scope, cpu = fluid.Scope(), fluid.Executor(fluid.CPUPlace())
    cpu.run(startup, scope=cpu_scope)
    feeds = list(batches("mlp", 3, 8)) + list(batches("mlp", 2, 4))
    for i, (x, y) in enumerate(feeds):
        fed = {"x": xp.asarray(x), "y": xp.asarray(y)} if i % 2 == 0 else {"x": x, "y": y}
        got = exe.run(main, feed=fed, fetch_list=[loss], scope=scope)[0]
        want = cpu.run(main, feed={"x": x, "y": y}, fetch_list=[loss], scope=cpu_scope)[0]
        np.testing.assert_array_equal(got, want)
        assert is_device_array(scope.vals["x"]) and is_device_array(scope.vals["fc_0.w_0"])
        if i == 2:      # the same new weights, set from the host in both scopes
            w = np.full((13, 64), 0.01, "float32")
            scope.find_var("fc_0.w_0").get_tensor().set(w, fluid.CPUPlace())
            cpu_scope.find_var("fc_0.w_0").get_tensor().set(w, fluid.CPUPlace())
    x, y = feeds[0]
    with pytest.raises(ValueError, match="feed variable 'x' expects dtype float32 but got float64"):
        exe.run(main, feed={"x": xp.asarray(x.astype("float64")), "y": xp.asarray(y)}, fetch_list=[loss],
                scope=scope)


@pytest.mark.cpu_only("the stand-in's places, beside the CPU's")
def test_owns_all_answers_as_owns_of_each():
    """``Place.owns_all`` (what the executor asks of a block's inputs every run) against ``owns``."""
    from fluidist.core.tensor import SelectedRows
    zero, one = StandinPlace(0), StandinPlace(1)
    with zero.device_context():
        a = zero.xp.asarray(np.ones(3, "float32"))
    with one.device_context():
        b = one.xp.asarray(np.ones(3, "float32"))
    kinds = [a, b, np.ones(3), None, 1.5, SelectedRows([0], a, 4)]
    for place in (zero, one, fluid.CPUPlace()):
        for i in range(len(kinds)):
            for j in range(len(kinds)):
                values = [kinds[i], kinds[j]]
                assert place.owns_all(values) == all(place.owns(v) for v in values), (place, values)
        assert place.owns_all([])
