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
  barriers are acknowledged and ignored. The LR-decay block, if any, runs once at start, and again
  whenever a trainer's step counter arrives (``accumulate_on_arrival``: added to what that trainer's
  counter held).
- GEO (3): as ASYNC, the blocks adding the trainers' parameter deltas; a ``get`` of a row-sparse
  parameter that names it as ``table`` is answered with the rows changed since that trainer's last
  one (``geo_rows``).
It serves until each of the ``Fanin`` trainers has sent "complete", then returns. The blocks it runs
are run by a callback: the loop itself knows programs only as data (names, dtypes, shapes).

Every request is checked against what the program allows (``authorize.ServingRules``: the gradient
blocks it receives with their dtypes, shapes and kinds, what it serves, its prefetch tables, the
checkpoint root) and, in sync mode, against the trainer's step: a gradient once per step, a barrier
once per step, a bounded number of requests waiting for a round. A request that breaks a rule, or
whose handling raises, gets an error reply naming the trainer and the variable; the pserver serves on.
Only a failed sync round (the job's state is then lost) or a trainer that died ends the loop early.

Liveness (``liveness``): a trainer whose connections all closed (its process died) ends the job within
about 2 s, naming it; one that is connected but silent (stopped, frozen) is named in a warning after
``FLUIDIST_PEER_WARN`` seconds and ends the job after ``FLUIDIST_PEER_TIMEOUT``; one that is merely slow
is waited for without limit (unless ``FLAGS_rpc_deadline`` asks for one). A request read after its
connection closed is dropped, so a dead trainer's queued requests never bring it back. A trainer that
never spoke is given ``FLUIDIST_TRAINER_IDLE_TIMEOUT`` seconds (600) to show up, and a sync round waits for
a barrier from a trainer that is not connected at most the default deadline. A trainer that stops
because it lost another pserver says so in its ``complete`` (``msg``): in sync mode that ends the job
with its reason.
"""
import logging
import os
import re
import time
from collections import Counter

import numpy as np

from ..device.places import to_host
from ..core.tensor import SelectedRows
from . import liveness, rpc, serving_process, shm_payload
from .arrival_sums import ArrivalSums
from .geo_rows import UpdatedRows
from .authorize import Refused, ServingRules, listen_and_serv_op, parse_block_map as _pairs
from .collective.common import plural

SYNC, ASYNC, HALF_ASYNC, GEO = 0, 1, 2, 3
LOOKUP_TABLE_PATH = "kLookupTablePath"
TRAINER_ID_VAR = "@TRAINER_ID@"
_TRAINER_SUFFIX = re.compile(r"\.trainer_\d+$")
_POLL_S = 0.5    # the loop looks at its peers at least this often


logger = logging.getLogger("fluidist.distributed.pserver")


class _BadRequest(Exception):
    """The request is wrong; the sender gets an error reply and the pserver keeps serving."""


class _Fatal(Exception):
    """The pserver cannot go on; every waiting trainer is told why, then listen_and_serv raises."""


def _plural(ids):
    return plural("trainer", sorted(ids))


class ParameterServer:
    """The state and event loop of one ``listen_and_serv`` op."""

    def __init__(self, program, scope, attrs, run_block, to_place, deadline_ms=None, recv_names=None,
                 to_host=to_host):
        """``run_block(idx[, prog])`` runs block ``idx`` of ``program`` (or of ``prog``, a copy of it) in
        ``scope`` (the kernel's executor does); ``to_place(value)`` moves a received value to the place
        the blocks run on, ``to_host(value)`` a served one from it to the host; ``recv_names`` are the variables the op receives (its ``X``; default: read
        from the program's op on this endpoint)."""
        self.program = program
        self.run_block = run_block
        self.to_place = to_place
        self.to_host = to_host
        self.endpoint = attrs["endpoint"]
        rpc.split_endpoint(self.endpoint)
        self.fanin = int(attrs["Fanin"])
        if self.fanin < 1:
            raise ValueError("listen_and_serv: Fanin must be >= 1, got %d" % self.fanin)
        mode = int(attrs["distributed_mode"])
        if mode not in (SYNC, ASYNC, HALF_ASYNC, GEO):
            raise ValueError("listen_and_serv: unknown distributed_mode %r (0 SYNC, 1 ASYNC, 2 HALF_ASYNC, 3 GEO)"
                             % mode)
        self.sync = mode == SYNC
        self.geo_rows = UpdatedRows(attrs.get("sparse_grad_to_param"), self.fanin) if mode == GEO else None
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
        self.accumulate = set(attrs.get("accumulate_on_arrival") or [])
        self.sums = ArrivalSums(program, _pairs(attrs.get("sum_on_arrival"), "sum_on_arrival"),
                                self.fanin) if self.sync else None
        if recv_names is None:
            recv_names = _receive_names(program, self.endpoint)
        self.rules = ServingRules(program, self.endpoint, recv_names, self.grad_to_block,
                                  self.prefetch_blocks)
        self.scope = scope
        self.deadline_ms = deadline_ms
        # sync state
        self.barriers = [0] * self.fanin
        self.rounds = 0
        self.completed = set()
        self.sent = [set() for _ in range(self.fanin)]   # sync: what each trainer sent in its current step
        self.deferred = []            # requests waiting for a round
        self._parked = Counter()      # trainer -> how many of its requests are in self.deferred
        self.wait_since = None        # when the first barrier of the next round arrived
        self.server = None
        # a trainer that never sends anything for this long is taken for dead (once it spoke, heartbeats tell)
        self.idle_limit = float(os.environ.get("FLUIDIST_TRAINER_IDLE_TIMEOUT", "600"))
        self.started = time.monotonic()
        self.spoke = [False] * self.fanin

    # -------------------------------------------------------------- loop
    def serve(self):
        self.server = rpc.Server(self.endpoint, self.deadline_ms, max_message_bytes=self.rules.max_message_bytes)
        logger.info("pserver %s: serving %d block(s) to %d trainer(s), %s", self.server.endpoint,
                    len(self.grad_to_block), self.fanin, "sync" if self.sync else "async")
        try:
            with serving_process.serving(rpc.split_endpoint(self.server.endpoint)[1]):
                self._serve_until_complete()
        finally:
            self.server.close()

    def _serve_until_complete(self):
        try:
            if not self.sync and self.lr_block >= 0:     # the rate of the first steps
                self._run(self.lr_block, "the learning-rate block")
            while len(self.completed) < self.fanin:
                req = self.server.recv(self._poll_timeout())
                if req is not None and self._from_closed_connection(req):
                    req = None
                if req is not None:
                    try:
                        self._handle(req)
                        self._heard_from(req)
                    except (_BadRequest, Refused) as e:
                        self.server.error(req, str(e))
                    except _Fatal as e:
                        self.server.error(req, "pserver %s stopped: %s" % (self.endpoint, e))
                        raise
                    except Exception as e:   # a request this loop failed on: its sender hears why, others go on
                        m = req.msg
                        logger.warning("pserver %s: %r from trainer %d failed: %s: %s", self.endpoint, m.kind,
                                       m.trainer, type(e).__name__, e)
                        self.server.error(req, "pserver %s could not handle %r of %r from trainer %d: %s: %s"
                                          % (self.endpoint, m.kind, m.name, m.trainer, type(e).__name__, e))
                self._check_deadline()
            logger.info("pserver %s: every trainer is done after %d round(s); shutting down", self.endpoint,
                        self.rounds)
        except _Fatal as e:
            for req in self.deferred:
                self.server.error(req, "pserver %s stopped: %s" % (self.endpoint, e))
            self.deferred = []
            self._parked.clear()
            raise RuntimeError("pserver %s: %s" % (self.endpoint, e)) from None

    def _from_closed_connection(self, req):
        """A request read after its connection closed (queued while this loop did not read) is dropped:
        nobody hears the reply, and its sender, maybe dead, must not count as connected again."""
        peers = self.server.peers
        if peers is None or not peers.stale(req.fd, req.peer.bytes):
            return False
        logger.info("pserver %s: dropped %r of trainer %d: its connection had closed before it was read",
                    self.endpoint, req.msg.kind, req.msg.trainer)
        return True

    def _heard_from(self, req):
        """A request of trainer k was accepted: its connection is k's (refused ones never count)."""
        k = req.msg.trainer
        if not self.spoke[k]:
            logger.info("pserver %s: trainer %d is up (%d of %d)", self.endpoint, k, sum(self.spoke) + 1, self.fanin)
        self.spoke[k] = True
        if self.server.peers is not None:
            self.server.peers.seen(req.fd, k, req.peer.bytes)

    def _poll_timeout(self):
        if self.wait_since is None:
            return _POLL_S
        left = self.wait_since + self._barrier_limit() - time.monotonic()
        return min(_POLL_S, max(0.0, left) + 0.001)

    def _check_peers(self, peers, now):
        """End the job when a trainer is gone (its connections closed) or silent past the bound."""
        live = [k for k in range(self.fanin) if k not in self.completed]
        dead = {k: t for k, t in peers.update().dead(now).items() if k in live}
        if dead:
            raise _Fatal("%s lost %s connection to pserver %s %.1f s ago and did not come back (the process "
                         "died or closed it)" % (_plural(dead), "its" if len(dead) == 1 else "their",
                                                 self.endpoint, max(dead.values())))
        silent = {}
        for k, t in peers.silent(live).items():
            if peers.silence.check(k, t, lambda k=k: "pserver %s: trainer %d" % (self.endpoint, k)):
                silent[k] = t
        if silent:
            raise _Fatal("%s connected to pserver %s %s been silent for %.1f s (stopped, frozen, or cut off; %s)"
                         % (_plural(silent), self.endpoint, "has" if len(silent) == 1 else "have",
                            max(silent.values()), liveness.describe_timeout(peers.timeout)))

    def _barrier_limit(self):
        """Seconds a round waits for missing barriers: the deadline asked for, else the default one
        (applied, with heartbeats on, only to trainers that are not connected)."""
        return rpc.deadline_seconds(self.deadline_ms)

    def _check_deadline(self):
        now = time.monotonic()
        peers = self.server.peers
        if peers is not None:
            self._check_peers(peers, now)
        silent = [k for k in range(self.fanin)
                  if k not in self.completed and not self.spoke[k] and now - self.started > self.idle_limit]
        if silent:
            raise _Fatal("%s sent nothing to pserver %s within %.1f s of its start; a trainer died before its first "
                         "request, or never started (FLUIDIST_TRAINER_IDLE_TIMEOUT)"
                         % (_plural(silent), self.endpoint, self.idle_limit))
        if self.wait_since is None:
            return
        waited = now - self.wait_since
        limit = self._barrier_limit()
        if waited < limit:
            return
        arrived = [k for k in range(self.fanin) if self.barriers[k] > self.rounds]
        missing = [k for k in range(self.fanin) if self.barriers[k] <= self.rounds and k not in self.completed]
        if (peers is not None and rpc.explicit_deadline_seconds(self.deadline_ms) is None
                and all(peers.connected(k) for k in missing)):
            return   # slow but alive: heartbeats say when one dies
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
        kind = m.kind
        if kind == "send":
            self.rules.check_send(m)
            if self.sync:
                self._check_step(m, "send %s" % m.name)
                if m.name in self.sent[k]:
                    raise _BadRequest("pserver %s: trainer %d already sent %r in step %d"
                                      % (self.endpoint, k, m.name, m.step))
            self._store(m)
            if self.sync:
                self.sent[k].add(m.name)
            else:
                self._apply_async(m)
            self.server.reply(req)
        elif kind in ("get", "fetch_barrier", "prefetch"):
            if kind == "prefetch":
                self.rules.check_prefetch(m)
            else:
                self.rules.check_get(m)
            if self.sync and self.rounds < self.barriers[k]:
                parked = self._parked[k]
                if parked >= self.rules.max_parked:
                    raise _BadRequest("pserver %s: trainer %d already has %d requests waiting for step %d"
                                      % (self.endpoint, k, parked, self.barriers[k]))
                self.deferred.append(req)
                self._parked[k] += 1
            else:
                self._answer(req)
        elif kind == "send_barrier":
            if m.value is not None:
                raise _BadRequest("a send_barrier carries no value (trainer %d sent one)" % k)
            if self.sync:
                self._check_step(m, "send_barrier")
            self.server.reply(req)
            if self.sync:
                self.barriers[k] += 1
                self.sent[k] = set()
                self._advance()
        elif kind == "complete":
            if m.value is not None:
                raise _BadRequest("a 'complete' carries no value (trainer %d sent one)" % k)
            self.completed.add(k)
            if m.get("msg"):   # the trainer stops because of an error elsewhere
                if self.sync:
                    raise _Fatal("trainer %d stopped: %s" % (k, m.get("msg")))
                logger.warning("pserver %s: trainer %d stopped: %s", self.endpoint, k, m.get("msg"))
            self.server.reply(req)
            if self.sync:
                self._advance()
        elif kind == "checkpoint":
            self._checkpoint(m)
            self.server.reply(req)
        else:
            raise _BadRequest("pserver %s does not serve %r requests" % (self.endpoint, kind))

    def _check_step(self, m, what):
        """Sync mode: sends and the barrier of a trainer belong to the step after its last barrier."""
        want = self.barriers[m.trainer] + 1
        if m.step != want:
            raise _BadRequest("pserver %s: trainer %d sent %r for step %d, but its next step here is %d (%s)"
                              % (self.endpoint, m.trainer, what, m.step, want,
                                 "that step's barrier was counted already" if m.step < want else
                                 "a step cannot start before the barrier of the one before"))

    def _store(self, m):
        scope = self.scope
        value = self.to_place(m.value)
        if m.name in self.accumulate:       # async LR decay's trainer step counters: arrivals add up
            held = scope._find_value(m.name)
            if held is not None:
                value = held + value
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
        self._run(idx, "the optimize block of %r (sent by trainer %d)" % (base, m.trainer), fatal=False)
        if self.geo_rows is not None:
            self.geo_rows.record(m.name, m.value)

    def _answer(self, req):
        m = req.msg
        try:
            if m.kind == "get":
                value = self.scope._find_value(m.name)
                if value is None:
                    raise _BadRequest("pserver %s has no value for %r yet (was its startup program run?)"
                                      % (self.endpoint, m.name))
                if isinstance(value, str) or not (isinstance(value, SelectedRows) or hasattr(value, "shape")):
                    raise _BadRequest("pserver %s: %r holds a %s, not an array" % (self.endpoint, m.name,
                                                                                    type(value).__name__))
                shared = self.server.shares_memory_with(req)
                if self.geo_rows is not None and m.get("table") and self.geo_rows.tracks(m.name):
                    self.server.reply(req, value=self.geo_rows.take(m.name, m.trainer, value))
                    return
                if not self.sync and not shared:
                    value = _host_copy(value)   # the next update writes the parameter in place
                elif self.sync and shared:
                    value = self._resident(m.name, value)    # host arrays only
                value = self.to_host(value)     # a value on a device place leaves through the place
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
        out = m.get("out")
        self.scope._set_value(m.name, self.to_place(m.value))
        self._run(self.prefetch_blocks[m.name], "the prefetch block of %r (trainer %d)" % (m.name, m.trainer),
                  fatal=False)
        value = self.scope._find_value(out)
        if value is None:
            raise _BadRequest("pserver %s: the prefetch block of %r did not produce %r" % (self.endpoint, m.name, out))
        self.server.reply(req, value=self.to_host(value), name=out)

    def _checkpoint(self, m):
        if self.checkpoint_block < 0:
            raise _BadRequest("pserver %s has no checkpoint block (checkpint_block_id is -1)" % self.endpoint)
        if m.value is not None:
            raise _BadRequest("a checkpoint request carries no value (trainer %d sent one)" % m.trainer)
        self.scope._set_value(LOOKUP_TABLE_PATH, self.rules.checkpoint_dir(m))
        self._run(self.checkpoint_block, "the checkpoint block (trainer %d)" % m.trainer, fatal=False)

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
            self._parked = Counter(r.msg.trainer for r in still)

    def _round(self):
        step = self.rounds + 1
        self.server.values_will_change()     # a batch's parts answered before the round keep their values
        if self.lr_block >= 0:
            self._run(self.lr_block, "the learning-rate block (step %d)" % step)
        for idx in self.round_blocks:
            prog = self.sums.program_for(idx, self.rounds, self.scope._set_value) if self.sums else self.program
            self._run(idx, "optimize block %d (step %d)" % (idx, step), prog)
        self.rounds = step
        logger.debug("pserver %s: round %d done", self.endpoint, step)

    def _run(self, idx, what, program=None, fatal=True):
        """Run block ``idx`` (of ``program``, a copy of this pserver's, when given). A failure of a sync
        round is fatal (the job's state is lost); one caused by a single request (``fatal=False``: a
        prefetch, a checkpoint, an async update) is that request's error."""
        try:
            self.run_block(idx) if program is None or program is self.program else self.run_block(idx, program)
        except Exception as e:
            if fatal:
                raise _Fatal("%s failed: %s: %s" % (what, type(e).__name__, e)) from e
            raise _BadRequest("%s failed: %s: %s" % (what, type(e).__name__, e)) from e


def _receive_names(program, endpoint):
    """The ``X`` of the program's ``listen_and_serv`` op on ``endpoint`` (none: nothing received)."""
    op = listen_and_serv_op(program, endpoint)
    return op.input("X") if op is not None else []


def _host_copy(value):
    if isinstance(value, SelectedRows):
        return SelectedRows(np.array(to_host(value.rows)), np.array(to_host(value.value)), value.height)
    return np.array(to_host(value))
