"""Saves that a kill, a full disk or a concurrent save cannot leave half-written.

A file is written under a temporary name of its own beside the target
(``.<name>.fluidist-tmp-<host>-<pid>-<random>``), flushed to the disk (``fsync``), and renamed onto the
target: a reader finds the whole old file or the whole new one, and two processes saving one file at once
each rename a complete file of their own (the last one wins, as when Paddle writes in place). The temporary
file is removed on every error. Several files of one folder (``fluid.save``'s three) are all written and
flushed first, then a commit list (``.<name>.fluidist-commit-...``) names them while they are renamed in
under a lock on the folder: a save killed during the renames is finished by the next load or save.

A directory (``save_persistables``, ``save_inference_model``) is staged beside the old one and swapped in
whole: :mod:`fluidist.io.durable_dir`. The final directory holds exactly the files of the save; the
temporary names live beside it, never inside.

What a kill leaves (SIGKILL runs no clean-up): a temporary file or directory beside the target, removed
by the next save of the same name on this host once its process is gone.

``FLUIDIST_SAVE_FSYNC=0`` leaves out the flushes: a killed process still leaves the old or the new save,
but a power failure may not.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import secrets
import shutil
import socket
import stat

_logger = logging.getLogger("fluidist.io")

FSYNC_ENV = "FLUIDIST_SAVE_FSYNC"
_TEMP = re.compile(r"^\.(?P<base>.*)\.fluidist-(?P<kind>tmp|new|old|commit)"
                   r"-(?P<host>[0-9a-f]{6})-(?P<pid>\d+)-[0-9a-f]{8}$")
_BASE_CHARS = 120          # of the target's name kept in a temporary name (file names end at 255 bytes)


def _fsync_wanted():
    return os.environ.get(FSYNC_ENV, "").strip().lower() not in ("0", "false", "no", "off")


def _host_tag():
    return hashlib.sha1(socket.gethostname().encode("utf-8", "replace")).hexdigest()[:6]


def new_token():
    """``<host>-<pid>-<random>``: the part of a temporary name that says whose it is."""
    return "%s-%d-%s" % (_host_tag(), os.getpid(), secrets.token_hex(4))


def temp_name(path, kind, token=None):
    """A name beside ``path`` no other process (or save of this one) uses: ``kind`` is ``tmp``
    (a file), ``new`` (a staged directory), ``old`` (a directory moved aside) or ``commit`` (the
    list of files a save is renaming into place)."""
    folder, base = os.path.split(path)
    return os.path.join(folder, ".%s.fluidist-%s-%s" % (base[:_BASE_CHARS], kind, token or new_token()))


def is_temporary(name):
    """Whether ``name`` (a file name) is one of the temporary names a save uses."""
    return _TEMP.match(name) is not None


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def _remove(path):
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)
    except FileNotFoundError:
        pass


def _dead_leftovers(folder):
    """``(name, match)`` of the temporary names in ``folder`` whose process (on this host) is gone."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    host, out = _host_tag(), []
    for name in sorted(names):
        m = _TEMP.match(name)
        if m is not None and m.group("host") == host and not _pid_alive(int(m.group("pid"))):
            out.append((name, m))
    return out


def _roll_forward(folder):
    """Finish the saves of several files that were killed while renaming them into place: their files
    were all written and flushed before the first rename (the commit list says which), so the rest are
    renamed in too."""
    for name, m in _dead_leftovers(folder):
        if m.group("kind") != "commit":
            continue
        marker = os.path.join(folder, name)
        with _DirLock(folder):
            finished = []
            for tmp, target in _commit_list(marker):
                if os.path.lexists(os.path.join(folder, tmp)):
                    os.replace(os.path.join(folder, tmp), os.path.join(folder, target))
                    finished.append(target)
            if finished:
                _logger.warning("finished a save into %s that was killed while renaming its files into place "
                                "(all were written): %s", folder, ", ".join(finished))
            _fsync_dir(folder)
            _remove(marker)


def _commit_list(marker):
    """The ``(temporary name, target name)`` pairs of a commit list: plain names of one folder, the first
    a temporary file of a save; empty when the list is unreadable (a save killed while writing it had
    renamed nothing yet)."""
    try:
        with open(marker, "rb") as f:
            pairs = json.loads(f.read(1 << 20).decode("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return []
    out = []
    for pair in pairs if isinstance(pairs, list) else []:
        if (isinstance(pair, list) and len(pair) == 2 and all(_plain(n) for n in pair)
                and _TEMP.match(pair[0]) and _TEMP.match(pair[0]).group("kind") == "tmp"):
            out.append((pair[0], pair[1]))
    return out


def _plain(name):
    return isinstance(name, str) and name not in ("", ".", "..") and "/" not in name and "\0" not in name


def remove_stale(path):
    """Remove what killed saves of ``path`` left beside it on this host (their processes are gone): a
    save of several files killed while renaming them is finished first, a directory moved aside whose
    replacement never arrived is put back. Returns the names removed."""
    folder, base = os.path.split(os.path.abspath(path))
    _roll_forward(folder)
    removed = []
    for name, m in _dead_leftovers(folder):
        if m.group("base") != base[:_BASE_CHARS] or m.group("kind") == "commit":
            continue
        full = os.path.join(folder, name)
        if m.group("kind") == "old" and not os.path.lexists(path):
            try:
                os.rename(full, path)
                _logger.warning("put %s back in place: a save that had moved it aside was killed", path)
                continue
            except OSError:
                pass
        _remove(full)
        removed.append(name)
    return removed


def recover(path):
    """Before a load looks at ``path``: finish a save of several files there that was killed while
    renaming them, or put back a directory that a killed save had moved aside."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.lexists(path):
        remove_stale(path)
    else:
        _roll_forward(folder)


class _DirLock:
    """An exclusive ``flock`` on a directory while a save renames files into it (two saves of the same
    files then never interleave their renames); where the system has no such lock, none."""

    def __init__(self, folder):
        self.folder, self.fd = folder, None

    def __enter__(self):
        try:
            import fcntl
            self.fd = os.open(self.folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        except (ImportError, OSError):
            if self.fd is not None:
                os.close(self.fd)
            self.fd = None
        return self

    def __exit__(self, *exc):
        if self.fd is not None:
            os.close(self.fd)     # closing drops the lock


def _fsync_dir(path):
    if not _fsync_wanted():
        return
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass            # some file systems refuse fsync on a directory; the data itself was flushed
    finally:
        os.close(fd)


def _write_new(path, blob, mode=None, flush=True):
    """Create ``path`` (it must not exist) holding ``blob``; flushed unless told not to."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        view = memoryview(blob).cast("B")
        while view:
            n = os.write(fd, view)
            view = view[n:]
        if mode is not None:
            os.fchmod(fd, mode)
        if flush and _fsync_wanted():
            os.fsync(fd)
    finally:
        os.close(fd)


def _mode_of(path):
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return None


def write_files(items, tidy=True):
    """Replace each ``(path, bytes)`` of ``items`` whole, and several files of one folder as one: every
    file is written and flushed under a temporary name first; then a commit list naming them is written
    and the files are renamed into place (under the folder's lock, so concurrent saves of the same files
    do not interleave). A save killed during the renames is finished by the next load or save (its files
    were complete), one killed before them leaves the old files. Nothing of a failed save is left behind."""
    items = [(os.path.abspath(p), blob) for p, blob in items]
    folders = {os.path.dirname(p) for p, _ in items}
    token, staged, marker = new_token(), [], None
    try:
        for path, blob in items:
            if tidy:
                remove_stale(path)
            staged.append((temp_name(path, "tmp", token), path))
            _write_new(staged[-1][0], blob, _mode_of(path))
        (folder,) = folders if len(folders) == 1 else (None,)
        with _DirLock(folder) if len(items) > 1 and folder else _NoLock():
            if len(items) > 1 and folder:
                marker = temp_name(items[0][0], "commit", token)
                listing = [[os.path.basename(t), os.path.basename(p)] for t, p in staged]
                _write_new(marker, json.dumps(listing).encode("utf-8"))
                _fsync_dir(folder)
            while staged:
                tmp, path = staged[0]
                os.replace(tmp, path)
                staged.pop(0)
            for f in sorted(folders):
                _fsync_dir(f)
            if marker is not None:
                os.unlink(marker)
                marker = None
    finally:
        for tmp, _ in staged:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        if marker is not None:
            try:
                os.unlink(marker)
            except OSError:
                pass


class _NoLock:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def write_file(path, blob, tidy=True):
    """Replace ``path`` whole with ``blob`` (see :func:`write_files`; ``tidy``: remove what killed saves of
    ``path`` left first)."""
    write_files([(path, blob)], tidy)
