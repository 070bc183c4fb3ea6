"""``x[...]`` on a Variable, by Paddle 1.8's rules, building the ops Paddle 1.8 builds.

- ``x[a:b]`` (step 1) is a ``slice`` op; any other step makes it one ``strided_slice`` op for the
  whole index (``strides`` attr, 1 on the axes without a step).
- ``x[::-1]`` on an axis (no start, no stop) is a ``reverse`` op on that axis, after the slice.
- an int (or an int Variable) picks one entry and drops the axis: the slice ``i:i+1`` (``-1:`` for
  -1) with the axis in ``decrease_axis``; picking one entry of every axis leaves shape ``[1]``.
- a Variable in a bound goes to ``StartsTensorList`` / ``EndsTensorList`` / ``StridesTensorList``
  (ints beside it become int32 ``[1]`` constants), its attr entry -1 and its ``infer_flags`` -1;
  an int Variable index ``i`` ends at ``i + 1``, an ``elementwise_add`` of a constant 1.
- an empty slice of a non-empty axis is refused, as Paddle's slice ops refuse it (ValueError here,
  Paddle's EnforceNotMet there), and so is an index past the end.

Paddle 1.8 refuses ``None``, ``...``, a list or a float as an index (TypeError here, with the
culprit named). Three differences:

- ``x[::k]`` with ``k > 0`` is a ``strided_slice`` (``x[::1]`` the whole axis), where Paddle's
  assertion allows only ``x[::-1]``;
- the ``reverse`` op's axes are counted on the slice's output, without the axes an int index
  dropped before them, so that ``x[0, ::-1]`` reverses what was axis 1 as NumPy does; Paddle 1.8
  passes the axes of ``x`` and reverses the wrong axis (its ``x[0, ::-1]`` flips the last axis);
- the ops go to the block being built, where Paddle appends them to the block that declares ``x``
  (a slice of an outer variable inside a loop body is computed in the loop, as every other layer
  there).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..framework import unique_name
from ..framework.program import Variable

__all__ = ["getitem"]

# Paddle's "to the end of the axis" for an end left open (a slice's ``ends`` attr)
END_OF_AXIS = 10000000


class _IndexPlan:
    """The slice op's lists, axis by axis, and the axes to reverse after it."""

    def __init__(self):
        self.axes, self.starts, self.ends, self.steps = [], [], [], []
        self.decrease_axis, self.reverse_axis = [], []
        self.strided = False

    def add(self, axis, start, end, step=1):
        self.axes.append(axis)
        self.starts.append(start)
        self.ends.append(end)
        self.steps.append(step)
        if isinstance(step, Variable) or step != 1:
            self.strided = True


def _as_int(value, what):
    """``value`` as a Python int (ints, bools and NumPy integers), a Variable as it is."""
    if isinstance(value, Variable):
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    raise TypeError("Variable index: %s must be an int or an int Variable, got %r (%s)"
                    % (what, value, type(value).__name__))


def _add_slice(plan, dim, entry):
    start, stop, step = entry.start, entry.stop, entry.step
    if start is None and stop is None and step is None:
        return
    step = 1 if step is None else _as_int(step, "the step of axis %d" % dim)
    if isinstance(step, int) and step == 0:
        raise ValueError("Variable index: axis %d: the step must not be 0" % dim)
    if start is None and stop is None:
        if isinstance(step, Variable):
            raise TypeError("Variable index: axis %d: a Variable step needs a start or a stop" % dim)
        if step == -1:
            plan.reverse_axis.append(dim)
        elif step > 1:
            plan.add(dim, 0, END_OF_AXIS, step)
        elif step < -1:
            raise ValueError("Variable index: axis %d: ::%d needs a start (Paddle 1.8 takes only ::-1 "
                             "without a start and a stop)" % (dim, step))
        return
    plan.add(dim, 0 if start is None else _as_int(start, "the start of axis %d" % dim),
             END_OF_AXIS if stop is None else _as_int(stop, "the stop of axis %d" % dim), step)


def _add_index(plan, block, dim, entry, var):
    if entry is None or entry is Ellipsis or isinstance(entry, (list, tuple, np.ndarray, str, float, np.floating)):
        raise TypeError("Variable index: axis %d: Paddle 1.8 indexes a Variable with ints, int Variables and "
                        "slices, got %r (%s)" % (dim, entry, type(entry).__name__))
    index = _as_int(entry, "the index of axis %d" % dim)
    plan.decrease_axis.append(dim)
    if isinstance(index, Variable):
        one = _int32_constant(block, 1)
        end = block.create_var(name=unique_name.generate_with_ignorable_key("_generated_var"), dtype="int32")
        block.append_op("elementwise_add", inputs={"X": [index], "Y": [one]}, outputs={"Out": [end]},
                        attrs={"axis": -1})
        plan.add(dim, index, end)
        return
    size = var.shape[dim] if var.shape is not None and dim < len(var.shape) else -1
    if size >= 0 and not -size <= index < size:
        raise IndexError("Variable index: %d is out of range for axis %d of %r (size %d)"
                         % (index, dim, var.name, size))
    plan.add(dim, index, index + 1 if index != -1 else END_OF_AXIS)


def _int32_constant(block, value):
    """An int32 ``[1]`` constant on the CPU (``force_cpu``), as Paddle's index tensors are."""
    out = block.create_var(name=unique_name.generate_with_ignorable_key("_generated_var"), dtype="int32",
                           shape=(1,), stop_gradient=True)
    block.append_op("fill_constant", outputs={"Out": [out]},
                    attrs={"shape": [1], "dtype": "int32", "value": float(value), "force_cpu": True})
    out.stop_gradient = True
    return out


def _bound_inputs(block, values, attrs, key, slot, inputs, infer_flags):
    """``values`` into the attr ``key``, or into the tensor list ``slot`` when one is a Variable."""
    if not any(isinstance(v, Variable) for v in values):
        attrs[key] = list(values)
        return
    tensors = []
    attrs[key] = []
    for k, v in enumerate(values):
        if isinstance(v, Variable):
            v.stop_gradient = True
            infer_flags[k] = -1
        attrs[key].append(-1 if isinstance(v, Variable) else v)
        tensors.append(v if isinstance(v, Variable) else _int32_constant(block, v))
    inputs[slot] = tensors


def getitem(var: Variable, item: Any) -> Variable:
    """``var[item]``: the ``slice`` / ``strided_slice`` / ``reverse`` ops Paddle 1.8 builds (see the
    module's docstring for the rules)."""
    block = var.block.program.current_block()
    items = item if isinstance(item, tuple) else (item,)
    if var.shape is not None and len(items) > len(var.shape):
        raise IndexError("Variable index: %d indices for %r of rank %d" % (len(items), var.name, len(var.shape)))
    plan = _IndexPlan()
    for dim, entry in enumerate(items):
        if isinstance(entry, slice):
            _add_slice(plan, dim, entry)
        else:
            _add_index(plan, block, dim, entry, var)
    out = var
    if plan.axes:
        inputs = {"Input": [var]}
        attrs = {"axes": plan.axes, "decrease_axis": plan.decrease_axis}
        infer_flags = [1] * len(plan.axes)
        bounds = [("starts", plan.starts, "StartsTensorList"), ("ends", plan.ends, "EndsTensorList")]
        if plan.strided:
            bounds.append(("strides", plan.steps, "StridesTensorList"))
        for key, values, slot in bounds:
            _bound_inputs(block, values, attrs, key, slot, inputs, infer_flags)
        attrs["infer_flags"] = infer_flags
        op_type = "strided_slice" if plan.strided else "slice"
        out = block.create_var(name=unique_name.generate_with_ignorable_key(var.name + "_" + op_type),
                               dtype=var.dtype)
        block.append_op(op_type, inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    if plan.reverse_axis:
        reversed_ = block.create_var(name=unique_name.generate_with_ignorable_key(var.name + "_slice_reverse"),
                                     dtype=var.dtype)
        # counted on the slice's output, which has lost the axes picked by an int before each
        axes = [a - sum(1 for d in plan.decrease_axis if d < a) for a in plan.reverse_axis]
        block.append_op("reverse", inputs={"X": [out]}, outputs={"Out": [reversed_]}, attrs={"axis": axes})
        out = reversed_
    return out
