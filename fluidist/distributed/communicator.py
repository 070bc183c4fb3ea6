"""A trainer's background Communicator (Paddle 1.8's ``AsyncCommunicator`` and
``HalfAsyncCommunicator``): the trainer program's ``send`` ops queue copies of the gradients, and
threads merge and send them, and receive the parameters, while the trainer computes.

Without a running communicator the trainer program's own ``send`` / ``recv`` ops talk to the
pservers in every step (fluidist's plain async mode). Started (``fleet.init_worker()`` under an
async or half-async strategy, or ``fluid.communicator.Communicator(program, mode).start()``), it
takes over the gradient ``send`` ops and the ``recv`` ops of the program it was made from:

- **async**: one queue per ``send`` op (``send_queue_size`` steps deep: a trainer that gets that far
  ahead waits). A send thread, in rounds, takes from each queue up to ``max_merge_var_num`` values
  (waiting ``send_wait_times`` x 10 ms for more), merges them (``communicator_flags.merge_values``:
  summed with ``is_sgd_optimizer``, else averaged) and sends the merge, on a pool of
  ``thread_pool_size`` threads. Parameters are received by an independent thread once more than
  ``min_send_grad_num_before_recv`` gradients went out (``independent_recv_thread``), else by the
  send thread after each round that sent something. The ``recv`` ops then do nothing: the program's
  ``concat`` ops join the blocks the communicator received.
- **half-async**: a ``send_barrier`` op with ``half_async`` ends every step: the trainer waits there
  while the communicator merges (averages) what the step queued, sends it, receives the parameters
  and wakes it. Paddle waited ``send_wait_times`` x 10 ms for more values before each send; at a
  barrier every value of the step is already queued, so fluidist does not wait.

``fake_rpc`` skips the network (for measuring the trainer alone); ``merge_sparse_grad=0`` sends
row-sparse gradients at once from the trainer's thread instead of queueing them.

One communicator per process (as Paddle's singleton). ``stop()`` sends what is still queued,
receives the parameters once more and ends the threads; ``Executor.close()`` (which tells the
pservers that the trainer is done) stops a running communicator first. A failure on a
communicator thread is raised by the trainer's next ``send`` / barrier, and by ``stop()``.
"""
import logging
import queue
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Optional

import numpy as np

from ..device.places import to_host
from ..core.scope import global_scope
from ..core.tensor import SelectedRows
from ..framework import registry
from . import rpc
from . import trainer_session as session
from .communicator_flags import CommunicatorFlags, merge_values

logger = logging.getLogger("fluidist.distributed.communicator")

SYNC, ASYNC, HALF_ASYNC, GEO = 0, 1, 2, 3
MODE_NAMES = {SYNC: "SYNC", ASYNC: "ASYNC", HALF_ASYNC: "HALF_ASYNC", GEO: "GEO"}
_POLL_S = 0.01               # Paddle's 10 ms between looks at an empty queue
_OP_ROLE_VAR = "op_role_var"

_active = None
_active_lock = threading.Lock()


def active():
    """The running communicator of this process, or None."""
    return _active


def _set_active(comm):
    global _active
    with _active_lock:
        if comm is not None and _active is not None and _active is not comm:
            raise RuntimeError("a %s communicator is already running in this process: stop it first (one "
                               "communicator per process, as in Paddle)" % MODE_NAMES[_active.mode])
        _active = comm


def _stop_active_before_complete():
    """``trainer_session`` hook: the pservers hear "complete" only after what is queued went out."""
    comm = _active
    if comm is not None:
        comm.stop()


session.before_complete(_stop_active_before_complete)


class CommunicatorError(RuntimeError):
    """A communicator thread failed; the message names what it was doing."""


def _copy(value):
    value = to_host(value)
    if isinstance(value, SelectedRows):
        return SelectedRows(np.array(to_host(value.rows), dtype=np.int64), np.array(to_host(value.value)),
                            value.height)
    return np.array(value, copy=True)


def _like(old, value):
    """``value`` (a host array) where ``old`` lives (a CuPy array stays on its device)."""
    if old is not None and not isinstance(old, np.ndarray) and hasattr(old, "__cuda_array_interface__"):
        import cupy
        return cupy.asarray(value)
    return value


class _SendCtx:
    """One gradient ``send`` op: its inputs, their pservers and wire names, and its queue."""

    def __init__(self, op, merge_add, depth):
        self.names = list(op.input("X"))
        self.endpoints = list(op.attr("epmap") or [])
        self.wire = list(op.attr("send_varnames") or []) or list(self.names)
        self.trainer = int(op.attr("trainer_id") or 0)
        self.merge_add = bool(op.attr("merge_add")) or merge_add
        if op.attr("sections"):
            raise ValueError("communicator: send op of %s splits by sections; fluidist's transpiler sends blocks"
                             % self.names)
        if len(self.endpoints) != len(self.names) or len(self.wire) != len(self.names):
            raise ValueError("communicator: send op of %s has %d endpoints and %d wire names for %d variables"
                             % (self.names, len(self.endpoints), len(self.wire), len(self.names)))
        self.queue = queue.Queue(maxsize=depth)


class _RecvCtx:
    """One ``recv`` op: what it writes, from where, under which names on the pservers."""

    def __init__(self, op):
        self.outs = list(op.output("Out"))
        self.endpoints = list(op.attr("epmap") or [])
        self.trainer = int(op.attr("trainer_id") or 0)
        remote = list(op.attr("recv_varnames") or [])
        self.concat = len(self.outs) == 1 and len(self.endpoints) > 1
        self.remote = remote if (remote or self.concat) else list(self.outs)


class Communicator:
    """Base of the trainer communicators: the process registry, start / stop, failures."""

    mode: Optional[int] = None

    def __init__(self, program, scope=None, flags=None):
        self.program = program
        self.scope = scope if scope is not None else global_scope()
        self.flags = flags if isinstance(flags, CommunicatorFlags) else CommunicatorFlags(flags)
        self._running = False
        self._stopping = threading.Event()
        self._error = None
        self._threads = []
        self._stopped_once = False
        self._pool = None

    # ---------------------------------------------------------------- lifetime
    def start(self):
        if self._running:
            raise RuntimeError("the communicator is already running")
        if self._stopped_once:
            raise RuntimeError("a stopped communicator cannot start again: make a new one")
        _set_active(self)
        self._running = True
        self._stopping.clear()
        for name, target in self._thread_targets():
            t = threading.Thread(target=self._guard, args=(target, name), name="fluidist-communicator-" + name,
                                 daemon=True)
            t.start()
            self._threads.append(t)

    def stop(self):
        """Send what is queued, end the threads; raises what a thread failed with."""
        if not self._running:
            return
        self._running = False
        self._stopped_once = True
        try:
            self._before_stop()
            self._stopping.set()
            self._wake()
            for t in self._threads:
                t.join()
            self._threads = []
            if self._error is None:
                self._after_stop()
        finally:
            if _active is self:
                _set_active(None)
            if self._pool is not None:
                self._pool.shutdown(wait=False)
        self._raise_if_failed()

    def is_running(self):
        return self._running

    def _thread_targets(self):
        return []

    def _before_stop(self):
        pass

    def _after_stop(self):
        pass

    def _wake(self):
        pass

    def _guard(self, target, name):
        try:
            target()
        except BaseException as e:   # recorded, raised on the trainer's thread
            self._error = (name, e)
            self._stopping.set()
            self._wake()
            logger.error("communicator %s thread failed: %s: %s", name, type(e).__name__, e)

    def _raise_if_failed(self):
        if self._error is not None:
            name, e = self._error
            raise CommunicatorError("the %s communicator's %s thread failed: %s: %s"
                                    % (MODE_NAMES.get(self.mode, "?"), name, type(e).__name__, e)) from e

    # ---------------------------------------------------------------- what ops ask
    def takes_send(self, op):
        return False

    def takes_recv(self, op):
        return False

    def push(self, op, values, scope):
        raise NotImplementedError

    def barrier(self):
        """A ``send_barrier`` with ``half_async``: nothing to wait for but in half-async mode."""
        self._raise_if_failed()


class AsyncCommunicator(Communicator):
    """Queues, merges and sends gradients from background threads; receives parameters (module doc)."""

    mode = ASYNC

    def __init__(self, program, scope=None, flags=None):
        super().__init__(program, scope, flags)
        self._sends = {}          # id(send op) -> _SendCtx
        self._recv_ops = set()
        self._recvs = []
        for op in program.global_block().ops:
            if registry.peer_direction(op) == "send" and op.attr(_OP_ROLE_VAR) and op.input("X"):
                self._sends[id(op)] = _SendCtx(op, self._merge_add(), self.flags.send_queue_size)
            elif registry.peer_direction(op) == "recv" and op.output("Out"):
                self._recv_ops.add(id(op))
                self._recvs.append(_RecvCtx(op))
        self._order = list(self._sends.values())
        self.endpoints = sorted({ep for c in self._order for ep in c.endpoints} |
                                {ep for c in self._recvs for ep in c.endpoints})
        self._grad_num = 0         # merged gradients of the first variable since the last receive
        self._count_lock = threading.Lock()
        self._wakeup = threading.Event()

    def _merge_add(self):
        return self.flags.is_sgd_optimizer

    def takes_send(self, op):
        return id(op) in self._sends

    def takes_recv(self, op):
        return id(op) in self._recv_ops

    def _thread_targets(self):
        self._pool = ThreadPoolExecutor(max_workers=self.flags.thread_pool_size,
                                        thread_name_prefix="fluidist-communicator-pool")
        targets = [("send", self._send_loop)]
        if self.flags.independent_recv_thread:
            targets.append(("recv", self._recv_loop))
        return targets

    def _wake(self):
        self._wakeup.set()

    def push(self, op, values, scope):
        """From the trainer's ``send`` kernel: a copy of this step's values joins the op's queue."""
        self._raise_if_failed()
        ctx = self._sends[id(op)]
        copied = [_copy(v) for v in values]
        if not self.flags.merge_sparse_grad and any(isinstance(v, SelectedRows) for v in copied):
            self._send(ctx, copied)
            return
        deadline = time.monotonic() + rpc.wait_limit()
        while True:
            try:
                ctx.queue.put(copied, timeout=0.1)
                break
            except queue.Full:
                self._raise_if_failed()
                if not self._running:
                    raise RuntimeError("the communicator is not running and the queue of %s is full "
                                       "(send_queue_size %d)" % (ctx.names[0], self.flags.send_queue_size))
                if time.monotonic() > deadline:
                    raise CommunicatorError("the queue of %s stayed full (send_queue_size %d) until the deadline "
                                            "(FLAGS_rpc_deadline): the communicator does not keep up, or a "
                                            "half-async step sends a variable more often than its queue holds"
                                            % (ctx.names[0], self.flags.send_queue_size))
        self._wakeup.set()

    # ---------------------------------------------------------------- sending
    def _take(self, ctx, wait):
        """Up to ``max_merge_var_num`` queued values of ``ctx``, waiting ``send_wait_times`` x 10 ms
        for more when ``wait`` (and not stopping)."""
        got, waited = [], 0
        while len(got) < self.flags.max_merge_var_num:
            try:
                got.append(ctx.queue.get_nowait())
                waited = 0
            except queue.Empty:
                if not wait or self._stopping.is_set() or waited >= self.flags.send_wait_times:
                    break
                time.sleep(_POLL_S)
                waited += 1
        return got

    def _merge_and_send(self, ctx, wait, merge_add):
        items = self._take(ctx, wait)
        if not items:
            return 0
        merged = [merge_values([item[i] for item in items], merge_add) for i in range(len(ctx.names))]
        self._send(ctx, merged)
        if ctx is self._order[0]:
            with self._count_lock:
                self._grad_num += len(items)
        return len(items)

    def _send(self, ctx, values):
        if self.flags.fake_rpc:
            return
        reqs = []
        for ep, wire, v in zip(ctx.endpoints, ctx.wire, values):
            reqs.append((ep, dict(kind="send", name=wire, value=v, trainer=ctx.trainer,
                                  step=session.step(ep, ctx.trainer) + 1, what="send %s (communicator)" % wire)))
        rpc.call_all(reqs)

    def _round(self, wait, merge_add):
        """Merge and send every non-empty queue, in parallel on the pool; how many values went out."""
        busy = [c for c in self._order if not c.queue.empty()]
        if not busy:
            return 0
        futures = [self._pool.submit(self._merge_and_send, c, wait, merge_add) for c in busy]
        return sum(f.result() for f in futures)

    def _send_loop(self):
        while not self._stopping.is_set():
            sent = self._round(True, self._merge_add())
            if not self.flags.independent_recv_thread:
                self._recv_if_sent(0)
            if not sent:
                self._wakeup.wait(_POLL_S)
                self._wakeup.clear()
        while self._round(False, self._merge_add()):     # stopping: send everything still queued
            pass

    def _recv_if_sent(self, more_than):
        with self._count_lock:
            due = self._grad_num > more_than
            if due:
                self._grad_num = 0
        if due:
            self.recv_all()
        return due

    def _recv_loop(self):
        while not self._stopping.is_set():
            if not self._recv_if_sent(self.flags.min_send_grad_num_before_recv):
                self._stopping.wait(_POLL_S)

    # ---------------------------------------------------------------- receiving
    def recv_all(self):
        """Receive every parameter the program's ``recv`` ops receive, into the scope."""
        if self.flags.fake_rpc or not self._recvs:
            return
        reqs, spans = [], []
        for ctx in self._recvs:
            spans.append(len(reqs))
            reqs += [(ep, dict(kind="get", name=n, trainer=ctx.trainer, step=session.step(ep, ctx.trainer),
                               what="recv %s (communicator)" % n)) for ep, n in zip(ctx.endpoints, ctx.remote)]
        replies = rpc.call_all(reqs)
        vals = self.scope.vals
        for ctx, at in zip(self._recvs, spans):
            got = [r.value for r in replies[at:at + len(ctx.endpoints)]]
            if any(v is None for v in got):
                raise rpc.RPCError("communicator: a pserver sent no value for %s" % ctx.remote)
            if ctx.concat:
                name = ctx.outs[0]
                vals[name] = _like(vals.get(name), np.concatenate([np.asarray(v) for v in got], axis=0))
            else:
                for name, v in zip(ctx.outs, got):
                    vals[name] = _like(vals.get(name), np.array(v, copy=True))

    def _after_stop(self):
        self.recv_all()


class HalfAsyncCommunicator(AsyncCommunicator):
    """Half-async (module doc): each step's ``send_barrier`` waits until the communicator has sent
    the step's merged gradients and received the parameters."""

    mode = HALF_ASYNC

    def __init__(self, program, scope=None, flags=None):
        super().__init__(program, scope, flags)
        self._cond = threading.Condition()
        self._waiting = 0        # trainer threads at the barrier
        self._trigger = 1        # how many must be there before a round (Paddle: its trainer threads)
        self._generation = 0

    def _merge_add(self):
        return False             # Paddle's half-async consume thread averages

    def _thread_targets(self):
        self._pool = ThreadPoolExecutor(max_workers=self.flags.thread_pool_size,
                                        thread_name_prefix="fluidist-communicator-pool")
        return [("consume", self._consume_loop)]

    def _wake(self):
        with self._cond:
            self._cond.notify_all()

    def barrier_trigger_reset(self, count):
        """How many trainer threads reach each barrier (Paddle's ``BarrierTriggerReset``)."""
        with self._cond:
            self._trigger = max(1, int(count))
            self._cond.notify_all()

    def barrier_trigger_decrement(self):
        """A trainer thread finished (Paddle's ``BarrierTriggerDecrement``)."""
        with self._cond:
            self._trigger = max(1, self._trigger - 1)
            self._cond.notify_all()

    def barrier(self):
        self._raise_if_failed()
        if not self._running:
            return
        limit = rpc.wait_limit()
        with self._cond:
            gen = self._generation
            self._waiting += 1
            self._cond.notify_all()
            deadline = time.monotonic() + limit
            while self._generation == gen and self._error is None and self._running:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise CommunicatorError("half-async barrier: the communicator did not finish the step's "
                                            "send and receive within %.1f s (FLAGS_rpc_deadline)" % limit)
                self._cond.wait(min(left, 0.5))
        self._raise_if_failed()

    def _consume_loop(self):
        while True:
            with self._cond:
                while self._waiting < self._trigger and not self._stopping.is_set():
                    self._cond.wait(0.5)
                if self._stopping.is_set() and self._waiting == 0:
                    break
            while self._round(False, False):
                pass
            self.recv_all()
            with self._cond:
                self._waiting = 0
                self._generation += 1
                self._cond.notify_all()
        while self._round(False, False):     # stopping: what a step queued without reaching its barrier
            pass


__all__ = ["Communicator", "AsyncCommunicator", "HalfAsyncCommunicator", "CommunicatorError", "active",
           "SYNC", "ASYNC", "HALF_ASYNC", "GEO"]
