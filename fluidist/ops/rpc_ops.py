"""Parameter-server ops: the trainer side (send, send_barrier, recv, fetch_barrier, prefetch,
checkpoint_notify) and the server side (listen_and_serv), over ``fluidist.distributed.rpc``.

Trainer side. Every op sends its requests to all its endpoints first and then waits for all replies
under one deadline (``FLAGS_rpc_deadline``), so N pservers cost one round trip. A ``send`` (and a
``send_barrier``) does not wait: it hands its blocks to the transport (``rpc.post``), which sends them
with the thread's next recv / prefetch / fetch_barrier / close to the same pserver as parts of one
message (or at the end of the executor's run), so a sync step costs each pserver one message and one
reply: gradient blocks, barrier and gets. The arrays go out without copies (kernels never write their
inputs in place, so they do not change meanwhile), and an error reply still surfaces, naming the
send. A ``prefetch`` takes the rows the step before asked for ahead, with its message, when its ids
are exactly those (``distributed.prefetch_ahead``: a run fed by a DataLoader can see its next batch);
else it asks. Each op also remembers, per executor, the (endpoint, trainer id) pairs it talked to:
``Executor.close()`` then tells each of those pservers "complete".

Server side: ``listen_and_serv`` runs the event loop of ``fluidist.distributed.pserver``.
"""
import numpy as np

from ..distributed import communicator, geo_communicator, prefetch_ahead, recv_ahead, recv_buffers, rpc
from ..distributed import trainer_session as session
from ..distributed.pserver import SYNC, ParameterServer
from ..core.placement import to_host_value, to_place
from ..core.tensor import SelectedRows
from ..framework.op_role import OpRole
from ..framework.registry import register_op

_HOST = 'sends and receives host buffers over ZeroMQ'

# the value of control-dependency outputs (Paddle's RAW dummies): read by nobody, never mutated
_CTRL = np.zeros((0,), dtype=np.float32)


def _endpoints(ctx, attrs, key, n=None):
    """The endpoints of attr ``key`` (checked); ``ctx`` is the kernel's context or the op itself."""
    op = getattr(ctx, "op", ctx)
    eps = attrs.get(key) or []
    if isinstance(eps, str):
        eps = [eps]
    for ep in eps:
        rpc.split_endpoint(ep)
    if n is not None and len(eps) != n:
        raise ValueError("op %r: attr %r has %d endpoints but the op has %d variables"
                         % (op.type, key, len(eps), n))
    return list(eps)


def _dummies(ctx, slot="Out"):
    names = ctx.op.outputs.get(slot)
    return {slot: [_CTRL] * len(names)} if names else None


@register_op("send", host=_HOST, inputs=["X*"], outputs=["Out*?"], side_effect=True, role=OpRole.RPC,
             communicates=True, to_peers="X",
             attrs={"epmap": [], "sections": [], "send_varnames": [], "trainer_id": 0, "merge_add": False,
                    "use_send_handler": True, "sync_mode": True})
def send(ctx, ins, attrs):
    """Send each X[i] to epmap[i] (under send_varnames[i] if given); with ``sections``, the single X
    is cut into row blocks, block i going to epmap[i] as send_varnames[i]. A running communicator
    (``distributed.communicator``) takes the sends of its program; a send without ``epmap`` is always
    a communicator's (Paddle's shapes: GEO-SGD's step, ``param_init``)."""
    names = ctx.op.inputs.get("X") or []
    xs = ins.get("X") or []
    tid = int(attrs["trainer_id"])
    sections = attrs.get("sections") or []
    comm = communicator.active()
    if comm is not None and comm.takes_send(ctx.op):
        session.remember(ctx.executor, comm.endpoints, tid)
        comm.push(ctx.op, xs, ctx.scope)
        return _dummies(ctx)
    if not attrs.get("epmap") and not sections:
        geo_communicator.communicator_send(ctx.op, xs, ctx.scope, ctx.executor)
        return _dummies(ctx)
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
        reqs.append((ep, dict(kind="send", name=wn, value=v, trainer=tid, step=session.step(ep, tid) + 1,
                              lod=lod, what="send %s" % wn)))
    session.remember(ctx.executor, eps, tid)
    rpc.post(reqs)   # leaves with the step's recv, in its message to each pserver
    return _dummies(ctx)


@register_op("send_barrier", host=_HOST, inputs=["X*?"], outputs=["Out*?"], side_effect=True, role=OpRole.RPC,
             communicates=True, barrier="send",
             attrs={"endpoints": [], "trainer_id": 0, "half_async": False})
def send_barrier(ctx, ins, attrs):
    """Tell each pserver that this trainer has sent all it sends in this step. Like ``send``, it does
    not wait: it goes with the ``recv`` that follows, in the same message (a pserver handles the parts
    of a message in order, so that ``recv`` is answered after the round this barrier completes): one
    round trip per step instead of two. With ``half_async`` it is the step's
    end in Paddle's half-async mode: the running communicator's barrier (pservers ignore barriers then)."""
    if attrs.get("half_async"):
        comm = communicator.active()
        if comm is not None:
            comm.barrier()
        return _dummies(ctx)
    eps = _endpoints(ctx, attrs, "endpoints")
    tid = int(attrs["trainer_id"])
    session.remember(ctx.executor, eps, tid)
    rpc.post([(ep, dict(kind="send_barrier", trainer=tid, step=session.step(ep, tid) + 1, what="send_barrier"))
              for ep in eps])
    session.advance(eps, tid)
    prefetch_ahead.before_message(ctx)     # the next batch's rows, after this barrier's round
    return _dummies(ctx)


@register_op("recv", host=_HOST, inputs=["X*?"], outputs=["Out*"], side_effect=True, role=OpRole.RPC,
             communicates=True, from_peers="Out",
             attrs={"epmap": [], "recv_varnames": [], "trainer_id": 0, "with_barrier": True, "sync_mode": True,
                    "batch_epmap": [], "batch_varnames": [], "row_block_of": [], "row_block_begin": []})
def recv(ctx, ins, attrs):
    """Get Out[i] (named recv_varnames[i] on the pserver, if given) from epmap[i]. With one Out and
    several endpoints, the blocks recv_varnames[i] are fetched and concatenated along axis 0.

    fluidist's attrs, written by the transpiler (``recv_ahead``, ``recv_buffers``):
    ``batch_epmap`` / ``batch_varnames`` list what the recv ops right after this one receive: this op
    asks for them with its own (one wait instead of one round trip per op), the others take their
    replies. ``row_block_of[i]`` / ``row_block_begin[i]``: Out[i] is the row block of that variable
    starting at that row (a Dist ``concat`` joins the blocks): it is received into those rows."""
    outs, eps, remote, concat, tid = _recv_spec(ctx.op, attrs)
    session.remember(ctx.executor, eps, tid)
    comm = communicator.active()
    if comm is not None and comm.takes_recv(ctx.op):
        return None       # the communicator receives in the background (Paddle's do_not_run)
    prefetch_ahead.before_message(ctx)
    replies = recv_ahead.take(ctx.op.block, eps, remote, tid)
    if replies is None:
        ahead = _batch_spec(ctx.op, attrs)
        requests = [(ep, dict(kind="get", name=n, trainer=tid, step=session.step(ep, tid), what="recv %s" % n))
                    for ep, n in zip(eps + [ep for ep, _ in ahead], remote + [n for _, n in ahead])]
        got = rpc.call_all(requests, timeout_s=session.dependent_deadline())
        session.mark_fetched([(ep, tid) for ep in eps + [ep for ep, _ in ahead]])
        replies = got[:len(eps)]
        recv_ahead.keep(ctx.op.block, tid, ahead, got[len(eps):])
    for r, n in zip(replies, remote):
        if r.value is None:
            raise rpc.RPCError("recv: the pserver sent no value for %r" % n)
    if concat:
        vals = [r.value for r in replies]
        if any(isinstance(v, SelectedRows) for v in vals):
            raise ValueError("recv: cannot concatenate row-sparse blocks of %r" % outs[0])
        return {"Out": [recv_buffers.join(ctx, outs[0], vals)]}
    scope = ctx.scope
    for r, n in zip(replies, outs):
        if r.lod:
            scope._set_lod(n, r.lod)
    # into the parameters' own arrays (and never keeping a view of a pserver's shared memory); on a
    # device place the plan then moves them there (recv runs on the host: its registry entry says so)
    return {"Out": recv_buffers.place(ctx, outs, [r.value for r in replies])}


def _batch_spec(op, attrs):
    """``[(endpoint, name)]`` of the recv ops after ``op`` that ``op`` asks for (checked)."""
    eps = list(attrs.get("batch_epmap") or [])
    names = list(attrs.get("batch_varnames") or [])
    if len(eps) != len(names):
        raise ValueError("recv: batch_epmap has %d endpoints but batch_varnames %d names" % (len(eps), len(names)))
    for ep in eps:
        rpc.split_endpoint(ep)
    return list(zip(eps, names))


def _recv_spec(op, attrs):
    """(outs, endpoints, remote names, concat?, trainer id) of a ``recv`` op, checked."""
    outs = op.outputs.get("Out") or []
    tid = int(attrs.get("trainer_id") or 0)
    remote = attrs.get("recv_varnames") or []
    epmap = attrs.get("epmap") or []
    concat = len(outs) == 1 and len(epmap) > 1
    eps = _endpoints(op, attrs, "epmap", None if concat else len(outs))
    if concat:
        if len(remote) != len(eps):
            raise ValueError("recv: %r from %d endpoints needs %d recv_varnames, got %d"
                             % (outs[0], len(eps), len(eps), len(remote)))
    else:
        if remote and len(remote) != len(outs):
            raise ValueError("recv: recv_varnames has %d names for %d outputs" % (len(remote), len(outs)))
        remote = remote or outs
    return outs, eps, remote, concat, tid


@register_op("fetch_barrier", host=_HOST, inputs=["X*?"], outputs=["Out*?"], side_effect=True, role=OpRole.RPC,
             communicates=True, barrier="fetch",
             attrs={"endpoints": [], "trainer_id": 0})
def fetch_barrier(ctx, ins, attrs):
    """Wait until each pserver has finished this trainer's step. A pserver that already answered a
    ``recv`` of this step has (it answers those only then): it is not asked again. Out vars that
    already hold values (the transpiler makes the received params the outputs, as dependencies)
    keep them."""
    eps = _endpoints(ctx, attrs, "endpoints")
    tid = int(attrs["trainer_id"])
    session.remember(ctx.executor, eps, tid)
    prefetch_ahead.before_message(ctx)
    rpc.call_all([(ep, dict(kind="fetch_barrier", trainer=tid, step=session.step(ep, tid), what="fetch_barrier"))
                  for ep in eps if not session.fetched(ep, tid)], timeout_s=session.dependent_deadline())
    names = ctx.op.outputs.get("Out")
    if not names:
        return None
    scope = ctx.scope
    have = [scope._find_value(n) for n in names]
    if all(v is not None for v in have):
        return None   # leave them where they are
    return {"Out": [_CTRL if v is None else v for v in have]}


@register_op("prefetch", host=_HOST, inputs=["X*"], outputs=["Out*"], side_effect=True, role=OpRole.RPC,
             communicates=True, to_peers="X", from_peers="Out",
             attrs={"epmap": [], "trainer_id": 0})
def prefetch(ctx, ins, attrs):
    """Send the ids X[i] to epmap[i]; Out[i] gets the table rows the pserver's prefetch block returns.
    Rows the previous step asked for ahead for exactly these ids (``distributed.prefetch_ahead``) are
    taken instead: then only the other parts are asked for, and none when all are kept."""
    names = ctx.op.inputs.get("X") or []
    outs = ctx.op.outputs.get("Out") or []
    if len(outs) != len(names):
        raise ValueError("prefetch: %d id inputs but %d outputs" % (len(names), len(outs)))
    eps = _endpoints(ctx, attrs, "epmap", len(names))
    tid = int(attrs["trainer_id"])
    session.remember(ctx.executor, eps, tid)
    xs = ins["X"]
    rows = prefetch_ahead.take(ctx, eps, names, outs, xs, tid)
    ask = [i for i, r in enumerate(rows) if r is None]
    if ask:
        replies = rpc.call_all([(eps[i], dict(kind="prefetch", name=names[i], value=xs[i], trainer=tid,
                                              step=session.step(eps[i], tid), out=outs[i],
                                              what="prefetch %s" % names[i]))
                                for i in ask], timeout_s=session.dependent_deadline())
        for i, r in zip(ask, replies):
            rows[i] = recv_buffers.owned(r.value)
    return {"Out": rows}


@register_op("checkpoint_notify", host=_HOST, inputs=["X*?"], outputs=["Out*?"], side_effect=True, role=OpRole.RPC,
             communicates=True,
             attrs={"epmap": [], "dir": "", "lookup_table": "", "trainer_id": 0})
def checkpoint_notify(ctx, ins, attrs):
    """Ask each pserver to save its shard of the lookup table into ``dir``."""
    eps = _endpoints(ctx, attrs, "epmap")
    tid = int(attrs.get("trainer_id") or 0)
    session.remember(ctx.executor, eps, tid)
    rpc.call_all([(ep, dict(kind="checkpoint", name=attrs.get("lookup_table") or None, trainer=tid,
                            step=session.step(ep, tid), dir=attrs["dir"], table=attrs.get("lookup_table") or "",
                            what="checkpoint_notify %s" % attrs["dir"]))
                  for ep in eps])
    return _dummies(ctx)


@register_op("listen_and_serv", inputs=["X*"], outputs=[], side_effect=True, role=OpRole.RPC, inputs_are_names=True,
             communicates=True, serves=True,
             attrs={"endpoint": "", "pserver_id": 0, "Fanin": 1, "optimize_blocks": [], "grad_to_block_id": [],
                    "sparse_grad_to_param": [], "lr_decay_block_id": -1, "distributed_mode": SYNC,
                    "prefetch_var_name_to_block_id": [], "checkpint_block_id": -1, "rpc_get_thread_num": 12,
                    "rpc_send_thread_num": 12, "rpc_prefetch_thread_num": 12, "dc_asgd": False,
                    "sum_on_arrival": [], "accumulate_on_arrival": []})
def listen_and_serv(ctx, ins, attrs):
    """Serve the trainers on ``endpoint`` until all ``Fanin`` of them have completed (see module doc).
    X names the receive variables; they have no values until trainers send them, so the executor
    hands this kernel no inputs (``inputs_are_names``)."""
    program = ctx.program
    place = ctx.place        # received values go to the executor's place, served ones leave it through it
    ParameterServer(program, ctx.scope, attrs,
                    run_block=lambda idx, prog=program: ctx.run_block(prog.block(idx)),
                    to_place=lambda v: to_place(v, place), to_host=to_host_value).serve()
    return None
