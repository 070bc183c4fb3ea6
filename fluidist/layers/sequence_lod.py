"""Sequence layers over LoD input (Paddle 1.8's ``layers/sequence_lod.py``); ``lod_reset``,
``lod_append`` and ``im2sequence`` (``lod.py``; Paddle keeps them in ``layers/nn.py``) are re-exported.

A LoD tensor holds the rows of all sequences one after another and offsets (its LoD) saying where
each sequence ends; the layers here work on each sequence of the last LoD level separately. Feed one
with ``fluid.create_lod_tensor(values, [lengths], place)``."""
from __future__ import annotations

from typing import Sequence

from ..framework.program import Variable
from .hints import DType, ParamAttrLike
from ._build import one_op
from .layer_helper import LayerHelper, check_variable
from .lod import im2sequence, lod_append, lod_reset  # noqa: F401

__all__ = ["sequence_conv", "sequence_softmax", "sequence_pool", "sequence_concat", "sequence_first_step",
           "sequence_last_step", "sequence_slice", "sequence_expand", "sequence_expand_as", "sequence_pad",
           "sequence_unpad", "sequence_reshape", "sequence_scatter", "sequence_enumerate", "sequence_mask",
           "sequence_reverse", "lod_reset", "lod_append", "im2sequence"]


def _check_var(x, layer, arg="input"):
    return check_variable(x, layer, arg)


def sequence_conv(input: Variable, num_filters: int, filter_size: int = 3, filter_stride: int = 1,
                  padding: bool = True, padding_start: int | None = None, bias_attr: ParamAttrLike = None,
                  param_attr: ParamAttrLike = None, act: str | None = None, name: str | None = None) -> Variable:
    """A 1-D convolution along each sequence, then bias and ``act``.

    Row ``t`` of a sequence sees its rows ``t + padding_start`` ... ``t + padding_start +
    filter_size - 1`` (zeros outside the sequence), so each sequence keeps its length. The filter is
    a parameter ``[filter_size * width, num_filters]``.

    Args:
        input: a LoD tensor ``[rows, width]`` with a known width.
        num_filters: the number of output features.
        filter_size: how many rows each output row sees.
        filter_stride: must be 1 (as in Paddle, the op supports no other stride).
        padding: accepted for Paddle's signature; the sequences are always padded with zeros.
        padding_start: the first row seen, relative to ``t``; ``-(filter_size // 2)`` when None
            (centred).
        bias_attr: the bias's attribute; ``False`` for no bias.
        param_attr: the filter's attribute.
        act: an activation name or None.
        name: the prefix of the parameters' names (generated when None).

    Returns:
        A LoD Variable ``[rows, num_filters]`` with ``input``'s LoD.

    Raises:
        ValueError: an input that is not ``[rows, width]`` with a known width; a ``filter_stride``
            other than 1 (when the program runs).

    Examples:
        >>> words = fluid.data(name="words", shape=[None, 16], dtype="float32", lod_level=1)
        >>> conv = fluid.layers.sequence_conv(words, num_filters=8, filter_size=3, act="tanh")
        >>> conv.shape
        (-1, 8)
    """
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


def sequence_softmax(input: Variable, use_cudnn: bool = False, name: str | None = None) -> Variable:
    """Softmax over the values of each sequence.

    Args:
        input: a LoD tensor ``[rows, 1]`` or ``[rows]``.
        use_cudnn: kept for Paddle 1.x scripts (fluidist has no cuDNN kernel; the numbers are the same).
        name: the output's name (generated when None).

    Returns:
        A LoD Variable of ``input``'s shape; each sequence's values sum to 1.

    Examples:
        >>> scores = fluid.data(name="scores", shape=[None, 1], dtype="float32", lod_level=1)
        >>> weights = fluid.layers.sequence_softmax(scores)
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> t = fluid.create_lod_tensor(np.zeros((3, 1), "float32"), [[1, 2]], fluid.CPUPlace())
        >>> exe.run(feed={"scores": t}, fetch_list=[weights])[0].ravel().tolist()
        [1.0, 0.5, 0.5]
    """
    _check_var(input, "sequence_softmax")
    return one_op("sequence_softmax", {"X": input}, {"use_cudnn": bool(use_cudnn)}, name=name)

_POOL_TYPES = ("average", "sum", "sqrt", "max", "last", "first")


def sequence_pool(input: Variable, pool_type: str, is_test: bool = False, pad_value: float = 0.0) -> Variable:
    """Each sequence of the last LoD level pooled to one row.

    Args:
        input: a LoD tensor ``[rows, ...]``.
        pool_type: ``"average"``, ``"sum"``, ``"sqrt"`` (sum divided by the square root of the
            length), ``"max"``, ``"last"`` or ``"first"`` (any case).
        is_test: in training ``"max"`` also records where each maximum came from, for the gradient.
        pad_value: the row an empty sequence gives.

    Returns:
        A Variable ``[sequences, ...]``; with a 2-level LoD, it keeps the outer level.

    Raises:
        TypeError: ``input`` is not a Variable.
        ValueError: an unknown ``pool_type``.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 1], dtype="float32", lod_level=1)
        >>> total = fluid.layers.sequence_pool(x, pool_type="sum")
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> t = fluid.create_lod_tensor(np.arange(5, dtype="float32").reshape(5, 1), [[2, 3]], fluid.CPUPlace())
        >>> exe.run(feed={"x": t}, fetch_list=[total])[0].ravel().tolist()
        [1.0, 9.0]
    """
    _check_var(input, "sequence_pool")
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


def sequence_first_step(input: Variable) -> Variable:
    """The first row of each sequence: ``sequence_pool(input, "first")``.

    Args:
        input: a LoD tensor ``[rows, ...]``.

    Returns:
        A Variable ``[sequences, ...]``.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32", lod_level=1)
        >>> first = fluid.layers.sequence_first_step(x)
    """
    _check_var(input, "sequence_first_step")
    return sequence_pool(input, "first")


def sequence_last_step(input: Variable) -> Variable:
    """The last row of each sequence: ``sequence_pool(input, "last")``.

    Args:
        input: a LoD tensor ``[rows, ...]``.

    Returns:
        A Variable ``[sequences, ...]``.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32", lod_level=1)
        >>> last = fluid.layers.sequence_last_step(x)
    """
    _check_var(input, "sequence_last_step")
    return sequence_pool(input, "last")


def sequence_concat(input: Sequence[Variable], name: str | None = None) -> Variable:
    """Sequence ``i`` of the result is sequence ``i`` of each input, one after another.

    Args:
        input: LoD tensors with the same number of sequences and the same row width.
        name: the output's name (generated when None).

    Returns:
        A LoD Variable whose sequence ``i`` is as long as the inputs' sequences ``i`` together.

    Raises:
        TypeError: ``input`` is not a non-empty list of Variables.

    Examples:
        >>> a = fluid.data(name="a", shape=[None, 3], dtype="float32", lod_level=1)
        >>> b = fluid.data(name="b", shape=[None, 3], dtype="float32", lod_level=1)
        >>> ab = fluid.layers.sequence_concat([a, b])
    """
    if not isinstance(input, (list, tuple)) or not input:
        raise TypeError("sequence_concat: input must be a non-empty list of Variables")
    for v in input:
        _check_var(v, "sequence_concat")
    return one_op("sequence_concat", {"X": list(input)}, name=name)


def sequence_slice(input: Variable, offset: Variable, length: Variable, name: str | None = None) -> Variable:
    """Rows ``offset[i]`` ... ``offset[i] + length[i] - 1`` of each sequence ``i``.

    Args:
        input: a LoD tensor.
        offset: int64 ``[sequences, 1]``, where each slice starts within its sequence.
        length: int64 ``[sequences, 1]``, how many rows each slice has.
        name: the output's name (generated when None).

    Returns:
        A LoD Variable of the slices, one sequence each.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 2], dtype="float32", lod_level=1)
        >>> off = fluid.data(name="off", shape=[None, 1], dtype="int64")
        >>> n = fluid.data(name="n", shape=[None, 1], dtype="int64")
        >>> part = fluid.layers.sequence_slice(x, off, n)
    """
    _check_var(input, "sequence_slice")
    _check_var(offset, "sequence_slice", "offset")
    _check_var(length, "sequence_slice", "length")
    offset.stop_gradient = True
    length.stop_gradient = True
    return one_op("sequence_slice", {"X": input, "Offset": offset, "Length": length}, name=name)


def sequence_expand(x: Variable, y: Variable, ref_level: int = -1, name: str | None = None) -> Variable:
    """Sequence (or row, when ``x`` has no LoD) ``i`` of ``x`` repeated as often as sequence ``i`` of
    level ``ref_level`` of ``y``'s LoD is long.

    Args:
        x: a tensor, with or without LoD.
        y: the LoD tensor whose LoD says how often to repeat.
        ref_level: the level of ``y``'s LoD to use (-1: the last).
        name: the output's name (generated when None).

    Returns:
        A LoD Variable with ``x``'s row width.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 2], dtype="float32")
        >>> y = fluid.data(name="y", shape=[None, 1], dtype="float32", lod_level=1)
        >>> tiled = fluid.layers.sequence_expand(x, y)
    """
    _check_var(x, "sequence_expand", "x")
    _check_var(y, "sequence_expand", "y")
    return one_op("sequence_expand", {"X": x, "Y": y}, {"ref_level": int(ref_level)}, name=name)


def sequence_expand_as(x: Variable, y: Variable, name: str | None = None) -> Variable:
    """Row ``i`` of ``x`` repeated as often as sequence ``i`` of ``y`` is long.

    Args:
        x: a tensor with one row per sequence of ``y``.
        y: a LoD tensor (one level) whose sequence lengths say how often to repeat.
        name: the output's name (generated when None).

    Returns:
        A LoD Variable with ``y``'s LoD and ``x``'s row width.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 2], dtype="float32")
        >>> y = fluid.data(name="y", shape=[None, 1], dtype="float32", lod_level=1)
        >>> tiled = fluid.layers.sequence_expand_as(x, y)
    """
    _check_var(x, "sequence_expand_as", "x")
    _check_var(y, "sequence_expand_as", "y")
    return one_op("sequence_expand_as", {"X": x, "Y": y}, name=name)


def sequence_pad(x: Variable, pad_value: Variable, maxlen: int | None = None,
                 name: str | None = None) -> tuple[Variable, Variable]:
    """Sequences to a dense batch: each sequence, then ``pad_value`` up to ``maxlen`` steps.

    Args:
        x: a LoD tensor ``[rows, ...]`` (one level).
        pad_value: a Variable of one value, or of one row, to pad with.
        maxlen: the padded length; None for the longest sequence's.
        name: the output's name (generated when None).

    Returns:
        ``(padded, lengths)``: ``[sequences, maxlen, ...]`` and the int64 lengths ``[sequences]``.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 1], dtype="float32", lod_level=1)
        >>> zero = fluid.layers.fill_constant(shape=[1], dtype="float32", value=0.0)
        >>> padded, lengths = fluid.layers.sequence_pad(x, zero)
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> t = fluid.create_lod_tensor(np.ones((3, 1), "float32"), [[1, 2]], fluid.CPUPlace())
        >>> p, n = exe.run(feed={"x": t}, fetch_list=[padded, lengths])
        >>> p[:, :, 0].tolist(), n.tolist()
        ([[1.0, 0.0], [1.0, 1.0]], [1, 2])
    """
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


def sequence_unpad(x: Variable, length: Variable, name: str | None = None) -> Variable:
    """The inverse of ``sequence_pad``: the first ``length[i]`` steps of row ``i``, as sequence ``i``.

    Args:
        x: a dense batch ``[sequences, steps, ...]``.
        length: int64 ``[sequences]``, each sequence's length.
        name: the output's name (generated when None).

    Returns:
        A LoD Variable ``[sum(length), ...]`` with one level.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 5, 3], dtype="float32")
        >>> n = fluid.data(name="n", shape=[None], dtype="int64")
        >>> seqs = fluid.layers.sequence_unpad(x, n)
    """
    _check_var(x, "sequence_unpad", "x")
    _check_var(length, "sequence_unpad", "length")
    length.stop_gradient = True
    return one_op("sequence_unpad", {"X": x, "Length": length}, name=name, lod_level=1)


def sequence_reshape(input: Variable, new_dim: int) -> Variable:
    """Each sequence's values laid out again in rows of ``new_dim`` (its LoD scaled to match).

    Args:
        input: a LoD tensor ``[rows, width]``; each sequence's ``length * width`` must divide by
            ``new_dim``.
        new_dim: the new row width.

    Returns:
        A LoD Variable ``[rows * width / new_dim, new_dim]``.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32", lod_level=1)
        >>> pairs = fluid.layers.sequence_reshape(x, new_dim=2)
    """
    _check_var(input, "sequence_reshape")
    return one_op("sequence_reshape", {"X": input}, {"new_dim": int(new_dim)}, lod_level=1)


def sequence_scatter(input: Variable, index: Variable, updates: Variable, name: str | None = None) -> Variable:
    """``input`` with ``updates`` added: item ``j`` of sequence ``i`` of ``updates`` is added to
    ``input[i, index[j]]``.

    Args:
        input: a dense tensor ``[sequences, width]``.
        index: an int LoD tensor ``[items, 1]``, the columns to update; its LoD groups them per row.
        updates: a LoD tensor ``[items, 1]`` with ``index``'s LoD, the values to add.
        name: the output's name (generated when None).

    Returns:
        A Variable of ``input``'s shape.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 6], dtype="float32")
        >>> ids = fluid.data(name="ids", shape=[None, 1], dtype="int64", lod_level=1)
        >>> upd = fluid.data(name="upd", shape=[None, 1], dtype="float32", lod_level=1)
        >>> out = fluid.layers.sequence_scatter(x, ids, upd)
    """
    _check_var(input, "sequence_scatter")
    _check_var(index, "sequence_scatter", "index")
    _check_var(updates, "sequence_scatter", "updates")
    return one_op("sequence_scatter", {"X": input, "Ids": index, "Updates": updates}, name=name)


def sequence_enumerate(input: Variable, win_size: int, pad_value: int = 0, name: str | None = None) -> Variable:
    """The windows of ``win_size`` ids of each sequence: row ``t`` is the ids from row ``t`` on,
    ``pad_value`` past the sequence's end.

    Args:
        input: an int LoD tensor ``[rows, 1]`` of ids.
        win_size: the window's length.
        pad_value: the id past a sequence's end.
        name: the output's name (generated when None).

    Returns:
        A LoD Variable ``[rows, win_size]`` (no gradient), with ``input``'s LoD.

    Examples:
        >>> ids = fluid.data(name="ids", shape=[None, 1], dtype="int64", lod_level=1)
        >>> bigrams = fluid.layers.sequence_enumerate(ids, win_size=2)
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> t = fluid.create_lod_tensor(np.array([[1], [2], [3]], "int64"), [[3]], fluid.CPUPlace())
        >>> exe.run(feed={"ids": t}, fetch_list=[bigrams])[0].tolist()
        [[1, 2], [2, 3], [3, 0]]
    """
    _check_var(input, "sequence_enumerate")
    out = one_op("sequence_enumerate", {"X": input}, {"win_size": int(win_size), "pad_value": int(pad_value)},
                 name=name)
    out.stop_gradient = True
    return out


def sequence_mask(x: Variable, maxlen: int | Variable | None = None, dtype: DType = "int64",
                  name: str | None = None) -> Variable:
    """A mask from lengths: ``mask[..., j] = j < x[...]`` for ``j < maxlen``.

    Args:
        x: an int tensor of lengths.
        maxlen: the mask's last dimension (an int or an int ``[1]`` Variable); None for the largest
            value of ``x``.
        dtype: the mask's dtype.
        name: the output's name (generated when None).

    Returns:
        A Variable ``x.shape + [maxlen]`` of ``dtype`` (no gradient).

    Examples:
        >>> n = fluid.data(name="n", shape=[None], dtype="int64")
        >>> mask = fluid.layers.sequence_mask(n, maxlen=3, dtype="float32")
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> exe.run(feed={"n": np.array([1, 3], "int64")}, fetch_list=[mask])[0].tolist()
        [[1.0, 0.0, 0.0], [1.0, 1.0, 1.0]]
    """
    _check_var(x, "sequence_mask", "x")
    helper = LayerHelper("sequence_mask", name=name)
    out = helper.create_variable_for_type_inference(dtype)
    inputs: dict[str, list[Variable]] = {"X": [x]}
    attrs: dict[str, object] = {"out_dtype": out.dtype}
    if isinstance(maxlen, Variable):
        inputs["MaxLenTensor"] = [maxlen]
    elif maxlen is not None:
        attrs["maxlen"] = int(maxlen)
    helper.append_op("sequence_mask", inputs=inputs, outputs={"Y": [out]}, attrs=attrs)
    out.stop_gradient = True
    return out


def sequence_reverse(x: Variable, name: str | None = None) -> Variable:
    """Each sequence's rows in reverse order.

    Args:
        x: a LoD tensor.
        name: the output's name (generated when None).

    Returns:
        A LoD Variable of ``x``'s shape and LoD.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 2], dtype="float32", lod_level=1)
        >>> backwards = fluid.layers.sequence_reverse(x)
    """
    _check_var(x, "sequence_reverse", "x")
    return one_op("sequence_reverse", {"X": x}, out_slot="Y", name=name)
