"""The parameter server's event loop: what one ``listen_and_serv`` op runs.

One thread, one ROUTER socket (``rpc.Server``):
- SYNC (distributed_mode 0): grads are stored as they arrive. A round (LR-decay block once, then the
  other optimize blocks in order) runs when every trainer that has not completed has sent its
  ``send_barrier`` for that step. A trainer's ``get`` (and ``fetch_barrier``, ``prefetch``) is
  answered once the pserver has run as many rounds as that trainer has sent barriers, so the
  start-up gets (before any barrier) are answered at once and nobody deadlocks. When some trainer
  has sent its barrier and another has not within the deadline, every waiting trainer gets an error
  naming the missing trainer ids and the loop raises: a dead trainer never makes anyone hang.
- ASYNC (1) and HALF_ASYNC (2): each grad runs its optimize block (``grad_to_block_id``) when it
  arrives; gets are answered at once (with a copy: the next update writes the parameter in place);
  barriers are acknowledged and ignored. The LR-decay block, if any, runs once at start (as Paddle's
  async loop does with a block bound to no grad).
- GEO (3) is not supported.
It serves until each of the ``Fanin`` trainers has sent "complete", then returns. The blocks it runs
are run by a callback: the loop itself knows programs only as data (names, dtypes, shapes).
"""
import os
import re
import time

import numpy as np

from ..core.place import to_host
from ..core.tensor import SelectedRows
from . import rpc, shm_payload
from .arrival_sums import ArrivalSums

SYNC, ASYNC, HALF_ASYNC, GEO = 0, 1, 2, 3
LOOKUP_TABLE_PATH = "kLookupTablePath"
TRAINER_ID_VAR = "@TRAINER_ID@"
_TRAINER_SUFFIX = re.compile(r"\.trainer_\d+$")


class _BadRequest(Exception):
    """The request is wrong; the sender gets an error reply and the pserver keeps serving."""


class _Fatal(Exception):
    """The pserver cannot go on; every waiting trainer is told why, then listen_and_serv raises."""


def _pairs(entries, what):
    out = {}
    for e in entries or []:
        name, sep, idx = str(e).rpartition(":")
        if not sep or not name:
            raise ValueError("listen_and_serv: %s entry %r must be 'name:block_index'" % (what, e))
        try:
            out[name] = int(idx)
        except ValueError:
            raise ValueError("listen_and_serv: %s entry %r: %r is not a block index" % (what, e, idx)) from None
    return out


def _plural(ids):
    ids = sorted(ids)
    return ("trainer %d" % ids[0]) if len(ids) == 1 else "trainers %s" % ", ".join(str(i) for i in ids)


class ParameterServer:
    """The state and event loop of one ``listen_and_serv`` op."""

    def __init__(self, program, scope, attrs, run_block, to_place, deadline_ms=None):
        """``run_block(idx[, prog])`` runs block ``idx`` of ``program`` (or of ``prog``, a copy of it) in
        ``scope`` (the kernel's executor does);
        ``to_place(value)`` moves a received value to the place the blocks run on."""
        self.program = program
        self.run_block = run_block
        self.to_place = to_place
        self.endpoint = attrs["endpoint"]
        rpc.split_endpoint(self.endpoint)
        self.fanin = int(attrs["Fanin"])
        if self.fanin < 1:
            raise ValueError("listen_and_serv: Fanin must be >= 1, got %d" % self.fanin)
        mode = int(attrs["distributed_mode"])
        if mode == GEO:
            raise NotImplementedError("listen_and_serv on %s: distributed_mode 3 (GEO-SGD) is not supported "
                                      "by fluidist" % self.endpoint)
        if mode not in (SYNC, ASYNC, HALF_ASYNC):
            raise ValueError("listen_and_serv: unknown distributed_mode %r (0 SYNC, 1 ASYNC, 2 HALF_ASYNC)" % mode)
        self.sync = mode == SYNC
        self.dc_asgd = bool(attrs.get("dc_asgd"))
        blocks = attrs.get("optimize_blocks") or []
        nblocks = self.program.num_blocks
        self.lr_block = int(attrs.get("lr_decay_block_id", -1))
        self.grad_to_block = _pairs(attrs.get("grad_to_block_id"), "grad_to_block_id")
        self.prefetch_blocks = _pairs(attrs.get("prefetch_var_name_to_block_id"), "prefetch_var_name_to_block_id")
        self.checkpoint_block = int(attrs.get("checkpint_block_id", -1))
        for what, idx, optional in ([("lr_decay_block_id", self.lr_block, True),
                                     ("checkpint_block_id", self.checkpoint_block, True)]
                                    + [("grad_to_block_id", i, False) for i in self.grad_to_block.values()]
                                    + [("prefetch_var_name_to_block_id", i, False)
                                       for i in self.prefetch_blocks.values()]):
            if not (1 <= idx < nblocks or (optional and idx == -1)):
                raise ValueError("listen_and_serv: %s names block %d but the program has blocks 1..%d to serve"
                                 % (what, idx, nblocks - 1))
        self.round_blocks = [b.idx for b in blocks if b.idx != self.lr_block]
        self.sums = ArrivalSums(program, self.round_blocks, self.fanin) if self.sync else None
        self.gb = self.program.global_block()
        self.scope = scope
        self.deadline_ms = deadline_ms
        # sync state
        self.barriers = [0] * self.fanin
        self.rounds = 0
        self.completed = set()
        self.deferred = []            # requests waiting for a round
        self.wait_since = None        # when the first barrier of the next round arrived
        self.server = None
        # a trainer that sends nothing for this long and never closed is taken for dead
        self.idle_limit = float(os.environ.get("FLUIDIST_TRAINER_IDLE_TIMEOUT", "600"))
        self.last_seen = [time.monotonic()] * self.fanin

    # -------------------------------------------------------------- loop
    def serve(self):
        self.server = rpc.Server(self.endpoint, self.deadline_ms)
        try:
            if not self.sync and self.lr_block >= 0 and self.lr_block not in self.grad_to_block.values():
                self._run(self.lr_block, "the learning-rate block")
            while len(self.completed) < self.fanin:
                req = self.server.recv(self._poll_timeout())
                if req is not None:
                    try:
                        self._handle(req)
                    except _BadRequest as e:
                        self.server.error(req, str(e))
                    except _Fatal as e:
                        self.server.error(req, "pserver %s stopped: %s" % (self.endpoint, e))
                        raise
                self._check_deadline()
        except _Fatal as e:
            for req in self.deferred:
                self.server.error(req, "pserver %s stopped: %s" % (self.endpoint, e))
            self.deferred = []
            raise RuntimeError("pserver %s: %s" % (self.endpoint, e)) from None
        finally:
            self.server.close()

    def _poll_timeout(self):
        if self.wait_since is None:
            return 1.0
        left = self.wait_since + self.server.deadline() - time.monotonic()
        return min(1.0, max(0.0, left) + 0.001)

    def _check_deadline(self):
        now = time.monotonic()
        silent = [k for k in range(self.fanin)
                  if k not in self.completed and now - self.last_seen[k] > self.idle_limit]
        if silent:
            raise _Fatal("%s sent nothing for %.1f s and never closed (Executor.close()); a trainer died or "
                         "hangs (FLUIDIST_TRAINER_IDLE_TIMEOUT)" % (_plural(silent), self.idle_limit))
        if self.wait_since is None:
            return
        waited = time.monotonic() - self.wait_since
        limit = self.server.deadline()
        if waited < limit:
            return
        arrived = [k for k in range(self.fanin) if self.barriers[k] > self.rounds]
        missing = [k for k in range(self.fanin) if self.barriers[k] <= self.rounds and k not in self.completed]
        raise _Fatal("%s did not send the barrier of step %d within %.1f s (%s did); a trainer died or hangs"
                     % (_plural(missing), self.rounds + 1, limit, _plural(arrived)))

    # -------------------------------------------------------------- requests
    def _handle(self, req):
        m = req.msg
        k = m.trainer
        if not 0 <= k < self.fanin:
            raise _BadRequest("trainer id %d is out of range: pserver %s serves Fanin=%d trainers (ids 0..%d)"
                              % (k, self.endpoint, self.fanin, self.fanin - 1))
        if k in self.completed:
            raise _BadRequest("trainer %d already sent 'complete' to pserver %s; it cannot send %r"
                              % (k, self.endpoint, m.kind))
        self.last_seen[k] = time.monotonic()
        kind = m.kind
        if kind == "send":
            self._store(m)
            if not self.sync:
                self._apply_async(m)
            self.server.reply(req)
        elif kind in ("get", "fetch_barrier", "prefetch"):
            if self.sync and self.rounds < self.barriers[k]:
                self.deferred.append(req)
            else:
                self._answer(req)
        elif kind == "send_barrier":
            self.server.reply(req)
            if self.sync:
                self.barriers[k] += 1
                self._advance()
        elif kind == "complete":
            self.completed.add(k)
            self.server.reply(req)
            if self.sync:
                self._advance()
        elif kind == "checkpoint":
            self._checkpoint(m)
            self.server.reply(req)
        else:
            raise _BadRequest("pserver %s does not serve %r requests" % (self.endpoint, kind))

    def _var(self, name, k):
        var = self.gb.vars.get(name) if name else None
        if var is None:
            raise _BadRequest("pserver %s has no variable %r (sent by trainer %d)" % (self.endpoint, name, k))
        return var

    def _store(self, m):
        var = self._var(m.name, m.trainer)
        v = m.value
        if v is None:
            raise _BadRequest("'send %s' from trainer %d carries no value" % (m.name, m.trainer))
        arr = v.value if isinstance(v, SelectedRows) else v
        if var.dtype and var.dtype in _NP_NAMES and arr.dtype.name != var.dtype:
            raise _BadRequest("pserver %s: %r must be %s, trainer %d sent %s"
                              % (self.endpoint, m.name, var.dtype, m.trainer, arr.dtype.name))
        shape = var.shape
        if shape is not None:
            got = tuple(arr.shape)
            if isinstance(v, SelectedRows):
                shape, got = shape[1:], got[1:]
            if len(shape) != len(got) or any(w >= 0 and w != g for w, g in zip(shape, got)):
                raise _BadRequest("pserver %s: %r has shape %s, trainer %d sent %s%s"
                                  % (self.endpoint, m.name, list(var.shape), m.trainer, list(arr.shape),
                                     " (row-sparse)" if isinstance(v, SelectedRows) else ""))
        scope = self.scope
        value = self.to_place(v)
        scope._set_value(m.name, value)
        if self.sums is not None and not self.completed:
            self.sums.add(m.name, value, self.rounds)
        if m.lod or m.name in scope.lods:
            scope._set_lod(m.name, m.lod or [])

    def _apply_async(self, m):
        base = _TRAINER_SUFFIX.sub("", m.name)
        idx = self.grad_to_block.get(m.name, self.grad_to_block.get(base))
        if idx is None:
            return
        if self.dc_asgd:
            self.scope._set_value(TRAINER_ID_VAR, self.to_place(np.array([m.trainer], dtype=np.int64)))
        self._run(idx, "the optimize block of %r" % base)

    def _answer(self, req):
        m = req.msg
        try:
            if m.kind == "get":
                self._var(m.name, m.trainer)
                value = self.scope._find_value(m.name)
                if value is None:
                    raise _BadRequest("pserver %s has no value for %r yet (was its startup program run?)"
                                      % (self.endpoint, m.name))
                if isinstance(value, str) or not (isinstance(value, SelectedRows) or hasattr(value, "shape")):
                    raise _BadRequest("pserver %s: %r holds a %s, not an array" % (self.endpoint, m.name,
                                                                                    type(value).__name__))
                shared = self.server.shares_memory_with(req)
                if not self.sync and not shared:
                    value = _host_copy(value)   # the next update writes the parameter in place
                elif self.sync and shared:
                    value = self._resident(m.name, value)
                lod = self.scope._find_lod(m.name) or None
                self.server.reply(req, value=value, lod=lod, snapshot=not self.sync)
            elif m.kind == "fetch_barrier":
                self.server.reply(req)
            else:
                self._prefetch(req)
        except _BadRequest as e:
            self.server.error(req, str(e))

    def _resident(self, name, value):
        """A big parameter block asked for by a same-host trainer moves into a shared-memory segment
        of this pserver, where the optimize ops keep updating it in place: its gets are then answered
        without copies (sync rounds change it only after every trainer copied it out)."""
        if type(value) is not np.ndarray or value.nbytes < shm_payload.min_bytes() or not value.flags.writeable:
            return value
        home = shm_payload.outbox().resident(value, (self.endpoint, name))
        if home is not value:
            self.scope._set_value(name, home)
        return home

    def _prefetch(self, req):
        m = req.msg
        idx = self.prefetch_blocks.get(m.name)
        if idx is None:
            raise _BadRequest("pserver %s has no prefetch block for %r (it serves %s)"
                              % (self.endpoint, m.name, sorted(self.prefetch_blocks) or "none"))
        out = m.get("out")
        if not out:
            raise _BadRequest("'prefetch %s' names no output variable" % m.name)
        if m.value is None or isinstance(m.value, SelectedRows):
            raise _BadRequest("'prefetch %s' must carry a dense array of ids" % m.name)
        self.scope._set_value(m.name, self.to_place(m.value))
        self._run(idx, "the prefetch block of %r" % m.name)
        value = self.scope._find_value(out)
        if value is None:
            raise _BadRequest("pserver %s: the prefetch block of %r did not produce %r" % (self.endpoint, m.name, out))
        self.server.reply(req, value=value, name=out)

    def _checkpoint(self, m):
        if self.checkpoint_block < 0:
            raise _BadRequest("pserver %s has no checkpoint block (checkpint_block_id is -1)" % self.endpoint)
        d = m.get("dir")
        if not d:
            raise _BadRequest("a checkpoint request needs a 'dir'")
        self.scope._set_value(LOOKUP_TABLE_PATH, d)
        self._run(self.checkpoint_block, "the checkpoint block")

    # -------------------------------------------------------------- sync rounds
    def _advance(self):
        """Run every round whose barriers are all in, then answer the requests that waited for it."""
        ran = False
        while True:
            waiting = any(b > self.rounds for b in self.barriers)
            if not waiting:
                self.wait_since = None
                break
            missing = [k for k in range(self.fanin)
                       if self.barriers[k] <= self.rounds and k not in self.completed]
            if missing:
                if self.wait_since is None:
                    self.wait_since = time.monotonic()
                break
            self._round()
            ran = True
            self.wait_since = None
        if ran and self.deferred:
            still = []
            for req in self.deferred:
                if self.rounds >= self.barriers[req.msg.trainer]:
                    self._answer(req)
                else:
                    still.append(req)
            self.deferred = still

    def _round(self):
        step = self.rounds + 1
        if self.lr_block >= 0:
            self._run(self.lr_block, "the learning-rate block (step %d)" % step)
        for idx in self.round_blocks:
            prog = self.sums.program_for(idx, self.rounds, self.scope._set_value) if self.sums else self.program
            self._run(idx, "optimize block %d (step %d)" % (idx, step), prog)
        self.rounds = step

    def _run(self, idx, what, program=None):
        try:
            self.run_block(idx) if program is None or program is self.program else self.run_block(idx, program)
        except Exception as e:
            raise _Fatal("%s failed: %s: %s" % (what, type(e).__name__, e)) from e


_NP_NAMES = frozenset(["bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32", "float64"])


def _host_copy(value):
    if isinstance(value, SelectedRows):
        return SelectedRows(np.array(to_host(value.rows)), np.array(to_host(value.value)), value.height)
    return np.array(to_host(value))
