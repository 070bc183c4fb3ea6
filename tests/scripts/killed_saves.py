"""Saves killed at every step, and saves on a full file system, each over an earlier save; prints one JSON
line per kind of save with what a load found after each.

``killed_saves.py kill KIND... DIR``: a save of the new values is first run once to count its steps (the
calls that touch the file system: open, write, fsync, rename, link, unlink, mkdir, the directory swap...);
then, for each step k, a forked child of this process makes the save and SIGKILLs itself just before its
k-th step. After each, this process loads what is there ("old", "new", "mixed" or "error: ..."), lists the
temporary names left beside the target, saves the new values normally and lists them again (a later save
removes what a killed one left).

``killed_saves.py fullfs KIND... DIR`` (DIR a small file system of its own, e.g. a tmpfs): the old save
is made, then the file system is filled to leave 0, 4 KiB, 8 KiB ... free, and the new save is tried in
each; after each, the load and the leftovers as above.

``killed_saves.py race KIND WHICH TIMES DIR``: once ``DIR/go`` exists, save the WHICH ("old" or "new")
values into DIR TIMES times (two such processes race); ``killed_saves.py check KIND DIR`` prints what a
load of DIR finds, and the names beside the save.
"""
import builtins
import json
import os
import shutil
import signal
import sys
import time

import numpy as np

import fluidist as fluid
try:
    from fluidist.io import durable_dir      # its steps are counted too where it exists
except ImportError:
    durable_dir = None

PAGE = 4096
_STEPS = ("open", "write", "fsync", "replace", "rename", "link", "symlink", "unlink", "rmdir", "mkdir", "chmod",
          "fchmod", "close")


class Steps:
    """Counts the file-system calls of a save; SIGKILLs this process just before call ``kill_at``."""

    def __init__(self, kill_at=None):
        self.count, self.kill_at, self._real = 0, kill_at, []

    def _wrap(self, module, name):
        real = getattr(module, name)

        def step(*args, **kwargs):
            self._step()
            return real(*args, **kwargs)
        self._real.append((module, name, real))
        setattr(module, name, step)

    def _step(self):
        self.count += 1
        if self.count == self.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)

    def _wrap_open(self):
        """``open`` is a step before the call and one after (a file opened for writing is truncated)."""
        real = builtins.open

        def step(*args, **kwargs):
            self._step()
            f = real(*args, **kwargs)
            self._step()
            return f
        self._real.append((builtins, "open", real))
        builtins.open = step

    def __enter__(self):
        self._wrap_open()
        for name in _STEPS:
            self._wrap(os, name)
        for name in ("exchange", "_syncfs"):
            if durable_dir is not None and hasattr(durable_dir, name):
                self._wrap(durable_dir, name)
        return self

    def __exit__(self, *exc):
        for module, name, real in reversed(self._real):
            setattr(module, name, real)


class Model:
    """A small program with Momentum (parameters, velocities, learning rate) and two sets of values."""

    def __init__(self):
        self.main, startup = fluid.Program(), fluid.Program()
        with fluid.program_guard(self.main, startup):
            x = fluid.data(name="x", shape=[None, 48], dtype="float32")
            self.y = fluid.layers.fc(x, 48, bias_attr=False)
            fluid.optimizer.Momentum(0.1, 0.9).minimize(fluid.layers.mean(self.y))
        self.exe = fluid.Executor(fluid.CPUPlace())
        self.exe.run(startup)
        self.names = [v.name for v in fluid.io.get_program_persistable_vars(self.main)]
        scope = fluid.global_scope()
        self.shapes = {n: np.asarray(scope.find_var(n).get_tensor()).shape for n in self.names}

    def values(self, which):
        base = {"old": 100.0, "new": 200.0}[which]
        return {n: np.full(self.shapes[n], base + i, "float32") for i, n in enumerate(self.names)}

    def set(self, which):
        scope = fluid.global_scope()
        for n, v in self.values(which).items():
            scope.var(n).get_tensor().set(v, fluid.CPUPlace())

    def which(self, got):
        """"old" / "new" / "mixed" for ``{name: array}`` (every name of it must be one of the model's)."""
        found = set()
        for which in ("old", "new"):
            want = self.values(which)
            if all(np.array_equal(got[n], want[n]) for n in got):
                return which
            if any(np.array_equal(got[n], want[n]) for n in got):
                found.add(which)
        return "mixed" if found else "neither"


def _scope_values(scope, names):
    return {n: np.asarray(scope.find_var(n).get_tensor()) for n in names if scope.find_var(n) is not None}


def _kinds(model):
    """kind -> (save(folder), load(folder) -> {name: array})."""
    m = model

    def load_dir(folder):
        scope = fluid.Scope()
        fluid.io.load_persistables(m.exe, os.path.join(folder, "ckpt"), m.main, scope=scope)
        return _scope_values(scope, m.names)

    def load_inference(folder):
        scope = fluid.Scope()
        prog, _, _ = fluid.io.load_inference_model(os.path.join(folder, "model"), m.exe, scope=scope)
        return _scope_values(scope, [v.name for v in fluid.io.get_program_persistable_vars(prog)])

    def load_state(folder):
        scope = fluid.Scope()
        fluid.load(m.main, os.path.join(folder, "m"), m.exe, scope=scope)
        return _scope_values(scope, m.names)

    table = m.names[0]        # the pserver's checkpoint block saves each table with one save op

    def save_op(folder):
        prog = fluid.Program()
        prog.global_block().append_op("save", inputs={"X": [table]},
                                      attrs={"file_path": os.path.join(folder, table + ".npy")})
        m.exe.run(prog)

    def load_op_file(folder):
        prog, scope = fluid.Program(), fluid.Scope()
        prog.global_block().create_var(name=table, shape=m.shapes[table], dtype="float32", persistable=True)
        prog.global_block().append_op("load", outputs={"Out": [table]},
                                      attrs={"file_path": os.path.join(folder, table + ".npy")})
        m.exe.run(prog, scope=scope)
        return _scope_values(scope, [table])

    def save_by_two_renames(folder):
        """As where the system cannot swap two directories in one step: the old one is renamed aside first."""
        real = durable_dir.exchange if durable_dir is not None else None
        if durable_dir is not None:
            durable_dir.exchange = lambda a, b: False
        try:
            fluid.io.save_persistables(m.exe, os.path.join(folder, "ckpt"), m.main)
        finally:
            if durable_dir is not None:
                durable_dir.exchange = real

    return {
        "persistables_two_renames": (save_by_two_renames, load_dir),
        "persistables": (lambda f: fluid.io.save_persistables(m.exe, os.path.join(f, "ckpt"), m.main),
                         load_dir),
        "persistables_paddle": (lambda f: fluid.io.save_persistables(m.exe, os.path.join(f, "ckpt"), m.main,
                                                                     format="paddle"),
                                load_dir),
        "inference": (lambda f: fluid.io.save_inference_model(os.path.join(f, "model"), ["x"], [m.y], m.exe, m.main),
                      load_inference),
        "fluid_save": (lambda f: fluid.save(m.main, os.path.join(f, "m")), load_state),
        "save_op": (save_op, load_op_file),
    }


def _listing(folder):
    found = set()
    for root, dirs, files in os.walk(folder):
        found.update(os.path.relpath(os.path.join(root, n), folder) for n in dirs + files)
    return found


def _leftovers(folder):
    """What ``folder`` holds beyond the names a save into a fresh folder makes (``_CLEAN``)."""
    return sorted(_listing(folder) - _CLEAN)


_CLEAN = set()


def _outcome(model, load, folder):
    try:
        return model.which(load(folder))
    except Exception as e:   # what a load after the kill says, reported to the test
        return "error: %s: %s" % (type(e).__name__, str(e)[:300])


def _fresh(base, k, model, save):
    folder = os.path.join(base, str(k))
    os.makedirs(folder)
    model.set("old")
    save(folder)
    model.set("new")
    return folder


def _after(model, save, load, folder, record):
    """The load and leftovers after a failed or killed save, then after a normal save of the new values."""
    record["got"] = _outcome(model, load, folder)
    record["left"] = _leftovers(folder)
    save(folder)
    record["left_after_next_save"] = _leftovers(folder)
    record["next_save_loads"] = _outcome(model, load, folder)
    return record


def killed(model, kind, base):
    save, load = _kinds(model)[kind]
    folder = _fresh(base, "count", model, save)
    with Steps() as steps:
        save(folder)
    _CLEAN.clear()
    _CLEAN.update(_listing(folder))
    records = []
    for k in range(1, steps.count + 1):
        folder = _fresh(base, k, model, save)
        pid = os.fork()
        if pid == 0:
            with Steps(kill_at=k):
                save(folder)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        records.append(_after(model, save, load, folder, {"step": k, "killed": killed}))
    return {"kind": kind, "steps": steps.count, "records": records}


def _fill_to(folder, free):
    """A filler file that leaves ``free`` bytes of the file system of ``folder`` free (None: cannot)."""
    st = os.statvfs(folder)
    avail = st.f_bavail * st.f_frsize
    if avail < free:
        return None
    path = os.path.join(folder, "filler")
    with open(path, "wb") as f:
        f.write(b"\0" * (avail - free))
    return path


def full(model, kind, base):
    save, load = _kinds(model)[kind]
    folder = _fresh(base, "clean", model, save)
    save(folder)
    _CLEAN.clear()
    _CLEAN.update(_listing(folder))
    shutil.rmtree(folder)
    records, k = [], 0
    while True:
        folder = _fresh(base, k, model, save)
        filler = _fill_to(base, k * PAGE)
        record = {"free": k * PAGE}
        try:
            save(folder)
            record["save"] = "ok"
        except OSError as e:
            record["save"] = "error: %s" % os.strerror(e.errno) if e.errno else str(e)
        if filler:
            os.unlink(filler)
        records.append(_after(model, save, load, folder, record))
        shutil.rmtree(folder)
        if record["save"] == "ok" or k > 400:
            break
        k += 1
    return {"kind": kind, "records": records}


def race(model, kind, which, times, folder):
    save, _ = _kinds(model)[kind]
    model.set(which)
    while not os.path.exists(os.path.join(folder, "go")):
        time.sleep(0.001)
    for _ in range(times):
        save(folder)


def check(model, kind, folder):
    _, load = _kinds(model)[kind]
    names = sorted(n for n in os.listdir(folder) if n != "go")
    print(json.dumps({"kind": kind, "got": _outcome(model, load, folder), "names": names}), flush=True)


def main():
    mode, kinds, base = sys.argv[1], sys.argv[2:-1], sys.argv[-1]
    model = Model()
    if mode == "race":
        return race(model, kinds[0], kinds[1], int(kinds[2]), base)
    if mode == "check":
        return check(model, kinds[0], base)
    for kind in kinds:
        where = os.path.join(base, kind)
        os.makedirs(where)
        result = killed(model, kind, where) if mode == "kill" else full(model, kind, where)
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
