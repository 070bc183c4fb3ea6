"""Runs test files in child processes, a few at a time, each under a time limit, and gathers the results.

Each file runs as ``python run_file.py MODULE OUT.jsonl`` in its own folder (as Paddle's ctest runs
them), with the scratch ``paddle`` package and the fluidist under test on ``PYTHONPATH``. A file that
outlives its limit is killed with its process group; the test it was in is recorded as ``timeout`` and
the tests after it are not run (they are recorded as one ``timeout`` row for the file).
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
RUN_FILE = os.path.join(HERE, "run_file.py")


@dataclass
class FileRun:
    """One test file's run: its rows and what the child printed last."""
    family: str
    path: str                      # relative to tests/
    rows: List[Dict] = field(default_factory=list)
    seconds: float = 0.0
    tail: str = ""


def child_env(site: str, fluidist_root: str, tests_dir: str, folder: str) -> Dict[str, str]:
    env = dict(os.environ)
    parts = [p for p in (site, folder, fluidist_root, env.get("PYTHONPATH")) if p]
    env.update({"PYTHONPATH": os.pathsep.join(parts), "FLUIDIST_PADDLE_TESTS_DIR": tests_dir,
                "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1", "CPU_NUM": env.get("CPU_NUM", "1"),
                "OMP_NUM_THREADS": env.get("OMP_NUM_THREADS", "1")})
    return env


def _read_rows(path: str) -> List[Dict]:
    rows: List[Dict] = []
    if not os.path.exists(path):
        return rows
    with open(path) as f:
        for line in f:
            try:
                rows.append(json.loads(line))
            except ValueError:
                continue
    return rows


def _settle(rows: List[Dict], timed_out: bool, rc: int, tail: str, module: str) -> List[Dict]:
    """Ended rows as they are; a started test with no end is the one the file died in."""
    done = {r["test"] for r in rows if r["outcome"] != "started"}
    out = [r for r in rows if r["outcome"] != "started"]
    for r in rows:
        if r["outcome"] == "started" and r["test"] not in done:
            out.append({"test": r["test"], "outcome": "timeout" if timed_out else "error", "seconds": 0,
                        "error": "the file's time limit ran out in this test" if timed_out else
                        "the process died in this test (exit %d): %s" % (rc, tail[-300:]), "where": ""})
    if not out and (timed_out or rc != 0):
        out.append({"test": module + ".<file>", "outcome": "timeout" if timed_out else "error", "seconds": 0,
                    "error": "no test ran (exit %d): %s" % (rc, " ".join(tail.split())[-300:]), "where": ""})
    return out


def run_one(family: str, rel: str, tests_dir: str, site: str, fluidist_root: str, limit: float,
            only: Optional[List[str]] = None, python: str = sys.executable) -> FileRun:
    folder = os.path.join(tests_dir, os.path.dirname(rel))
    module = os.path.splitext(os.path.basename(rel))[0]
    fd, out_path = tempfile.mkstemp(suffix=".jsonl")
    os.close(fd)
    cmd = [python, RUN_FILE, module, out_path] + list(only or [])
    start = time.time()
    proc = subprocess.Popen(cmd, cwd=folder, env=child_env(site, fluidist_root, tests_dir, folder),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    timed_out = False
    try:
        output, _ = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
    try:                                   # children the tests started (pservers, trainers) go too
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    tail = output.decode("utf-8", "replace")[-4000:]
    rows = _settle(_read_rows(out_path), timed_out, proc.returncode, tail, module)
    os.remove(out_path)
    return FileRun(family, rel, rows, time.time() - start, tail)


def run_all(files: List[tuple], tests_dir: str, site: str, fluidist_root: str, jobs: int,
            limit_for: Callable[[str, str], float], progress: Callable[[FileRun], None],
            only: Optional[Dict[str, List[str]]] = None, python: str = sys.executable) -> List[FileRun]:
    """Run ``[(family, rel path), ...]`` with ``jobs`` children at a time; ``progress`` sees each file's run."""
    def one(item):
        family, rel = item
        run = run_one(family, rel, tests_dir, site, fluidist_root, limit_for(family, rel),
                      (only or {}).get(rel), python)
        progress(run)
        return run
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(one, files))
