"""The default picture of a parameter-server job: a lane per process, the traffic grouped per pserver.

Each trainer lane shows its program as a few stages (forward, backward, then per pserver one ``send``
and one ``recv`` node counting what goes there, the barriers between them); each pserver lane shows its
``listen_and_serv`` and one node per optimize block (named after the parameter block it updates, with
its ops). Between the lanes, one edge per (trainer, pserver) and direction, labelled with how many
gradients or parameters it carries. A 2 x 2 job fits a screen; ``fluidist-draw --detail`` draws every op
and variable instead (:func:`fluidist.viz.draw.draw_job`).
"""
import collections

from ..framework import registry
from ..framework.op_role import OP_ROLE_ATTR, OpRole
from .graphviz import Graph

__all__ = ["draw_lanes", "trainer_stages", "lane_order", "MAX_BLOCKS", "MAX_TRAINER_LANES"]

MAX_BLOCKS = 6   # optimize blocks drawn one by one per pserver; the rest are one node
MAX_TRAINER_LANES = 4   # more trainers are drawn as one lane (trainer 0's program, edges counted per trainer)
_STAGE = {"shape": "box", "style": "rounded,filled", "fillcolor": "#dbe8f5", "fontname": "Helvetica",
          "fontsize": "11"}
_RPC = dict(_STAGE, fillcolor="#f9d9a8")
_SERVE = dict(_STAGE, fillcolor="#f4c27a", fontsize="12")
_BLOCK = dict(_STAGE, fillcolor="#fbe9d0", fontsize="10")
_SEND_EDGE = {"color": "#1f5fbf", "fontcolor": "#1f5fbf", "fontsize": "10", "fontname": "Helvetica",
              "penwidth": "1.5"}
_RECV_EDGE = dict(_SEND_EDGE, color="#2e8b57", fontcolor="#2e8b57")


def _rpc_kind(op):
    """What an rpc op does per pserver, read off its registry facts: ``"send"`` (to the peers of its
    ``epmap``), ``"recv"`` (from them), ``"prefetch"`` (both: a request answered), ``"notify"`` (neither:
    checkpoint_notify); ``None`` for every other op (barriers, collectives and compute go by role)."""
    if not registry.fact(op, "communicates", False) or registry.fact(op, "barrier"):
        return None
    direction = registry.peer_direction(op)
    if direction:
        return "prefetch" if direction == "both" else direction
    return "notify" if "epmap" in op.attrs else None


def _role(op):
    return int(op.attrs.get(OP_ROLE_ATTR) or 0)


def _counted(types, limit=6):
    """``mul x3, relu x2, ...``: the op types of a stage, most frequent first, at most ``limit``."""
    counts = collections.Counter(types)
    items = ["%s x%d" % (t, n) if n > 1 else t for t, n in counts.most_common(limit)]
    if len(counts) > limit:
        items.append("...")
    lines, line = [], ""
    for item in items:
        if line and len(line) + len(item) > 30:
            lines.append(line)
            line = ""
        line += (", " if line else "") + item
    return "\n".join(lines + [line])


def trainer_stages(block):
    """The trainer block as an ordered list of ``(key, ops)`` stages: ``forward``, ``lr``, ``backward``,
    ``split``, ``("send", ep)`` per pserver, ``send_barrier``, ``("recv", ep)``, ``fetch_barrier``, ``concat``,
    ``optimize``, and ``("prefetch", ep)`` / ``("notify", ep)`` for prefetch / checkpoint_notify. Sends happen during the backward pass;
    the picture shows what goes where."""
    stages = collections.OrderedDict()
    fetched = False
    for op in block.ops:
        role, kind, barrier = _role(op), _rpc_kind(op), registry.fact(op, "barrier")
        if kind:
            eps = op.attrs.get("epmap") or op.attrs.get("endpoints") or [""]
            for ep in dict.fromkeys(eps):
                stages.setdefault((kind, ep), []).append(op)
            continue
        if barrier:
            fetched = fetched or barrier == "fetch"
            key = barrier + "_barrier"
        elif role & OpRole.Dist:
            key = "concat" if fetched else "split"
        elif role & OpRole.LRSched:
            key = "lr"
        elif role & OpRole.Optimize:
            key = "optimize"
        elif role & OpRole.Backward:
            key = "backward"
        else:
            key = "forward"
        stages.setdefault(key, []).append(op)
    order = ["forward", "prefetch", "lr", "backward", "split", "send", "send_barrier", "recv", "fetch_barrier",
             "concat", "notify", "optimize"]
    return sorted(stages.items(), key=lambda kv: order.index(kv[0][0] if isinstance(kv[0], tuple) else kv[0]))


def lane_order(n_trainers, n_pservers, max_trainer_lanes=None):
    """The lanes, left to right: half the trainers, the pservers, the other trainers (each trainer's edges
    then reach its pservers without crossing another trainer). More trainers than ``max_trainer_lanes``
    (default ``MAX_TRAINER_LANES``) are drawn as one lane, trainer 0's: they run the same program on other
    data, and the edges say how many trainers each stands for."""
    limit = MAX_TRAINER_LANES if max_trainer_lanes is None else max_trainer_lanes
    shown = n_trainers if n_trainers <= limit else 1
    half = (shown + 1) // 2
    return ([("trainer", t) for t in range(half)] + [("pserver", k) for k in range(n_pservers)]
            + [("trainer", t) for t in range(half, shown)])


def _carried(kind, ep, ops):
    """How many variables (or requests) a per-pserver stage carries to or from ``ep``, as a phrase."""
    names = []
    for op in ops:
        if kind in ("send", "recv"):
            slot = (op.inputs.get(registry.fact(op, "to_peers"), []) if kind == "send"
                    else op.outputs.get(registry.fact(op, "from_peers"), []))
            eps = op.attrs.get("epmap") or []
            names += [n for n, e in zip(slot, eps) if e == ep]
    what = {"send": "gradient", "recv": "parameter"}.get(kind, "request")
    count = len(names) if names else len(ops)
    return "%d %s%s" % (count, what, "" if count == 1 else "s")


def _stage_label(key, ops, pserver_names):
    if isinstance(key, tuple):
        kind, ep = key
        arrow = "->" if kind == "send" else "<-"
        return "%s %s %s\n%s" % (kind, arrow, pserver_names.get(ep, ep), _carried(kind, ep, ops))
    if key in ("send_barrier", "fetch_barrier"):
        return key
    return "%s: %d op%s\n%s" % (key, len(ops), "" if len(ops) == 1 else "s", _counted([op.type for op in ops]))


def _add_trainer(g, tid, prog, pserver_names, label=None):
    """Trainer ``tid``'s lane; returns ``{(kind, ep): (node, what it carries)}`` of its per-pserver nodes."""
    lane = g.subgraph("trainer_%d" % tid, label=label or "trainer %d" % tid, style="rounded", color="#3a6ea5",
                      fontname="Helvetica")
    ends = {}
    groups = []   # [(rank key, [nodes])]: consecutive stages of one kind share a rank
    for k, (key, ops) in enumerate(trainer_stages(prog.global_block())):
        style = _RPC if isinstance(key, tuple) or key.endswith("barrier") else _STAGE
        node = lane.node("t%d:s%d" % (tid, k), _stage_label(key, ops, pserver_names), **style)
        if isinstance(key, tuple):
            ends[key] = (node, _carried(key[0], key[1], ops))
        rank_key = key[0] if isinstance(key, tuple) else key
        if groups and groups[-1][0] == rank_key:
            groups[-1][1].append(node)
        else:
            groups.append((rank_key, [node]))
    for (_, before), (_, after) in zip(groups, groups[1:]):
        for a in before:
            for b in after:
                lane.edge(a, b, color="#7f7f7f", arrowsize="0.6")
    return ends


def _block_label(block):
    updated = [n for op in block.ops for n in op.outputs.get("ParamOut", [])]
    name = ", ".join(dict.fromkeys(updated)) or ("learning rate" if block.ops and all(
        _role(op) & OpRole.LRSched for op in block.ops) else "(no parameter)")
    return "block %d: %s\n%s" % (block.idx, name, _counted([op.type for op in block.ops], limit=4))


def _add_pserver(g, k, ep, prog):
    """Pserver ``k``'s lane; returns its ``listen_and_serv`` node."""
    lane = g.subgraph("pserver_%d" % k, label="pserver %d (%s)" % (k, ep), style="rounded", color="#b5651d",
                      fontname="Helvetica")
    las = next((op for op in prog.global_block().ops if registry.fact(op, "serves", False)), None)
    mode = "sync" if las is None or int(las.attrs.get("distributed_mode", 0) or 0) == 0 else "async"
    fanin = las.attrs.get("Fanin", "?") if las is not None else "?"
    serve = lane.node("p%d:serve" % k, "listen_and_serv\n%s\n%s, %s trainer(s)" % (ep, mode, fanin), **_SERVE)
    blocks = prog.blocks[1:]
    prev = serve
    for b in blocks[:MAX_BLOCKS]:
        node = lane.node("p%d:b%d" % (k, b.idx), _block_label(b), **_BLOCK)
        lane.edge(prev, node, color="#b5651d", style="dashed", arrowsize="0.6")
        prev = node
    rest = blocks[MAX_BLOCKS:]
    if rest:
        names = [n for b in rest for op in b.ops for n in op.outputs.get("ParamOut", [])]
        node = lane.node("p%d:more" % k, "blocks %d..%d: %d more\n%s" % (rest[0].idx, rest[-1].idx, len(rest),
                                                                          _counted(names, limit=3)), **_BLOCK)
        lane.edge(prev, node, color="#b5651d", style="dashed", arrowsize="0.6")
    return serve


def draw_lanes(trainer_progs, pserver_progs, title=None):
    """The default picture of the job (a :class:`fluidist.viz.graphviz.Graph`): see the module's docstring."""
    g = Graph("job", graph_attr={"rankdir": "TB", "fontname": "Helvetica", "label": title or "", "labelloc": "t",
                                 "fontsize": "16", "newrank": "true", "nodesep": "0.25", "ranksep": "0.35"})
    eps = list(pserver_progs)
    names = {ep: "pserver %d" % k for k, ep in enumerate(eps)}
    serve, ends = {}, {}
    lanes = lane_order(len(trainer_progs), len(eps))
    shown = sum(1 for kind, _ in lanes if kind == "trainer")
    per_trainer = "" if shown == len(trainer_progs) else " x %d trainers" % len(trainer_progs)
    for kind, idx in lanes:
        if kind == "trainer":
            label = None if not per_trainer else "trainers 0..%d (each runs this program)" % (len(trainer_progs) - 1)
            ends[idx] = _add_trainer(g, idx, trainer_progs[idx], names, label)
        else:
            serve[eps[idx]] = _add_pserver(g, idx, eps[idx], pserver_progs[eps[idx]])
    for tid, nodes in sorted(ends.items()):
        for (kind, ep), (node, carried) in nodes.items():
            if ep not in serve:
                continue
            carried += per_trainer
            if kind in ("send", "checkpoint_notify"):
                g.edge(node, serve[ep], label=carried, **_SEND_EDGE)
            elif kind == "recv":
                g.edge(serve[ep], node, label=carried, **_RECV_EDGE)
            else:   # prefetch: rows asked for and answered
                g.edge(node, serve[ep], label=carried, dir="both", **_SEND_EDGE)
    return g
