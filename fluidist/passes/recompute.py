"""Recomputation (``RecomputeOptimizer``, ``append_backward(checkpoints=...)``): backward re-runs
the forward ops between checkpoints instead of reading the activations they produced.

The forward ops on the gradient path are cut into segments after each op that writes a
checkpoint. The gradient ops of the last segment (the one ending at the loss) come first and read
its activations as usual. Before the gradient ops of every earlier segment, copies of that
segment's forward ops run again (op role Backward), writing ``<var>@RECOMPUTE@<k>`` for each
activation that is not a checkpoint, a parameter, a data variable or persistable; the segment's
gradient ops read those copies. Ops with randomness (a ``seed`` attr: random fills) or side
effects are not run again: their outputs are read as the forward pass left them, so a recomputed
segment computes exactly what the forward pass did, and the gradients equal plain training's.
Dropout is run again, as in Paddle: before each dropout on the gradient path a ``seed`` op is
inserted into the forward pass and given to the dropout as its ``Seed`` input (which decides the
mask over its ``fix_seed`` / ``seed`` attrs), so that the recomputed dropout draws the forward pass's mask
(:func:`seed_dropouts`).

As in Paddle, the original activations could then be freed after the forward pass; fluidist's
executor keeps every variable of a step in its scope, so here recomputation changes the program,
not the memory it needs.
"""
from ..framework import registry
from ..framework.op_role import OP_ROLE_ATTR, OP_ROLE_VAR_ATTR, OpRole
from ..framework.variable import RECOMPUTE_INFIX


def _rerunnable(op):
    """Whether running ``op`` again gives what it gave: no side effect, and no randomness (none, or
    one its ``Seed`` input decides)."""
    d = registry.lookup(op.type)
    return d is not None and not registry.fact(op, "side_effect") and ("seed" not in d.attrs or bool(op.inputs.get("Seed")))


def seed_dropouts(block, path):
    """Give each dropout among the ops ``path`` (indices) that has no ``Seed`` a ``seed`` op right
    before it (seed: its ``seed`` attr under ``fix_seed``, else 0: drawn at run time), as Paddle's
    recompute does. Returns the number of ops inserted."""
    from ..framework import unique_name
    dropouts = [block.ops[i] for i in path if _takes_a_seed_input(block.ops[i]) and not block.ops[i].inputs.get("Seed")]
    for op in dropouts:
        name = unique_name.generate_with_ignorable_key(".".join([unique_name.generate("seed"), "tmp"]))
        var = block.create_var(name=name, dtype="int32", persistable=False, stop_gradient=False)
        seed = int(op.attrs.get("seed") or 0) if op.attrs.get("fix_seed") else 0
        block._insert_op(block.ops.index(op), type="seed", outputs={"Out": [var]}, attrs={"seed": seed})
        op.inputs["Seed"] = [name]
    return len(dropouts)


def _takes_a_seed_input(op):
    """A random op whose entry lets a ``Seed`` input decide its draw (``dropout``)."""
    d = registry.lookup(op.type)
    return d is not None and "Seed" in d.inputs and "seed" in d.attrs


def _persistable(block, name):
    v = block._find_var_recursive(name)
    return v is not None and v.persistable


def _kept(block, name, checkpoints):
    v = block._find_var_recursive(name)
    return name in checkpoints or v is None or v.persistable or v.is_data


def segments(block, path, checkpoints):
    """``path`` (sorted forward op indices) cut after each op writing a checkpoint: a list of lists
    of op indices, the last one ending at the loss."""
    cuts, out, cur = set(checkpoints), [], []
    for i in path:
        cur.append(i)
        if cuts.intersection(block.ops[i].output_arg_names):
            out.append(cur)
            cur = []
    if cur:
        out.append(cur)
    return out


def with_recompute(block, path, specs_of, checkpoints):
    """Grad op specs (in backward order) with the recompute ops inserted; ``specs_of(i)`` gives the
    specs of forward op ``i``."""
    names = [c if isinstance(c, str) else c.name for c in checkpoints]
    missing = [n for n in names if block._find_var_recursive(n) is None]
    if missing:
        raise ValueError("recompute: checkpoints %s are not variables of the program" % missing)
    chk = set(names)
    segs = segments(block, path, chk)
    out = []
    for k in range(len(segs) - 1, -1, -1):
        seg = segs[k]
        rename = {}
        if k < len(segs) - 1:
            out.extend(_recompute_specs(block, seg, chk, k, rename))
        for i in reversed(seg):
            for spec in specs_of(i):
                if rename:
                    spec = dict(spec, inputs={s: [rename.get(n, n) for n in ns] for s, ns in spec["inputs"].items()})
                out.append(spec)
    return out


def _recompute_specs(block, seg, chk, k, rename):
    """Copies of the segment's forward ops writing renamed activations (``rename`` is filled)."""
    specs = []
    for i in seg:
        op = block.ops[i]
        if not _rerunnable(op) or any(_persistable(block, n) for n in op.output_arg_names):
            continue          # random, or updating state (batch_norm's running statistics): not run twice
        outs = {}
        for slot, ns in op.outputs.items():
            new = []
            for n in ns:
                if _kept(block, n, chk):
                    new.append(n)
                    continue
                r = "%s%s%d" % (n, RECOMPUTE_INFIX, k)
                if not block.has_var(r):
                    v = block._find_var_recursive(n)
                    block.create_var(name=r, shape=v.shape, dtype=v.dtype, lod_level=v.lod_level, type=v.type,
                                     stop_gradient=v.stop_gradient)
                rename[n] = r
                new.append(r)
            outs[slot] = new
        if all(rename.get(n) is None for ns in op.outputs.values() for n in ns):
            continue          # writes only checkpoints or persistables: nothing to recompute
        ins = {s: [rename.get(n, n) for n in ns] for s, ns in op.inputs.items()}
        attrs = {a: v for a, v in op.attrs.items() if a not in (OP_ROLE_ATTR, OP_ROLE_VAR_ATTR)}
        attrs[OP_ROLE_ATTR] = int(OpRole.Backward)
        specs.append({"type": op.type, "inputs": ins, "outputs": outs, "attrs": attrs, "recompute": True})
    return specs
