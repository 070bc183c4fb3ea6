"""docs/guide/first_job.md runs as written: its scripts (the ```python title="..."``` blocks) are saved
under their titles and every command line of its ```bash``` blocks but ``pip install`` is run in that
folder, as a newcomer would; each launch ends with exit code 0 and a trained model (the last loss
it prints is small)."""
import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.path.join(ROOT, "docs", "guide", "first_job.md")
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

FENCE = re.compile(r'^```(\w+)(?: title="([^"]+)")?\n(.*?)^```$', re.M | re.S)


def page_blocks():
    """(language, title, code) for each fenced block of the page, in order."""
    return FENCE.findall(open(PAGE).read())


def page_scripts():
    return {title: code for lang, title, code in page_blocks() if lang == "python" and title}


def page_commands():
    cmds = []
    for lang, _, code in page_blocks():
        if lang == "bash":
            cmds += [line for line in code.splitlines() if line.strip() and not line.startswith("pip install")]
    return cmds


def test_the_page_has_both_modes_and_both_launcher_spellings():
    scripts, cmds = page_scripts(), page_commands()
    assert set(scripts) == {"collective_job.py", "ps_job.py"}
    assert any(c.startswith("fluidist-launch --nproc_per_node") for c in cmds)
    assert any(c.startswith("python -m fluidist.distributed.launch --server_num") for c in cmds)
    assert len(cmds) == 4


@pytest.mark.parametrize("cmd", page_commands())
def test_command_runs_as_written(cmd, tmp_path):
    for title, code in page_scripts().items():
        (tmp_path / title).write_text(code)
    argv = cmd.split()
    if argv[0] == "python":
        argv[0] = sys.executable
    else:
        exe = shutil.which(argv[0])
        assert exe, "%s is not on PATH: install the package (pip install -e .) as the page says" % argv[0]
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run(argv, cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=240)
    out = r.stdout + r.stderr
    assert r.returncode == 0, "%s failed (%d):\n%s" % (cmd, r.returncode, out[-3000:])
    losses = [float(v) for v in re.findall(r"step 199 loss ([0-9.]+)", out)]
    assert losses and losses[-1] < 1e-3, out[-3000:]
    logs = sorted(os.listdir(str(tmp_path / "log")))
    assert "workerlog.1" in logs, logs
