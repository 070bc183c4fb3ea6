"""Logging and warnings: records on children of the ``fluidist`` logger, ``warnings`` for what a user should
act on, ``FLUIDIST_LOG_LEVEL`` (the launcher's ``--log_level``), Paddle's ``log_helper.get_logger``."""
import logging
import os
import re
import socket
import subprocess
import sys
import warnings

import pytest

import fluidist
from fluidist import log_helper
from fluidist.transpiler.details import wait_server_ready

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_waiting_for_servers_is_a_log_record(caplog):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        ep = "127.0.0.1:%d" % s.getsockname()[1]  # bound, not listening: nobody answers
        with caplog.at_level(logging.INFO, logger="fluidist"):
            with pytest.raises(TimeoutError, match=ep):
                wait_server_ready([ep], timeout=0.3, interval=0.05)
    recs = [r for r in caplog.records if "server not ready, waiting for " + ep in r.getMessage()]
    assert len(recs) == 1 and recs[0].name == "fluidist.distributed.ports" and recs[0].levelno == logging.INFO
    # silenced at one place
    caplog.clear()
    logging.getLogger("fluidist").setLevel(logging.WARNING)
    try:
        with pytest.raises(TimeoutError):
            wait_server_ready([ep], timeout=0.1, interval=0.05)
        assert not caplog.records
    finally:
        logging.getLogger("fluidist").setLevel(logging.NOTSET)


def test_unsupported_role_maker_call_is_a_warning():
    from fluidist.role_maker import UserDefinedRoleMaker
    rm = UserDefinedRoleMaker(current_id=0, worker_num=1, server_endpoints=["127.0.0.1:1"])
    with pytest.warns(UserWarning, match="all_gather is not supported by this role maker"):
        assert rm.all_gather(1) is None


def test_get_logger_has_paddles_signature():
    name = "fluidist_test.get_logger"
    lg = log_helper.get_logger(name, logging.INFO, fmt="%(levelname)s|%(message)s")
    again = fluidist.log_helper.get_logger(name, logging.DEBUG)
    assert again is lg and lg.level == logging.DEBUG and len(lg.handlers) == 1  # no second handler
    assert lg.handlers[0].formatter._fmt == "%(levelname)s|%(message)s"


def test_fluidist_log_level_reaches_a_child():
    code = ("import logging, fluidist; logging.getLogger('fluidist.some.module').debug('debug %d', 7); "
            "logging.getLogger('fluidist.other').info('hidden?')")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for level, shown in (("DEBUG", True), ("20", False), ("", False)):
        env["FLUIDIST_LOG_LEVEL"] = level
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        assert ("DEBUG" in r.stderr and "fluidist.some.module] debug 7" in r.stderr) == shown, r.stderr
        assert ("fluidist.other] hidden?" in r.stderr) == (level != ""), r.stderr
    env["FLUIDIST_LOG_LEVEL"] = "loud"
    r = subprocess.run([sys.executable, "-W", "always", "-c", "import fluidist"], env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and "FLUIDIST_LOG_LEVEL='loud' is not a logging level" in r.stderr


def test_nothing_writes_to_stderr_by_hand():
    pkg = os.path.join(ROOT, "fluidist")
    found = []
    for d, _, files in os.walk(pkg):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(d, f)
                with open(path) as fh:
                    for i, line in enumerate(fh, 1):
                        if re.search(r"sys\.stderr\.write|print\([^)]*file=sys\.stderr", line):
                            found.append("%s:%d" % (os.path.relpath(path, ROOT), i))
    assert not found, "write through logging.getLogger(__name__) or warnings.warn instead: %s" % found


STORY_JOB = os.path.join(ROOT, "tests", "scripts", "story_ps_job.py")


def _story(tmp_path, batches):
    """The fluidist INFO records of each process of a 2x2 job under the launcher: {log name: [messages]}."""
    log_dir = tmp_path / ("log%d" % batches)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PADDLE_", "FLUIDIST_", "TRAINING_ROLE"))}
    env.update(PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), EPOCHS="2", BATCHES=str(batches),
               OMP_NUM_THREADS="1", CUDA_VISIBLE_DEVICES="")
    r = subprocess.run([sys.executable, "-m", "fluidist.launch", "--server_num", "2", "--worker_num", "2",
                        "--log_level", "INFO", "--log_dir", str(log_dir), STORY_JOB], env=env, cwd=str(tmp_path),
                       capture_output=True, text=True, timeout=150)
    assert r.returncode == 0, r.stdout + r.stderr
    out = {}
    for name in ("serverlog.0", "serverlog.1", "workerlog.0", "workerlog.1"):
        lines = (log_dir / name).read_text().splitlines()
        out[name] = [re.sub(r"^INFO \S+ \S+ (fluidist\.[\w.]+)\] ", r"\1: ", line) for line in lines
                     if re.match(r"^INFO \S+ \S+ fluidist\.", line)]
    return out


@pytest.mark.timeout(300)
def test_a_job_tells_its_story_at_info_and_nothing_per_step(tmp_path):
    short, long = _story(tmp_path, 3), _story(tmp_path, 9)
    # three times the steps, the same number of records: nothing per step
    assert {k: len(v) for k, v in short.items()} == {k: len(v) for k, v in long.items()}
    w = long["workerlog.1"]
    story = [r"fluidist\.distributed\.trainer_session: trainer 1: reached pserver\(s\) 127\.0\.0\.1:\d+, 127\.0\.0\.1:\d+",
             r"fluidist\.distributed\.trainer_session: trainer 1: first step done \(2 pserver\(s\) answered\)",
             r"fluidist\.reader\.decorator: batch reader: pass 1 read, 9 batch\(es\) of up to 4 in",
             r"fluidist\.reader\.decorator: batch reader: pass 2 read, 9 batch\(es\) of up to 4 in",
             r"fluidist\.distributed\.trainer_session: trainer 1: done after 18 step\(s\); told pserver\(s\)"]
    assert len(w) == len(story) and all(re.match(p, line) for p, line in zip(story, w)), w
    s = long["serverlog.0"]
    story = [r"fluidist\.distributed\.pserver: pserver (\S+): serving 1 block\(s\) to 2 trainer\(s\), sync",
             r"fluidist\.distributed\.pserver: pserver \S+: trainer \d is up \(1 of 2\)",
             r"fluidist\.distributed\.pserver: pserver \S+: trainer \d is up \(2 of 2\)",
             r"fluidist\.distributed\.pserver: pserver \S+: every trainer is done after 18 round\(s\); shutting down"]
    assert len(s) == len(story) and all(re.match(p, line) for p, line in zip(story, s)), s


def test_the_story_names_each_pserver_once_however_many_blocks_it_holds(monkeypatch, caplog):
    """A trainer's recv answers come one per parameter block: 3 blocks on each of 2 pservers are 2
    pservers reached and answering, not 6."""
    from fluidist.distributed import trainer_session
    monkeypatch.setattr(trainer_session, "_told", set())
    monkeypatch.setattr(trainer_session, "_steps", {})
    pairs = [(ep, 0) for _ in range(3) for ep in ("127.0.0.1:6170", "127.0.0.1:6171")]
    with caplog.at_level(logging.INFO, logger="fluidist.distributed.trainer_session"):
        trainer_session._tell_story(pairs)
        trainer_session._steps.update({p: 1 for p in pairs})
        trainer_session._tell_story(pairs)
    assert [r.getMessage() for r in caplog.records] == [
        "trainer 0: reached pserver(s) 127.0.0.1:6170, 127.0.0.1:6171",
        "trainer 0: first step done (2 pserver(s) answered)"]
