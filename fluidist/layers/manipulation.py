"""Shape and layout layers of Paddle 1.8's ``layers/nn.py``: squeeze, unsqueeze, flatten, stack,
unstack, expand(_as), slice, strided_slice, flip, roll, pad, pad2d, pad_constant_like, crop(_tensor),
space_to_depth, shuffle_channel, temporal_shift, unfold, meshgrid, diag_embed, t."""
from ..framework.program import Variable
from .layer_helper import LayerHelper
from ._build import check_var, int_list, one_op, xshape_op

__all__ = ["squeeze", "unsqueeze", "flatten", "stack", "unstack", "expand", "expand_as", "slice",
           "strided_slice", "flip", "roll", "pad", "pad2d", "pad_constant_like", "crop", "crop_tensor",
           "space_to_depth", "shuffle_channel", "temporal_shift", "unfold", "meshgrid", "diag_embed", "t"]


def _int_tensors(values):
    """``values`` (ints and int Variables) as the tensor-list input of an op, each int made a CPU int32
    ``[1]`` constant, and as its attr, -1 where a Variable stands: ``(tensors, attr_values)``."""
    from .tensor import fill_constant
    tensors = [v if isinstance(v, Variable) else fill_constant([1], "int32", v, force_cpu=True) for v in values]
    return tensors, [-1 if isinstance(v, Variable) else int(v) for v in values]


def squeeze(input, axes, name=None):
    """``input`` without the size-1 dimensions listed in ``axes`` (others listed are kept)."""
    check_var(input, "squeeze", "input")
    return xshape_op("squeeze2", input, {"axes": int_list(axes, "squeeze", "axes")}, name)


def unsqueeze(input, axes, name=None):
    """``input`` with size-1 dimensions inserted at ``axes`` (in order)."""
    check_var(input, "unsqueeze", "input")
    return xshape_op("unsqueeze2", input, {"axes": int_list(axes, "unsqueeze", "axes")}, name)


def flatten(x, axis=1, name=None):
    """``x`` as a matrix: the dimensions before ``axis`` make the rows, the rest the columns."""
    check_var(x, "flatten", "x")
    if not isinstance(axis, int) or not 0 <= axis <= len(x.shape):
        raise ValueError("flatten: axis must be an int in [0, %d], got %r" % (len(x.shape), axis))
    return xshape_op("flatten2", x, {"axis": axis}, name)


def stack(x, axis=0):
    """The Variables of ``x`` (one shape) stacked along a new dimension ``axis``."""
    xs = [x] if isinstance(x, Variable) else list(x)
    for v in xs:
        check_var(v, "stack", "x")
    return one_op("stack", {"X": xs}, {"axis": int(axis)}, out_slot="Y")


def unstack(x, axis=0, num=None):
    """``x`` cut along ``axis`` into its slices (that dimension removed); a list of Variables."""
    check_var(x, "unstack", "x")
    if num is None:
        num = x.shape[axis]
        if num < 0:
            raise ValueError("unstack: dimension %d of %r is unknown; give num" % (axis, x.name))
    helper = LayerHelper("unstack")
    outs = [helper.create_variable_for_type_inference(x.dtype) for _ in range(num)]
    helper.append_op("unstack", inputs={"X": [x]}, outputs={"Y": outs}, attrs={"axis": int(axis), "num": int(num)})
    return outs


def expand(x, expand_times, name=None):
    """``x`` tiled ``expand_times[i]`` times along dimension i (a list of ints / int Variables, or one
    int Variable)."""
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


def expand_as(x, target_tensor, name=None):
    """``x`` tiled to the shape of ``target_tensor``."""
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


def slice(input, axes, starts, ends):
    """``input[starts[k]:ends[k]]`` on each of ``axes`` (negative positions count from the end;
    positions past the end are clamped)."""
    return _slice("slice", input, axes, starts, ends)


def strided_slice(input, axes, starts, ends, strides):
    """``input[starts[k]:ends[k]:strides[k]]`` on each of ``axes``."""
    return _slice("strided_slice", input, axes, starts, ends, strides)


def flip(input, dims, name=None):
    """``input`` reversed along each of ``dims``."""
    check_var(input, "flip", "input")
    return one_op("flip", {"X": input}, {"dims": int_list(dims, "flip", "dims")}, name=name)


def roll(input, shifts, dims=None):
    """``input`` rotated by ``shifts`` along ``dims`` (no dims: over the flattened input)."""
    from .tensor import reshape
    check_var(input, "roll", "input")
    shifts = int_list(shifts, "roll", "shifts")
    flat = dims is None
    dims = int_list(dims, "roll", "dims") if not flat else [0]
    if len(dims) != len(shifts):
        raise ValueError("roll: shifts %s and dims %s must have the same length" % (shifts, dims))
    out = one_op("roll", {"X": reshape(input, [-1]) if flat else input}, {"shifts": shifts, "dims": dims})
    return reshape(out, list(input.shape))


def pad(x, paddings, pad_value=0.0, name=None):
    """``x`` padded with ``pad_value``: ``paddings`` = [before_0, after_0, before_1, after_1, ...]."""
    check_var(x, "pad", "x")
    paddings = int_list(list(paddings), "pad", "paddings", 2 * len(x.shape))
    return one_op("pad", {"X": x}, {"paddings": paddings, "pad_value": float(pad_value)}, name=name)


def pad2d(input, paddings=[0, 0, 0, 0], mode="constant", pad_value=0.0, data_format="NCHW", name=None):  # noqa: B006
    """Pad the two spatial dimensions of a 4-D ``input`` by ``[top, bottom, left, right]`` (or an int
    Variable of them): ``constant``, ``reflect`` or ``edge``."""
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


def pad_constant_like(x, y, pad_value=0.0, name=None):
    """``y`` padded at the end of each dimension with ``pad_value`` up to ``x``'s shape."""
    check_var(x, "pad_constant_like", "x")
    check_var(y, "pad_constant_like", "y")
    return one_op("pad_constant_like", {"X": x, "Y": y}, {"pad_value": float(pad_value)}, dtype=x.dtype, name=name)


def crop(x, shape=None, offsets=None, name=None):
    """The box of ``x`` at ``offsets`` with ``shape`` (a list, or a Variable whose shape is taken)."""
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


def crop_tensor(x, shape=None, offsets=None, name=None):
    """The box of ``x`` at ``offsets`` with ``shape`` (-1: to the end); either may be a list holding
    int Variables, or one int Variable."""
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


def space_to_depth(x, blocksize, name=None):
    """Each ``blocksize`` x ``blocksize`` spatial block of an NCHW ``x`` moved into channels."""
    check_var(x, "space_to_depth", "x")
    if not isinstance(blocksize, int) or blocksize < 1:
        raise ValueError("space_to_depth: blocksize must be a positive int, got %r" % (blocksize,))
    return one_op("space_to_depth", {"X": x}, {"blocksize": blocksize}, name=name)


def shuffle_channel(x, group, name=None):
    """Channels of an NCHW ``x`` regrouped across ``group`` groups (ShuffleNet)."""
    check_var(x, "shuffle_channel", "x")
    return one_op("shuffle_channel", {"X": x}, {"group": int(group)}, name=name)


def temporal_shift(x, seg_num, shift_ratio=0.25, name=None):
    """Shift a part of the channels of ``x`` ([N * seg_num, C, H, W]) one frame back and forth in time."""
    check_var(x, "temporal_shift", "x")
    return one_op("temporal_shift", {"X": x}, {"seg_num": int(seg_num), "shift_ratio": float(shift_ratio)}, name=name)


def unfold(x, kernel_sizes, strides=1, paddings=0, dilations=1, name=None):
    """Sliding blocks of an NCHW ``x`` as columns: [N, C * kh * kw, L] (im2col)."""
    check_var(x, "unfold", "x")
    paddings = int_list(paddings, "unfold", "paddings", None if not isinstance(paddings, int) else 4)
    if len(paddings) == 2:
        paddings = paddings * 2
    if len(paddings) != 4:
        raise ValueError("unfold: paddings must have 1, 2 or 4 entries, got %s" % paddings)
    attrs = {"kernel_sizes": int_list(kernel_sizes, "unfold", "kernel_sizes", 2),
             "strides": int_list(strides, "unfold", "strides", 2), "paddings": paddings,
             "dilations": int_list(dilations, "unfold", "dilations", 2)}
    return one_op("unfold", {"X": x}, attrs, out_slot="Y", name=name)


def meshgrid(input, name=None):
    """For 1-D Variables x_0..x_k, the k+1 grids of shape [len(x_0), ..., len(x_k)]."""
    xs = list(input)
    if len(xs) < 2:
        raise ValueError("meshgrid: give at least two 1-D Variables")
    helper = LayerHelper("meshgrid", name=name)
    outs = [helper.create_variable_for_type_inference(v.dtype) for v in xs]
    helper.append_op("meshgrid", inputs={"X": xs}, outputs={"Out": outs})
    return outs


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """The last dimension of ``input`` as the (``offset``) diagonal of new dimensions ``dim1``, ``dim2``."""
    check_var(input, "diag_embed", "input")
    return one_op("diag_embed", {"Input": input}, {"offset": int(offset), "dim1": int(dim1), "dim2": int(dim2)})


def t(input, name=None):
    """The transpose of a matrix (a vector is returned as it is)."""
    check_var(input, "t", "input")
    if len(input.shape) > 2:
        raise ValueError("t: input %r has rank %d; use transpose for more than 2 dimensions"
                         % (input.name, len(input.shape)))
    if len(input.shape) == 1:
        return input
    return xshape_op("transpose2", input, {"axis": [1, 0]}, name)
