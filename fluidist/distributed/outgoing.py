"""A trainer's outgoing requests between the op that posts them and the message that carries them.

A ``send`` op hands its gradient blocks to the transport (``rpc.post``) and returns; they leave with the
step's next exchange with that pserver, as parts of one message (``wire``'s batch). On one host each
part's big buffers are copied into the trainer's shared-memory slots (``shm_payload``): where the
process has cores to spare (``FLUIDIST_PS_SEND_THREAD``), by the transport's own thread as soon as the
part is posted, while the backward pass goes on computing the next gradients (NumPy's copies and BLAS
both release the GIL), and the step's message then only waits for the copies still in flight;
elsewhere when the message leaves (on 2 cores shared by 2 trainers and 2 pservers the thread's copies
slowed the 10M-parameter MLP's backward pass by half and gained nothing on the CTR model). Encoding
(and with it every check of the value) happens at once, in the posting op, so a value that cannot
travel still fails in that op.
"""
import os
import queue
import threading

from . import shm_payload, wire

SLOT_HEADROOM = 1.25     # a part's slot made anew has room for the next steps' (row-sparse sizes vary)
SEND_THREAD_ENV = "FLUIDIST_PS_SEND_THREAD"
SEND_THREAD_MIN_CORES = 4
_cores: dict = {}        # pid -> the cores it may run on (asked once per process)


def copies_in_background():
    """Whether posted parts are copied into shared memory by the transport thread:
    ``FLUIDIST_PS_SEND_THREAD`` = ``auto`` (default: when this process may run on at least
    ``SEND_THREAD_MIN_CORES`` cores), ``1`` or ``0``."""
    raw = os.environ.get(SEND_THREAD_ENV, "auto").strip().lower() or "auto"
    if raw == "auto":
        if _cores.get(os.getpid()) is None:
            try:
                _cores[os.getpid()] = len(os.sched_getaffinity(0))
            except (AttributeError, OSError):
                _cores[os.getpid()] = os.cpu_count() or 1
        return _cores[os.getpid()] >= SEND_THREAD_MIN_CORES
    if raw in ("1", "0"):
        return raw == "1"
    raise ValueError("%s must be auto, 1 or 0, got %r" % (SEND_THREAD_ENV, raw))


class Part:
    """One request of a batch: ``kw`` (``rpc.Client.request``'s keyword arguments), its encoded header
    and buffers, and, once ``copy_to_slot`` ran, its descriptor entries (``[buffer index, segment,
    offset, length]``, the index counted from 0 among its buffers) with the buffers moved emptied.
    An ``optional`` part (a look-ahead the trainer may do without: ``prefetch_ahead``) does not fail
    its batch when the pserver refuses it: its error reply goes to whoever posted it."""

    __slots__ = ("kw", "header", "buffers", "desc", "segment", "trainer", "what", "optional", "_done", "_error")

    def __init__(self, kw, optional=False):
        self.kw = kw
        self.optional = optional     # an error reply to it is its reply, not the batch's failure
        rest = dict(kw)
        kind, name, step = rest.pop("kind"), rest.pop("name", None), rest.pop("step", 0)
        self.trainer = rest.pop("trainer", 0)
        self.what = rest.pop("what", None) or ("%s %s" % (kind, name or "")).strip()
        self.header, self.buffers = wire.encode_part(kind, name, rest.pop("value", None), step,
                                                     rest.pop("lod", None), **rest)
        self.desc = []
        self.segment = None
        self._done = None
        self._error = None

    def big(self):
        """Whether some buffer of this part travels through shared memory."""
        limit = shm_payload.min_bytes()
        return any(memoryview(b).nbytes >= limit for b in self.buffers)

    def copy_to_slot(self, endpoint, owner, background=False):
        """Copy the big buffers into this part's slot of ``endpoint`` (busy for ``owner`` until freed);
        with ``background``, on the transport thread (``finish`` waits for it)."""
        if not background:
            self._copy(endpoint, owner)
            return
        self._done = threading.Event()
        _submit(lambda: self._copy(endpoint, owner))

    def _copy(self, endpoint, owner):
        try:
            packed, entries, self.segment = shm_payload.pack_buffers(
                [None] + self.buffers, (endpoint, "part", self.header.get("name")), owner, headroom=SLOT_HEADROOM)
            self.buffers = packed[1:]
            self.desc = [[i - 1] + rest for i, *rest in entries]
        except BaseException as e:      # raised by finish(), in the thread that sends the part
            self._error = e
        finally:
            if self._done is not None:
                self._done.set()

    def finish(self):
        """Wait for a copy still in flight; raise what it failed with."""
        if self._done is not None:
            self._done.wait()
            self._done = None
        if self._error is not None:
            error, self._error = self._error, None
            raise error


# ------------------------------------------------------------------------------------ the thread
_worker = {"pid": None, "jobs": None}
_worker_lock = threading.Lock()


def _submit(job):
    """Run ``job`` on this process's transport thread (started on first use, and again after a fork)."""
    if _worker["pid"] != os.getpid():
        with _worker_lock:
            if _worker["pid"] != os.getpid():
                jobs = queue.SimpleQueue()
                threading.Thread(target=_serve, args=(jobs,), name="fluidist-transport", daemon=True).start()
                _worker["jobs"], _worker["pid"] = jobs, os.getpid()
    _worker["jobs"].put(job)


def _serve(jobs):
    while True:
        jobs.get()()
