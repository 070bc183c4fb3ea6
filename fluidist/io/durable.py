"""Saves that a kill, a full disk or a concurrent save cannot leave half-written.

A file is written under a temporary name of its own beside the target (``.<name>.fluidist-tmp-<host>-<pid>-<random>``),
flushed to the disk (``fsync``), and renamed onto the target: a reader finds the whole old file or the whole
new one, and two processes saving one file at once each rename a complete file of their own (the last one
wins, as when Paddle writes in place). The temporary file is removed on every error.

A directory (``save_persistables``, ``save_inference_model``) is written as a new directory beside the
old one (``.<name>.fluidist-new-<host>-<pid>-<random>``), which starts as hard links to the old one's
files (a save into a directory keeps what earlier saves put there, as in Paddle) and gets the new files;
it is flushed to the disk as a whole (``syncfs``, or ``fsync`` per file where that is missing), then swapped
with the old directory in one step (``renameat2(RENAME_EXCHANGE)``), and the old one, now under the
temporary name, is removed. Where the file system cannot swap (not Linux, NFS), the old directory is
renamed aside (``.<name>.fluidist-old-...``) and the new one into its place: a kill between the two
renames leaves no directory under the name, and the next load or save puts the old one back. The final
directory holds exactly the files of the save; the temporary names live beside it, never inside.

What a kill leaves (SIGKILL runs no clean-up): a temporary file or directory beside the target, removed
by the next save of the same name on this host once its process is gone. A directory that is a mount
point, or whose parent cannot be written, cannot be swapped: it is then written file by file, each file
replaced whole, the index last (a warning says so once); a kill in the middle then leaves files of two
saves, which the checksums of the index refuse to load.

``FLUIDIST_SAVE_FSYNC=0`` leaves out the flushes: a killed process still leaves the old or the new save,
but a power failure may not.
"""
from __future__ import annotations

import ctypes
import errno
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
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
_SYS_RENAMEAT2 = {"x86_64": 316, "aarch64": 276, "ppc64le": 357, "s390x": 347}
_warned_in_place: set = set()


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
            try:
                with open(marker, "rb") as f:
                    pairs = json.loads(f.read().decode("utf-8"))
            except (OSError, ValueError, UnicodeDecodeError):
                pairs = []        # killed while writing the list: no file was renamed yet
            finished = []
            for tmp, target in pairs if isinstance(pairs, list) else []:
                if _plain(tmp) and _plain(target) and os.path.lexists(os.path.join(folder, tmp)):
                    os.replace(os.path.join(folder, tmp), os.path.join(folder, target))
                    finished.append(target)
            if finished:
                _logger.warning("finished a save into %s that was killed while renaming its files into place "
                                "(all were written): %s", folder, ", ".join(finished))
            _fsync_dir(folder)
            _remove(marker)


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


def write_files(items):
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


def write_file(path, blob):
    """Replace ``path`` whole with ``blob`` (see :func:`write_files`)."""
    write_files([(path, blob)])


# ---------------------------------------------------------------- directories
def _libc():
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def exchange(a, b):
    """Swap the directories ``a`` and ``b`` in one step; False where the system cannot."""
    libc = _libc()
    if libc is None:
        return False
    args = (_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    fn = getattr(libc, "renameat2", None)
    if fn is not None:
        rc = fn(*[ctypes.c_int(x) if isinstance(x, int) else ctypes.c_char_p(x) for x in args])
    else:
        nr = _SYS_RENAMEAT2.get(os.uname().machine)
        if nr is None:
            return False
        rc = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(x) if isinstance(x, int) else ctypes.c_char_p(x)
                                                 for x in args])
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EPERM):
        return False
    raise OSError(err, os.strerror(err), a, None, b)


def _syncfs(path):
    """Flush the whole file system holding ``path`` (one call for a directory of many files)."""
    libc = _libc()
    fn = getattr(libc, "syncfs", None) if libc is not None else None
    if fn is None:
        return False
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        return fn(ctypes.c_int(fd)) == 0
    finally:
        os.close(fd)


class _SnapshotGone(Exception):
    """The directory being copied was removed meanwhile (a concurrent save swapped it out)."""


def _link_tree(src_fd, dst):
    """Hard links (copies where links are refused) in ``dst`` of everything in the directory open as
    ``src_fd``; leftovers of killed saves are skipped."""
    try:
        entries = list(os.scandir(src_fd))
    except FileNotFoundError:
        raise _SnapshotGone() from None
    for entry in entries:
        if _TEMP.match(entry.name):
            continue
        target = os.path.join(dst, entry.name)
        try:
            if entry.is_symlink():
                os.symlink(os.readlink(entry.name, dir_fd=src_fd), target)
            elif entry.is_dir():
                os.mkdir(target)
                sub = os.open(entry.name, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0), dir_fd=src_fd)
                try:
                    _link_tree(sub, target)
                finally:
                    os.close(sub)
            else:
                _link_or_copy(src_fd, entry.name, target)
        except FileNotFoundError:
            raise _SnapshotGone() from None


def _link_or_copy(src_fd, name, target):
    try:
        os.link(name, target, src_dir_fd=src_fd, follow_symlinks=False)
        return
    except OSError as e:
        if e.errno in (errno.ENOENT, errno.ENOSPC, errno.EDQUOT):
            raise
    fd = os.open(name, os.O_RDONLY, dir_fd=src_fd)
    try:
        with os.fdopen(fd, "rb", closefd=False) as f, open(target, "xb") as out:
            shutil.copyfileobj(f, out)
        os.chmod(target, stat.S_IMODE(os.fstat(fd).st_mode))
    finally:
        os.close(fd)


class StagedDirectory:
    """``with StagedDirectory(dirname) as stage:`` write the files of a save with ``stage.write(name,
    bytes)`` (``name`` relative to the directory, ``/`` between its parts) and read what earlier saves
    left through ``stage.path``. Leaving the block normally puts the new directory in the old one's
    place whole; leaving it by an error removes the new directory and leaves the old one as it was.
    ``dirname`` a link to a directory: the directory it points to is replaced."""

    def __init__(self, dirname):
        self.target = os.path.realpath(dirname)
        self.path = None
        self.in_place = False
        self._written = []
        self._aside = []

    def __enter__(self):
        target = self.target
        if os.path.lexists(target) and not os.path.isdir(target):
            raise FileExistsError(errno.EEXIST, "cannot save into %s: it is a file, not a directory" % target)
        parent = os.path.dirname(target)
        os.makedirs(parent, exist_ok=True)
        remove_stale(target)
        why = _cannot_swap(target, parent)
        if why is None:
            for _ in range(5):
                self.path = temp_name(target, "new")
                try:
                    os.mkdir(self.path)
                except PermissionError as e:
                    why = "its parent directory cannot be written (%s)" % e.strerror
                    break
                try:
                    _fill_from(target, self.path)
                    return self
                except _SnapshotGone:
                    _remove(self.path)
                except BaseException:
                    _remove(self.path)
                    raise
            else:
                raise OSError(errno.EBUSY, "cannot save into %s: other saves keep replacing it" % target)
        self._begin_in_place(why)
        return self

    def _begin_in_place(self, why):
        self.in_place, self.path = True, self.target
        os.makedirs(self.target, exist_ok=True)
        if self.target not in _warned_in_place:
            _warned_in_place.add(self.target)
            _logger.warning("saving into %s file by file, each file replaced whole: %s, so the directory cannot be "
                            "replaced in one step (a save killed midway leaves files of two saves, which do not "
                            "load)", self.target, why)

    def write(self, name, blob):
        """Write the file ``name`` (relative) of the new directory."""
        if self.in_place:
            path = os.path.join(self.target, *name.split("/"))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            write_file(path, blob)
            return
        path = os.path.join(self.path, *name.split("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if os.path.lexists(path):
            os.unlink(path)       # a link to the old directory's file: never written through
        _write_new(path, blob, flush=False)
        self._written.append(path)

    def __exit__(self, kind, value, tb):
        if self.in_place:
            return False
        if kind is not None:
            _remove(self.path)
            return False
        try:
            self._flush()
            self._switch()
        except BaseException:
            _remove(self.path)
            raise
        _fsync_dir(os.path.dirname(self.target))
        for old in self._aside:
            _remove(old)
        return False

    def _flush(self):
        if not _fsync_wanted():
            return
        if _syncfs(self.path):
            return
        for path in self._written:
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        for folder in sorted({os.path.dirname(p) for p in self._written} | {self.path}, key=len, reverse=True):
            _fsync_dir(folder)

    def _switch(self):
        """The new directory in the target's place: swapped in one step where the system can, else the
        old moved aside and the new renamed in (retried while concurrent saves do the same)."""
        target = self.target
        for _ in range(50):
            if os.path.isdir(target):
                try:
                    if exchange(self.path, target):
                        self._aside.append(self.path)   # the old directory, under the temporary name now
                        return
                except FileNotFoundError:
                    continue
                old = temp_name(target, "old")
                try:
                    os.rename(target, old)
                except FileNotFoundError:
                    continue
                self._aside.append(old)
            try:
                os.rename(self.path, target)
                return
            except OSError as e:
                if e.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                    raise
        raise OSError(errno.EBUSY, "cannot put the new %s in place: other saves keep replacing it" % target)


def _cannot_swap(target, parent):
    """Why ``target`` cannot be replaced by a directory made beside it, or None."""
    if target == parent:
        return "it is the root directory"
    try:
        here = os.getcwd()
    except OSError:
        here = None
    if here is not None and (here == target or here.startswith(target.rstrip(os.sep) + os.sep)):
        return "it holds this process's working directory"
    try:
        if os.path.isdir(target) and os.stat(target).st_dev != os.stat(parent).st_dev:
            return "it is a mount point"
    except OSError:
        return None
    if not os.access(parent, os.W_OK | os.X_OK):
        return "its parent directory cannot be written"
    return None


def _fill_from(target, stage):
    """``stage`` starts as ``target`` was (hard links), with ``target``'s permissions."""
    try:
        fd = os.open(target, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except FileNotFoundError:
        return
    try:
        os.chmod(stage, stat.S_IMODE(os.fstat(fd).st_mode))
        _link_tree(fd, stage)
    finally:
        os.close(fd)


def _identity(path):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def read_consistently(dirname, read, attempts=3):
    """``read()`` of the directory ``dirname``, again when a concurrent save replaced the directory while
    it ran (what it read may then mix the two saves, which the checksums refuse); a directory that a
    killed save left moved aside is put back first."""
    recover(dirname)
    for attempt in range(attempts):
        before = _identity(dirname)
        try:
            return read()
        except Exception:
            if attempt + 1 == attempts or before is None or _identity(dirname) == before:
                raise
