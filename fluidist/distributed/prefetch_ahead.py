"""The next batch's table rows, asked for with the current step's message (a trainer of a distributed
lookup table).

A trainer step of a program with ``prefetch`` ops starts with a round trip: the batch's ids, split per
pserver (``split_ids``), go to the pservers and the step waits for their table rows. When the run can
see the batch after its own (it is fed by a loader whose queue holds it: a feed that an iterable
``DataLoader`` / ``PyReader`` yielded, see ``core.next_batch``, or the ``read`` op of a non-iterable
one), the step asks for the next batch's rows itself, in its one message to each pserver:

1. when the step's message is about to leave (after its ``send_barrier`` posted the barrier; without
   one, before its first ``recv`` / ``fetch_barrier``), the ops that compute the ``prefetch`` ops'
   ids from the batch run on the queued batch, in a scratch scope of their own. Only ops that can run
   ahead qualify (no side effect, no peer, no random numbers, no sub-block), and everything they read
   must come from the batch; else the program gets no look-ahead;
2. one ``prefetch`` part per pserver joins the message, after the barrier: a sync pserver answers it
   once the round that barrier completes has updated the table, i.e. with the rows the next step's
   own prefetch would get (sync training stays equal to local training); an async one at once, after
   the step's gradients in the same message;
3. the rows come back with the message's reply and are kept with the ids they answer, keyed by
   (pserver, ids variable, rows variable, trainer id). The next ``prefetch`` op takes them for a part
   only when its ids are exactly the kept ones (dtype, shape, values), the same executor runs it, and
   that pserver has been sent no barrier since; it asks for the other parts as before.

A loop whose next step keeps not being the queued batch (``MISSES_TO_PAUSE`` look-aheads in a row
unused) makes the look-ahead pause: only every ``RETRY_EVERY``-th step tries again, until one is used.

Nothing in this path fails a step: no batch queued yet, a failure computing the ids, a pserver refusing
the part (the part is an optional one: ``rpc.post``'s ``on_reply``) all leave the next step to ask as
before (so a refusal still fails that step, naming its ``prefetch``). ``counters()`` says how it went;
``FLUIDIST_PREFETCH_AHEAD=0`` turns the look-ahead off (read when a program's plan is made).
"""
import logging
import os
import threading
import weakref

import numpy as np

from ..core import blocking_queue
from ..device.places import CPUPlace, to_host
from ..framework import registry
from ..framework.block import Block
from ..core import next_batch
from . import communicator, recv_buffers, rpc
from . import trainer_session as session

logger = logging.getLogger("fluidist.distributed.prefetch_ahead")

COUNTERS = ("round_trips_avoided", "parts_from_look_ahead", "parts_asked", "parts_posted", "parts_refused",
            "no_next_batch", "failed", "paused")
MISSES_TO_PAUSE = 4   # look-aheads in a row the next step could not use (other ids, refused): then only
RETRY_EVERY = 16      # every 16th step looks ahead, until one is used again
_counts = dict.fromkeys(COUNTERS, 0)
_plans: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()    # block -> (program version, _Plan or None)
_local = threading.local()      # .kept: {(endpoint, ids name, rows name, trainer id): _Kept}, this thread's
_said: set = set()
ENV = "FLUIDIST_PREFETCH_AHEAD"


def enabled():
    """``FLUIDIST_PREFETCH_AHEAD``: ``1`` (default) or ``0``."""
    raw = os.environ.get(ENV, "1").strip() or "1"
    if raw not in ("0", "1"):
        raise ValueError("%s must be 1 or 0, got %r" % (ENV, raw))
    return raw == "1"


def counters():
    """How the look-ahead went in this process: prefetch ops that needed no round trip, parts taken from
    it and parts asked for, parts posted and refused, steps without a queued next batch, failures."""
    return dict(_counts)


def reset_counters():
    for k in _counts:
        _counts[k] = 0


class _Kept:
    """The look-ahead of one part: the ids asked for, the step (barriers sent) and executor it belongs
    to, and the rows once the reply came (or the refusal)."""

    __slots__ = ("ids", "step", "executor", "rows", "refused")

    def __init__(self, ids, step, executor):
        self.ids = ids
        self.step = step
        self.executor = weakref.ref(executor) if executor is not None else (lambda: None)
        self.rows = None
        self.refused = None

    def take_reply(self, reply):
        if reply.kind == "error":
            self.refused = reply.get("msg", "")
            _counts["parts_refused"] += 1
            logger.debug("a look-ahead prefetch was refused (the next step asks again): %s", self.refused)
            return
        if reply.value is not None:
            self.rows = recv_buffers.owned(reply.value)   # (a pserver's shared memory changes later)


class _Plan:
    """What a block's look-ahead runs: the parts of its ``prefetch`` ops (endpoint, ids variable, rows
    variable, trainer id), the op the message leaves with (its ``id``: a plan holds no op, so that the
    block it is kept for can go), the ops computing the ids (a pruned clone of the program), the batch
    values they read, and the ``read`` ops those come from (non-iterable loaders)."""

    def __init__(self, prefetch_ops, post_at, program, sources, reads):
        from ..core.scope import Scope
        self.parts = [(ep, name, out, int(op.attr("trainer_id") or 0)) for op in prefetch_ops
                      for ep, name, out in zip(list(op.attr("epmap") or []), op.input("X"), op.output("Out"))]
        self.post_at = id(post_at)
        self.program = program
        self.sources = frozenset(sources)
        self.reads = reads
        self.ids_names = [n for op in prefetch_ops for n in op.input("X")]
        self.executor = None     # an executor of the host, made at the first look-ahead (see _run_ahead)
        self.scope = Scope()
        self.misses = 0       # look-aheads in a row the next step did not use
        self.paused = 0       # steps since the pause began


def _plan_of(block, build):
    got = _plans.get(block)
    version = block.program._version
    if got is not None and got[0] == version:
        return got[1]
    if not build:
        return None
    plan = None
    if enabled():        # (a bad setting raises: it is the user's to fix)
        try:
            plan = _build(block)
        except Exception as e:      # a program the look-ahead cannot read: it runs without
            _say("no look-ahead for this program: %s: %s" % (type(e).__name__, e))
    _plans[block] = (version, plan)
    return plan


def _build(block):
    """The look-ahead ``_Plan`` of ``block``, or None when it has no prefetch op, no op its message
    leaves with, or ids that the batch alone does not give through ops that can run ahead."""
    ops = block.ops
    at = [i for i, op in enumerate(ops) if _asks_rows(op)]
    if not at:
        return None
    post_at = _message_op(ops, at[-1])
    if post_at is None:
        return None
    need = {n for i in at for n in ops[i].input("X")}
    keep, reads, from_reads = [], [], set()
    for i in range(at[-1] - 1, -1, -1):
        op = ops[i]
        made = need.intersection(op.output_arg_names)
        if not made:
            continue
        reader_slot = registry.fact(op, "batch_from")
        if reader_slot is not None:
            reads.append((op.input(reader_slot)[0], list(op.output("Out"))))
            from_reads |= made
            need -= made
            continue
        if not _runs_ahead(op):
            return None
        keep.append(i)
        need -= made
        need.update(op.input_arg_names)
    for name in need:
        var = block._find_var_recursive(name)
        if var is None or var.persistable:   # a parameter (or state) is no batch's: nothing to look ahead at
            return None
    return _Plan([ops[i] for i in at], post_at, _scratch_program(block, [ops[i] for i in sorted(keep)]),
                 need | from_reads, reads)


def _scratch_program(block, ops):
    """A program of its own holding ``ops`` (copies) and the variables they use, declared as in
    ``block`` (nothing of it refers back to ``block``'s program, which a plan must not keep alive)."""
    from ..framework.program import Program
    program = Program()
    gb = program.global_block()
    for name in dict.fromkeys(n for op in ops for n in op.input_arg_names + op.output_arg_names):
        var = block._find_var_recursive(name)
        gb.create_var(name=name, shape=var.shape, dtype=var.dtype, lod_level=var.lod_level, type=var.type)
    for op in ops:
        gb.append_op(type=op.type, inputs={s: list(ns) for s, ns in op.inputs.items()},
                     outputs={s: list(ns) for s, ns in op.outputs.items()}, attrs=dict(op.attrs))
    return program


def _message_op(ops, last_prefetch):
    """The op after the prefetch ops whose kernel sends the step's message: the ``send_barrier`` (its
    parts then come after the barrier: a sync pserver answers them after its round), else the first
    ``recv`` / ``fetch_barrier``."""
    later = ops[last_prefetch + 1:]
    for op in later:
        if registry.fact(op, "barrier") == "send" and not op.attr("half_async"):
            return op
    for op in later:
        fetches = registry.fact(op, "barrier") == "fetch"
        if fetches or (registry.fact(op, "from_peers") and not registry.fact(op, "to_peers")):
            return op
    return None


def _asks_rows(op):
    """Whether ``op`` asks its peers for what its ids name (``prefetch``): it sends its inputs to them
    and receives its outputs from them (the registry's ``to_peers`` and ``from_peers``)."""
    return bool(registry.fact(op, "to_peers", None) and registry.fact(op, "from_peers", None))


def _runs_ahead(op):
    """Whether ``op`` may run on a batch ahead of its step: its registry entry says it acts on nothing
    but its outputs (no side effect, no peer, no sub-block, no names-only inputs) and draws no random
    numbers (no ``seed`` attr, no initialiser)."""
    opdef = registry.lookup(op.type)
    if opdef is None or opdef.kernel is None:
        return False
    if registry.fact(op, "side_effect") or registry.fact(op, "communicates") or registry.fact(op, "inputs_are_names"):
        return False
    if registry.fact(op, "init") is not None or "seed" in opdef.attrs:
        return False
    return not any(isinstance(v, Block) or (isinstance(v, list) and v and isinstance(v[0], Block))
                   for v in op.attrs.values())


# ---------------------------------------------------------------------------- the step's message
def before_message(ctx):
    """Called by the ops that send a step's message (``send_barrier`` after posting its barrier,
    ``recv`` and ``fetch_barrier`` before sending): at the block's message op, the next batch's
    ``prefetch`` parts are posted to go with it. Never raises."""
    if not _plans:
        return
    plan = _plan_of(ctx.op.block, build=False)
    if plan is None or plan.post_at != id(ctx.op) or communicator.active() is not None:
        return
    try:
        _post(plan, ctx)
    except Exception as e:   # the step goes on; the next one asks for its rows itself
        _counts["failed"] += 1
        _say("the look-ahead of the next batch's rows failed (the next step asks for them): %s: %s"
             % (type(e).__name__, e))


def _post(plan, ctx):
    kept = _kept()
    kept.clear()
    if plan.misses >= MISSES_TO_PAUSE:
        plan.paused += 1
        if plan.paused % RETRY_EVERY:
            _counts["paused"] += 1
            return
    batch = _next_batch(plan, ctx.executor)
    if batch is None:
        _counts["no_next_batch"] += 1
        return
    ids = _run_ahead(plan, batch, ctx.executor)
    requests, sinks = [], []
    for ep, name, out, tid in plan.parts:
        step = session.step(ep, tid)
        entry = kept[(ep, name, out, tid)] = _Kept(ids[name], step, ctx.executor)
        requests.append((ep, dict(kind="prefetch", name=name, value=ids[name], trainer=tid, step=step, out=out,
                                  what="prefetch %s (ahead, for the next batch)" % name)))
        sinks.append(entry.take_reply)
        session.remember(ctx.executor, [ep], tid)
    rpc.post(requests, on_reply=sinks)
    _counts["parts_posted"] += len(requests)


def _next_batch(plan, executor):
    """``{name: (array, lod)}`` of the batch queued after the running one, or None."""
    if plan.reads:
        batch, queues = {}, set()
        for reader, outs in plan.reads:
            queue = blocking_queue.reader_queue(reader)
            if id(queue) in queues:     # two reads of one queue: the second reads the batch after
                return None
            queues.add(id(queue))
            item = queue.peek()
            if item is None or len(item) != len(outs):
                return None
            batch.update(zip(outs, item))
    else:
        batch = next_batch.after(getattr(executor, "_run_feed", None))
    if batch is None or not plan.sources <= batch.keys():
        return None
    return batch


def _run_ahead(plan, batch, executor):
    """The prefetch ops' ids for ``batch``: its values in the scratch scope, the pruned ops run there
    by an executor of the host of ``executor``'s class (the ids go to the host anyway: prefetch is a
    host op; this package does not import the executor's)."""
    if plan.executor is None:
        plan.executor = type(executor)(CPUPlace())
    scope = plan.scope
    for name in plan.sources:
        value, lod = batch[name]
        scope.vals[name] = value
        if lod:
            scope.lods[name] = lod
        else:
            scope.lods.pop(name, None)
    if plan.program.global_block().ops:
        plan.executor._run_block(plan.program, 0, scope)
    return {n: np.asarray(to_host(scope.vals[n])) for n in plan.ids_names}


# ---------------------------------------------------------------------------- the next prefetch
def take(ctx, endpoints, names, outs, ids, trainer_id):
    """For each part of a ``prefetch`` op (``endpoints[i]``, ids ``names[i]`` -> rows ``outs[i]``, ids
    values ``ids[i]``): the rows the previous step's look-ahead kept for exactly these ids, or None
    (the op asks). Builds the block's plan on its first call."""
    plan = _plan_of(ctx.op.block, build=True)
    got = [None] * len(names)
    kept = getattr(_local, "kept", None)
    offered = 0
    if kept:
        for i, (ep, name, out, x) in enumerate(zip(endpoints, names, outs, ids)):
            entry = kept.pop((ep, name, out, trainer_id), None)
            offered += entry is not None
            if entry is not None and entry.rows is not None and entry.executor() is ctx.executor \
                    and entry.step == session.step(ep, trainer_id) and _same_ids(entry.ids, x):
                got[i] = entry.rows
    used = sum(r is not None for r in got)
    if plan is not None and offered:
        plan.misses, plan.paused = (0, 0) if used else (plan.misses + 1, plan.paused)
    _counts["parts_from_look_ahead"] += used
    _counts["parts_asked"] += len(got) - used
    if used and used == len(got):
        _counts["round_trips_avoided"] += 1
        if "used" not in _said:
            _said.add("used")
            logger.info("trainer %d: the next batch's table rows come with each step's message (%d part(s))",
                        trainer_id, used)
    return got


def _same_ids(kept, now):
    now = to_host(now)
    return isinstance(now, np.ndarray) and kept.dtype == now.dtype and kept.shape == now.shape and \
        np.array_equal(kept, now)


def _kept():
    kept = getattr(_local, "kept", None)
    if kept is None:
        kept = _local.kept = {}
    return kept


def _say(text):
    """Log ``text`` once as a warning (later: debug)."""
    if text in _said:
        logger.debug(text)
        return
    _said.add(text)
    logger.warning(text)
