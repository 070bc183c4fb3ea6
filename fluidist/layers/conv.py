"""Image layers with Paddle 1.x signatures: conv2d, pool2d, adaptive_pool2d, batch_norm, dropout."""
from __future__ import annotations

from typing import Literal, Sequence, overload

from ..framework.variable import Variable
from .hints import ParamAttrLike
from ..initializer import Constant, Normal
from ..param_attr import ParamAttr
from .layer_helper import LayerHelper, check_variable

__all__ = ["conv2d", "pool2d", "adaptive_pool2d", "batch_norm", "dropout"]


def _check_input(x, layer, arg="input", rank=None):
    check_variable(x, layer, arg)
    if rank is not None and (x.shape is None or len(x.shape) != rank):
        raise ValueError("%s: %r (variable %r) must be a %d-D tensor, got shape %s"
                         % (layer, arg, x.name, rank, None if x.shape is None else list(x.shape)))


def _check_use_cudnn(use_cudnn, layer, error=ValueError):
    """Paddle 1.8's conv and pool layers take only a bool ``use_cudnn``: the conv layers refuse
    anything else with ValueError, the pool layers with TypeError."""
    if not isinstance(use_cudnn, bool):
        raise error("%s: use_cudnn must be True or False, got %r" % (layer, use_cudnn))


def _int_list(v, n, what, layer):
    """An int or a list of ``n`` ints, as a list of ``n`` ints."""
    if isinstance(v, bool):
        raise TypeError("%s: %s must be an int or a list of %d ints, got %r" % (layer, what, n, v))
    if isinstance(v, int):
        return [v] * n
    try:
        out = [int(x) for x in v]
    except (TypeError, ValueError):
        raise TypeError("%s: %s must be an int or a list of %d ints, got %r" % (layer, what, n, v)) from None
    if len(out) != n:
        raise ValueError("%s: %s must have %d elements, got %r" % (layer, what, n, v))
    return out


def _padding(padding, channel_last, layer):
    """Paddle 1.8's padding forms -> (paddings attr, padding_algorithm).

    Accepts "SAME"/"VALID", an int, [ph, pw], [top, bottom, left, right], or the per-dimension form
    [[0, 0], [0, 0], [top, bottom], [left, right]] (NCHW; NHWC puts the zero pairs first and last)."""
    if isinstance(padding, str):
        algo = padding.upper()
        if algo not in ("SAME", "VALID"):
            raise ValueError("%s: padding must be 'SAME', 'VALID', an int or a list, got %r" % (layer, padding))
        return [0, 0], algo
    if isinstance(padding, (list, tuple)) and padding and isinstance(padding[0], (list, tuple)):
        if len(padding) != 4 or any(len(p) != 2 for p in padding):
            raise ValueError("%s: per-dimension padding must be 4 pairs, got %r" % (layer, padding))
        batch_ch = (padding[0], padding[3]) if channel_last else (padding[0], padding[1])
        if any(list(p) != [0, 0] for p in batch_ch):
            raise ValueError("%s: padding of the batch and channel dimensions must be 0, got %r" % (layer, padding))
        hw = padding[1:3] if channel_last else padding[2:4]
        padding = [int(hw[0][0]), int(hw[0][1]), int(hw[1][0]), int(hw[1][1])]
    elif isinstance(padding, (list, tuple)) and len(padding) == 4:
        padding = [int(p) for p in padding]
    else:
        return _int_list(padding, 2, "padding", layer), "EXPLICIT"
    if padding[0] == padding[1] and padding[2] == padding[3]:
        return [padding[0], padding[2]], "EXPLICIT"
    return padding, "EXPLICIT"


def _data_format(fmt, layer, key="data_format"):
    if fmt not in ("NCHW", "NHWC"):
        raise ValueError("%s: %s must be 'NCHW' or 'NHWC', got %r" % (layer, key, fmt))
    return fmt == "NHWC"


def conv2d(input: Variable, num_filters: int, filter_size: int | Sequence[int], stride: int | Sequence[int] = 1,
           padding: int | Sequence[int] | str = 0, dilation: int | Sequence[int] = 1, groups: int | None = None,
           param_attr: ParamAttrLike = None, bias_attr: ParamAttrLike = None, use_cudnn: bool = True,
           act: str | None = None, name: str | None = None, data_format: str = "NCHW") -> Variable:
    """2-D convolution, then the bias (on the channel axis) and the activation.

    Builds a ``conv2d`` op, or ``depthwise_conv2d`` when ``groups`` equals the input channels,
    ``num_filters`` is a multiple of it and ``use_cudnn`` is off (Paddle's choice). The filter starts
    from Normal(0, sqrt(2 / (kh * kw * channels))) unless ``param_attr`` says otherwise.

    Args:
        input: a 4-D tensor, ``[N, C, H, W]`` (or ``[N, H, W, C]`` with ``data_format="NHWC"``).
        num_filters: the number of output channels.
        filter_size: the kernel size, an int or ``[kh, kw]``.
        stride: the step, an int or ``[sh, sw]``.
        padding: zeros added on each side: an int, ``[ph, pw]``, four values, or ``"SAME"`` / ``"VALID"``.
        dilation: spacing between kernel taps, an int or ``[dh, dw]``.
        groups: split input and output channels into this many groups (None means 1).
        param_attr: the filter's attribute.
        bias_attr: the bias's attribute; ``False`` for no bias.
        use_cudnn: accepted for Paddle's signature (it only steers the depthwise choice above).
        act: an activation name, or None.
        name: the prefix of the parameters' names (generated when None).
        data_format: ``"NCHW"`` or ``"NHWC"``.

    Returns:
        The output Variable, ``[N, num_filters, H_out, W_out]`` for NCHW.

    Examples:
        >>> img = fluid.data(name="img", shape=[None, 3, 32, 32], dtype="float32")
        >>> feat = fluid.layers.conv2d(img, num_filters=16, filter_size=3, padding=1, act="relu")
        >>> feat.shape
        (-1, 16, 32, 32)
    """
    _check_input(input, "conv2d", rank=4)
    _check_use_cudnn(use_cudnn, "conv2d")
    last = _data_format(data_format, "conv2d")
    num_channels = input.shape[3] if last else input.shape[1]
    if num_channels is None or num_channels < 0:
        raise ValueError("conv2d: the channel dimension of input %r (shape %s) must be known"
                         % (input.name, list(input.shape)))
    if groups is None:
        groups = 1
    groups = int(groups)
    if groups <= 0 or num_channels % groups:
        raise ValueError("conv2d: input %r has %d channels, which groups=%d does not divide"
                         % (input.name, num_channels, groups))
    num_filter_channels = num_channels // groups
    if int(num_filters) % groups:
        raise ValueError("conv2d: num_filters=%d is not a multiple of groups=%d" % (num_filters, groups))
    op_type = "conv2d"
    if num_channels == groups and num_filters % num_channels == 0 and not use_cudnn:
        op_type = "depthwise_conv2d"
    helper = LayerHelper(op_type, input=input, param_attr=param_attr, bias_attr=bias_attr, act=act, name=name)
    dtype = helper.input_dtype()
    kernel_hw = _int_list(filter_size, 2, "filter_size", "conv2d")
    stride = _int_list(stride, 2, "stride", "conv2d")
    dilation = _int_list(dilation, 2, "dilation", "conv2d")
    paddings, algorithm = _padding(padding, last, "conv2d")
    filter_shape = [int(num_filters), num_filter_channels] + kernel_hw
    std = (2.0 / (kernel_hw[0] * kernel_hw[1] * num_channels)) ** 0.5
    w = helper.create_parameter(attr=helper.param_attr, shape=filter_shape, dtype=dtype,
                                default_initializer=Normal(0.0, std, 0))
    pre_bias = helper.create_variable_for_type_inference(dtype)
    helper.append_op(op_type, inputs={"Input": [input], "Filter": [w]}, outputs={"Output": [pre_bias]},
                     attrs={"strides": stride, "paddings": paddings, "dilations": dilation, "groups": groups,
                            "use_cudnn": use_cudnn, "use_mkldnn": False, "fuse_relu_before_depthwise_conv": False,
                            "padding_algorithm": algorithm, "data_format": data_format})
    if last:
        pre_act = helper.append_bias_op(pre_bias, dim_start=3, dim_end=4)
    else:
        pre_act = helper.append_bias_op(pre_bias, dim_start=1, dim_end=2)
    return helper.append_activation(pre_act)


def pool2d(input: Variable, pool_size: int | Sequence[int] = -1, pool_type: str = "max",
           pool_stride: int | Sequence[int] = 1, pool_padding: int | Sequence[int] | str = 0,
           global_pooling: bool = False, use_cudnn: bool = True, ceil_mode: bool = False, name: str | None = None,
           exclusive: bool = True, data_format: str = "NCHW") -> Variable:
    """Max or average pooling over 2-D windows (one ``pool2d`` op).

    Args:
        input: a 4-D tensor, ``[N, C, H, W]`` (or NHWC).
        pool_size: the window, an int or ``[kh, kw]``.
        pool_type: ``"max"`` or ``"avg"``.
        pool_stride: the step, an int or ``[sh, sw]``.
        pool_padding: padding on each side: an int, a list, or ``"SAME"`` / ``"VALID"``.
        global_pooling: pool over the whole spatial extent (``pool_size`` is ignored).
        use_cudnn: accepted for Paddle's signature; ignored.
        ceil_mode: round the output size up rather than down.
        name: the output's name (generated when None).
        exclusive: for average pooling, leave the padding out of the divisor.
        data_format: ``"NCHW"`` or ``"NHWC"``.

    Returns:
        The pooled Variable.

    Examples:
        >>> img = fluid.data(name="img", shape=[None, 3, 32, 32], dtype="float32")
        >>> pooled = fluid.layers.pool2d(img, pool_size=2, pool_stride=2)
        >>> pooled.shape
        (-1, 3, 16, 16)
    """
    if pool_type not in ("max", "avg"):
        raise ValueError("pool2d: pool_type must be 'max' or 'avg', got %r" % (pool_type,))
    if not global_pooling and (pool_size == -1 or pool_size is None):
        raise ValueError("pool2d: pool_size must be given when global_pooling is False")
    _check_input(input, "pool2d", rank=4)
    _check_use_cudnn(use_cudnn, "pool2d", TypeError)
    last = _data_format(data_format, "pool2d")
    ksize = _int_list(pool_size, 2, "pool_size", "pool2d") if pool_size not in (-1, None) else [-1, -1]
    stride = _int_list(pool_stride, 2, "pool_stride", "pool2d")
    paddings, algorithm = _padding(pool_padding, last, "pool2d")
    return _append_pool("pool2d", input, pool_type, ksize, stride, paddings, algorithm, global_pooling, use_cudnn,
                        ceil_mode, exclusive, data_format, name)


def _append_pool(op_type, input, pool_type, ksize, stride, paddings, algorithm, global_pooling, use_cudnn, ceil_mode,
                 exclusive, data_format, name):
    """The ``pool2d`` / ``pool3d`` op of a pooling layer, once its arguments are normalised."""
    if algorithm == "VALID" and ceil_mode:
        raise ValueError("%s: ceil_mode must be False when pool_padding is 'VALID'" % op_type)
    helper = LayerHelper(op_type, name=name)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(op_type, inputs={"X": [input]}, outputs={"Out": [out]},
                     attrs={"pooling_type": pool_type, "ksize": ksize, "global_pooling": global_pooling,
                            "strides": stride, "paddings": paddings, "padding_algorithm": algorithm,
                            "use_cudnn": use_cudnn, "ceil_mode": ceil_mode, "use_mkldnn": False,
                            "exclusive": exclusive, "data_format": data_format})
    return out


@overload
def adaptive_pool2d(input: Variable, pool_size: int | Sequence[int], pool_type: str = ...,
                    require_index: Literal[False] = ..., name: str | None = ...) -> Variable: ...


@overload
def adaptive_pool2d(input: Variable, pool_size: int | Sequence[int], pool_type: str = ..., *,
                    require_index: Literal[True], name: str | None = ...) -> tuple[Variable, Variable]: ...


def adaptive_pool2d(input: Variable, pool_size: int | Sequence[int], pool_type: str = "max",
                    require_index: bool = False, name: str | None = None) -> Variable | tuple[Variable, Variable]:
    """Pooling to a fixed output size, whatever the input size.

    Output cell ``i`` covers input rows ``floor(i * H / out)`` to ``ceil((i + 1) * H / out)`` (and the
    same for columns).

    Args:
        input: a 4-D NCHW tensor.
        pool_size: the output size, an int or ``[oh, ow]``.
        pool_type: ``"max"`` or ``"avg"``.
        require_index: with max pooling, also return the index of each maximum.
        name: the output's name (generated when None).

    Returns:
        The pooled Variable, or ``(pooled, indices)`` with ``require_index``.

    Examples:
        >>> img = fluid.data(name="img", shape=[None, 3, 32, 32], dtype="float32")
        >>> pooled = fluid.layers.adaptive_pool2d(img, pool_size=[4, 4], pool_type="avg")
    """
    if pool_type not in ("max", "avg"):
        raise ValueError("adaptive_pool2d: pool_type must be 'max' or 'avg', got %r" % (pool_type,))
    if pool_type == "avg" and require_index:
        raise ValueError("adaptive_pool2d: require_index=True needs pool_type 'max'")
    _check_input(input, "adaptive_pool2d", rank=4)
    ksize = _int_list(pool_size, 2, "pool_size", "adaptive_pool2d")
    return adaptive_pool_op("pool2d", input, pool_type, ksize, require_index, name)


def adaptive_pool_op(pool_op, input, pool_type, ksize, require_index, name):
    """Paddle's adaptive pooling op: max pooling is ``max_pool{2,3}d_with_index`` (its Mask output is
    the index of each maximum, returned with ``require_index``), average pooling ``pool_op``."""
    op_type = "max_pool%sd_with_index" % pool_op[-2] if pool_type == "max" else pool_op
    helper = LayerHelper(op_type, name=name)
    out = helper.create_variable_for_type_inference(input.dtype)
    outputs = {"Out": [out]}
    attrs = {"ksize": ksize, "adaptive": True}
    if pool_type == "max":
        outputs["Mask"] = [helper.create_variable_for_type_inference("int32")]
    else:
        attrs["pooling_type"] = pool_type
    helper.append_op(op_type, inputs={"X": [input]}, outputs=outputs, attrs=attrs)
    return (out, outputs["Mask"][0]) if require_index else out


def batch_norm(input: Variable, act: str | None = None, is_test: bool = False, momentum: float | Variable = 0.9,
               epsilon: float = 1e-05, param_attr: ParamAttrLike = None, bias_attr: ParamAttrLike = None,
               data_layout: str = "NCHW", in_place: bool = False, name: str | None = None,
               moving_mean_name: str | None = None, moving_variance_name: str | None = None,
               do_model_average_for_mean_and_var: bool = False, use_global_stats: bool = False) -> Variable:
    """Batch normalisation over the channel axis, then the activation.

    In training the batch's mean and variance normalise it and update the moving averages
    (``moving = momentum * moving + (1 - momentum) * batch``); with ``is_test`` or
    ``use_global_stats`` the moving averages are used instead. The scale starts at 1 and the bias at
    0; the moving mean and variance are persistable, non-trainable parameters starting at 0 and 1.

    Args:
        input: a tensor of rank 2 to 5, channels on axis 1 (NCHW) or last (NHWC).
        act: an activation name, or None.
        is_test: use the moving averages (inference).
        momentum: the weight of the old moving average, or a ``[1]`` float Variable holding it (read
            when the program runs; Paddle 1.8's layer drops such a Variable and uses 0.9).
        epsilon: added to the variance before the square root.
        param_attr: the scale's attribute.
        bias_attr: the bias's attribute.
        data_layout: ``"NCHW"`` or ``"NHWC"``.
        in_place: accepted for Paddle's signature; fluidist writes a new variable.
        name: the prefix of the parameters' names (generated when None).
        moving_mean_name: the moving mean's name (to share it between programs).
        moving_variance_name: the moving variance's name.
        do_model_average_for_mean_and_var: include the moving statistics in ModelAverage.
        use_global_stats: normalise with the moving averages in training too.

    Returns:
        The normalised Variable, with ``input``'s shape.

    Examples:
        >>> img = fluid.data(name="img", shape=[None, 3, 8, 8], dtype="float32")
        >>> normed = fluid.layers.batch_norm(fluid.layers.conv2d(img, 8, 3), act="relu")
    """
    return norm_layer("batch_norm", {}, input, act, is_test, momentum, epsilon, param_attr, bias_attr, data_layout,
                      in_place, name, moving_mean_name, moving_variance_name, do_model_average_for_mean_and_var,
                      use_global_stats)


def norm_layer(op_type, extra_attrs, input, act, is_test, momentum, epsilon, param_attr, bias_attr, data_layout,
               in_place, name, moving_mean_name, moving_variance_name, do_model_average_for_mean_and_var,
               use_global_stats):
    """The batch_norm layer building ``op_type`` (``batch_norm``, or ``inplace_abn`` with its
    activation in ``extra_attrs``)."""
    _check_input(input, op_type)
    last = _data_format(data_layout, "batch_norm", "data_layout")
    if input.shape is None or len(input.shape) < 2:
        raise ValueError("batch_norm: input %r must have rank >= 2, got shape %s"
                         % (input.name, None if input.shape is None else list(input.shape)))
    channels = input.shape[-1] if last else input.shape[1]
    if channels < 0:
        raise ValueError("batch_norm: the channel dimension of input %r (shape %s) must be known"
                         % (input.name, list(input.shape)))
    helper = LayerHelper("batch_norm", input=input, param_attr=param_attr, bias_attr=bias_attr, act=act,
                         name=name)
    dtype = helper.input_dtype()
    if dtype == "float16":
        dtype = "float32"  # Paddle keeps the statistics and affine parameters in float32
    shape = [channels]
    scale = helper.create_parameter(attr=helper.param_attr, shape=shape, dtype=dtype,
                                    default_initializer=Constant(1.0))
    bias = helper.create_parameter(attr=helper.bias_attr, shape=shape, dtype=dtype, is_bias=True)
    mean = helper.create_parameter(
        attr=ParamAttr(name=moving_mean_name, initializer=Constant(0.0), trainable=False,
                       do_model_average=do_model_average_for_mean_and_var), shape=shape, dtype=dtype)
    mean.stop_gradient = True
    variance = helper.create_parameter(
        attr=ParamAttr(name=moving_variance_name, initializer=Constant(1.0), trainable=False,
                       do_model_average=do_model_average_for_mean_and_var), shape=shape, dtype=dtype)
    variance.stop_gradient = True
    saved_mean = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    saved_variance = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    y = input if in_place else helper.create_variable_for_type_inference(input.dtype)
    inputs = {"X": [input], "Scale": [scale], "Bias": [bias], "Mean": [mean], "Variance": [variance]}
    if isinstance(momentum, Variable):  # read when the program runs (Paddle 1.8 misspells the slot and drops it)
        inputs["MomentumTensor"] = [momentum]
    helper.append_op(op_type,
                     inputs=inputs,
                     outputs={"Y": [y], "MeanOut": [mean], "VarianceOut": [variance], "SavedMean": [saved_mean],
                              "SavedVariance": [saved_variance]},
                     attrs=dict({"momentum": 0.9 if isinstance(momentum, Variable) else float(momentum),
                                 "epsilon": float(epsilon), "is_test": is_test,
                                 "data_layout": data_layout, "use_mkldnn": False, "fuse_with_relu": False,
                                 "use_global_stats": use_global_stats}, **extra_attrs))
    return helper.append_activation(y)


def dropout(x: Variable, dropout_prob: float, is_test: bool = False, seed: int | None = None,
            name: str | None = None, dropout_implementation: str = "downgrade_in_infer") -> Variable:
    """Zero each element with probability ``dropout_prob`` in training.

    As in Paddle 1.x, a ``seed`` (or a non-zero ``Program.random_seed`` when none is given) fixes the
    mask: the same mask is then drawn at every run.

    Args:
        x: a float tensor.
        dropout_prob: the probability of dropping an element, in ``[0, 1]``.
        is_test: inference: nothing is dropped.
        seed: the random seed of the mask (None: the program's, or a fresh one per run).
        name: the output's name (generated when None).
        dropout_implementation: ``"downgrade_in_infer"`` (training keeps the kept elements as they
            are; inference scales by ``1 - dropout_prob``) or ``"upscale_in_train"`` (training scales
            the kept elements by ``1 / (1 - dropout_prob)``; inference passes ``x`` through).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 16], dtype="float32")
        >>> y = fluid.layers.dropout(x, dropout_prob=0.5, dropout_implementation="upscale_in_train")
    """
    _check_input(x, "dropout", "x")
    if not 0.0 <= float(dropout_prob) <= 1.0:
        raise ValueError("dropout: dropout_prob must be in [0, 1], got %r" % (dropout_prob,))
    if dropout_implementation not in ("downgrade_in_infer", "upscale_in_train"):
        raise ValueError("dropout: dropout_implementation must be 'downgrade_in_infer' or 'upscale_in_train', "
                         "got %r" % (dropout_implementation,))
    helper = LayerHelper("dropout", name=name)
    prog = helper.main_program
    if not seed and prog.random_seed:
        seed = prog.random_seed
    out = helper.create_variable_for_type_inference(x.dtype)
    mask = helper.create_variable_for_type_inference("uint8", stop_gradient=True)
    helper.append_op("dropout", inputs={"X": [x]}, outputs={"Out": [out], "Mask": [mask]},
                     attrs={"dropout_prob": float(dropout_prob), "is_test": is_test, "fix_seed": seed is not None,
                            "seed": int(seed) if seed is not None else 0,
                            "dropout_implementation": dropout_implementation})
    return out
