"""The pass behind ``BuildStrategy.sync_batch_norm`` / ``DistributedStrategy.sync_batch_norm``: the
``batch_norm`` ops of a program that normalise with the batch's statistics become
``sync_batch_norm`` (``fluidist.ops.sync_batch_norm``), and their gradient ops
``sync_batch_norm_grad``, as Paddle's ``sync_batch_norm_pass`` does. Ops that normalise with the
running statistics (``is_test``, ``use_global_stats``) have nothing to synchronise and stay. Which
op becomes which is the registry's ``synced`` fact."""
from ..framework import registry


def _uses_batch_stats(op):
    return not (op.attr("is_test") or op.attr("use_global_stats"))


def convert_sync_batch_norm(program):
    """Rename, in every block of ``program`` (in place), the ops described above; returns how many
    forward ops became ``sync_batch_norm``."""
    count = 0
    for block in program.blocks:
        for op in block.ops:
            synced = registry.fact(op, "synced")
            if synced and _uses_batch_stats(op):
                count += registry.fact(op, "forward") is None
                op.type = synced
    if count:
        program._bump_version()
    return count


__all__ = ["convert_sync_batch_norm"]
