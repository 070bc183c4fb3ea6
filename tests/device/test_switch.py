"""``FLUIDIST_TEST_DEVICE``: code written for ``fluid.CPUPlace()`` runs on another device unchanged,
in the processes it starts too; ``Executor()`` without a place picks the GPU where CuPy sees one."""
import os
import subprocess
import sys

import numpy as np
import pytest

import fluidist as fluid
from fluidist.core import place as place_mod
from fluidist.core import switch
from fluidist.device.standin import StandinPlace

pytestmark = pytest.mark.timeout(120)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROBE = "import fluidist as fluid; print(repr(fluid.CPUPlace()), repr(fluid.Executor().place), " \
        "len(fluid.cpu_places(2)), repr(fluid.cpu_places(2)[1]), fluid.is_compiled_with_cuda())"


def _probe(device):
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("FLUIDIST_TEST_DEVICE", None)
    if device is not None:
        env["FLUIDIST_TEST_DEVICE"] = device
    p = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout.split(), p.stderr


def _default():
    return "CUDAPlace(0)" if fluid.is_compiled_with_cuda() else "CPUPlace"


def test_a_child_process_switches_when_it_imports_fluidist():
    rc, out, err = _probe("standin")
    assert rc == 0, err
    assert out == ["StandinPlace(0)", "StandinPlace(0)", "2", "StandinPlace(1)", str(fluid.is_compiled_with_cuda())]
    rc, out, err = _probe(None)
    assert rc == 0, err
    assert out[:4] == ["CPUPlace", _default(), "2", "CPUPlace"]


def test_an_unknown_device_is_refused_by_name():
    rc, _, err = _probe("gpu")
    assert rc != 0 and "FLUIDIST_TEST_DEVICE='gpu'" in err and "standin" in err


def test_switch_in_process_and_back():
    was = switch.active()
    try:
        switch.install("standin")
        p = fluid.CPUPlace()
        assert isinstance(p, StandinPlace) and isinstance(p, fluid.CPUPlace)
        assert isinstance(place_mod.CPUPlace(), fluid.CPUPlace)      # a real CPU place still is one
        assert isinstance(fluid.core.CPUPlace(), StandinPlace)
        exe = fluid.Executor(fluid.CPUPlace())
        out = exe.run(fluid.Program(), feed={}, fetch_list=[])
        assert out == []
        with switch.suspended():
            assert type(fluid.CPUPlace()) is place_mod.CPUPlace
            assert os.environ["FLUIDIST_TEST_DEVICE"] == "cpu"
            assert repr(fluid.Executor().place) == "CPUPlace"
        assert isinstance(fluid.CPUPlace(), StandinPlace)
    finally:
        switch.install(was)
    assert switch.active() == was


@pytest.mark.cpu_only("checks that the marker gives a test the real CPU, whatever FLUIDIST_TEST_DEVICE says")
def test_cpu_only_tests_run_on_the_cpu_and_so_do_their_children():
    assert type(fluid.CPUPlace()) is place_mod.CPUPlace
    p = subprocess.run([sys.executable, "-c", PROBE], env=dict(os.environ, PYTHONPATH=ROOT),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split()[:2] == ["CPUPlace", _default()]


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
