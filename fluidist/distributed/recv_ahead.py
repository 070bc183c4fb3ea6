"""Consecutive ``recv`` ops of a trainer program, asked for at once.

After its ``send_barrier`` a trainer program receives every parameter (block) through a run of
``recv`` ops, one or a few variables each. Run one by one, each op is a round trip to the pservers,
the first of which waits for the sync round. The first op of such a run therefore sends the ``get``
requests of the whole run and waits for all replies under one deadline; it keeps the replies of the
following ops (per thread), which take them instead of asking again. Nothing runs between them (they
read only the barrier's output), so what they receive is the same.
"""
import threading
import weakref

_local = threading.local()


def following(op):
    """The ``recv`` ops right after ``op`` in its block (the rest of the run)."""
    ops = op.block.ops
    out = []
    try:
        i = next(k for k, o in enumerate(ops) if o is op)
    except StopIteration:
        return out
    for o in ops[i + 1:]:
        if o.type != "recv":
            break
        out.append(o)
    return out


def keep(pairs):
    """Keep ``[(op, replies)]`` for those ops; drops whatever an earlier run left untaken."""
    _local.kept = weakref.WeakKeyDictionary(pairs) if pairs else None


def take(op):
    """The replies kept for ``op`` by the first op of its run, or None (then it asks itself)."""
    kept = getattr(_local, "kept", None)
    if not kept:
        return None
    return kept.pop(op, None)
