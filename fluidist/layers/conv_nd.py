"""Transposed and 3-D convolution and pooling layers with Paddle 1.8 signatures: conv2d_transpose,
conv3d, conv3d_transpose, pool3d, adaptive_pool3d."""
from __future__ import annotations

from typing import Sequence

from ..framework.program import Variable
from .hints import ParamAttrLike
from ..initializer import Normal
from .conv import _append_pool, _check_input, _check_use_cudnn, _int_list, adaptive_pool_op
from .layer_helper import LayerHelper

__all__ = ["conv2d_transpose", "conv3d", "conv3d_transpose", "pool3d", "adaptive_pool3d"]

_LAYOUTS = {2: ("NCHW", "NHWC"), 3: ("NCDHW", "NDHWC")}


def _channel_last(fmt, nd, layer):
    first, last = _LAYOUTS[nd]
    if fmt not in (first, last):
        raise ValueError("%s: data_format must be %r or %r, got %r" % (layer, first, last, fmt))
    return fmt == last


def _paddings(padding, nd, channel_last, layer, keep_pairs=False):
    """Paddle 1.8's padding forms for ``nd`` spatial dims -> (paddings attr, padding_algorithm):
    "SAME" / "VALID", an int, [p] * nd, [before, after] * nd, or one pair per dimension of the input
    (batch and channel pairs zero). Symmetric pairs collapse to one value per dim unless ``keep_pairs``."""
    if isinstance(padding, str):
        algo = padding.upper()
        if algo not in ("SAME", "VALID"):
            raise ValueError("%s: padding must be 'SAME', 'VALID', an int or a list, got %r" % (layer, padding))
        return [0] * (2 * nd if keep_pairs else nd), algo
    if isinstance(padding, (list, tuple)) and padding and isinstance(padding[0], (list, tuple)):
        if len(padding) != nd + 2 or any(len(p) != 2 for p in padding):
            raise ValueError("%s: per-dimension padding must be %d pairs, got %r" % (layer, nd + 2, padding))
        outer = (padding[0], padding[-1]) if channel_last else (padding[0], padding[1])
        if any(list(p) != [0, 0] for p in outer):
            raise ValueError("%s: padding of the batch and channel dimensions must be 0, got %r" % (layer, padding))
        inner = padding[1:-1] if channel_last else padding[2:]
        pairs = [int(v) for p in inner for v in p]
    elif isinstance(padding, (list, tuple)) and len(padding) == 2 * nd:
        pairs = [int(v) for v in padding]
    else:
        single = _int_list(padding, nd, "padding", layer)
        pairs = [v for p in single for v in (p, p)]
    if not keep_pairs and all(pairs[2 * i] == pairs[2 * i + 1] for i in range(nd)):
        return pairs[::2], "EXPLICIT"
    return pairs, "EXPLICIT"


def _conv_transpose(layer, op_type, nd, input, num_filters, output_size, filter_size, padding, stride, dilation,
                    groups, param_attr, bias_attr, use_cudnn, act, name, data_format):
    if param_attr is False:
        raise ValueError("%s: param_attr must not be False" % layer)
    _check_input(input, layer, rank=nd + 2)
    _check_use_cudnn(use_cudnn, layer)
    last = _channel_last(data_format, nd, layer)
    channels = input.shape[-1] if last else input.shape[1]
    if channels < 0:
        raise ValueError("%s: the channel dimension of input %r (shape %s) must be known"
                         % (layer, input.name, list(input.shape)))
    stride = _int_list(stride, nd, "stride", layer)
    dilation = _int_list(dilation, nd, "dilation", layer)
    pads, algorithm = _paddings(padding, nd, last, layer, keep_pairs=True)
    if filter_size is None:
        if output_size is None:
            raise ValueError("%s: output_size must be set when filter_size is None" % layer)
        output_size = _int_list(output_size, nd, "output_size", layer)
        spatial = input.shape[1:-1] if last else input.shape[2:]
        filter_size = [(output_size[i] - (spatial[i] - 1) * stride[i] + pads[2 * i] + pads[2 * i + 1] - 1)
                       // dilation[i] + 1 for i in range(nd)]
    else:
        filter_size = _int_list(filter_size, nd, "filter_size", layer)
    if all(pads[2 * i] == pads[2 * i + 1] for i in range(nd)):
        pads = pads[::2]
    output_size = [] if output_size is None else _int_list(output_size, nd, "output_size", layer)
    groups = 1 if groups is None else int(groups)
    if num_filters % groups or channels % groups:
        raise ValueError("%s: groups=%d must divide num_filters=%d and the %d input channels"
                         % (layer, groups, num_filters, channels))
    if op_type is None:
        op_type = "depthwise_conv2d_transpose" if (channels == groups and num_filters == channels
                                                   and not use_cudnn) else "conv2d_transpose"
    helper = LayerHelper(op_type, input=input, param_attr=param_attr, bias_attr=bias_attr, act=act, name=name)
    w = helper.create_parameter(attr=helper.param_attr, shape=[channels, num_filters // groups] + filter_size,
                                dtype=input.dtype)
    pre_bias = helper.create_variable_for_type_inference(input.dtype)
    attr_format = data_format if nd == 2 else ("NHWC" if last else "NCHW")  # conv3d_transpose's attr says NCHW
    helper.append_op(op_type, inputs={"Input": [input], "Filter": [w]}, outputs={"Output": [pre_bias]},
                     attrs={"output_size": output_size, "strides": stride, "paddings": pads,
                            "padding_algorithm": algorithm, "dilations": dilation, "groups": groups,
                            "use_cudnn": use_cudnn, "data_format": attr_format})
    pre_act = helper.append_bias_op(pre_bias, dim_start=nd + 1 if last else 1, dim_end=nd + 2 if last else 2)
    return helper.append_activation(pre_act)


def conv2d_transpose(input: Variable, num_filters: int, output_size: int | Sequence[int] | None = None,
                     filter_size: int | Sequence[int] | None = None, padding: int | Sequence[int] | str = 0,
                     stride: int | Sequence[int] = 1, dilation: int | Sequence[int] = 1, groups: int | None = None,
                     param_attr: ParamAttrLike = None, bias_attr: ParamAttrLike = None, use_cudnn: bool = True,
                     act: str | None = None, name: str | None = None, data_format: str = "NCHW") -> Variable:
    """Transposed 2-D convolution (the gradient of ``conv2d`` as a layer), then bias and activation.

    Builds ``conv2d_transpose``, or ``depthwise_conv2d_transpose`` when groups == channels ==
    num_filters and ``use_cudnn`` is off. The filter is ``[C_in, num_filters / groups, kh, kw]``.

    Args:
        input: a 4-D tensor.
        num_filters: the number of output channels.
        output_size: the output's spatial size; ``filter_size`` may then be left out.
        filter_size: the kernel size, an int or ``[kh, kw]``.
        padding: the padding of the matching ``conv2d``.
        stride: the stride of the matching ``conv2d``.
        dilation: the dilation of the matching ``conv2d``.
        groups: channel groups (None means 1).
        param_attr: the filter's attribute.
        bias_attr: the bias's attribute; False for none.
        use_cudnn: accepted for Paddle's signature (it steers the depthwise choice).
        act: an activation name, or None.
        name: the prefix of the parameters' names (generated when None).
        data_format: ``"NCHW"`` or ``"NHWC"``.

    Returns:
        The output Variable.

    Examples:
        >>> feat = fluid.data(name="feat", shape=[None, 8, 4, 4], dtype="float32")
        >>> fluid.layers.conv2d_transpose(feat, num_filters=3, filter_size=2, stride=2).shape
        (-1, 3, 8, 8)
    """
    return _conv_transpose("conv2d_transpose", None, 2, input, num_filters, output_size, filter_size, padding,
                           stride, dilation, groups, param_attr, bias_attr, use_cudnn, act, name, data_format)


def conv3d_transpose(input: Variable, num_filters: int, output_size: int | Sequence[int] | None = None,
                     filter_size: int | Sequence[int] | None = None, padding: int | Sequence[int] | str = 0,
                     stride: int | Sequence[int] = 1, dilation: int | Sequence[int] = 1, groups: int | None = None,
                     param_attr: ParamAttrLike = None, bias_attr: ParamAttrLike = None, use_cudnn: bool = True,
                     act: str | None = None, name: str | None = None, data_format: str = "NCDHW") -> Variable:
    """Transposed 3-D convolution; the filter is ``[C_in, num_filters / groups, kd, kh, kw]``.

    Args:
        input: a 5-D tensor.
        num_filters: the number of output channels.
        output_size: the output's spatial size; ``filter_size`` may then be left out.
        filter_size: the kernel size, an int or ``[kd, kh, kw]``.
        padding: the padding of the matching ``conv3d``.
        stride: the stride of the matching ``conv3d``.
        dilation: the dilation of the matching ``conv3d``.
        groups: channel groups (None means 1).
        param_attr: the filter's attribute.
        bias_attr: the bias's attribute; False for none.
        use_cudnn: accepted for Paddle's signature.
        act: an activation name, or None.
        name: the prefix of the parameters' names (generated when None).
        data_format: ``"NCDHW"`` or ``"NDHWC"``.

    Returns:
        The output Variable.

    Examples:
        >>> vol = fluid.data(name="vol", shape=[None, 4, 2, 4, 4], dtype="float32")
        >>> up = fluid.layers.conv3d_transpose(vol, num_filters=2, filter_size=2, stride=2)
    """
    return _conv_transpose("conv3d_transpose", "conv3d_transpose", 3, input, num_filters, output_size, filter_size,
                           padding, stride, dilation, groups, param_attr, bias_attr, use_cudnn, act, name,
                           data_format)


def conv3d(input: Variable, num_filters: int, filter_size: int | Sequence[int], stride: int | Sequence[int] = 1,
           padding: int | Sequence[int] | str = 0, dilation: int | Sequence[int] = 1, groups: int | None = None,
           param_attr: ParamAttrLike = None, bias_attr: ParamAttrLike = None, use_cudnn: bool = True,
           act: str | None = None, name: str | None = None, data_format: str = "NCDHW") -> Variable:
    """3-D convolution, then bias and activation; the filter starts from
    Normal(0, sqrt(2 / (kd * kh * kw * channels))).

    Args:
        input: a 5-D tensor ``[N, C, D, H, W]``.
        num_filters: the number of output channels.
        filter_size: the kernel size, an int or ``[kd, kh, kw]``.
        stride: the step.
        padding: zeros added on each side, or ``"SAME"`` / ``"VALID"``.
        dilation: spacing between kernel taps.
        groups: channel groups (None means 1).
        param_attr: the filter's attribute.
        bias_attr: the bias's attribute; False for none.
        use_cudnn: accepted for Paddle's signature.
        act: an activation name, or None.
        name: the prefix of the parameters' names (generated when None).
        data_format: ``"NCDHW"`` or ``"NDHWC"``.

    Returns:
        The output Variable.

    Examples:
        >>> vol = fluid.data(name="vol", shape=[None, 1, 8, 8, 8], dtype="float32")
        >>> fluid.layers.conv3d(vol, num_filters=4, filter_size=3, padding=1).shape
        (-1, 4, 8, 8, 8)
    """
    if param_attr is False:
        raise ValueError("conv3d: param_attr must not be False")
    _check_input(input, "conv3d", rank=5)
    _check_use_cudnn(use_cudnn, "conv3d")
    last = _channel_last(data_format, 3, "conv3d")
    channels = input.shape[4] if last else input.shape[1]
    if channels < 0:
        raise ValueError("conv3d: the channel dimension of input %r (shape %s) must be known"
                         % (input.name, list(input.shape)))
    groups = 1 if groups is None else int(groups)
    if channels % groups:
        raise ValueError("conv3d: input %r has %d channels, which groups=%d does not divide"
                         % (input.name, channels, groups))
    kernel = _int_list(filter_size, 3, "filter_size", "conv3d")
    stride = _int_list(stride, 3, "stride", "conv3d")
    dilation = _int_list(dilation, 3, "dilation", "conv3d")
    pads, algorithm = _paddings(padding, 3, last, "conv3d")
    helper = LayerHelper("conv3d", input=input, param_attr=param_attr, bias_attr=bias_attr, act=act, name=name)
    std = (2.0 / (kernel[0] * kernel[1] * kernel[2] * channels)) ** 0.5
    w = helper.create_parameter(attr=helper.param_attr, shape=[num_filters, channels // groups] + kernel,
                                dtype=input.dtype, default_initializer=Normal(0.0, std, 0))
    pre_bias = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op("conv3d", inputs={"Input": [input], "Filter": [w]}, outputs={"Output": [pre_bias]},
                     attrs={"strides": stride, "paddings": pads, "dilations": dilation, "groups": groups,
                            "use_cudnn": use_cudnn, "use_mkldnn": False, "padding_algorithm": algorithm,
                            "data_format": data_format})
    pre_act = helper.append_bias_op(pre_bias, dim_start=4 if last else 1, dim_end=5 if last else 2)
    return helper.append_activation(pre_act)


def pool3d(input: Variable, pool_size: int | Sequence[int] = -1, pool_type: str = "max",
           pool_stride: int | Sequence[int] = 1, pool_padding: int | Sequence[int] | str = 0,
           global_pooling: bool = False, use_cudnn: bool = True, ceil_mode: bool = False, name: str | None = None,
           exclusive: bool = True, data_format: str = "NCDHW") -> Variable:
    """Max or average pooling over depth, height and width.

    Args:
        input: a 5-D tensor.
        pool_size: the window, an int or ``[kd, kh, kw]``.
        pool_type: ``"max"`` or ``"avg"``.
        pool_stride: the step.
        pool_padding: padding on each side, or ``"SAME"`` / ``"VALID"``.
        global_pooling: pool over the whole volume.
        use_cudnn: accepted for Paddle's signature.
        ceil_mode: round the output size up.
        name: the output's name (generated when None).
        exclusive: for average pooling, leave the padding out of the divisor.
        data_format: ``"NCDHW"`` or ``"NDHWC"``.

    Returns:
        The pooled Variable.

    Examples:
        >>> vol = fluid.data(name="vol", shape=[None, 2, 8, 8, 8], dtype="float32")
        >>> fluid.layers.pool3d(vol, pool_size=2, pool_stride=2).shape
        (-1, 2, 4, 4, 4)
    """
    if pool_type not in ("max", "avg"):
        raise ValueError("pool3d: pool_type must be 'max' or 'avg', got %r" % (pool_type,))
    if not global_pooling and pool_size in (-1, None):
        raise ValueError("pool3d: pool_size must be given when global_pooling is False")
    _check_input(input, "pool3d", rank=5)
    _check_use_cudnn(use_cudnn, "pool3d", TypeError)
    last = _channel_last(data_format, 3, "pool3d")
    ksize = _int_list(pool_size, 3, "pool_size", "pool3d")
    stride = _int_list(pool_stride, 3, "pool_stride", "pool3d")
    pads, algorithm = _paddings(pool_padding, 3, last, "pool3d")
    return _append_pool("pool3d", input, pool_type, ksize, stride, pads, algorithm, global_pooling, use_cudnn,
                        ceil_mode, exclusive, data_format, name)


def adaptive_pool3d(input: Variable, pool_size: int | Sequence[int], pool_type: str = "max",
                    require_index: bool = False, name: str | None = None) -> Variable | tuple[Variable, Variable]:
    """Pooling to a fixed output volume, whatever the input size.

    Output cell ``i`` covers ``floor(i * S / out)`` to ``ceil((i + 1) * S / out)`` of each dimension.
    Max pooling is the ``max_pool3d_with_index`` op, as in Paddle.

    Args:
        input: a 5-D tensor.
        pool_size: the output size, an int or ``[od, oh, ow]``.
        pool_type: ``"max"`` or ``"avg"``.
        require_index: with max pooling, also return the flat index of each maximum in its volume.
        name: the output's name (generated when None).

    Returns:
        The pooled Variable, or ``(pooled, indices)`` with ``require_index``.

    Examples:
        >>> vol = fluid.data(name="vol", shape=[None, 2, 8, 8, 8], dtype="float32")
        >>> pooled = fluid.layers.adaptive_pool3d(vol, pool_size=2, pool_type="avg")
    """
    if pool_type not in ("max", "avg"):
        raise ValueError("adaptive_pool3d: pool_type must be 'max' or 'avg', got %r" % (pool_type,))
    if pool_type == "avg" and require_index:
        raise ValueError("adaptive_pool3d: require_index=True needs pool_type 'max'")
    _check_input(input, "adaptive_pool3d", rank=5)
    return adaptive_pool_op("pool3d", input, pool_type, _int_list(pool_size, 3, "pool_size", "adaptive_pool3d"),
                            require_index, name)
