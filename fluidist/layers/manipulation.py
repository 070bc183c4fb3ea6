"""Shape and layout layers of Paddle 1.8's ``layers/nn.py``: squeeze, unsqueeze, flatten, stack,
unstack, expand(_as), slice, strided_slice, flip, roll, pad, pad2d, pad_constant_like, crop(_tensor),
space_to_depth, shuffle_channel, temporal_shift, unfold, meshgrid, diag_embed, t."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..framework.program import Variable
from .layer_helper import LayerHelper, refuse_tuple
from ._build import check_var, int_list, one_op, xshape_op
from ..reader.data_feeder import check_dtype, check_type, check_variable_and_dtype
from .shape_args import attr_values, has_variable, int_tensors, tensor_list
from .rearrange import shuffle_channel, space_to_depth, temporal_shift, unfold  # noqa: F401 (re-exported)

__all__ = ["squeeze", "unsqueeze", "flatten", "stack", "unstack", "expand", "expand_as", "slice",
           "strided_slice", "flip", "roll", "pad", "pad2d", "pad_constant_like", "crop", "crop_tensor",
           "space_to_depth", "shuffle_channel", "temporal_shift", "unfold", "meshgrid", "diag_embed", "t"]


def squeeze(input: Variable, axes: list[int], name: str | None = None) -> Variable:
    """``input`` without the size-1 dimensions listed in ``axes`` (all its size-1 dimensions when
    ``axes`` is empty); a listed dimension of another size is an error, as in Paddle 1.8.

    Args:
        input: the tensor.
        axes: a list of the dimensions to drop (negative counts from the end).
        name: the output's name (generated when None).

    Returns:
        The squeezed Variable.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 1, 5], dtype="float32")
        >>> fluid.layers.squeeze(x, axes=[1]).shape
        (-1, 5)
    """
    check_variable_and_dtype(input, "input", ["float16", "float32", "float64", "int8", "int32", "int64"], "squeeze")
    check_type(axes, "axes", list, "squeeze")
    return xshape_op("squeeze2", input, {"axes": int_list(axes, "squeeze", "axes")}, name)


def unsqueeze(input: Variable, axes: int | Sequence[int | Variable] | Variable, name: str | None = None) -> Variable:
    """``input`` with size-1 dimensions inserted at ``axes``, in order.

    Args:
        input: the tensor.
        axes: where to insert, in the output's numbering: ints and int Variables (the
            ``AxesTensorList`` input), or one int Variable holding them all (``AxesTensor``).
        name: the output's name (generated when None).

    Returns:
        The unsqueezed Variable.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 5], dtype="float32")
        >>> fluid.layers.unsqueeze(x, axes=[1]).shape
        (-1, 1, 5)
    """
    if not isinstance(axes, (int, list, tuple, Variable)):
        raise TypeError("unsqueeze: axes must be an int, a list, a tuple or a Variable, got %s" % type(axes).__name__)
    check_var(input, "unsqueeze", "input")
    if isinstance(axes, Variable):
        axes.stop_gradient = True
        return xshape_op("unsqueeze2", input, {}, name, tensors={"AxesTensor": [axes]})
    if isinstance(axes, (list, tuple)) and has_variable(axes):
        return xshape_op("unsqueeze2", input, {}, name,
                         tensors={"AxesTensorList": tensor_list(axes, "unsqueeze", "axes")})
    return xshape_op("unsqueeze2", input, {"axes": int_list(axes, "unsqueeze", "axes")}, name)


def flatten(x: Variable, axis: int = 1, name: str | None = None) -> Variable:
    """``x`` as a matrix: the dimensions before ``axis`` make the rows, the rest the columns.

    Args:
        x: the tensor.
        axis: where the columns start.
        name: the output's name (generated when None).

    Returns:
        A 2-D Variable.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 2, 3, 4], dtype="float32")
        >>> fluid.layers.flatten(x, axis=1).shape
        (-1, 24)
    """
    check_var(x, "flatten", "x")
    if not isinstance(axis, int) or not 0 <= axis <= len(x.shape):
        raise ValueError("flatten: axis must be an int in [0, %d], got %r" % (len(x.shape), axis))
    return xshape_op("flatten2", x, {"axis": axis}, name)


def stack(x: Variable | Sequence[Variable], axis: int = 0) -> Variable:
    """Same-shaped Variables stacked along a new dimension ``axis``.

    Args:
        x: the Variables.
        axis: where the new dimension goes.

    Returns:
        The stacked Variable.

    Examples:
        >>> a = fluid.data(name="a", shape=[None, 3], dtype="float32")
        >>> b = fluid.data(name="b", shape=[None, 3], dtype="float32")
        >>> fluid.layers.stack([a, b], axis=1).shape
        (-1, 2, 3)
    """
    refuse_tuple(x, "stack", "x")
    xs = [x] if isinstance(x, Variable) else list(x)
    for v in xs:
        check_var(v, "stack", "x")
    return one_op("stack", {"X": xs}, {"axis": int(axis)}, out_slot="Y")


def unstack(x: Variable, axis: int = 0, num: int | None = None) -> list[Variable]:
    """``x`` cut along ``axis`` into its slices, that dimension removed.

    Args:
        x: the tensor.
        axis: the dimension to cut along.
        num: the number of slices (``x.shape[axis]`` when None).

    Returns:
        The list of slices.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 2, 3], dtype="float32")
        >>> first, second = fluid.layers.unstack(x, axis=1)
    """
    check_var(x, "unstack", "x")
    if num is None:
        num = x.shape[axis]
        if num < 0:
            raise ValueError("unstack: dimension %d of %r is unknown; give num" % (axis, x.name))
    helper = LayerHelper("unstack")
    outs = [helper.create_variable_for_type_inference(x.dtype) for _ in range(num)]
    helper.append_op("unstack", inputs={"X": [x]}, outputs={"Y": outs}, attrs={"axis": int(axis), "num": int(num)})
    return outs


def expand(x: Variable, expand_times: Sequence[int | Variable] | Variable, name: str | None = None) -> Variable:
    """``x`` tiled ``expand_times[i]`` times along dimension ``i``.

    Args:
        x: the tensor.
        expand_times: one count per dimension: ints or int Variables, or one int Variable.
        name: the output's name (generated when None).

    Returns:
        The tiled Variable.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        >>> fluid.layers.expand(x, expand_times=[1, 2]).shape
        (-1, 6)
    """
    check_var(x, "expand", "x")
    if x.dtype == "bool" and x.stop_gradient:   # Paddle 1.8's expand refuses this exact case
        raise ValueError("expand: a bool 'x' (%r) must have stop_gradient set to False, as Paddle 1.8 requires"
                         % x.name)
    helper = LayerHelper("expand", name=name)
    inputs, attrs = {"X": [x]}, {}
    if isinstance(expand_times, Variable):
        expand_times.stop_gradient = True
        inputs["ExpandTimes"] = [expand_times]
    elif any(isinstance(t, Variable) for t in expand_times):
        inputs["expand_times_tensor"], attrs["expand_times"] = int_tensors(expand_times, "expand", "expand_times")
    else:
        attrs["expand_times"] = int_list(list(expand_times), "expand", "expand_times")
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("expand", inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    return out


def expand_as(x: Variable, target_tensor: Variable, name: str | None = None) -> Variable:
    """``x`` tiled to the shape of ``target_tensor``.

    Args:
        x: the tensor.
        target_tensor: the tensor whose shape to reach (each size a multiple of ``x``'s).
        name: the output's name (generated when None).

    Returns:
        The tiled Variable.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 1], dtype="float32")
        >>> y = fluid.data(name="y", shape=[None, 4], dtype="float32")
        >>> z = fluid.layers.expand_as(x, y)
    """
    check_var(x, "expand_as", "x")
    check_var(target_tensor, "expand_as", "target_tensor")
    return one_op("expand_as", {"X": x, "target_tensor": target_tensor}, name=name)


def _slice(op_type, input, axes, starts, ends, strides=None):
    """The ``slice`` / ``strided_slice`` op as Paddle 1.8's layers build it: a Variable bound is the
    whole-tensor input (no attr), a list holding Variables the tensor-list input with -1 in the attr
    and in ``infer_flags`` where a Variable stands."""
    strided = op_type == "strided_slice"
    if strided:
        check_variable_and_dtype(input, "input", ["float32", "float64", "int32", "int64"], op_type)
        check_type(axes, "axes", (list, tuple), op_type)
    else:
        check_var(input, op_type, "input")
    bounds = [("starts", starts, "StartsTensor", "StartsTensorList"), ("ends", ends, "EndsTensor", "EndsTensorList")]
    if strided:
        bounds.append(("strides", strides, "StridesTensor", "StridesTensorList"))
    for key, vals, _, _ in bounds:
        if not isinstance(vals, (list, tuple, Variable)):
            if strided:
                check_type(vals, key, (list, tuple, Variable), op_type)
            raise ValueError("Input %s must be an Variable, python list or tuple." % key)
        if strided:     # Paddle's strided_slice takes int32 index Variables only
            for i, v in enumerate([vals] if isinstance(vals, Variable) else vals):
                if isinstance(v, Variable):
                    check_dtype(v.dtype, key if isinstance(vals, Variable) else "%s[%d]" % (key, i), ["int32"], op_type)
    axes = int_list(list(axes), op_type, "axes")
    helper = LayerHelper(op_type)
    inputs = {"Input": [input]}
    attrs = {"axes": axes, "decrease_axis": []}
    infer = [1] * len(axes)
    for key, vals, tensor_slot, list_slot in bounds:
        if isinstance(vals, Variable):
            vals.stop_gradient = True
            inputs[tensor_slot] = [vals]
            if not strided:     # (Paddle's strided_slice keeps its flags)
                infer = [-1] * len(axes)
        elif has_variable(vals):
            inputs[list_slot], attrs[key] = int_tensors(vals, op_type, key)
            infer = [-1 if isinstance(v, Variable) else f for v, f in zip(vals, infer)]
        else:
            attrs[key] = int_list(list(vals), op_type, key, len(axes))
    attrs["infer_flags"] = infer
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(op_type, inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    return out


def slice(input: Variable, axes: Sequence[int], starts: Sequence[int | Variable] | Variable,
          ends: Sequence[int | Variable] | Variable) -> Variable:
    """``input[starts[k]:ends[k]]`` on each of ``axes``; negative positions count from the end and
    positions past the end are clamped.

    Args:
        input: the tensor.
        axes: the dimensions to slice.
        starts: the start of each slice.
        ends: the end (excluded) of each slice.

    Returns:
        The sliced Variable.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 10], dtype="float32")
        >>> fluid.layers.slice(x, axes=[1], starts=[2], ends=[5]).shape
        (-1, 3)
    """
    return _slice("slice", input, axes, starts, ends)


def strided_slice(input: Variable, axes: Sequence[int], starts: Sequence[int | Variable] | Variable,
                  ends: Sequence[int | Variable] | Variable, strides: Sequence[int | Variable] | Variable) -> Variable:
    """``input[starts[k]:ends[k]:strides[k]]`` on each of ``axes``.

    Args:
        input: the tensor.
        axes: the dimensions to slice.
        starts: the start of each slice.
        ends: the end (excluded) of each slice.
        strides: the step of each slice (negative walks backwards).

    Returns:
        The sliced Variable.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 10], dtype="float32")
        >>> evens = fluid.layers.strided_slice(x, axes=[1], starts=[0], ends=[10], strides=[2])
    """
    return _slice("strided_slice", input, axes, starts, ends, strides)


def flip(input: Variable, dims: int | Sequence[int], name: str | None = None) -> Variable:
    """``input`` reversed along each of ``dims``.

    Args:
        input: the tensor.
        dims: the dimensions to reverse.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``input``'s shape.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 5], dtype="float32")
        >>> y = fluid.layers.flip(x, dims=[1])
    """
    check_var(input, "flip", "X")
    return one_op("flip", {"X": input}, {"dims": int_list(dims, "flip", "dims")}, name=name)


def roll(input: Variable, shifts: int | Sequence[int], dims: int | Sequence[int] | None = None) -> Variable:
    """``input`` rotated by ``shifts`` along ``dims``; elements pushed off one end come back at the other.

    Args:
        input: the tensor.
        shifts: the shift per dimension.
        dims: the dimensions; None rolls the flattened input.

    Returns:
        A Variable with ``input``'s shape.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 5], dtype="float32")
        >>> y = fluid.layers.roll(x, shifts=1, dims=1)
    """
    from .tensor import reshape
    check_var(input, "roll", "input")
    shift_list = int_list(shifts, "roll", "shifts")
    flat = dims is None
    dim_list = int_list(dims, "roll", "dims") if not flat else [0]
    if len(dim_list) != len(shift_list):
        raise ValueError("roll: shifts %s and dims %s must have the same length" % (shift_list, dim_list))
    out = one_op("roll", {"X": reshape(input, [-1]) if flat else input}, {"shifts": shift_list, "dims": dim_list})
    return reshape(out, list(input.shape))


def pad(x: Variable, paddings: Sequence[int], pad_value: float = 0.0, name: str | None = None) -> Variable:
    """``x`` padded with ``pad_value``.

    Args:
        x: the tensor.
        paddings: ``[before_0, after_0, before_1, after_1, ...]``, two per dimension.
        pad_value: the fill value.
        name: the output's name (generated when None).

    Returns:
        The padded Variable.

    Examples:
        >>> x = fluid.data(name="x", shape=[2, 3], dtype="float32")
        >>> fluid.layers.pad(x, paddings=[0, 1, 2, 2]).shape
        (3, 7)
    """
    check_var(x, "pad", "x")
    paddings = int_list(list(paddings), "pad", "paddings", 2 * len(x.shape))
    return one_op("pad", {"X": x}, {"paddings": paddings, "pad_value": float(pad_value)}, name=name)


def pad2d(input: Variable, paddings: Sequence[int] | Variable = [0, 0, 0, 0], mode: str = "constant",
          pad_value: float = 0.0, data_format: str = "NCHW", name: str | None = None) -> Variable:  # noqa: B006
    """Pad the two spatial dimensions of a 4-D ``input``.

    Args:
        input: a 4-D tensor.
        paddings: ``[top, bottom, left, right]``, or an int Variable of them.
        mode: ``"constant"``, ``"reflect"`` or ``"edge"``.
        pad_value: the fill value of constant padding.
        data_format: ``"NCHW"`` or ``"NHWC"``.
        name: the output's name (generated when None).

    Returns:
        The padded Variable.

    Examples:
        >>> img = fluid.data(name="img", shape=[None, 3, 8, 8], dtype="float32")
        >>> fluid.layers.pad2d(img, paddings=[1, 1, 2, 2], mode="reflect").shape
        (-1, 3, 10, 12)
    """
    check_var(input, "pad2d", "input")
    if mode not in ("constant", "reflect", "edge"):
        raise ValueError("pad2d: mode must be 'constant', 'reflect' or 'edge', got %r" % (mode,))
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError("pad2d: data_format must be 'NCHW' or 'NHWC', got %r" % (data_format,))
    inputs = {"X": input}
    attrs = {"mode": mode, "pad_value": float(pad_value), "data_format": data_format}
    if isinstance(paddings, Variable):
        inputs["Paddings"] = paddings
        attrs["paddings"] = []
    else:
        attrs["paddings"] = int_list(list(paddings), "pad2d", "paddings", 4)
    return one_op("pad2d", inputs, attrs, name=name)


def pad_constant_like(x: Variable, y: Variable, pad_value: float = 0.0, name: str | None = None) -> Variable:
    """``y`` padded at the end of each dimension with ``pad_value`` up to ``x``'s shape.

    Args:
        x: the tensor whose shape to reach.
        y: the tensor to pad (no larger than ``x`` in any dimension).
        pad_value: the fill value.
        name: the output's name (generated when None).

    Returns:
        A Variable of ``x``'s shape.

    Examples:
        >>> x = fluid.data(name="x", shape=[4, 5], dtype="float32")
        >>> y = fluid.data(name="y", shape=[2, 3], dtype="float32")
        >>> fluid.layers.pad_constant_like(x, y).shape
        (4, 5)
    """
    check_var(x, "pad_constant_like", "x")
    check_var(y, "pad_constant_like", "y")
    return one_op("pad_constant_like", {"X": x, "Y": y}, {"pad_value": float(pad_value)}, dtype=x.dtype, name=name)


def crop(x: Variable, shape: Sequence[int] | Variable | None = None,
         offsets: Sequence[int] | Variable | None = None, name: str | None = None) -> Variable:
    """The box of ``x`` at ``offsets`` with ``shape``.

    Args:
        x: the tensor.
        shape: the box's shape: a list, or a Variable whose shape is taken.
        offsets: where the box starts (zeros when None).
        name: the output's name (generated when None).

    Returns:
        The cropped Variable.

    Examples:
        >>> x = fluid.data(name="x", shape=[4, 5], dtype="float32")
        >>> fluid.layers.crop(x, shape=[2, 2], offsets=[1, 1]).shape
        (2, 2)
    """
    check_var(x, "crop", "x")
    inputs, attrs = {"X": x}, {}
    if shape is None:
        raise ValueError("crop: shape must be given")
    if isinstance(shape, Variable):
        inputs["Y"] = shape
    else:
        attrs["shape"] = int_list(list(shape), "crop", "shape")
    if offsets is None:
        offsets = [0] * len(x.shape)
    if isinstance(offsets, Variable):
        inputs["Offsets"] = offsets
    else:
        attrs["offsets"] = int_list(list(offsets), "crop", "offsets")
    return one_op("crop", inputs, attrs, name=name)


def crop_tensor(x: Variable, shape: Sequence[int | Variable] | Variable | None = None,
                offsets: Sequence[int | Variable] | Variable | None = None, name: str | None = None) -> Variable:
    """The box of ``x`` at ``offsets`` with ``shape``; -1 in ``shape`` reaches to the end.

    Args:
        x: the tensor.
        shape: the box's shape: ints or int Variables, or one int Variable.
        offsets: where the box starts (zeros when None).
        name: the output's name (generated when None).

    Returns:
        The cropped Variable.

    Examples:
        >>> x = fluid.data(name="x", shape=[4, 5], dtype="float32")
        >>> fluid.layers.crop_tensor(x, shape=[2, -1], offsets=[1, 2]).shape
        (2, 3)
    """
    check_var(x, "crop_tensor", "x")
    if shape is None:
        shape = list(x.shape)
    if offsets is None:
        offsets = [0] * len(x.shape)
    inputs: dict = {"X": x}
    attrs: dict = {}
    for key, vals, whole, parts, hole in (("offsets", offsets, "Offsets", "OffsetsTensor", -1),
                                          ("shape", shape, "Shape", "ShapeTensor", 0)):
        if isinstance(vals, Variable):      # (Paddle's order: offsets first, then shape)
            vals.stop_gradient = True
            inputs[whole] = vals
            if key == "offsets":
                attrs[key] = [-1] * len(x.shape)
        elif has_variable(vals):
            _check_crop_ints(key, vals)
            inputs[parts] = tensor_list(vals, "crop_tensor", key)
            attrs[key] = attr_values(vals, "crop_tensor", key, hole=hole)
        else:
            attrs[key] = int_list(list(vals), "crop_tensor", key, len(x.shape))
            _check_crop_ints(key, attrs[key])
    return one_op("crop_tensor", inputs, attrs, name=name)


def _check_crop_ints(key, vals):
    """Paddle 1.8's checks of crop_tensor's int entries: a shape entry is positive or -1 (to the
    end), an offset is >= 0 (ValueError); an entry that is neither an int nor a Variable: TypeError."""
    for v in vals:
        if isinstance(v, Variable):
            continue
        if not isinstance(v, int) or isinstance(v, bool):
            raise TypeError("crop_tensor: %s entries must be ints or int Variables, got %r" % (key, v))
        if key == "shape" and (v == 0 or v < -1):
            raise ValueError("crop_tensor: a shape entry must be positive or -1 (to the end), got %d" % v)
        if key == "offsets" and v < 0:
            raise ValueError("crop_tensor: an offset must be >= 0, got %d" % v)


def meshgrid(input: Sequence[Variable], name: str | None = None) -> list[Variable]:
    """For 1-D Variables ``x_0 .. x_k``, the ``k + 1`` grids of shape ``[len(x_0), ..., len(x_k)]``.

    Args:
        input: the 1-D Variables.
        name: the outputs' name prefix (generated when None).

    Returns:
        The list of grids.

    Examples:
        >>> xs = fluid.data(name="xs", shape=[3], dtype="float32")
        >>> ys = fluid.data(name="ys", shape=[4], dtype="float32")
        >>> gx, gy = fluid.layers.meshgrid([xs, ys])
    """
    xs = list(input)
    if len(xs) < 2:
        raise ValueError("meshgrid: give at least two 1-D Variables")
    for v in xs:
        check_var(v, "meshgrid", "input")
    helper = LayerHelper("meshgrid", name=name)
    outs = [helper.create_variable_for_type_inference(v.dtype) for v in xs]
    helper.append_op("meshgrid", inputs={"X": xs}, outputs={"Out": outs})
    return outs


def diag_embed(input: Variable, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Variable:
    """The last dimension of ``input`` placed on a diagonal of two new dimensions.

    Args:
        input: the tensor whose last dimension becomes the diagonal.
        offset: which diagonal: 0 the main one, positive above.
        dim1: the first new dimension.
        dim2: the second new dimension.

    Returns:
        A Variable of rank ``input``'s + 1.

    Examples:
        >>> v = fluid.data(name="v", shape=[None, 3], dtype="float32")
        >>> fluid.layers.diag_embed(v).shape
        (-1, 3, 3)
    """
    if isinstance(input, np.ndarray):   # as Paddle: a NumPy array is assigned into the program first
        from .tensor_fill import assign
        input = assign(input)
    check_var(input, "diag_embed", "Input")
    return one_op("diag_embed", {"Input": input}, {"offset": int(offset), "dim1": int(dim1), "dim2": int(dim2)})


def t(input: Variable, name: str | None = None) -> Variable:
    """The transpose of a matrix; a vector is returned as it is.

    Args:
        input: a tensor of rank 1 or 2.
        name: the output's name (generated when None).

    Returns:
        The transposed Variable.

    Examples:
        >>> m = fluid.data(name="m", shape=[2, 3], dtype="float32")
        >>> fluid.layers.t(m).shape
        (3, 2)
    """
    check_var(input, "t", "input")
    if len(input.shape) > 2:
        raise ValueError("t: input %r has rank %d; use transpose for more than 2 dimensions"
                         % (input.name, len(input.shape)))
    if len(input.shape) == 1:
        return input
    return xshape_op("transpose2", input, {"axis": [1, 0]}, name)
