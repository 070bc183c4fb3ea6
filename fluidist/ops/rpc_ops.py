"""Parameter-server ops: the trainer side (send, send_barrier, recv, fetch_barrier, prefetch,
checkpoint_notify) and the server side (listen_and_serv), over ``fluidist.distributed.rpc``.

Trainer side. Every op sends its requests to all its endpoints first and then waits for all replies
under one deadline (``FLAGS_rpc_deadline``), so N pservers cost one round trip. A ``send`` does not
wait: its acknowledgements are awaited by the thread's next barrier / recv / prefetch / close
(``rpc.post``), so gradients travel while the backward pass goes on; the arrays go out without copies
(kernels never write their inputs in place, so they do not change meanwhile), and an error reply
still surfaces, naming the send. Each op also remembers, per executor, the (endpoint, trainer id)
pairs it talked to: ``Executor.close()`` then tells each of those pservers "complete".

Server side (``listen_and_serv``), one thread, one ROUTER socket:
- SYNC (distributed_mode 0): grads are stored as they arrive. A round (LR-decay block once, then the
  other optimize blocks in order) runs when every trainer that has not completed has sent its
  ``send_barrier`` for that step. A trainer's ``get`` (and ``fetch_barrier``, ``prefetch``) is
  answered once the pserver has run as many rounds as that trainer has sent barriers, so the
  start-up gets (before any barrier) are answered at once and nobody deadlocks. When some trainer
  has sent its barrier and another has not within the deadline, every waiting trainer gets an error
  naming the missing trainer ids and the op raises: a dead trainer never makes anyone hang.
- ASYNC (1) and HALF_ASYNC (2): each grad runs its optimize block (``grad_to_block_id``) when it
  arrives; gets are answered at once (with a copy: the next update writes the parameter in place);
  barriers are acknowledged and ignored. The LR-decay block, if any, runs once at start (as Paddle's
  async loop does with a block bound to no grad).
- GEO (3) is not supported.
It serves until each of the ``Fanin`` trainers has sent "complete", then returns.
"""
import functools
import re
import threading
import os
import time
import weakref

import numpy as np

from ..distributed import rpc
from ..core.place import to_host
from ..core.tensor import SelectedRows
from ..framework.op_role import OpRole
from ..framework.registry import register_op

SYNC, ASYNC, HALF_ASYNC, GEO = 0, 1, 2, 3
LOOKUP_TABLE_PATH = "kLookupTablePath"
TRAINER_ID_VAR = "@TRAINER_ID@"
_TRAINER_SUFFIX = re.compile(r"\.trainer_\d+$")

# the value of control-dependency outputs (Paddle's RAW dummies): read by nobody, never mutated
_CTRL = np.zeros((0,), dtype=np.float32)


# ================================================================================ trainer side
_steps = {}                                   # (endpoint, trainer id) -> send_barriers sent
_steps_lock = threading.Lock()
_close_targets = weakref.WeakKeyDictionary()  # executor -> {(endpoint, trainer id)} to notify


def _remember(ctx, endpoints, trainer_id):
    """Register (once per executor) the close hook that tells these pservers "complete"."""
    exe = ctx.executor
    if exe is None:
        return
    targets = _close_targets.get(exe)
    if targets is None:
        targets = _close_targets[exe] = set()
        exe._close_hooks.append(functools.partial(_notify_complete, targets))
    for ep in endpoints:
        targets.add((ep, trainer_id))


def _notify_complete(targets):
    pairs = sorted(targets)
    targets.clear()
    if not pairs:
        return
    rpc.call_all([(ep, dict(kind="complete", trainer=tid, step=_step(ep, tid), what="complete"))
                  for ep, tid in pairs])
    with _steps_lock:
        for key in pairs:
            _steps.pop(key, None)


def notify_all_complete():
    """Tell every pserver that any executor of this process talked to that its trainer is done (what
    ``fleet.stop_worker()`` does when the user trained with an executor of their own)."""
    union = set()
    for targets in list(_close_targets.values()):
        union.update(targets)
        targets.clear()                 # several executors may have talked to the same pserver
    _notify_complete(union)


def _step(endpoint, trainer_id):
    return _steps.get((endpoint, trainer_id), 0)


def _dependent_deadline():
    """Waits that depend on other trainers (gets after a barrier) last a little longer than the
    pserver's own barrier deadline, so that the pserver's error naming the missing trainer arrives
    before the trainer's own timeout."""
    d = rpc.deadline_seconds()
    return d * 1.1 + 0.2


def _endpoints(ctx, attrs, key, n=None):
    eps = attrs.get(key) or []
    if isinstance(eps, str):
        eps = [eps]
    for ep in eps:
        rpc.split_endpoint(ep)
    if n is not None and len(eps) != n:
        raise ValueError("op %r: attr %r has %d endpoints but the op has %d variables"
                         % (ctx.op.type, key, len(eps), n))
    return list(eps)


def _to_place(value, xp):
    if xp is np or value is None:
        return value
    if isinstance(value, SelectedRows):
        return SelectedRows(xp.asarray(value.rows), xp.asarray(value.value), value.height)
    return xp.asarray(value)


def _dummies(ctx, slot="Out"):
    names = ctx.op.outputs.get(slot)
    return {slot: [_CTRL] * len(names)} if names else None


@register_op("send", inputs=["X*"], outputs=["Out*?"], side_effect=True, role=OpRole.RPC,
             attrs={"epmap": [], "sections": [], "send_varnames": [], "trainer_id": 0, "merge_add": False,
                    "use_send_handler": True, "sync_mode": True})
def send(ctx, ins, attrs):
    """Send each X[i] to epmap[i] (under send_varnames[i] if given); with ``sections``, the single X
    is cut into row blocks, block i going to epmap[i] as send_varnames[i]."""
    names = ctx.op.inputs.get("X") or []
    xs = ins.get("X") or []
    tid = int(attrs["trainer_id"])
    sections = attrs.get("sections") or []
    wire_names = attrs.get("send_varnames") or []
    if sections:
        if len(xs) != 1:
            raise ValueError("send: with sections, X must be one variable, got %d" % len(xs))
        eps = _endpoints(ctx, attrs, "epmap", len(sections))
        if len(wire_names) != len(sections):
            raise ValueError("send: %d sections need as many send_varnames, got %d" % (len(sections), len(wire_names)))
        x = xs[0]
        if sum(sections) != x.shape[0]:
            raise ValueError("send: sections %s do not add up to the %d rows of %r" % (sections, x.shape[0], names[0]))
        values, begin = [], 0
        for rows in sections:
            values.append(x[begin:begin + rows])
            begin += rows
        lods = [None] * len(values)
    else:
        eps = _endpoints(ctx, attrs, "epmap", len(xs))
        if wire_names and len(wire_names) != len(xs):
            raise ValueError("send: send_varnames has %d names for %d variables" % (len(wire_names), len(xs)))
        wire_names = wire_names or names
        values = xs
        lods = [ctx.scope._find_lod(n) or None for n in names]
    reqs = []
    for ep, wn, v, lod in zip(eps, wire_names, values, lods):
        if v is None:
            raise ValueError("send: variable %r has no value to send" % wn)
        reqs.append((ep, dict(kind="send", name=wn, value=v, trainer=tid, step=_step(ep, tid) + 1,
                              lod=lod, what="send %s" % wn)))
    _remember(ctx, eps, tid)
    rpc.post(reqs)   # acknowledged by the next barrier / recv / close: sends overlap with compute
    return _dummies(ctx)


@register_op("send_barrier", inputs=["X*?"], outputs=["Out*?"], side_effect=True, role=OpRole.RPC,
             attrs={"endpoints": [], "trainer_id": 0, "half_async": False})
def send_barrier(ctx, ins, attrs):
    """Tell each pserver that this trainer has sent all it sends in this step."""
    eps = _endpoints(ctx, attrs, "endpoints")
    tid = int(attrs["trainer_id"])
    _remember(ctx, eps, tid)
    rpc.call_all([(ep, dict(kind="send_barrier", trainer=tid, step=_step(ep, tid) + 1, what="send_barrier"))
                  for ep in eps])
    with _steps_lock:
        for ep in eps:
            _steps[(ep, tid)] = _steps.get((ep, tid), 0) + 1
    return _dummies(ctx)


@register_op("recv", inputs=["X*?"], outputs=["Out*"], side_effect=True, role=OpRole.RPC,
             attrs={"epmap": [], "recv_varnames": [], "trainer_id": 0, "with_barrier": True, "sync_mode": True})
def recv(ctx, ins, attrs):
    """Get Out[i] (named recv_varnames[i] on the pserver, if given) from epmap[i]. With one Out and
    several endpoints, the blocks recv_varnames[i] are fetched and concatenated along axis 0."""
    outs = ctx.op.outputs.get("Out") or []
    tid = int(attrs["trainer_id"])
    remote = attrs.get("recv_varnames") or []
    epmap = attrs.get("epmap") or []
    concat = len(outs) == 1 and len(epmap) > 1
    if concat:
        eps = _endpoints(ctx, attrs, "epmap")
        if len(remote) != len(eps):
            raise ValueError("recv: %r from %d endpoints needs %d recv_varnames, got %d"
                             % (outs[0], len(eps), len(eps), len(remote)))
    else:
        eps = _endpoints(ctx, attrs, "epmap", len(outs))
        if remote and len(remote) != len(outs):
            raise ValueError("recv: recv_varnames has %d names for %d outputs" % (len(remote), len(outs)))
        remote = remote or outs
    _remember(ctx, eps, tid)
    replies = rpc.call_all([(ep, dict(kind="get", name=n, trainer=tid, step=_step(ep, tid), what="recv %s" % n))
                            for ep, n in zip(eps, remote)], timeout_s=_dependent_deadline())
    for r, n in zip(replies, remote):
        if r.value is None:
            raise rpc.RPCError("recv: the pserver sent no value for %r" % n)
    xp = ctx.xp
    if concat:
        vals = [r.value for r in replies]
        if any(isinstance(v, SelectedRows) for v in vals):
            raise ValueError("recv: cannot concatenate row-sparse blocks of %r" % outs[0])
        return {"Out": [_to_place(np.concatenate(vals, axis=0), xp)]}
    scope = ctx.scope
    for r, n in zip(replies, outs):
        if r.lod:
            scope._set_lod(n, r.lod)
    return {"Out": [_to_place(r.value, xp) for r in replies]}


@register_op("fetch_barrier", inputs=["X*?"], outputs=["Out*?"], side_effect=True, role=OpRole.RPC,
             attrs={"endpoints": [], "trainer_id": 0})
def fetch_barrier(ctx, ins, attrs):
    """Wait until each pserver has finished this trainer's step. Out vars that already hold values
    (the transpiler makes the received params the outputs, as dependencies) keep them."""
    eps = _endpoints(ctx, attrs, "endpoints")
    tid = int(attrs["trainer_id"])
    _remember(ctx, eps, tid)
    rpc.call_all([(ep, dict(kind="fetch_barrier", trainer=tid, step=_step(ep, tid), what="fetch_barrier"))
                  for ep in eps], timeout_s=_dependent_deadline())
    names = ctx.op.outputs.get("Out")
    if not names:
        return None
    scope = ctx.scope
    have = [scope._find_value(n) for n in names]
    if all(v is not None for v in have):
        return None   # leave them where they are
    return {"Out": [_CTRL if v is None else v for v in have]}


@register_op("prefetch", inputs=["X*"], outputs=["Out*"], side_effect=True, role=OpRole.RPC,
             attrs={"epmap": [], "trainer_id": 0})
def prefetch(ctx, ins, attrs):
    """Send the ids X[i] to epmap[i]; Out[i] gets the table rows the pserver's prefetch block returns."""
    names = ctx.op.inputs.get("X") or []
    outs = ctx.op.outputs.get("Out") or []
    if len(outs) != len(names):
        raise ValueError("prefetch: %d id inputs but %d outputs" % (len(names), len(outs)))
    eps = _endpoints(ctx, attrs, "epmap", len(names))
    tid = int(attrs["trainer_id"])
    _remember(ctx, eps, tid)
    replies = rpc.call_all([(ep, dict(kind="prefetch", name=n, value=v, trainer=tid, step=_step(ep, tid),
                                      out=o, what="prefetch %s" % n))
                            for ep, n, v, o in zip(eps, names, ins["X"], outs)], timeout_s=_dependent_deadline())
    return {"Out": [_to_place(r.value, ctx.xp) for r in replies]}


@register_op("checkpoint_notify", inputs=["X*?"], outputs=["Out*?"], side_effect=True, role=OpRole.RPC,
             attrs={"epmap": [], "dir": "", "lookup_table": "", "trainer_id": 0})
def checkpoint_notify(ctx, ins, attrs):
    """Ask each pserver to save its shard of the lookup table into ``dir``."""
    eps = _endpoints(ctx, attrs, "epmap")
    tid = int(attrs.get("trainer_id") or 0)
    _remember(ctx, eps, tid)
    rpc.call_all([(ep, dict(kind="checkpoint", name=attrs.get("lookup_table") or None, trainer=tid,
                            step=_step(ep, tid), dir=attrs["dir"], table=attrs.get("lookup_table") or "",
                            what="checkpoint_notify %s" % attrs["dir"]))
                  for ep in eps])
    return _dummies(ctx)


# ================================================================================ server side
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

    def __init__(self, ctx, attrs, deadline_ms=None):
        self.ctx = ctx
        self.program = ctx.program
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
        self.gb = self.program.global_block()
        self.scope = ctx.scope
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
        scope._set_value(m.name, _to_place(v, self.ctx.xp))
        if m.lod or m.name in scope.lods:
            scope._set_lod(m.name, m.lod or [])

    def _apply_async(self, m):
        base = _TRAINER_SUFFIX.sub("", m.name)
        idx = self.grad_to_block.get(m.name, self.grad_to_block.get(base))
        if idx is None:
            return
        if self.dc_asgd:
            self.scope._set_value(TRAINER_ID_VAR, _to_place(np.array([m.trainer], dtype=np.int64), self.ctx.xp))
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
                if not self.sync:
                    value = _host_copy(value)   # the next update writes the parameter in place
                lod = self.scope._find_lod(m.name) or None
                self.server.reply(req, value=value, lod=lod)
            elif m.kind == "fetch_barrier":
                self.server.reply(req)
            else:
                self._prefetch(req)
        except _BadRequest as e:
            self.server.error(req, str(e))

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
        self.scope._set_value(m.name, _to_place(m.value, self.ctx.xp))
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
            self._run(idx, "optimize block %d (step %d)" % (idx, step))
        self.rounds = step

    def _run(self, idx, what):
        try:
            self.ctx.run_block(self.program.block(idx))
        except Exception as e:
            raise _Fatal("%s failed: %s: %s" % (what, type(e).__name__, e)) from e


_NP_NAMES = frozenset(["bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32", "float64"])


def _host_copy(value):
    if isinstance(value, SelectedRows):
        return SelectedRows(np.array(to_host(value.rows)), np.array(to_host(value.value)), value.height)
    return np.array(to_host(value))


@register_op("listen_and_serv", inputs=["X*"], outputs=[], side_effect=True, role=OpRole.RPC, inputs_are_names=True,
             attrs={"endpoint": "", "pserver_id": 0, "Fanin": 1, "optimize_blocks": [], "grad_to_block_id": [],
                    "sparse_grad_to_param": [], "lr_decay_block_id": -1, "distributed_mode": SYNC,
                    "prefetch_var_name_to_block_id": [], "checkpint_block_id": -1, "rpc_get_thread_num": 12,
                    "rpc_send_thread_num": 12, "rpc_prefetch_thread_num": 12, "dc_asgd": False})
def listen_and_serv(ctx, ins, attrs):
    """Serve the trainers on ``endpoint`` until all ``Fanin`` of them have completed (see module doc).
    X names the receive variables; they have no values until trainers send them, so the executor
    hands this kernel no inputs (``inputs_are_names``)."""
    ParameterServer(ctx, attrs).serve()
    return None
