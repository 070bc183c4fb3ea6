"""The launcher is a process manager: importing it (``fluidist-launch``, ``--help``, ``--version``) and
the runtime's endpoint helpers loads no kernels, no IR and no executor, so it starts in a fraction of a
second (it loaded the whole framework before: 271 modules, 3.5-4.2 s on a loaded two-core machine)."""
import os
import subprocess
import sys
import time

import fluidist

HEAVY = ("fluidist.ops", "fluidist.framework", "fluidist.layers", "fluidist.executor", "fluidist.core")


def _run(code, *args):
    """Run ``code`` in a fresh interpreter on the CPU (no FLUIDIST_TEST_DEVICE: that switch loads the
    framework at import, to be in place before the first place is made); returns (seconds, result)."""
    env = {k: v for k, v in os.environ.items() if k != "FLUIDIST_TEST_DEVICE"}
    start = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", code] + list(args), capture_output=True, text=True, timeout=60,
                       env=env)
    return time.perf_counter() - start, r


_LOADED = ("import sys\n"
           "print(' '.join(sorted(m for m in sys.modules if m.startswith('fluidist'))))\n")


def _heavy_in(loaded):
    return [m for m in loaded.split() if any(m == h or m.startswith(h + ".") for h in HEAVY)]


def test_importing_the_launcher_and_the_endpoint_helpers_loads_no_kernels():
    code = ("import pkgutil, fluidist.launch, fluidist.distributed.ports, fluidist.distributed.security\n"
            "for m in pkgutil.iter_modules(fluidist.launch.__path__):\n"
            "    __import__('fluidist.launch.' + m.name)\n" + _LOADED)
    _, r = _run(code)
    assert r.returncode == 0, r.stderr
    loaded = r.stdout.split()
    assert "fluidist.launch.cli" in loaded and "fluidist.launch.elastic" in loaded
    assert not _heavy_in(r.stdout), _heavy_in(r.stdout)
    _, r = _run("import fluidist.distributed.ports\n" + _LOADED)
    assert r.returncode == 0 and "fluidist.distributed.ports" in r.stdout and not _heavy_in(r.stdout), r.stderr


def test_launcher_help_loads_no_kernels():
    code = ("import sys\nsys.argv[0] = 'fluidist-launch'\nfrom fluidist.launch.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n" + _LOADED)
    _, r = _run(code)
    assert r.returncode == 0 and "--nproc_per_node" in r.stdout, r.stderr
    assert not _heavy_in(r.stdout.splitlines()[-1]), _heavy_in(r.stdout.splitlines()[-1])


def test_launcher_version_answers_in_well_under_a_second():
    """``fluidist-launch --version`` (its console script's function), the best of three runs: a generous
    bound of 2 s for a loaded machine (about 0.1 s on an idle one)."""
    code = ("import sys\nsys.argv[0] = 'fluidist-launch'\nfrom fluidist.launch.cli import main\n"
            "try:\n    main(['--version'])\nexcept SystemExit:\n    pass\n" + _LOADED)
    runs = [_run(code) for _ in range(3)]
    for _, r in runs:
        assert r.returncode == 0, r.stderr
        lines = r.stdout.splitlines()
        assert lines[0] == "fluidist-launch (fluidist %s)" % fluidist.__version__, lines
        assert "fluidist.ops" not in lines[-1].split() and not _heavy_in(lines[-1]), lines[-1]
    best = min(seconds for seconds, _ in runs)
    assert best < 2.0, "fluidist-launch --version took %.2f s (best of 3)" % best

