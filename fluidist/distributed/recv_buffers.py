"""Where a trainer's ``recv`` puts what it receives.

The transpiler fetches a sliced parameter as blocks (``recv`` of ``w.block0``, ``w.block1``, ...) and
joins them with a ``concat`` (role Dist) into ``w``; it says so on the ``recv`` (``row_block_of[i]``:
the variable Out[i] is a row block of, ``row_block_begin[i]``: its first row there). ``recv`` writes
each received block straight into its rows of ``w``'s previous array and hands out those rows as the
block variables; the ``concat`` then finds its inputs already in place and copies nothing
(``ops.tensor.concat``). Other received values that the transport lends rather than gives (views of
a pserver's shared-memory segment, see ``shm_payload``) are copied into the variable's previous
array, or a new one.

A previous array is reused only when it is an ndarray of the same shape and dtype, writable, and not
a fed array (the caller's own).
"""
import weakref

import numpy as np

from ..core.tensor import SelectedRows
from . import shm_payload

_plans: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()   # op -> (program version, {out: (whole, row, rows, total)})


def _static_rows(block, name):
    v = block._find_var_recursive(name)
    if v is None or not v.shape or any(d is None or d < 0 for d in v.shape):
        return None
    return int(v.shape[0])


def _plan(op):
    """{recv output: (the variable it is a row block of, first row, rows, that variable's rows)} for
    the outputs the op's ``row_block_of`` / ``row_block_begin`` attrs place, whose row counts are
    static and fit."""
    block = op.block
    version = getattr(block.program, "_version", None)
    got = _plans.get(op)
    if got is not None and got[0] == version:
        return got[1]
    outs = op.outputs.get("Out") or []
    wholes = list(op.attrs.get("row_block_of") or [])
    begins = list(op.attrs.get("row_block_begin") or [])
    if wholes and (len(wholes) != len(outs) or len(begins) != len(outs)):
        raise ValueError("recv: row_block_of / row_block_begin need one entry per output (%d), got %d / %d"
                         % (len(outs), len(wholes), len(begins)))
    plan = {}
    for name, whole, first in zip(outs, wholes, begins):
        if not whole:
            continue
        rows, total = _static_rows(block, name), _static_rows(block, whole)
        if rows is None or total is None or not 0 <= int(first) <= total - rows:
            continue
        plan[name] = (whole, int(first), rows, total)
    _plans[op] = (version, plan)
    return plan


def _reusable(ctx, name, shape, dtype):
    prev = ctx.scope.vals.get(name)
    if not (isinstance(prev, np.ndarray) and prev.shape == shape and prev.dtype == dtype and prev.flags.writeable
            and prev.flags.c_contiguous and prev.base is None):
        return None
    v = ctx.op.block._find_var_recursive(name)
    if v is None or v.is_data:
        return None
    return prev


def place(ctx, names, values):
    """The arrays ``recv`` outputs for ``names``, given the received ``values`` (numpy, dense)."""
    plan = _plan(ctx.op)
    out = []
    for name, value in zip(names, values):
        if not isinstance(value, np.ndarray):
            out.append(owned(value))
            continue
        dest = plan.get(name)
        if dest is not None and value.shape[0] == dest[2]:
            whole_name, first, rows, total = dest
            shape = (total,) + tuple(value.shape[1:])
            whole = _reusable(ctx, whole_name, shape, value.dtype)
            if whole is None:
                whole = np.empty(shape, value.dtype)
                ctx.scope._set_value(whole_name, whole)
            view = whole[first:first + rows]
            np.copyto(view, value)
            out.append(view)
        elif shm_payload.is_shared(value):
            prev = _reusable(ctx, name, value.shape, value.dtype)
            if prev is None:
                out.append(np.array(value))
            else:
                np.copyto(prev, value)
                out.append(prev)
        else:
            out.append(value)
    return out


def join(ctx, name, values):
    """Blocks fetched from several pservers for the one output ``name``, joined along rows into its
    previous array when that fits, else into a new one."""
    if all(isinstance(v, np.ndarray) for v in values):
        shape = (sum(v.shape[0] for v in values),) + tuple(values[0].shape[1:])
        prev = _reusable(ctx, name, shape, values[0].dtype)
        if prev is not None:
            return np.concatenate(values, axis=0, out=prev)
    return np.concatenate(values, axis=0)


def owned(value):
    """``value`` itself, or a copy when it lies in a peer's shared memory (which changes later)."""
    if isinstance(value, SelectedRows):
        if shm_payload.is_shared(value.value) or shm_payload.is_shared(value.rows):
            return SelectedRows(np.array(value.rows), np.array(value.value), value.height)
        return value
    if isinstance(value, np.ndarray) and shm_payload.is_shared(value):
        return np.array(value)
    return value
