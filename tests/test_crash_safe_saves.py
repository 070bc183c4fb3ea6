"""A save killed at any step, failing on a full disk or racing another process's save of the same path
leaves a checkpoint that loads: the previous one or the new one, whole, and no temporary names behind
(``fluidist.io.durable``). The saves run in real processes (``scripts/killed_saves.py``), killed with
SIGKILL just before each of their file-system calls in turn."""
import errno
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import pytest

import fluidist as fluid

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "scripts", "killed_saves.py")
ROOT = os.path.dirname(HERE)
KINDS = ["persistables", "persistables_two_renames", "persistables_paddle", "inference", "fluid_save", "save_op"]


def _env(**extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def _run(args, timeout=240, prefix=()):
    out = subprocess.run(list(prefix) + [sys.executable, SCRIPT] + [str(a) for a in args], env=_env(),
                         capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, "killed_saves.py %s failed:\n%s\n%s" % (args, out.stdout[-3000:], out.stderr[-3000:])
    return {r["kind"]: r for r in map(json.loads, out.stdout.splitlines())}


@pytest.fixture
def fast_dir(tmp_path):
    """A folder on a tmpfs where there is one (/dev/shm: flushes cost nothing there), else ``tmp_path``."""
    if not (os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK)):
        yield tmp_path
        return
    folder = tempfile.mkdtemp(prefix="pytest-killed-saves-", dir="/dev/shm")
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.slow
def test_a_save_killed_at_every_step_leaves_the_old_or_the_new_checkpoint(fast_dir):
    kinds = [k for k in KINDS if k != "persistables_paddle"]     # (its steps are persistables' steps)
    results = _run(["kill"] + kinds + [fast_dir])
    assert sorted(results) == sorted(kinds)
    for kind, r in results.items():
        assert r["steps"] >= 5, "%s: only %d steps counted" % (kind, r["steps"])
        bad = [x for x in r["records"] if not x["killed"] or x["got"] not in ("old", "new")]
        assert not bad, "%s: a save killed at these steps left neither checkpoint: %s" % (kind, bad[:5])
        seen = {x["got"] for x in r["records"]}
        assert seen == {"old", "new"}, "%s: %s (a kill before the switch keeps the old, after it the new)" % (kind,
                                                                                                        seen)
        for x in r["records"]:      # a later save removes what the killed one left, and loads
            assert x["left_after_next_save"] == [] and x["next_save_loads"] == "new", (kind, x)


def _private_tmpfs_prefix(mount_point):
    """The command prefix that runs a command with a 4 MiB tmpfs at ``mount_point`` in a mount namespace of
    its own, or a reason why this machine cannot."""
    unshare = shutil.which("unshare")
    if unshare is None or not sys.platform.startswith("linux"):
        return None, "needs Linux's unshare(1) for a private mount namespace"
    base = [unshare, "-m"] if os.geteuid() == 0 else [unshare, "-r", "-m"]
    probe = subprocess.run(base + ["sh", "-c", "mount -t tmpfs -o size=4m tmpfs %s" % mount_point],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        return None, "cannot mount a tmpfs in a private mount namespace here: %s" % probe.stderr.strip()[-200:]
    return base + ["sh", "-c", 'mount -t tmpfs -o size=4m tmpfs "$0" && exec "$@"', str(mount_point)], None


@pytest.mark.slow
def test_a_save_on_a_full_file_system_fails_and_leaves_the_old_checkpoint(tmp_path):
    mount_point = tmp_path / "small"
    mount_point.mkdir()
    prefix, why = _private_tmpfs_prefix(mount_point)
    if prefix is None:
        pytest.skip(why)
    results = _run(["fullfs"] + KINDS + [mount_point], prefix=prefix)
    for kind, r in results.items():
        failed = [x for x in r["records"] if x["save"] != "ok"]
        assert failed and all("No space left" in x["save"] for x in failed), (kind, failed[:3])
        assert r["records"][-1]["save"] == "ok", (kind, r["records"][-1])
        for x in r["records"]:
            assert x["got"] == ("new" if x["save"] == "ok" else "old"), (kind, x)
            assert x["left"] == [], "%s: a failed save left %s behind" % (kind, x["left"])


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["persistables", "persistables_two_renames", "inference", "fluid_save", "save_op"])
def test_two_processes_saving_one_checkpoint_at_once_both_succeed_and_it_loads(tmp_path, kind):
    folder = tmp_path / "shared"
    folder.mkdir()
    procs = [subprocess.Popen([sys.executable, SCRIPT, "race", kind, which, "15", str(folder)], env=_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for which in ("old", "new")]
    try:
        (folder / "go").write_text("")
        outs = [p.communicate(timeout=180)[0] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for p, out in zip(procs, outs):
        assert p.returncode == 0, "a racing save failed:\n%s" % out[-3000:]
    got = _run(["check", kind, folder])[kind]
    assert got["got"] in ("old", "new"), got
    clean = {"persistables": ["ckpt"], "persistables_two_renames": ["ckpt"], "inference": ["model"], "fluid_save": ["m.pdmodel", "m.pdopt", "m.pdparams"],
             "save_op": ["fc_0.w_0.npy"]}[kind]
    assert got["names"] == clean


# ---------------------------------------------------------------- in this process
def _model():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[None, 6], dtype="float32")
        fluid.optimizer.SGD(0.1).minimize(fluid.layers.mean(fluid.layers.fc(x, 3)))
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    return main, exe


def _set_all(main, value):
    for v in fluid.io.get_program_persistable_vars(main):
        t = fluid.global_scope().find_var(v.name).get_tensor()
        t.set(np.full(np.asarray(t).shape, value, np.asarray(t).dtype), fluid.CPUPlace())


def _loaded(main, exe, ckpt):
    scope = fluid.Scope()
    fluid.io.load_persistables(exe, ckpt, main, scope=scope)
    values = {float(np.asarray(scope.find_var(v.name).get_tensor()).ravel()[0])
              for v in fluid.io.get_program_persistable_vars(main)}
    assert len(values) == 1, values
    return values.pop()


@pytest.mark.parametrize("error", [OSError(errno.ENOSPC, "No space left on device"), KeyboardInterrupt()])
def test_a_save_that_fails_at_any_write_removes_what_it_wrote_and_keeps_the_old(tmp_path, monkeypatch, error):
    main, exe = _model()
    ckpt = str(tmp_path / "ckpt")
    _set_all(main, 1.0)
    fluid.io.save_persistables(exe, ckpt, main)
    clean = sorted(os.listdir(ckpt))
    _set_all(main, 2.0)
    real_write, failures = os.write, 0
    for k in range(1, 40):
        calls = []

        def failing_write(fd, data):
            calls.append(fd)
            if len(calls) == k:
                raise error
            return real_write(fd, data)
        monkeypatch.setattr(os, "write", failing_write)
        try:
            fluid.io.save_persistables(exe, ckpt, main)
            finished = True
        except (OSError, KeyboardInterrupt):
            finished, failures = False, failures + 1
        monkeypatch.setattr(os, "write", real_write)
        assert os.listdir(tmp_path) == ["ckpt"] and sorted(os.listdir(ckpt)) == clean
        assert _loaded(main, exe, ckpt) == (2.0 if finished else 1.0)
        if finished:
            break
        _set_all(main, 2.0)
    assert failures >= 4


def test_a_directory_save_replaces_a_linked_directory_s_target_and_keeps_the_link(tmp_path):
    main, exe = _model()
    real = tmp_path / "real"
    real.mkdir()
    (real / "notes.txt").write_text("kept")           # what else the directory holds stays
    os.symlink(str(real), str(tmp_path / "link"))
    _set_all(main, 3.0)
    fluid.io.save_persistables(exe, str(tmp_path / "link"), main)
    assert os.path.islink(str(tmp_path / "link")) and (real / "notes.txt").read_text() == "kept"
    assert _loaded(main, exe, str(real)) == 3.0
    assert sorted(os.listdir(tmp_path)) == ["link", "real"]


def test_a_save_into_the_working_directory_writes_in_place(tmp_path, monkeypatch):
    main, exe = _model()
    monkeypatch.chdir(tmp_path)
    _set_all(main, 4.0)
    fluid.io.save_persistables(exe, ".", main)
    fluid.io.save_persistables(exe, str(tmp_path), main)
    assert os.getcwd() == str(tmp_path) and os.path.exists("__index__.json")   # the directory was not swapped out
    assert _loaded(main, exe, ".") == 4.0


def test_the_save_op_file_carries_a_checksum_that_load_checks(tmp_path):
    prog, scope = fluid.Program(), fluid.Scope()
    b = prog.global_block()
    b.create_var(name="t", shape=[64, 8], dtype="float32", persistable=True)
    path = str(tmp_path / "t.npy")
    b.append_op("save", inputs={"X": ["t"]}, attrs={"file_path": path})
    scope.var("t").get_tensor().set(np.arange(512, dtype="float32").reshape(64, 8), fluid.CPUPlace())
    fluid.Executor().run(prog, scope=scope)
    np.testing.assert_array_equal(np.load(path), np.arange(512, dtype="float32").reshape(64, 8))  # NumPy reads it
    blob = bytearray(open(path, "rb").read())
    blob[200] ^= 1
    open(path, "wb").write(bytes(blob))
    load = fluid.Program()
    load.global_block().create_var(name="t", shape=[64, 8], dtype="float32")
    load.global_block().append_op("load", outputs={"Out": ["t"]}, attrs={"file_path": path})
    with pytest.raises(ValueError, match="corrupt: its data does not match the SHA-256"):
        fluid.Executor().run(load, scope=fluid.Scope())
    assert os.listdir(tmp_path) == ["t.npy"]


def test_a_commit_list_of_a_killed_save_is_finished_by_the_next_load(tmp_path):
    """The state a save of several files killed between its renames leaves (written by hand: the kill test
    reaches it in a real process): the next load renames the rest in."""
    main, exe = _model()
    _set_all(main, 5.0)
    prefix = str(tmp_path / "m")
    fluid.save(main, prefix)
    _set_all(main, 6.0)
    fluid.save(main, str(tmp_path / "n"))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    from fluidist.io import durable
    token = "%s-%s-0123abcd" % (durable._host_tag(), dead)
    os.replace(str(tmp_path / "n.pdparams"), prefix + ".pdparams")       # two files were renamed in ...
    os.replace(str(tmp_path / "n.pdopt"), prefix + ".pdopt")
    tmp_model = os.path.join(str(tmp_path), ".m.pdmodel.fluidist-tmp-" + token)
    os.replace(str(tmp_path / "n.pdmodel"), tmp_model)                   # ... the third was not
    listing = json.dumps([[".m.pdparams.fluidist-tmp-" + token, "m.pdparams"],
                          [".m.pdopt.fluidist-tmp-" + token, "m.pdopt"], [os.path.basename(tmp_model), "m.pdmodel"]])
    (tmp_path / (".m.pdparams.fluidist-commit-" + token)).write_text(listing)
    scope = fluid.Scope()
    fluid.load(main, prefix, exe, scope=scope)
    assert sorted(os.listdir(tmp_path)) == ["m.pdmodel", "m.pdopt", "m.pdparams"]
    assert open(prefix + ".pdmodel").read() == main.to_json()
    w = [v.name for v in fluid.io.get_program_parameter(main)][0]
    assert float(np.asarray(scope.find_var(w).get_tensor()).ravel()[0]) == 6.0
