"""Same-host payloads for the parameter-server transport: big array buffers travel through shared
memory (``/dev/shm``) while the messages themselves, small, still go over ZeroMQ.

Between a trainer and a pserver on one host, TCP over loopback copies every byte four times (into the
kernel and out of it, both ways) and the trainer copies received blocks once more into its
parameters. Here a sender copies each big buffer once into a segment it owns, the receiver reads it
in place; a pserver in sync mode even keeps its parameter blocks in its own segments, so that a
trainer's ``get`` is answered without any copy on the pserver and the trainer copies each block
straight into its parameter (see ``rpc_ops.recv``). TensorPipe does the same on one machine.

A message with payloads in shared memory is ``[MAGIC, descriptor, header, *frames]`` where the
frames moved to shared memory are empty and the descriptor (JSON) says, for each, the segment, the
offset and the length; ``unpack`` puts views of the mapped segments back in their places, so that
``wire.decode`` sees the message as it was encoded. Nothing else changes on the wire.

Who may reuse what (the parameter-server protocol guarantees it): a sender's segment for a
(peer, variable) is written again only once the request that used it has been answered (trainers) or
once the peer asked again (a pserver's reply copies); a receiver reads a payload before it answers
(async updates, sums on arrival) or before the next sync round (stored gradients), and a trainer
copies received parameters out at once. A pserver's resident parameter blocks change only in its sync
rounds, which wait for every trainer's next barrier, sent after that trainer copied them out.

When: ``FLUIDIST_PS_TRANSPORT`` = ``auto`` (default: shared memory when the pserver's address is
this host's: loopback or one of its interfaces), ``shm`` (always) or ``tcp`` (never). Buffers below
``FLUIDIST_PS_SHM_MIN_BYTES`` (default 64 KiB) stay in the message. Segments are files
``/dev/shm/fluidist-ps-<pid>-<start>-t<image>-<n>`` (``start``: when the process started, in hex, so that a
process with a reused pid never meets a name of the earlier one; ``image``: drawn at random when this module
is loaded, so that a process that ``exec``s never meets the names its former program made), allocated up
front and created 0600 by their owner, removed when it exits; those of a process killed before its exit
hooks ran (or of the program a process replaced by ``exec``) are removed by the next process here that
makes segments once that process is gone. A receiver maps only private regular files of its own user, and
checks at each use that the file still holds the range (see ``Inbox.view``).
"""
import atexit
import itertools
import json
import logging
import mmap
import os
import re
import secrets
import socket
import stat
import threading

import numpy as np

from .. import bounded_json
from .collective.common import pid_alive, pid_start_ticks
from .collective.shm import SegmentSpaceError, create_segment

MAGIC = b"fluidist-shm/1"
SHM_DIR = "/dev/shm"
PREFIX = "fluidist-ps-"
MODE_ENV = "FLUIDIST_PS_TRANSPORT"
MIN_BYTES_ENV = "FLUIDIST_PS_SHM_MIN_BYTES"
# fluidist-ps-<pid>-<start>-t<image>-<n>; older names lack the image part, the oldest the start part too
_NAME = re.compile(r"^fluidist-ps-(\d+)-(?:([0-9a-f]+)-)?(?:t[0-9a-f]+-)?\d+$")
_ALIGN = 64
logger = logging.getLogger("fluidist.distributed.shm_payload")
MAX_DESCRIPTOR_BYTES = 1 << 16
MAX_MAPPED = 1024           # peers' segments kept mapped at once


class ShmError(ValueError):
    """A shared-memory descriptor that cannot be honoured (malformed, or a segment that cannot be mapped)."""


def mode():
    v = os.environ.get(MODE_ENV, "auto").strip().lower() or "auto"
    if v not in ("auto", "shm", "tcp"):
        raise ValueError("%s must be auto, shm or tcp, got %r" % (MODE_ENV, v))
    return v


def min_bytes():
    raw = os.environ.get(MIN_BYTES_ENV, "").strip()
    return int(raw) if raw else 64 * 1024


def supported():
    return os.path.isdir(SHM_DIR) and os.access(SHM_DIR, os.W_OK)


_local_addrs = None


def _is_local_host(host):
    global _local_addrs
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    addrs = {i[4][0] for i in infos}
    if any(a.startswith("127.") or a == "::1" for a in addrs):
        return True
    if _local_addrs is None:
        found = set()
        try:
            found |= {i[4][0] for i in socket.getaddrinfo(socket.gethostname(), None)}
        except OSError:
            pass
        _local_addrs = found
    return bool(addrs & _local_addrs)


def use_for(host):
    """Whether a client of a pserver at ``host`` sends its big buffers through shared memory."""
    m = mode()
    if m == "tcp" or not supported() or _fallback is not None:
        return False
    return m == "shm" or _is_local_host(host)


_fallback = None      # why this process stopped putting payloads in shared memory (None: it has not)


def _no_room(err):
    """A segment did not fit in /dev/shm: with ``auto``, this process sends its payloads over TCP from
    now on (said once); with ``shm`` asked for, that is an error naming the way out."""
    global _fallback
    if mode() == "shm":
        raise ShmError("%s; set %s=tcp to send payloads over TCP" % (err.strerror, MODE_ENV)) from None
    if _fallback is None:
        _fallback = err.strerror
        logger.warning("parameter-server payloads of process %d go over TCP from now on: %s (%s=tcp skips shared "
                       "memory from the start)", os.getpid(), err.strerror, MODE_ENV)


# ------------------------------------------------------------------------------------ own segments
class _Segment:
    """A segment this process created: a file in /dev/shm mapped read-write."""

    _ids = itertools.count()

    def __init__(self, size):
        self.size = max(int(size), _ALIGN)
        self.name = "%s%d-%s-t%s-%d" % (PREFIX, os.getpid(), _own_start(), _IMAGE, next(self._ids))
        self.path = os.path.join(SHM_DIR, self.name)
        self.mm = create_segment(self.path, self.size)
        self.buf = np.frombuffer(self.mm, dtype=np.uint8)
        self.addr = self.buf.__array_interface__["data"][0]
        self.busy = None          # the request (client, rid) whose payload it holds, until answered

    def unlink(self):
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


_start = None
# This program image's own part of the names: a process that ``exec``s keeps its pid and start time, and
# the new image's counter starts again at 0, while the old image's segments are still there.
_IMAGE = secrets.token_hex(4)


def _own_start():
    """This process's start time in hex (a random token where /proc cannot tell): with the pid, a name
    no other process, past or present, uses."""
    global _start
    if _start is None or _start[0] != os.getpid():
        ticks = pid_start_ticks(os.getpid())
        _start = (os.getpid(), "%x" % ticks if ticks is not None else secrets.token_hex(8))
    return _start[1]


def _addr_len(arr):
    return arr.__array_interface__["data"][0], arr.nbytes


class Outbox:
    """This process's own segments: per-key slots for outgoing payloads (reused once free) and
    resident homes of arrays (a pserver's parameter blocks)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._slots = {}          # key -> [segment]
        self._resident = []       # segments holding resident arrays
        self._homes = {}          # key -> its resident segment
        self._all = []
        self._pid = os.getpid()

    def _new(self, size):
        seg = _Segment(size)
        self._all.append(seg)
        return seg

    def slot(self, key, size, owner, headroom=1.0):
        """A free segment of at least ``size`` bytes for ``key``, marked busy for ``owner`` (one made
        anew has ``headroom`` times that size, rounded up to the alignment)."""
        with self._lock:
            segs = self._slots.setdefault(key, [])
            made = -(-int(size * headroom) // _ALIGN) * _ALIGN
            for i, seg in enumerate(segs):
                if seg.busy is None:
                    if seg.size < size:
                        seg.unlink()
                        self._all.remove(seg)
                        del segs[i]
                        seg = self._new(made)
                        segs.insert(i, seg)
                    seg.busy = owner
                    return seg
            seg = self._new(made)
            seg.busy = owner
            segs.append(seg)
            return seg

    def resident(self, arr, key):
        """``arr``'s data in a segment of ours: ``arr`` itself if it already lives in one, else a
        copy in ``key``'s home segment (made, or remade when too small; the caller stores the copy
        in ``arr``'s place)."""
        if self.locate(arr) is not None:
            return arr
        if _fallback is not None:
            return arr
        with self._lock:
            seg = self._homes.get(key)
            if seg is None or seg.size < arr.nbytes:
                if seg is not None:
                    del self._homes[key]
                    self._resident.remove(seg)
                    self._all.remove(seg)
                    seg.unlink()
                try:
                    seg = self._new(arr.nbytes)
                except SegmentSpaceError as e:
                    _no_room(e)
                    return arr
                self._homes[key] = seg
                self._resident.append(seg)
        out = seg.buf[:arr.nbytes].view(arr.dtype).reshape(arr.shape)
        np.copyto(out, arr)
        return out

    def locate(self, arr):
        """(segment name, offset) when ``arr`` is a C-contiguous array inside a resident segment."""
        if not isinstance(arr, np.ndarray) or not arr.flags.c_contiguous:
            return None
        a, n = _addr_len(arr)
        for seg in self._resident:
            if seg.addr <= a and a + n <= seg.addr + seg.size:
                return seg.name, a - seg.addr
        return None

    def close(self):
        with self._lock:
            for seg in self._all:
                seg.unlink()
            self._all, self._slots, self._resident, self._homes = [], {}, [], {}


_outbox = None
_outbox_lock = threading.Lock()


def outbox():
    global _outbox
    if _outbox is None or _outbox._pid != os.getpid():
        with _outbox_lock:
            if _outbox is None or _outbox._pid != os.getpid():
                reclaim_stale_segments()
                _outbox = Outbox()
    return _outbox


def reclaim_stale_segments():
    """Remove segments left by processes of this user that died without running their exit hooks
    (SIGKILL, SIGTERM without a handler), also when their pid now belongs to another process. Returns
    the names removed."""
    gone = []
    try:
        names = os.listdir(SHM_DIR)
    except OSError:
        return gone
    me = os.getuid()
    for name in names:
        found = _NAME.match(name)
        if not found or not _owner_gone(int(found.group(1)), found.group(2)):
            continue
        path = os.path.join(SHM_DIR, name)
        try:
            if os.stat(path, follow_symlinks=False).st_uid != me:
                continue
            os.unlink(path)
            gone.append(name)
        except OSError:
            continue
    return gone


def _owner_gone(pid, start):
    if not pid_alive(pid):
        return True
    if start is None or not re.fullmatch(r"[0-9a-f]{1,15}", start):
        return False
    ticks = pid_start_ticks(pid)
    return ticks is not None and ticks != int(start, 16)     # the pid was reused by a later process


@atexit.register
def _remove_own_segments():
    if _outbox is not None and _outbox._pid == os.getpid():
        _outbox.close()


# ------------------------------------------------------------------------------------ peers' segments
class _Mapped:
    """A peer's segment mapped read-only: a regular file of this user, private to it (0600), opened without
    following links or blocking (a FIFO or a directory in its place is refused, never waited on)."""

    __slots__ = ("mm", "size", "buf", "addr", "ino")

    def __init__(self, name):
        path = os.path.join(SHM_DIR, name)
        flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(path, flags)
        except OSError as e:
            raise ShmError("cannot open shared-memory segment %s: %s (are the processes on one host and do "
                           "they share /dev/shm? set %s=tcp otherwise)" % (path, e.strerror, MODE_ENV)) from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise ShmError("shared-memory segment %s is not a regular file" % path)
            if st.st_uid != os.getuid() or stat.S_IMODE(st.st_mode) & 0o077:
                raise ShmError("shared-memory segment %s is not a private file of this user (uid %d, mode %04o)"
                               % (path, st.st_uid, stat.S_IMODE(st.st_mode)))
            self.size = st.st_size
            self.ino = st.st_ino
            try:
                self.mm = mmap.mmap(fd, self.size, prot=mmap.PROT_READ) if self.size else None
            except (OSError, ValueError, OverflowError) as e:
                raise ShmError("cannot map shared-memory segment %s: %s" % (path, e)) from None
        finally:
            os.close(fd)
        self.buf = memoryview(self.mm) if self.mm is not None else memoryview(b"")
        self.addr = np.frombuffer(self.mm, dtype=np.uint8).__array_interface__["data"][0] if self.size else 0


class Inbox:
    """Peers' segments, mapped read-only on first use and kept mapped (a peer's slots are reused)."""

    def __init__(self):
        self._maps = {}
        self._lock = threading.Lock()

    def view(self, name, offset, nbytes):
        if not isinstance(name, str) or not _NAME.match(name):
            raise ShmError("bad shared-memory segment name %r" % (name,))
        if type(offset) is not int or type(nbytes) is not int or offset < 0 or nbytes < 0:
            raise ShmError("bad shared-memory range %r+%r" % (offset, nbytes))
        try:   # the file now: replaced or truncated since it was mapped, it is mapped again (or refused)
            st = os.stat(os.path.join(SHM_DIR, name), follow_symlinks=False)
        except OSError as e:
            raise ShmError("cannot open shared-memory segment %s: %s (are the processes on one host and do they "
                           "share /dev/shm? set %s=tcp otherwise)" % (os.path.join(SHM_DIR, name), e.strerror,
                                                                       MODE_ENV)) from None
        with self._lock:
            m = self._maps.get(name)
            if m is None or m.ino != st.st_ino or st.st_size < m.size or offset + nbytes > m.size:
                m = _Mapped(name)
                self._maps.pop(name, None)
                while len(self._maps) >= MAX_MAPPED:   # oldest first; views still in use keep theirs alive
                    self._maps.pop(next(iter(self._maps)))
                self._maps[name] = m
        if offset + nbytes > m.size:
            raise ShmError("range %d+%d lies outside segment %s of %d bytes" % (offset, nbytes, name, m.size))
        return m.buf[offset:offset + nbytes]

    def contains(self, arr):
        a, n = _addr_len(arr)
        for m in list(self._maps.values()):
            if m.addr <= a and a + n <= m.addr + m.size and m.size:
                return True
        return False

    def forget(self, name):
        with self._lock:
            self._maps.pop(name, None)


_inbox = Inbox()


# ------------------------------------------------------------------------------------ messages
def _nbytes(frame):
    return memoryview(frame).nbytes


def pack(frames, key, owner, resident_ok=False, snapshot=False, announce=False, headroom=1.0):
    """``frames`` (``[header, *buffers]`` from ``wire.encode``) with the big buffers moved to shared
    memory: returns the frames to send and the slot segment used (or None). ``key`` names the slot
    (one per peer and variable); the slot stays busy (``segment.busy = owner``) until the caller
    frees it (``owner`` None: free at once, reused by the next message of ``key``). With
    ``resident_ok``, a buffer that already lies in a resident segment is referenced, not copied;
    with ``snapshot``, the buffers left in the message are copied too (their arrays may change
    before ZeroMQ has sent them); with ``announce``, a message without big buffers still carries an
    (empty) descriptor, which tells the receiver that the sender reads shared memory. ``headroom``:
    a slot made anew is that much larger than needed (messages of a key whose size varies, such as
    a step's batch, then reuse it)."""
    out, desc, seg = pack_buffers(frames, key, owner, resident_ok, snapshot, headroom)
    if not desc:
        return ([MAGIC, b"[]"] + out if announce else out), None
    return [MAGIC, json.dumps(desc, separators=(",", ":")).encode()] + out, seg


def pack_buffers(frames, key, owner, resident_ok=False, snapshot=False, headroom=1.0):
    """``pack``'s work on ``frames[1:]``: (the frames with the moved buffers emptied, the descriptor
    entries ``[index, segment, offset, length]``, the slot segment used or None). A caller that joins
    several packed parts into one message shifts the entries' indices."""
    if _fallback is not None:
        return list(frames), [], None
    limit = min_bytes()
    big = [i for i in range(1, len(frames)) if _nbytes(frames[i]) >= limit]
    if snapshot:
        frames = [f if i == 0 or i in big else bytes(memoryview(f).cast("B")) for i, f in enumerate(frames)]
    if not big:
        return list(frames), [], None
    box = outbox()
    desc, copy = [], []
    for i in big:
        where = box.locate(_as_array(frames[i])) if resident_ok else None
        if where is not None:
            desc.append([i, where[0], where[1], _nbytes(frames[i])])
        else:
            copy.append(i)
    seg = None
    if copy:
        offsets, total = [], 0
        for i in copy:
            offsets.append(total)
            total += -(-_nbytes(frames[i]) // _ALIGN) * _ALIGN
        try:
            seg = box.slot(key, total, owner, headroom)
        except SegmentSpaceError as e:
            _no_room(e)
            return list(frames), [], None
        for i, off in zip(copy, offsets):
            src = _as_array(frames[i])
            np.copyto(seg.buf[off:off + src.nbytes], src)
            desc.append([i, seg.name, off, src.nbytes])
    out = list(frames)
    for i, *_ in desc:
        out[i] = b""
    return out, desc, seg


def _as_array(frame):
    if isinstance(frame, np.ndarray):
        return frame.reshape(-1).view(np.uint8)
    return np.frombuffer(memoryview(frame).cast("B"), dtype=np.uint8)


def is_packed(frames):
    return len(frames) >= 2 and _nbytes(frames[0]) == len(MAGIC) and bytes(frames[0]) == MAGIC


def unpack(frames):
    """The frames of a received message with shared-memory payloads put back as read-only views;
    a message without them is returned as it is. Raises ``ShmError`` on a bad descriptor."""
    if not is_packed(frames):
        return frames
    raw = frames[1].bytes if hasattr(frames[1], "bytes") else bytes(frames[1])
    try:
        desc = bounded_json.loads(raw, "shared-memory descriptor", MAX_DESCRIPTOR_BYTES, 2)
    except bounded_json.JSONBoundsError as e:
        raise ShmError(str(e)) from None
    body = list(frames[2:])
    if not isinstance(desc, list):
        raise ShmError("shared-memory descriptor must be a list")
    seen = set()
    for entry in desc:
        if not (isinstance(entry, list) and len(entry) == 4 and type(entry[0]) is int):
            raise ShmError("bad shared-memory descriptor entry %r" % (entry,))
        i, name, offset, nbytes = entry
        if not 1 <= i < len(body) or i in seen or _nbytes(body[i]) != 0:
            raise ShmError("shared-memory descriptor names frame %r, which is not an empty payload frame" % i)
        seen.add(i)
        body[i] = _inbox.view(name, offset, nbytes)
    return body


def is_shared(arr):
    """Whether ``arr`` lies in a peer's segment (its contents may change: copy it before keeping it)."""
    return isinstance(arr, np.ndarray) and arr.nbytes > 0 and _inbox.contains(arr)
