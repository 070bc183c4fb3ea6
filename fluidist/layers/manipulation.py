"""Shape and layout layers of Paddle 1.8's ``layers/nn.py``: squeeze, unsqueeze, flatten, stack,
unstack, expand(_as), slice, strided_slice, flip, roll, pad, pad2d, pad_constant_like, crop(_tensor),
space_to_depth, shuffle_channel, temporal_shift, unfold, meshgrid, diag_embed, t."""
from __future__ import annotations

from typing import Sequence

from ..data_feeder import check_type, check_variable_and_dtype
from ..framework.program import Variable
from .layer_helper import LayerHelper
from ._build import check_var, int_list, one_op, xshape_op
from .rearrange import shuffle_channel, space_to_depth, temporal_shift, unfold  # noqa: F401 (re-exported)

__all__ = ["squeeze", "unsqueeze", "flatten", "stack", "unstack", "expand", "expand_as", "slice",
           "strided_slice", "flip", "roll", "pad", "pad2d", "pad_constant_like", "crop", "crop_tensor",
           "space_to_depth", "shuffle_channel", "temporal_shift", "unfold", "meshgrid", "diag_embed", "t"]


def _int_tensors(values):
    """``values`` (ints and int Variables) as the tensor-list input of an op, each int made a CPU int32
    ``[1]`` constant, and as its attr, -1 where a Variable stands: ``(tensors, attr_values)``."""
    from .tensor import fill_constant
    tensors = [v if isinstance(v, Variable) else fill_constant([1], "int32", v, force_cpu=True) for v in values]
    return tensors, [-1 if isinstance(v, Variable) else int(v) for v in values]


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
        axes: where to insert, in the output's numbering: ints, a 1-D int tensor (computed at run time),
            or a list mixing ints and one-element int tensors.
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
    if isinstance(axes, Variable) or (isinstance(axes, (list, tuple)) and any(isinstance(a, Variable) for a in axes)):
        return _unsqueeze_by_tensors(input, axes, name)
    return xshape_op("unsqueeze2", input, {"axes": int_list(axes, "unsqueeze", "axes")}, name)


def _unsqueeze_by_tensors(input, axes, name):
    """unsqueeze2 with its axes in AxesTensor (a Variable) or AxesTensorList (ints made one-element
    int32 tensors), as Paddle 1.8's layer builds it."""
    from .tensor_fill import fill_constant
    helper = LayerHelper("unsqueeze2", name=name)
    if isinstance(axes, Variable):
        axes.stop_gradient = True
        inputs = {"AxesTensor": [axes]}
    else:
        listed = []
        for a in axes:
            if isinstance(a, Variable):
                a.stop_gradient = True
                listed.append(a)
            else:
                listed.append(fill_constant([1], "int32", int(a), force_cpu=True))
        inputs = {"AxesTensorList": listed}
    out = helper.create_variable_for_type_inference(input.dtype)
    x_shape = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op("unsqueeze2", inputs=dict(inputs, X=[input]), outputs={"Out": [out], "XShape": [x_shape]})
    return out


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
    helper = LayerHelper("expand", name=name)
    inputs, attrs = {"X": [x]}, {}
    if isinstance(expand_times, Variable):
        expand_times.stop_gradient = True
        inputs["ExpandTimes"] = [expand_times]
    elif any(isinstance(t, Variable) for t in expand_times):
        inputs["expand_times_tensor"], attrs["expand_times"] = _int_tensors(expand_times)
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
    check_var(input, op_type, "input")
    axes = int_list(list(axes), op_type, "axes")
    helper = LayerHelper(op_type)
    inputs = {"Input": [input]}
    attrs = {"axes": axes, "decrease_axis": []}
    infer = [1] * len(axes)
    for key, vals, tensor_slot, list_slot in (("starts", starts, "StartsTensor", "StartsTensorList"),
                                              ("ends", ends, "EndsTensor", "EndsTensorList"),
                                              ("strides", strides, "StridesTensor", "StridesTensorList")):
        if vals is None:
            continue
        if isinstance(vals, Variable):
            vals.stop_gradient = True
            inputs[tensor_slot] = [vals]
            attrs[key] = [-1] * len(axes)
            infer = [-1] * len(axes)
        elif any(isinstance(v, Variable) for v in vals):
            inputs[list_slot], attrs[key] = _int_tensors(vals)
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
    check_var(input, "flip", "input")
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
    inputs, attrs = {"X": x}, {}
    for key, vals, whole, parts in (("shape", shape, "Shape", "ShapeTensor"),
                                    ("offsets", offsets, "Offsets", "OffsetsTensor")):
        if isinstance(vals, Variable):
            vals.stop_gradient = True
            inputs[whole] = vals
            attrs[key] = [-1] * len(x.shape)
        elif any(isinstance(v, Variable) for v in vals):
            inputs[parts], attrs[key] = _int_tensors(vals)
        else:
            attrs[key] = int_list(list(vals), "crop_tensor", key, len(x.shape))
    return one_op("crop_tensor", inputs, attrs, name=name)


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
    check_var(input, "diag_embed", "input")
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
