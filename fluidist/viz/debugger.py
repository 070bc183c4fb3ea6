"""Pictures and listings of programs, as ``paddle.fluid.debugger`` has them.

- :func:`draw_block_graphviz` writes a block's ops and variables as Graphviz DOT and renders it with ``dot``;
- :func:`pprint_program_codes` / :func:`pprint_block_codes` give a program as code-like text, one line per
  op (``out = mul(X=x, Y=w) [x_num_col_dims=1]``), variables first.

Paddle passes ``program.desc`` / ``block.desc``; fluidist's Program and Block are their own descriptions,
so both the objects and their ``desc`` (the object itself) are accepted.
"""
from ..compat import refused, refused_class  # noqa: E402
import warnings

from ..framework import registry
from ..framework.op_role import OP_NAMESCOPE_ATTR, OP_ROLE_ATTR, OP_ROLE_VAR_ATTR, OpRole
from .graphviz import DotNotFound, Graph

__all__ = ["draw_block_graphviz", "pprint_program_codes", "pprint_block_codes", "add_block", "op_label", "data_parallel_graph",
           "HIDDEN_ATTRS"]

HIDDEN_ATTRS = (OP_ROLE_ATTR, OP_ROLE_VAR_ATTR, OP_NAMESCOPE_ATTR, "op_callstack", "op_device", "with_quant_attr")
"""The bookkeeping attributes every op carries, which listings and pictures leave out."""

OP_STYLE = {"shape": "box", "style": "rounded,filled", "fillcolor": "#dbe8f5", "fontname": "Helvetica"}
RPC_STYLE = {"shape": "box", "style": "rounded,filled", "fillcolor": "#f9d9a8", "fontname": "Helvetica"}
VAR_STYLE = {"shape": "ellipse", "fontsize": "10", "fontname": "Helvetica"}
PARAM_STYLE = {"shape": "ellipse", "style": "filled", "fillcolor": "#e6e6e6", "fontsize": "10",
               "fontname": "Helvetica-Bold"}
HIGHLIGHT_STYLE = {"shape": "ellipse", "style": "filled", "fillcolor": "#f4a3a3", "fontsize": "10",
                   "fontname": "Helvetica-Bold"}


def is_communication_op(op):
    """True for the ops drawn in the RPC colour: those that talk to other processes or places (the
    registry's ``communicates``) and those a distributed pass added around them (op_role RPC, Dist,
    Collective: the splits and concats of the pserver transpiler)."""
    role = int(op.attr(OP_ROLE_ATTR) or 0)
    return bool(registry.fact(op, "communicates", False) or role & (OpRole.RPC | OpRole.Dist | OpRole.Collective))


def _block_of(block_or_desc):
    b = block_or_desc
    if hasattr(b, "ops") and hasattr(b, "vars"):
        return b
    raise TypeError("expected a Block (or block.desc), got %r" % type(block_or_desc).__name__)


def _program_of(program_or_desc):
    p = program_or_desc
    if hasattr(p, "blocks") and hasattr(p, "global_block"):
        return p
    raise TypeError("expected a Program (or program.desc), got %r" % type(program_or_desc).__name__)


def _attr_text(value):
    if hasattr(value, "ops") and hasattr(value, "idx"):
        return "block[%d]" % value.idx
    if isinstance(value, (list, tuple)) and value and all(hasattr(v, "ops") and hasattr(v, "idx") for v in value):
        return "[%s]" % ", ".join("block[%d]" % v.idx for v in value)
    return repr(value)


def op_label(op):
    """``type`` and the attributes that tell two ops of a type apart (endpoints of RPC ops)."""
    extra = []
    for key in ("epmap", "endpoints", "endpoint"):
        v = op.attrs.get(key)
        if v:
            extra.append(", ".join(v) if isinstance(v, (list, tuple)) else str(v))
            break
    return op.type + ("\n" + extra[0] if extra else "")


def add_block(graph, block, prefix="", highlights=None, show_vars=True):
    """Add ``block``'s ops (boxes, in program order) and variables (ellipses; parameters grey, ``highlights``
    red) to ``graph``, with an edge per input (variable -> op) and output (op -> variable), labelled by
    slot. Without ``show_vars`` ops are joined directly (writer -> reader, labelled by the variable).
    Returns ``{op index: node id}``."""
    highlights = set(highlights or ())
    op_ids = {}
    var_ids = {}

    def var_node(name):
        if name not in var_ids:
            v = block._find_var_recursive(name) if hasattr(block, "_find_var_recursive") else None
            shape = "" if v is None or v.shape is None else "\n" + str(list(v.shape))
            style = HIGHLIGHT_STYLE if name in highlights else (
                PARAM_STYLE if v is not None and type(v).__name__ == "Parameter" else VAR_STYLE)
            var_ids[name] = graph.node(prefix + "var:" + name, name + shape, **style)
        return var_ids[name]

    writer = {}
    for i, op in enumerate(block.ops):
        nid = graph.node(prefix + "op%d" % i, op_label(op), **(RPC_STYLE if is_communication_op(op) else OP_STYLE))
        op_ids[i] = nid
        if show_vars:
            for slot, names in op.inputs.items():
                for n in names:
                    graph.edge(var_node(n), nid, label=slot, fontsize="9")
            for slot, names in op.outputs.items():
                for n in names:
                    graph.edge(nid, var_node(n), label=slot, fontsize="9")
        else:
            for n in op.input_arg_names:
                if n in writer:
                    graph.edge(writer[n], nid, label=n, fontsize="9")
            for n in op.output_arg_names:
                writer[n] = nid
    return op_ids


def draw_block_graphviz(block, highlights=None, path="./temp.dot", format="pdf"):
    """Write ``block`` as Graphviz DOT to ``path`` and render it beside it (``temp.pdf`` for ``temp.dot``;
    ``format`` picks svg/png/pdf). Variables named in ``highlights`` are drawn in red. Returns the image's
    path, or None (with a warning) when Graphviz's ``dot`` is not installed: the DOT file is written anyway."""
    block = _block_of(block)
    g = Graph("block_%d" % block.idx, graph_attr={"rankdir": "TB", "fontname": "Helvetica"})
    add_block(g, block, highlights=highlights)
    try:
        return g.render(path, format)
    except DotNotFound as e:
        warnings.warn(str(e), stacklevel=2)
        return None


def _op_line(op):
    outs = ", ".join(n for names in op.outputs.values() for n in names)
    ins = ", ".join("%s=%s" % (slot, names[0] if len(names) == 1 else "[%s]" % ", ".join(names))
                    for slot, names in op.inputs.items())
    attrs = ", ".join("%s=%s" % (k, _attr_text(v)) for k, v in sorted(op.attrs.items()) if k not in HIDDEN_ATTRS)
    return "%s%s(%s)%s" % (outs + " = " if outs else "", op.type, ins, " [%s]" % attrs if attrs else "")


def pprint_block_codes(block_desc, show_backward=False):
    """``block_desc`` as text: a header, its variables, then one line per op. Backward ops (op_role with
    the Backward bit) are left out unless ``show_backward``."""
    block = _block_of(block_desc)
    lines = ["// block-%d  parent-%d" % (block.idx, getattr(block, "parent_idx", -1)), "// variables"]
    for name in sorted(block.vars):
        lines.append(str(block.vars[name]))
    lines.append("// operators")
    for op in block.ops:
        if not show_backward and int(op.attrs.get(OP_ROLE_ATTR) or 0) & OpRole.Backward:
            continue
        lines.append(_op_line(op))
    return "\n".join(lines) + "\n"


def pprint_program_codes(program_desc):
    """Every block of ``program_desc`` as :func:`pprint_block_codes` gives it, backward ops included."""
    program = _program_of(program_desc)
    return "\n".join(pprint_block_codes(b, show_backward=True) for b in program.blocks)


def data_parallel_graph(programs, places, num_trainers=1):
    """The graph ``CompiledProgram.with_data_parallel`` runs: each place's program (forward, backward,
    its all-reduce ops, the update), and an edge between the places' matching collective ops (the
    all-reduce they take part in together)."""
    g = Graph("data_parallel", graph_attr={"rankdir": "TB", "fontname": "Helvetica", "compound": "true",
                                           "label": "data parallel over %d place(s) x %d trainer(s)"
                                                    % (len(places), num_trainers), "labelloc": "t"})
    collective = []
    for k, (prog, place) in enumerate(zip(programs, places)):
        sub = g.subgraph("place_%d" % k, label="place %d: %s" % (k, place), style="rounded")
        block = prog.global_block()
        ids = add_block(sub, block, "place%d:" % k, show_vars=False)
        collective.append([(op, ids[i]) for i, op in enumerate(block.ops)
                           if registry.fact(op, "communicates", False) and op.has_attr("ring_id")])
    for mine, theirs in zip(collective, collective[1:]):
        for (op, a), (_, b) in zip(mine, theirs):
            g.edge(a, b, label="ring %s" % op.attr("ring_id"), fontsize="9", dir="both", style="dashed")
    return g


_REPR = "print(program) or fluidist.debugger.pprint_program_codes(program) shows variables and ops as text"
for _name in ("repr_data_type", "repr_tensor", "repr_lodtensor", "repr_selected_rows", "repr_tensor_array",
              "repr_var", "repr_attr", "repr_op"):
    globals()[_name] = refused("fluid.debugger." + _name, _REPR)
prepare_fast_nan_inf_debug = refused("fluid.debugger.prepare_fast_nan_inf_debug",
                                     "set FLAGS_check_nan_inf=1 (fluid.set_flags) to have the executor check outputs")
run_fast_nan_inf_debug = refused("fluid.debugger.run_fast_nan_inf_debug",
                                 "set FLAGS_check_nan_inf=1 (fluid.set_flags) to have the executor check outputs")
