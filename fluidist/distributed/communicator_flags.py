"""What a trainer's Communicator is told (Paddle 1.8's ``FLAGS_communicator_*``), and how it merges
the gradients it queued.

The flags come from a dict (Fleet's ``TrainerRuntimeConfig.get_communicator_flags()``, or the
``envs`` given to ``fluid.communicator.Communicator``), keys with or without the ``FLAGS_`` prefix;
what the dict lacks is read from the environment (``FLAGS_communicator_<name>``), else Paddle 1.8's
default. A value that is not a number (or a boolean) raises ``ValueError`` naming the flag.

Merging (Paddle's ``MergeVars``): the values queued for one variable become one. Dense: their sum,
or their mean when ``merge_add`` is off. Row-sparse: one row per distinct row id (sorted), holding
the rows' sum, or that sum divided by the number of merged values (not by how many of them hold
the row: Paddle's ``MergeAverage``). An SGD update of a sum equals the updates of its parts in a
row, so with ``is_sgd_optimizer`` (the default) the async communicator adds; other optimizers get
the mean; the half-async one always takes the mean, as Paddle's does.
"""
import os

import numpy as np

from ..core.tensor import SelectedRows, scatter_add

__all__ = ["CommunicatorFlags", "merge_values", "FLAG_NAMES"]

# name -> (kind, Paddle 1.8's default; "cpu" is CPU_NUM, as TrainerRuntimeConfig reads it)
_FLAGS = {
    "send_queue_size": ("int", "cpu"),
    "max_merge_var_num": ("int", "cpu"),
    "independent_recv_thread": ("bool", True),
    "min_send_grad_num_before_recv": ("int", "cpu"),
    "thread_pool_size": ("int", 5),
    "send_wait_times": ("int", 5),
    "fake_rpc": ("bool", False),
    "merge_sparse_grad": ("bool", True),
    "is_sgd_optimizer": ("bool", True),
}
FLAG_NAMES = tuple("communicator_" + n for n in _FLAGS)


def _parse(name, kind, raw):
    if kind == "bool":
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off"):
            return False
        raise ValueError("FLAGS_communicator_%s must be a boolean (1/0, true/false), got %r" % (name, raw))
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise ValueError("FLAGS_communicator_%s must be an integer, got %r" % (name, raw)) from None
    floor = 0 if name in ("send_wait_times", "min_send_grad_num_before_recv") else 1
    if value < floor:
        raise ValueError("FLAGS_communicator_%s must be >= %d, got %d" % (name, floor, value))
    return value


class CommunicatorFlags:
    """The communicator's settings, one attribute per flag (``max_merge_var_num``, ...)."""

    def __init__(self, given=None):
        given = dict(given or {})
        cpu = os.environ.get("CPU_NUM", "1")
        known = set()
        for name, (kind, default) in _FLAGS.items():
            raw = None
            for key in ("communicator_" + name, "FLAGS_communicator_" + name):
                if key in given:
                    raw = given[key]
                    known.add(key)
            if raw is None:
                raw = os.environ.get("FLAGS_communicator_" + name)
            if raw is None:
                raw = cpu if default == "cpu" else default
            setattr(self, name, _parse(name, kind, raw))
        unknown = [k for k in given if k not in known and k.replace("FLAGS_", "").startswith("communicator_")]
        if unknown:
            raise ValueError("unknown communicator flag(s) %s; known: %s" % (sorted(unknown), ", ".join(FLAG_NAMES)))

    def as_dict(self):
        return {"communicator_" + n: getattr(self, n) for n in _FLAGS}

    def __repr__(self):
        return "CommunicatorFlags(%s)" % ", ".join("%s=%r" % (n, getattr(self, n)) for n in _FLAGS)


def merge_values(values, merge_add):
    """One value from the queued ``values`` of a variable (see the module doc); values are host
    arrays or SelectedRows of host arrays, all of one kind."""
    if not values:
        raise ValueError("merge_values: nothing to merge")
    first = values[0]
    if isinstance(first, SelectedRows):
        if not all(isinstance(v, SelectedRows) for v in values):
            raise TypeError("merge_values: row-sparse and dense values queued for one variable")
        return _merge_rows(values, merge_add)
    if any(isinstance(v, SelectedRows) for v in values):
        raise TypeError("merge_values: row-sparse and dense values queued for one variable")
    if len(values) == 1:
        return first
    out = np.array(first, copy=True)
    for v in values[1:]:
        if v.shape != out.shape:
            raise ValueError("merge_values: values of shapes %s and %s queued for one variable"
                             % (list(out.shape), list(v.shape)))
        out += v
    if not merge_add:
        out /= out.dtype.type(len(values))
    return out


def _merge_rows(values, merge_add):
    height = values[0].height
    parts = [v for v in values if v.rows is not None and len(v.rows)]
    if not parts:
        return SelectedRows(np.zeros(0, dtype=np.int64), values[0].value, height)
    rows = np.concatenate([np.asarray(v.rows, dtype=np.int64) for v in parts])
    vals = np.concatenate([v.value for v in parts])
    uniq, inverse = np.unique(rows, return_inverse=True)
    out = np.zeros((len(uniq),) + vals.shape[1:], dtype=vals.dtype)
    scatter_add(np, out, inverse.reshape(-1), vals)
    if not merge_add:
        out /= out.dtype.type(len(values))
    return SelectedRows(uniq, out, height)
