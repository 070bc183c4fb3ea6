"""Adam's beta powers live on the host on every place, as Paddle 1.8's optimizer makes them: their
startup op has op_device "cpu" (Paddle 1.8.5's program says so too), a plan on a device place runs
such an op on the host and leaves its outputs there when no op of its block reads them, and the main
program's plan leaves an update op's one-element state (``UpdateRule.scalars_on_host``) where it is.
Wherever they are, the numbers are the CPU's, bit for bit."""
import numpy as np
import pytest

import fluidist as fluid
from fluidist.device import places, standin
from fluidist.device.standin import StandinPlace, count_transfers

pytestmark = pytest.mark.timeout(120)


def _adam_mlp(rescale_a_power=False):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 6], "float32")
        y = fluid.data("y", [None, 1], "float32")
        loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(x, 1), y))
        opt = fluid.optimizer.Adam(0.1)
        opt.minimize(loss)
        if rescale_a_power:     # another op reads a beta power (as Paddle 1.7's programs advanced them)
            power = opt._get_accumulator("beta1_pow_acc", main.global_block().var("fc_0.w_0"))
            fluid.layers.scale(power, 1.0)
    return main, startup, loss


def _feeds():
    rng = np.random.RandomState(0)
    return [{"x": rng.rand(8, 6).astype("float32"), "y": rng.rand(8, 1).astype("float32")} for _ in range(3)]


def _train(place, build=_adam_mlp, on_device=False):
    main, startup, loss = build()
    exe, scope = fluid.Executor(place), fluid.Scope()
    exe.run(startup, scope=scope)
    powers = sorted(n for n in scope.vals if "_pow_acc_" in n)
    if on_device:       # put there by the user (a load on the device does the same)
        for n in powers:
            scope.find_var(n).get_tensor().set(np.array(scope.find_var(n).get_tensor()), place)
    losses = [exe.run(main, feed=f, fetch_list=[loss], scope=scope)[0] for f in _feeds()]
    values = {n: np.array(scope.find_var(n).get_tensor()) for n in scope.vals if n.startswith("fc_0")}
    return losses, values, {n: scope.vals[n] for n in scope.vals if n.startswith("fc_0")}


def test_the_startup_makes_the_beta_powers_on_the_host_as_paddle_18():
    main, startup, _ = _adam_mlp()
    devices = {op.output_arg_names[0]: op.attr("op_device") for op in startup.global_block().ops}
    # Paddle 1.8.5's startup of this model: fill_constant of each beta power with op_device 'cpu',
    # the learning rate, moments and parameters without it
    assert sorted(n for n, d in devices.items() if d == "cpu") == [
        "fc_0.b_0_beta1_pow_acc_0", "fc_0.b_0_beta2_pow_acc_0", "fc_0.w_0_beta1_pow_acc_0", "fc_0.w_0_beta2_pow_acc_0"]
    cpu_losses, cpu_values, _ = _train(fluid.CPUPlace())
    losses, values, held = _train(StandinPlace())
    assert {n for n, v in held.items() if type(v) is np.ndarray} == {n for n in held if "_pow_acc_" in n}
    for n, v in cpu_values.items():
        assert v.tobytes() == values[n].tobytes(), n
    assert np.array_equal(cpu_losses, losses)
    assert held["fc_0.w_0_beta1_pow_acc_0"][0] == np.float32(0.9) * np.float32(0.9) ** 3


@pytest.mark.parametrize("how", ["set on the device", "read by another op"])
def test_beta_powers_on_the_device_give_the_same_numbers(how):
    """Beta powers the user put on the device, or that another op of the program reads (so the plan
    places them), take the device path of the same arithmetic: the same numbers, more launches."""
    _, host_values, _ = _train(StandinPlace())
    if how == "set on the device":
        _, values, held = _train(StandinPlace(), on_device=True)
    else:
        _, values, held = _train(StandinPlace(), build=lambda: _adam_mlp(rescale_a_power=True))
    assert isinstance(held["fc_0.w_0_beta1_pow_acc_0"], standin.StandinArray)
    for n, v in host_values.items():
        assert v.tobytes() == values[n].tobytes(), n


def test_host_beta_powers_save_the_scalar_launches_and_move_nothing():
    main, startup, loss = _adam_mlp()
    exe, scope = fluid.Executor(StandinPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    feeds = _feeds()
    exe.run(main, feed=feeds[0], fetch_list=[loss], scope=scope)
    with count_transfers() as log:
        exe.run(main, feed=feeds[1], fetch_list=[loss], scope=scope)
    assert (len(log.h2d), len(log.d2h), len(log.syncs)) == (2, 1, 1), str(log)
    for n in [n for n in scope.vals if "_pow_acc_" in n]:
        scope.find_var(n).get_tensor().set(np.array(scope.find_var(n).get_tensor()), StandinPlace())
    with count_transfers() as on_device:
        exe.run(main, feed=feeds[2], fetch_list=[loss], scope=scope)
    # per parameter: 1 - b2p, sqrt, 1 - b1p on the device, and the two powers advanced there
    assert on_device.launches - log.launches == 2 * 5, (on_device.launches, log.launches)


def test_an_op_on_the_cpu_whose_output_its_block_reads_stays_on_the_place():
    """op_device "cpu" leaves an output on the host only where no op of its block reads it: a value
    another op of the block reads is made on the place, as before."""
    prog = fluid.Program()
    with fluid.program_guard(prog, fluid.Program()):
        kept = fluid.layers.fill_constant([2], "float32", 3.0)
        read = fluid.layers.fill_constant([2], "float32", 2.0)
        doubled = fluid.layers.scale(read, 2.0)
    for op in prog.global_block().ops[:2]:
        op._set_attr("op_device", "cpu")
    scope = fluid.Scope()
    fluid.Executor(StandinPlace()).run(prog, scope=scope)
    assert type(scope.vals[kept.name]) is np.ndarray
    assert isinstance(scope.vals[read.name], standin.StandinArray)
    assert np.array(scope.find_var(doubled.name).get_tensor()).tolist() == [4.0, 4.0]


def _step_counts(exe, main, loss, scope, feed):
    with count_transfers() as log:
        exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
    return (len(log.h2d), len(log.d2h), len(log.syncs)), log.launches


@pytest.mark.parametrize("how", ["load_persistables", "fluid.load"])
def test_a_load_onto_a_device_keeps_the_beta_powers_on_the_host(how, tmp_path):
    """Loaded onto a device place, the beta powers stay on the host (the other persistables go to
    the device): the next steps cost what they cost before the save, and give the CPU's numbers."""
    feeds = _feeds()
    runs = {}
    for place in (places.CPUPlace(), StandinPlace()):    # (the CPU's even under FLUIDIST_TEST_DEVICE)
        main, startup, loss = _adam_mlp()
        exe, scope = fluid.Executor(place), fluid.Scope()
        exe.run(startup, scope=scope)
        exe.run(main, feed=feeds[0], fetch_list=[loss], scope=scope)
        before = _step_counts(exe, main, loss, scope, feeds[1])
        folder = str(tmp_path / type(place).__name__)
        with fluid.scope_guard(scope):
            if how == "load_persistables":
                fluid.io.save_persistables(exe, folder, main_program=main)
            else:
                fluid.save(main, folder + "/model")
        scope = fluid.Scope()
        exe.run(startup, scope=scope)
        with fluid.scope_guard(scope):
            if how == "load_persistables":
                fluid.io.load_persistables(exe, folder, main_program=main)
            else:
                fluid.load(main, folder + "/model", exe)
        powers = {n: v for n, v in scope.vals.items() if "_pow_acc_" in n}
        assert len(powers) == 4 and all(type(v) is np.ndarray for v in powers.values())
        if place.is_device:
            assert isinstance(scope.vals["fc_0.w_0"], standin.StandinArray)
            assert isinstance(scope.vals["fc_0.w_0_moment1_0"], standin.StandinArray)
            exe.run(main, feed=feeds[1], fetch_list=[loss], scope=scope)   # (the plan is made again)
            assert _step_counts(exe, main, loss, scope, feeds[2]) == before
        else:
            exe.run(main, feed=feeds[1], fetch_list=[loss], scope=scope)
            exe.run(main, feed=feeds[2], fetch_list=[loss], scope=scope)
        runs[place.is_device] = {n: np.array(scope.find_var(n).get_tensor()) for n in scope.vals
                                 if n.startswith("fc_0")}
    for n, v in runs[False].items():
        assert v.tobytes() == runs[True][n].tobytes(), n


def _data_parallel(powers_on_devices=False):
    main, startup, loss = _adam_mlp()
    exe, scope = fluid.Executor(StandinPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    prog = fluid.CompiledProgram(main).with_data_parallel(loss_name=loss.name,
                                                          places=[StandinPlace(0), StandinPlace(1)])
    feeds = _feeds()
    exe.run(prog, feed=feeds[0], fetch_list=[loss], scope=scope)
    scopes = prog._runner.scopes
    if powers_on_devices:      # (as the places other than the first held them before)
        for n in [n for n in scopes[1].vals if "_pow_acc_" in n]:
            scopes[1].vals[n] = StandinPlace(1).to_device(scopes[1].vals[n])
    with count_transfers() as log:
        exe.run(prog, feed=feeds[1], fetch_list=[loss], scope=scope)
    losses = [exe.run(prog, feed=feeds[2], fetch_list=[loss], scope=scope)[0]]
    values = {n: np.array(scope.find_var(n).get_tensor()) for n in scope.vals if n.startswith("fc_0")}
    return scopes, log, losses, values


def test_every_data_parallel_place_keeps_the_beta_powers_on_the_host():
    """The data-parallel runner copies place 0's beta powers to the other places on the host, as
    Paddle 1.8 copies a host tensor into each place's scope: each place's Adam saves their launches."""
    scopes, log, losses, values = _data_parallel()
    for scope in scopes:
        powers = [v for n, v in scope.vals.items() if "_pow_acc_" in n]
        assert len(powers) == 4 and all(type(v) is np.ndarray for v in powers)
    assert scopes[0].vals["fc_0.w_0_beta1_pow_acc_0"] is not scopes[1].vals["fc_0.w_0_beta1_pow_acc_0"]
    assert (len(log.h2d), len(log.d2h), len(log.syncs)) == (4, 1, 1), str(log)
    _, on_devices, device_losses, device_values = _data_parallel(powers_on_devices=True)
    # per parameter of place 1: 1 - b2p, sqrt, 1 - b1p on the device, and the two powers advanced there
    assert on_devices.launches - log.launches == 2 * 5, (on_devices.launches, log.launches)
    assert np.array_equal(losses, device_losses)
    for n, v in values.items():
        assert v.tobytes() == device_values[n].tobytes(), n
