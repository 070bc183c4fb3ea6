"""The replies a trainer's first ``recv`` of a run fetched for the ``recv`` ops after it.

After its ``send_barrier`` a trainer program receives every parameter (block) through a run of
``recv`` ops, one or a few variables each. Run one by one, each op would be a round trip to the
pservers, the first of which waits for the sync round. The transpiler therefore writes on the first
op of such a run what the others receive (its ``batch_epmap`` / ``batch_varnames`` attrs): that op
sends the ``get`` requests of the whole run and waits for all replies under one deadline, and keeps
the others' replies here (per thread); the following ops take them instead of asking again. Nothing
runs between them (they read only the barrier's output), so what they receive is the same.

Kept replies belong to the block whose op fetched them: only ``recv`` ops of that block take them,
and the next fetch of a run drops whatever an earlier one left untaken (a step that failed midway).
"""
import threading
import weakref

_local = threading.local()


def keep(block, trainer_id, wanted, replies):
    """Keep ``replies`` for the ``(endpoint, name)`` pairs of ``wanted``, fetched by an op of
    ``block`` for trainer ``trainer_id``; drops whatever an earlier fetch left untaken."""
    if not wanted:
        _local.kept = None
        return
    _local.kept = (weakref.ref(block), {(ep, name, trainer_id): r for (ep, name), r in zip(wanted, replies)})


def take(block, endpoints, names, trainer_id):
    """The kept replies for ``(endpoints[i], names[i])``, fetched by an op of ``block`` (removed), or
    None when not all of them are kept (the op then asks itself)."""
    kept = getattr(_local, "kept", None)
    if not kept or kept[0]() is not block:
        return None
    store = kept[1]
    keys = [(ep, name, trainer_id) for ep, name in zip(endpoints, names)]
    if not keys or any(k not in store for k in keys):
        return None
    return [store.pop(k) for k in keys]
