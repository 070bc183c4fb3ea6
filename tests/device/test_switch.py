"""``fluidist.device.use``: code written for ``fluid.CPUPlace()`` runs on another device when a script asks
for it, and only then; ``import fluidist`` alone gives the CPU whatever the environment says.
``Executor()`` without a place picks the GPU where CuPy sees one."""
import os
import subprocess
import sys

import numpy as np
import pytest

import fluidist as fluid
import fluidist.device
from fluidist.device import Place, places
from fluidist.device.standin import StandinPlace

pytestmark = pytest.mark.timeout(120)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# this checkout first, then whatever the run's own path holds (a machine may keep pyzmq there)
CHILD_PATH = ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")
PROBE = "print(repr(fluid.CPUPlace()), repr(fluid.Executor().place), len(fluid.cpu_places(2)), " \
        "repr(fluid.cpu_places(2)[1]), repr(fluid.core.CPUPlace()), fluid.is_compiled_with_cuda(), " \
        "fluidist.device.standin.gpu_semantics_enabled())"


def _probe(before="", **env_vars):
    """What a fresh process sees: ``import fluidist``, then ``before``, then PROBE; with the variables of
    ``env_vars`` set (None: unset)."""
    env = dict(os.environ, PYTHONPATH=CHILD_PATH)
    for var in ("FLUIDIST_TEST_DEVICE", "FLUIDIST_STANDIN_GPU_SEMANTICS"):
        env.pop(var, None)
    env.update({k: v for k, v in env_vars.items() if v is not None})
    code = "import fluidist as fluid\nimport fluidist.device\n%s\n%s" % (before, PROBE)
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout.split(), p.stderr


def _default():
    return "CUDAPlace(0)" if fluid.is_compiled_with_cuda() else "CPUPlace"


def _on_the_cpu():
    return ["CPUPlace", _default(), "2", "CPUPlace", "CPUPlace", str(fluid.is_compiled_with_cuda()), "False"]


def _on_the_standin(semantics=False):
    return ["StandinPlace(0)", "StandinPlace(0)", "2", "StandinPlace(1)", "StandinPlace(0)",
            str(fluid.is_compiled_with_cuda()), str(semantics)]


def test_the_environment_alone_changes_nothing_for_a_script():
    rc, out, err = _probe(FLUIDIST_TEST_DEVICE="standin", FLUIDIST_STANDIN_GPU_SEMANTICS="1")
    assert rc == 0, err
    assert out == _on_the_cpu()
    rc, out, err = _probe(FLUIDIST_TEST_DEVICE="gpu")      # not even read: no error
    assert rc == 0, err
    assert out == _on_the_cpu()


def test_a_script_that_asks_for_the_standin_gets_it():
    rc, out, err = _probe('fluidist.device.use("standin")')
    assert rc == 0, err
    assert out == _on_the_standin()


def test_use_from_env_reads_the_variables():
    rc, out, err = _probe("fluidist.device.use_from_env()", FLUIDIST_TEST_DEVICE="standin",
                          FLUIDIST_STANDIN_GPU_SEMANTICS="1")
    assert rc == 0, err
    assert out == _on_the_standin(semantics=True)
    rc, out, err = _probe("fluidist.device.use_from_env()")
    assert rc == 0, err
    assert out == _on_the_cpu()
    rc, _, err = _probe("fluidist.device.use_from_env()", FLUIDIST_TEST_DEVICE="gpu")
    assert rc != 0 and "FLUIDIST_TEST_DEVICE 'gpu'" in err and "standin" in err


def test_an_unknown_device_is_refused_by_name():
    with pytest.raises(ValueError, match="device 'gpu': expected one of cpu, standin, cuda"):
        fluidist.device.use("gpu")


def test_switch_in_process_and_back():
    was = fluidist.device.active()
    try:
        fluidist.device.use("standin")
        p = fluid.CPUPlace()
        assert isinstance(p, StandinPlace) and isinstance(p, fluid.CPUPlace)
        assert isinstance(places.CPUPlace(), fluid.CPUPlace)      # a real CPU place still is one
        assert isinstance(fluid.core.CPUPlace(), StandinPlace)
        exe = fluid.Executor(fluid.CPUPlace())
        out = exe.run(fluid.Program(), feed={}, fetch_list=[])
        assert out == []
        with fluidist.device.suspended():
            assert type(fluid.CPUPlace()) is places.CPUPlace
            assert os.environ["FLUIDIST_TEST_DEVICE"] == "cpu"
            assert repr(fluid.Executor().place) == "CPUPlace"
        assert isinstance(fluid.CPUPlace(), StandinPlace)
        fluidist.device.use("cpu")
        assert type(fluid.CPUPlace()) is places.CPUPlace and fluid.CPUPlace is places.CPUPlace
        assert fluid.cpu_places is places.cpu_places
    finally:
        fluidist.device.use(was)
    assert fluidist.device.active() == was


@pytest.mark.cpu_only("checks that the marker gives a test the real CPU, whatever the suites' device")
def test_cpu_only_tests_run_on_the_cpu_and_so_do_their_children():
    assert type(fluid.CPUPlace()) is places.CPUPlace
    code = "import fluidist as fluid, fluidist.device\nfluidist.device.use_from_env()\n" + PROBE
    p = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=CHILD_PATH),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split()[:2] == ["CPUPlace", _default()]


def _every_place():
    out = [places.CPUPlace(), places.CUDAPinnedPlace(), StandinPlace(0), StandinPlace(3)]
    if fluid.is_compiled_with_cuda():
        out.append(places.CUDAPlace(0))
    return out


@pytest.mark.parametrize("place", _every_place(), ids=repr)
def test_every_place_is_a_place_that_moves_values_both_ways(place):
    assert isinstance(place, Place)
    assert place.kind in ("cpu", "cuda", "standin")
    assert place.is_device == (place.kind != "cpu")
    host = np.arange(6.0).reshape(2, 3)
    on = place.to_device(host)
    assert place.owns(on) and not place.owns(host) if place.is_device else on is host
    assert places.place_of(on) == (place if place.is_device else places.CPUPlace())
    back = place.to_host(on)
    assert isinstance(back, np.ndarray)
    np.testing.assert_array_equal(back, host)
    with place.device_context():
        assert place.xp.asarray(on).shape == (2, 3)


def test_lod_tensor_set_copies_to_the_place_it_is_given():
    """``LoDTensor.set(array, place)`` puts a copy on ``place`` (it used to leave every value on the
    host, CuPy's module passing its "is this numpy" test); without a place the value stays on the host."""
    scope = fluid.Scope()
    t = scope.var("w").get_tensor()
    host = np.arange(4.0)
    t.set(host, StandinPlace())
    assert StandinPlace().owns(scope.find_var("w").value())
    host[0] = 9.0
    np.testing.assert_array_equal(np.array(t), [0.0, 1.0, 2.0, 3.0])
    t.set(host)
    assert isinstance(scope.find_var("w").value(), np.ndarray)


@pytest.mark.parametrize("call", [lambda bad: fluid.Executor(bad), lambda bad: fluid.LoDTensor().set(np.ones(2), bad),
                                  lambda bad: fluid.LoDTensor()._mutable_data(bad, np.float32)],
                         ids=["Executor", "LoDTensor.set", "_mutable_data"])
def test_a_place_that_is_not_one_is_a_type_error_as_in_paddle(call):
    """Paddle 1.8's Executor, ``Tensor.set`` and ``_mutable_data`` take places only (pybind's TypeError
    for a string or a number); the error names what was given."""
    with pytest.raises(TypeError, match="place must be a place .* got 'cpu' \\(a str\\)"):
        call("cpu")
    with pytest.raises(TypeError, match="got the class CPUPlace \\(call it"):
        call(places.CPUPlace)



def test_the_suites_run_on_the_device_the_variable_names():
    """The test plugin (tests/conftest.py) gives this process the device of ``FLUIDIST_TEST_DEVICE``."""
    expected = (os.environ.get("FLUIDIST_TEST_DEVICE") or "cpu").strip().lower()
    assert fluidist.device.active() == expected
    assert fluid.CPUPlace().kind == expected


def test_the_test_plugin_switches_a_pytest_run_with_the_variable_set():
    """``FLUIDIST_TEST_DEVICE=standin python -m pytest ...``: the test above, run so, sees the stand-in."""
    test = "tests/device/test_switch.py::test_the_suites_run_on_the_device_the_variable_names"
    env = dict(os.environ, PYTHONPATH=CHILD_PATH, FLUIDIST_TEST_DEVICE="standin")
    env.pop("PYTEST_XDIST_WORKER", None)
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", test],
                       env=env, capture_output=True, text=True, timeout=100, cwd=ROOT)
    assert p.returncode == 0 and "1 passed" in p.stdout, p.stdout[-3000:] + p.stderr[-2000:]
