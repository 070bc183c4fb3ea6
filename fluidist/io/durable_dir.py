"""The directory half of :mod:`fluidist.io.durable`.

A directory save is written as a new directory beside the old one
(``.<name>.fluidist-new-<host>-<pid>-<random>``), which starts as hard links to the old one's files (a
save into a directory keeps what earlier saves put there, as in Paddle) and gets the new files; it is
flushed to the disk as a whole (``syncfs``, or ``fsync`` per file where that is missing), then swapped with
the old directory in one step (``renameat2(RENAME_EXCHANGE)``), and the old one, now under the temporary
name, is removed. Where the file system cannot swap (not Linux, some network file systems), the old
directory is renamed aside (``.<name>.fluidist-old-...``) and the new one into its place: a kill between
the two renames leaves no directory under the name, and the next load or save puts the old one back.

A directory that is a mount point, whose parent cannot be written, or that holds this process's working
directory cannot be swapped: it is then written file by file, each file replaced whole, the index last (a
warning says so once); a kill in the middle then leaves files of two saves, which the checksums of the
index refuse to load.

A load that overlaps a concurrent save's swap reads again (:func:`read_consistently`).
"""
from __future__ import annotations

import ctypes
import errno
import os
import shutil
import stat

from .durable import (_TEMP, _dead_leftovers, _fsync_dir, _fsync_wanted, _logger, _remove, _write_new, recover,
                      remove_stale, temp_name, write_file)

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
_SYS_RENAMEAT2 = {"x86_64": 316, "aarch64": 276, "ppc64le": 357, "s390x": 347}
_warned_in_place: set = set()


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
        for name, m in _dead_leftovers(self.target):     # what killed saves of its files left
            if m.group("kind") == "tmp":
                _remove(os.path.join(self.target, name))
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
            write_file(path, blob, tidy=False)
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
                    self._put_back(target)
                    raise
        raise OSError(errno.EBUSY, "cannot put the new %s in place: other saves keep replacing it" % target)


    def _put_back(self, target):
        """After a failed rename: the directory this save moved aside goes back where it was."""
        while self._aside and self._aside[-1] != self.path and not os.path.lexists(target):
            try:
                os.rename(self._aside.pop(), target)
            except OSError:
                break


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
