"""Sequence layers over LoD input (Paddle 1.8's ``layers/sequence_lod.py``), and ``lod_reset``,
``lod_append`` and ``im2sequence`` (which Paddle keeps in ``layers/nn.py``)."""
from ..framework.program import Variable
from ._build import one_op
from .layer_helper import LayerHelper, check_variable

__all__ = ["sequence_conv", "sequence_softmax", "sequence_pool", "sequence_concat", "sequence_first_step",
           "sequence_last_step", "sequence_slice", "sequence_expand", "sequence_expand_as", "sequence_pad",
           "sequence_unpad", "sequence_reshape", "sequence_scatter", "sequence_enumerate", "sequence_mask",
           "sequence_reverse", "lod_reset", "lod_append", "im2sequence"]


def _check_var(x, layer, arg="input"):
    return check_variable(x, layer, arg)


def sequence_conv(input, num_filters, filter_size=3, filter_stride=1, padding=True, padding_start=None,
                  bias_attr=None, param_attr=None, act=None, name=None):
    """A 1-D convolution along each sequence: row ``t`` sees rows ``t + padding_start`` ...
    ``t + padding_start + filter_size - 1`` of its sequence (zeros outside it); ``padding_start``
    defaults to ``-(filter_size // 2)``. Filter ``[filter_size * width, num_filters]``, then bias and
    ``act``."""
    _check_var(input, "sequence_conv")
    if input.shape is None or len(input.shape) != 2 or input.shape[1] <= 0:
        raise ValueError("sequence_conv: input %r must be [N, width] with a known width, got shape %s"
                         % (input.name, input.shape))
    helper = LayerHelper("sequence_conv", param_attr=param_attr, bias_attr=bias_attr, act=act, name=name)
    dtype = input.dtype
    w = helper.create_parameter(attr=helper.param_attr, shape=[filter_size * input.shape[1], num_filters],
                                dtype=dtype)
    pre_bias = helper.create_variable_for_type_inference(dtype)
    if padding_start is None:
        padding_start = -int(filter_size // 2)
    helper.append_op("sequence_conv", inputs={"X": [input], "Filter": [w]}, outputs={"Out": [pre_bias]},
                     attrs={"contextStride": int(filter_stride), "contextStart": int(padding_start),
                            "contextLength": int(filter_size)})
    return helper.append_activation(helper.append_bias_op(pre_bias))


def sequence_softmax(input, use_cudnn=False, name=None):
    """Softmax over each sequence's values (input ``[N, 1]`` or ``[N]``)."""
    _check_var(input, "sequence_softmax")
    return one_op("sequence_softmax", {"X": input}, {"use_cudnn": bool(use_cudnn)}, name=name)

_POOL_TYPES = ("average", "sum", "sqrt", "max", "last", "first")


def sequence_pool(input, pool_type, is_test=False, pad_value=0.0):
    """Pool each sequence of the last LoD level of ``input`` to one row (``pool_type``: average, sum,
    sqrt, max, last or first); an empty sequence gives ``pad_value``."""
    if not isinstance(input, Variable):
        raise TypeError("sequence_pool: 'input' must be a Variable, got %r" % type(input).__name__)
    if not isinstance(pool_type, str) or pool_type.lower() not in _POOL_TYPES:
        raise ValueError("sequence_pool: pool_type %r is not one of %s" % (pool_type, list(_POOL_TYPES)))
    pool_type = pool_type.lower()
    helper = LayerHelper("sequence_pool", input=input)
    out = helper.create_variable_for_type_inference(input.dtype)
    max_index = helper.create_variable_for_type_inference("int32")
    helper.append_op("sequence_pool", inputs={"X": [input]}, outputs={"Out": [out], "MaxIndex": [max_index]},
                     attrs={"pooltype": pool_type.upper(), "is_test": bool(is_test), "pad_value": float(pad_value)})
    max_index.stop_gradient = True
    return out


def sequence_first_step(input):
    """The first step of each sequence (``sequence_pool`` with pool_type "first")."""
    return sequence_pool(input, "first")


def sequence_last_step(input):
    """The last step of each sequence (``sequence_pool`` with pool_type "last")."""
    return sequence_pool(input, "last")


def sequence_concat(input, name=None):
    """Sequence ``i`` of the result: sequence ``i`` of each input, one after another."""
    if not isinstance(input, (list, tuple)) or not input:
        raise TypeError("sequence_concat: input must be a non-empty list of Variables")
    for v in input:
        _check_var(v, "sequence_concat")
    return one_op("sequence_concat", {"X": list(input)}, name=name)


def sequence_slice(input, offset, length, name=None):
    """Rows ``[offset[i], offset[i] + length[i])`` of each sequence ``i`` (offset, length: int64
    ``[sequences, 1]``)."""
    _check_var(input, "sequence_slice")
    _check_var(offset, "sequence_slice", "offset")
    _check_var(length, "sequence_slice", "length")
    offset.stop_gradient = True
    length.stop_gradient = True
    return one_op("sequence_slice", {"X": input, "Offset": offset, "Length": length}, name=name)


def sequence_expand(x, y, ref_level=-1, name=None):
    """Sequence (or row) ``i`` of ``x`` repeated as many times as sequence ``i`` of level
    ``ref_level`` of ``y``'s LoD is long."""
    _check_var(x, "sequence_expand", "x")
    _check_var(y, "sequence_expand", "y")
    return one_op("sequence_expand", {"X": x, "Y": y}, {"ref_level": int(ref_level)}, name=name)


def sequence_expand_as(x, y, name=None):
    """Row ``i`` of ``x`` repeated as many times as sequence ``i`` of ``y`` is long (``y``'s LoD)."""
    _check_var(x, "sequence_expand_as", "x")
    _check_var(y, "sequence_expand_as", "y")
    return one_op("sequence_expand_as", {"X": x, "Y": y}, name=name)


def sequence_pad(x, pad_value, maxlen=None, name=None):
    """``(padded, lengths)``: ``[sequences, maxlen, ...]`` (maxlen None: the longest sequence)
    filled with ``pad_value`` after each sequence, and the sequence lengths (int64)."""
    _check_var(x, "sequence_pad", "x")
    _check_var(pad_value, "sequence_pad", "pad_value")
    helper = LayerHelper("sequence_pad", name=name)
    out = helper.create_variable_for_type_inference(x.dtype)
    length = helper.create_variable_for_type_inference("int64")
    pad_value.stop_gradient = True
    length.stop_gradient = True
    helper.append_op("sequence_pad", inputs={"X": [x], "PadValue": [pad_value]},
                     outputs={"Out": [out], "Length": [length]},
                     attrs={"padded_length": -1 if maxlen is None else int(maxlen)})
    return out, length


def sequence_unpad(x, length, name=None):
    """The inverse of ``sequence_pad``: the first ``length[i]`` steps of row ``i`` as LoD sequences."""
    _check_var(x, "sequence_unpad", "x")
    _check_var(length, "sequence_unpad", "length")
    length.stop_gradient = True
    return one_op("sequence_unpad", {"X": x, "Length": length}, name=name, lod_level=1)


def sequence_reshape(input, new_dim):
    """Each sequence's values laid out again in rows of ``new_dim``."""
    _check_var(input, "sequence_reshape")
    return one_op("sequence_reshape", {"X": input}, {"new_dim": int(new_dim)}, lod_level=1)


def sequence_scatter(input, index, updates, name=None):
    """``input`` with ``updates`` added at ``input[i, index[j]]`` for each item ``j`` of sequence ``i``
    of ``index`` (``index`` and ``updates`` share one LoD)."""
    _check_var(input, "sequence_scatter")
    _check_var(index, "sequence_scatter", "index")
    _check_var(updates, "sequence_scatter", "updates")
    return one_op("sequence_scatter", {"X": input, "Ids": index, "Updates": updates}, name=name)


def sequence_enumerate(input, win_size, pad_value=0, name=None):
    """Row ``t``: the ``win_size`` ids from row ``t`` on within its sequence, ``pad_value`` past its end."""
    _check_var(input, "sequence_enumerate")
    out = one_op("sequence_enumerate", {"X": input}, {"win_size": int(win_size), "pad_value": int(pad_value)},
                  name=name)
    out.stop_gradient = True
    return out


def sequence_mask(x, maxlen=None, dtype="int64", name=None):
    """``mask[..., j] = j < x[...]`` for ``j < maxlen`` (an int or a Variable; None: the largest of ``x``)."""
    _check_var(x, "sequence_mask", "x")
    helper = LayerHelper("sequence_mask", name=name)
    out = helper.create_variable_for_type_inference(dtype)
    inputs, attrs = {"X": [x]}, {"out_dtype": out.dtype}
    if isinstance(maxlen, Variable):
        inputs["MaxLenTensor"] = [maxlen]
    elif maxlen is not None:
        attrs["maxlen"] = int(maxlen)
    helper.append_op("sequence_mask", inputs=inputs, outputs={"Y": [out]}, attrs=attrs)
    out.stop_gradient = True
    return out


def sequence_reverse(x, name=None):
    """Each sequence's rows in reverse order."""
    _check_var(x, "sequence_reverse", "x")
    return one_op("sequence_reverse", {"X": x}, out_slot="Y", name=name)


def lod_reset(x, y=None, target_lod=None):
    """``x`` with a new LoD: ``y``'s LoD (or ``y``'s values as offsets when it has none), else
    ``target_lod`` (offsets of one level)."""
    _check_var(x, "lod_reset", "x")
    if y is not None:
        _check_var(y, "lod_reset", "y")
        return one_op("lod_reset", {"X": x, "Y": y})
    if target_lod is None:
        raise ValueError("lod_reset: give y or target_lod")
    return one_op("lod_reset", {"X": x}, {"target_lod": [int(v) for v in target_lod]})


def lod_append(x, level):
    """``x`` with one more LoD level under its own: ``level`` (offsets, or a Variable holding them)."""
    if x is None:
        raise ValueError("lod_append: x can't be None")
    _check_var(x, "lod_append", "x")
    if isinstance(level, Variable):
        return one_op("lod_reset", {"X": x, "Y": level}, {"append": True})
    if not isinstance(level, (list, tuple)):
        raise ValueError("lod_append: level must be a list, tuple or Variable, got %r" % type(level).__name__)
    return one_op("lod_reset", {"X": x}, {"append": True, "target_lod": [int(v) for v in level]})


def _pair(v, what):
    if isinstance(v, int):
        return [v, v]
    if isinstance(v, (list, tuple)) and len(v) == 2:
        return [int(a) for a in v]
    raise ValueError("im2sequence: %s must be an int or a pair, got %r" % (what, v))


def im2sequence(input, filter_size=1, stride=1, padding=0, input_image_size=None, out_stride=1, name=None):
    """Images ``[N, C, H, W]`` to sequences of patches: one sequence per image, one row
    ``[C * fh * fw]`` per ``filter_size`` patch taken every ``stride`` (``padding``: an int, [h, w] or
    [up, left, down, right]). ``input_image_size`` (``[N, 2]``): the real sizes, scaled by
    ``out_stride``, limit each image's patches."""
    _check_var(input, "im2sequence")
    if isinstance(padding, int):
        padding = [padding, padding]
    padding = [int(p) for p in padding]
    if len(padding) == 2:
        padding = padding + padding
    if len(padding) != 4:
        raise ValueError("im2sequence: padding must have 1, 2 or 4 values, got %r" % (padding,))
    inputs = {"X": input}
    attrs = {"kernels": _pair(filter_size, "filter_size"), "strides": _pair(stride, "stride"), "paddings": padding}
    if input_image_size is not None:
        _check_var(input_image_size, "im2sequence", "input_image_size")
        inputs["Y"] = input_image_size
        attrs["out_stride"] = _pair(out_stride, "out_stride")
    return one_op("im2sequence", inputs, attrs, name=name, lod_level=1)
