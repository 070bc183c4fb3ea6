import os
import secrets
import sys

# One BLAS thread per process (inherited by every process the tests start): the parallelism of a test
# run is its pytest-xdist workers and the jobs' own processes. OpenBLAS threads spin while they wait,
# so with several of them per process on a shared two-core machine the suite burnt many times the CPU
# it needs (the digits CNN example: 16 s of CPU with two threads, 2.5 s with one).
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import pytest  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))

# One job secret for this test session (inherited by every process the tests start), so that no test
# reads or makes the per-user default secret file. Each pytest-xdist worker gets its own: the names of
# the shared-memory segments a job makes carry its secret's tag (``security.secret_tag``), so a test
# that looks for leftover segments sees only its own worker's (and never another suite's).
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ["FLUIDIST_JOB_SECRET"] = secrets.token_urlsafe(32)
else:
    os.environ.setdefault("FLUIDIST_JOB_SECRET", secrets.token_urlsafe(32))

# The ports this test process and every process it starts pick (the launcher's and the tests' own picks):
# below the kernel's ephemeral range, where the source port of any outgoing connection could take a port
# picked and released before its process bound it, and split between pytest-xdist workers.
from child_procs import worker_port_range  # noqa: E402

os.environ["FLUIDIST_PORT_RANGE"] = "%d-%d" % worker_port_range()


def _timeouts_follow_the_load(config, items):
    """Each test's pytest-timeout (its mark, else the ini's) times the machine's measured slowdown (the
    load average per CPU when the run starts, at most 3): a hang still fails the run, a busy machine's
    slow test does not (``load_aware``)."""
    from load_aware import slowdown
    factor = slowdown(cap=3.0)
    if factor <= 1.0:
        return
    try:
        default = float(config.getini("timeout") or 0)
    except ValueError:   # pytest-timeout is not installed
        return
    for item in items:
        mark = item.get_closest_marker("timeout")
        base = (mark.args[0] if mark.args else mark.kwargs.get("timeout", default)) if mark else default
        if base:
            item.add_marker(pytest.mark.timeout(float(base) * factor), append=False)


# ---- the suites' place: FLUIDIST_TEST_DEVICE=standin|cuda python -m pytest ... runs them on that device.
# ``import fluidist`` never reads the variable; this plugin asks for the device explicitly in every test
# process (the controller and each pytest-xdist worker, before the test modules are collected), and the
# processes the tests start call ``fluidist.device.use_from_env()`` themselves (they inherit the variable).

def _use_the_suites_device():
    """``fluidist.device.use_from_env()``: every ``fluid.CPUPlace()`` a test creates is then the place of
    the device ``FLUIDIST_TEST_DEVICE`` names (the CPU when unset), and ``FLUIDIST_STANDIN_GPU_SEMANTICS=1``
    turns the stand-in's GPU semantics on."""
    import fluidist.device
    fluidist.device.use_from_env()


@pytest.fixture(autouse=True)
def cpu_only_on_the_cpu(request):
    """A test marked ``cpu_only("why")`` checks CPU-only behaviour: it runs on the real CPU whatever the
    suites' device, and so do the processes it starts (``FLUIDIST_TEST_DEVICE`` says ``cpu`` to them)."""
    if request.node.get_closest_marker("cpu_only") is None:
        yield
        return
    import fluidist.device
    with fluidist.device.suspended():
        yield


@pytest.fixture(autouse=True)
def fresh_names_and_programs():
    """Each test starts with fresh default programs, a fresh global scope and fresh unique names."""
    import fluidist as fluid
    from fluidist.framework import program as prog_mod, unique_name
    from fluidist.core import scope as scope_mod
    old_main = prog_mod.switch_main_program(fluid.Program())
    old_start = prog_mod.switch_startup_program(fluid.Program())
    old_scope = scope_mod._switch_scope(scope_mod.Scope())
    with unique_name.guard():
        yield
    prog_mod.switch_main_program(old_main)
    prog_mod.switch_startup_program(old_start)
    scope_mod._switch_scope(old_scope)


def pytest_configure(config):
    """Write the bytecode of fluidist and of the tests' helper modules once, before any test runs.

    Hundreds of the suite's tests start Python processes that import fluidist. Where
    ``PYTHONDONTWRITEBYTECODE`` is set (as on the CI machines), nothing writes ``__pycache__`` and every
    one of those processes compiled all of fluidist's sources again: 0.33 s of its 0.6 s import.
    ``compileall`` writes the cache whatever that variable says; Python then only reads it (and still
    checks each entry against its source's modification time and size).

    Then the suites' device (``_use_the_suites_device``), in the controller and in each worker."""
    _use_the_suites_device()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return          # the controller compiled the sources
    import compileall
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for folder in ("fluidist", "tests"):
        compileall.compile_dir(os.path.join(root, folder), quiet=2)


# Test files that start processes (jobs of pservers, trainers, ranks, launchers): the long ones.
_PROCESS_DIRS = ("tests/distributed/", "tests/launch/", "tests/fleet/", "tests/models/", "tests/benchmarks/",
                 "tests/dataset/")


def pytest_collection_modifyitems(config, items):
    """The files that start processes first, each file's tests in their order: pytest-xdist hands out
    whole files in this order (``--dist loadfile``), so the long ones start early and the short
    in-process ones fill the end, instead of one long file starting last on an otherwise idle run."""
    items.sort(key=lambda item: 0 if item.nodeid.startswith(_PROCESS_DIRS) else 1)
    # the distributed model table's cases outside its representative sets run when asked for
    if os.environ.get("FLUIDIST_MODEL_TABLE", "") != "full":
        extra = [item for item in items if item.get_closest_marker("model_table_extra")]
        if extra:
            config.hook.pytest_deselected(items=extra)
            items[:] = [item for item in items if not item.get_closest_marker("model_table_extra")]
    _timeouts_follow_the_load(config, items)
