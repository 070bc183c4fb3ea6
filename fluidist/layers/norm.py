"""Normalisation layers with Paddle 1.8 signatures: layer_norm, group_norm, instance_norm, data_norm,
l2_normalize, lrn, affine_channel, spectral_norm. (batch_norm lives in ``conv``.)"""
from __future__ import annotations

from functools import reduce
from typing import Any

import numpy as np

from ..framework.program import Variable
from .hints import ParamAttrLike
from ..initializer import Constant, Normal
from ..param_attr import ParamAttr
from .layer_helper import LayerHelper, check_variable

__all__ = ["layer_norm", "group_norm", "instance_norm", "data_norm", "l2_normalize", "lrn", "affine_channel",
           "spectral_norm"]


def _check(x, layer, arg="input", dtypes=None):
    """A Variable of the dtypes Paddle 1.8's ``layer`` takes (``input_dtypes``), or of ``dtypes``."""
    check_variable(x, layer, arg, dtypes)


def _stat_dtype(dtype):
    return "float32" if dtype == "float16" else dtype


def layer_norm(input: Variable, scale: bool = True, shift: bool = True, begin_norm_axis: int = 1,
               epsilon: float = 1e-05, param_attr: ParamAttrLike = None, bias_attr: ParamAttrLike = None,
               act: str | None = None, name: str | None = None) -> Variable:
    """Standardise each sample over the dimensions from ``begin_norm_axis`` on, then scale and shift.

    Args:
        input: a tensor.
        scale: learn a scale (starting at 1) of the normalised size.
        shift: learn a bias (starting at 0).
        begin_norm_axis: the first dimension normalised over.
        epsilon: added to the variance.
        param_attr: the scale's attribute.
        bias_attr: the bias's attribute.
        act: an activation name, or None.
        name: the prefix of the parameters' names (generated when None).

    Returns:
        A Variable of ``input``'s shape.

    Examples:
        >>> h = fluid.data(name="h", shape=[None, 16, 32], dtype="float32")
        >>> normed = fluid.layers.layer_norm(h, begin_norm_axis=2)
    """
    _check(input, "layer_norm")
    helper = LayerHelper("layer_norm", input=input, param_attr=param_attr, bias_attr=bias_attr, act=act, name=name)
    dtype = helper.input_dtype()
    if input.shape is None or not 0 < begin_norm_axis < len(input.shape):
        raise ValueError("layer_norm: begin_norm_axis=%r is out of range for input %r of shape %s"
                         % (begin_norm_axis, input.name, input.shape))
    size = reduce(lambda a, b: a * b, input.shape[begin_norm_axis:], 1)
    if size <= 0:
        raise ValueError("layer_norm: the normalised dims %s of input %r must be known"
                         % (list(input.shape[begin_norm_axis:]), input.name))
    inputs = {"X": [input]}
    if scale:
        if param_attr is False:
            raise ValueError("layer_norm: param_attr must not be False when scale=True")
        inputs["Scale"] = [helper.create_parameter(attr=helper.param_attr, shape=[size], dtype=dtype,
                                                   default_initializer=Constant(1.0))]
    if shift:
        if bias_attr is False:
            raise ValueError("layer_norm: bias_attr must not be False when shift=True")
        inputs["Bias"] = [helper.create_parameter(attr=helper.bias_attr, shape=[size], dtype=dtype, is_bias=True)]
    mean = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    var = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    out = helper.create_variable_for_type_inference(dtype)
    helper.append_op("layer_norm", inputs=inputs, outputs={"Y": [out], "Mean": [mean], "Variance": [var]},
                     attrs={"epsilon": float(epsilon), "begin_norm_axis": int(begin_norm_axis)})
    return helper.append_activation(out)


def group_norm(input: Variable, groups: int, epsilon: float = 1e-05, param_attr: ParamAttrLike = None,
               bias_attr: ParamAttrLike = None, act: str | None = None, data_layout: str = "NCHW",
               name: str | None = None) -> Variable:
    """Standardise each (sample, group of channels), then a per-channel scale and bias.

    Args:
        input: a tensor with channels on axis 1.
        groups: the number of channel groups (divides the channels).
        epsilon: added to the variance.
        param_attr: the scale's attribute (starts at 1). As in Paddle 1.8 a scale exists only when
            this is given (None or False: no scale).
        bias_attr: the bias's attribute (starts at 0); likewise, no bias unless given.
        act: an activation name, or None.
        data_layout: ``"NCHW"`` or ``"NHWC"``.
        name: the prefix of the parameters' names (generated when None).

    Returns:
        A Variable of ``input``'s shape.

    Examples:
        >>> img = fluid.data(name="img", shape=[None, 8, 4, 4], dtype="float32")
        >>> normed = fluid.layers.group_norm(img, groups=4)
    """
    _check(input, "group_norm")
    if data_layout not in ("NCHW", "NHWC"):
        raise ValueError("group_norm: data_layout must be 'NCHW' or 'NHWC', got %r" % (data_layout,))
    helper = LayerHelper("group_norm", input=input, param_attr=param_attr, bias_attr=bias_attr, act=act, name=name)
    dtype = helper.input_dtype()
    channels = input.shape[1] if data_layout == "NCHW" else input.shape[-1]
    if channels < 0 or int(groups) <= 0 or channels % int(groups):
        raise ValueError("group_norm: groups=%r must divide the %d channels of input %r"
                         % (groups, channels, input.name))
    inputs = {"X": [input]}
    if param_attr:      # (the argument, not the helper's default attr: Paddle 1.8's rule)
        inputs["Scale"] = [helper.create_parameter(attr=helper.param_attr, shape=[channels], dtype=dtype,
                                                   default_initializer=Constant(1.0))]
    if bias_attr:
        inputs["Bias"] = [helper.create_parameter(attr=helper.bias_attr, shape=[channels], dtype=dtype,
                                                  is_bias=True)]
    mean = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    var = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    out = helper.create_variable_for_type_inference(dtype)
    helper.append_op("group_norm", inputs=inputs, outputs={"Y": [out], "Mean": [mean], "Variance": [var]},
                     attrs={"epsilon": float(epsilon), "groups": int(groups), "data_layout": data_layout})
    return helper.append_activation(out)


def instance_norm(input: Variable, epsilon: float = 1e-05, param_attr: ParamAttrLike = None,
                  bias_attr: ParamAttrLike = None, name: str | None = None) -> Variable:
    """Standardise each (sample, channel) over its positions, then a per-channel scale and bias.

    Args:
        input: a tensor with channels on axis 1.
        epsilon: added to the variance.
        param_attr: the scale's attribute (starts at 1).
        bias_attr: the bias's attribute (starts at 0).
        name: the prefix of the parameters' names (generated when None).

    Returns:
        A Variable of ``input``'s shape.

    Examples:
        >>> img = fluid.data(name="img", shape=[None, 3, 8, 8], dtype="float32")
        >>> normed = fluid.layers.instance_norm(img)
    """
    _check(input, "instance_norm")
    if bias_attr is False:
        raise ValueError("instance_norm: bias_attr must not be False")
    helper = LayerHelper("instance_norm", input=input, param_attr=param_attr, bias_attr=bias_attr, name=name)
    dtype = _stat_dtype(helper.input_dtype())
    channels = input.shape[1]
    scale = helper.create_parameter(attr=helper.param_attr, shape=[channels], dtype=dtype,
                                    default_initializer=Constant(1.0))
    bias = helper.create_parameter(attr=helper.bias_attr, shape=[channels], dtype=dtype, is_bias=True,
                                   default_initializer=Constant(0.0))
    saved_mean = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    saved_var = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    out = helper.create_variable_for_type_inference(dtype)
    helper.append_op("instance_norm", inputs={"X": [input], "Scale": [scale], "Bias": [bias]},
                     outputs={"Y": [out], "SavedMean": [saved_mean], "SavedVariance": [saved_var]},
                     attrs={"epsilon": float(epsilon)})
    return out


def data_norm(input: Variable, act: str | None = None, epsilon: float = 1e-05, param_attr: Any = None,
              data_layout: str = "NCHW", in_place: bool = False, name: str | None = None,
              moving_mean_name: str | None = None, moving_variance_name: str | None = None,
              do_model_average_for_mean_and_var: bool = True, slot_dim: int = -1, sync_stats: bool = False,
              summary_decay_rate: float = 0.9999999, enable_scale_and_shift: bool = False) -> Variable:
    """Normalise with statistics accumulated over all the data seen (CTR models).

    Three parameters per channel hold the running statistics: ``<name>.batch_size`` (starting at
    10000), ``.batch_sum`` (0) and ``.batch_square_sum`` (10000), ``name`` defaulting to ``"dn"``.
    Paddle 1.8 difference: ``slot_dim > 0`` and ``sync_stats`` are refused.

    Args:
        input: a 2-D tensor ``[N, C]``.
        act: an activation name, or None.
        epsilon: added to the variance.
        param_attr: None, or a dict of start values (keys ``batch_size``, ``batch_sum``,
            ``batch_square``, and ``scale_w`` / ``bias`` with ``enable_scale_and_shift``).
        data_layout: ``"NCHW"``.
        in_place: accepted for Paddle's signature.
        name: the prefix of the parameters' names.
        moving_mean_name: accepted for Paddle's signature.
        moving_variance_name: accepted for Paddle's signature.
        do_model_average_for_mean_and_var: include the statistics in ModelAverage.
        slot_dim: per-slot statistics (refused when > 0).
        sync_stats: synchronise statistics across devices (refused).
        summary_decay_rate: the decay of the running statistics.
        enable_scale_and_shift: also learn a scale and a bias.

    Returns:
        A Variable of ``input``'s shape.

    Examples:
        >>> feats = fluid.data(name="feats", shape=[None, 8], dtype="float32")
        >>> normed = fluid.layers.data_norm(feats)
    """
    _check(input, "data_norm")
    if data_layout not in ("NCHW", "NHWC"):
        raise ValueError("data_norm: unsupported data layout %r" % (data_layout,))
    if sync_stats:
        raise ValueError("data_norm: sync_stats=True (statistics summed across GPUs with NCCL) is not supported")
    helper = LayerHelper("data_norm", name=name, act=act)
    channels = input.shape[1] if data_layout == "NCHW" else input.shape[-1]
    starts = {"batch_size": 1e4, "batch_sum": 0.0, "batch_square": 1e4, "scale_w": 1.0, "bias": 0.0}
    if isinstance(param_attr, dict):
        starts.update({k: float(v) for k, v in param_attr.items() if k in starts})
    name = name or "dn"

    def stat(suffix, value):
        return helper.create_parameter(attr=ParamAttr(name=name + "." + suffix, initializer=Constant(value),
                                                      trainable=True), shape=[channels], dtype=input.dtype)

    inputs = {"X": [input]}
    if enable_scale_and_shift:
        inputs["scale_w"] = [stat("scale_w", starts["scale_w"])]
        inputs["bias"] = [stat("bias", starts["bias"])]
    size, total, square = (stat("batch_size", starts["batch_size"]), stat("batch_sum", starts["batch_sum"]),
                           stat("batch_square_sum", starts["batch_square"]))
    inputs.update({"BatchSize": [size], "BatchSum": [total], "BatchSquareSum": [square]})
    means = helper.create_variable_for_type_inference(input.dtype, stop_gradient=True)
    scales = helper.create_variable_for_type_inference(input.dtype, stop_gradient=True)
    out = input if in_place else helper.create_variable_for_type_inference(input.dtype)
    attrs = {"epsilon": float(epsilon), "sync_stats": bool(sync_stats), "summary_decay_rate": float(summary_decay_rate)}
    if slot_dim > 0:
        attrs["slot_dim"] = int(slot_dim)
    if enable_scale_and_shift:
        attrs["enable_scale_and_shift"] = True
    helper.append_op("data_norm", inputs=inputs,
                     outputs={"Y": [out], "Means": [means], "Scales": [scales], "BatchSize": [size],
                              "BatchSum": [total], "BatchSquareSum": [square]}, attrs=attrs)
    return helper.append_activation(out)


def l2_normalize(x: Variable, axis: int, epsilon: float = 1e-12, name: str | None = None) -> Variable:
    """``x / sqrt(sum(x ** 2 over axis) + epsilon)`` (a ``norm`` op).

    Args:
        x: a tensor.
        axis: the axis to normalise along.
        epsilon: keeps the division finite.
        name: the output's name (generated when None).

    Returns:
        A Variable of ``x``'s shape.

    Examples:
        >>> emb = fluid.data(name="emb", shape=[None, 64], dtype="float32")
        >>> unit = fluid.layers.l2_normalize(emb, axis=1)
    """
    _check(x, "l2_normalize", "X")
    if x.shape is not None and len(x.shape) == 1:
        axis = 0
    helper = LayerHelper("l2_normalize", name=name)
    out = helper.create_variable_for_type_inference(x.dtype)
    norm = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("norm", inputs={"X": [x]}, outputs={"Out": [out], "Norm": [norm]},
                     attrs={"axis": 1 if axis is None else int(axis), "epsilon": float(epsilon)})
    return out


def lrn(input: Variable, n: int = 5, k: float = 1.0, alpha: float = 1e-4, beta: float = 0.75,
        name: str | None = None, data_format: str = "NCHW") -> Variable:
    """Local response normalisation across ``n`` neighbouring channels of a 4-D input.

    Args:
        input: a 4-D tensor.
        n: the number of channels summed over.
        k: the additive constant.
        alpha: the scale of the sum of squares.
        beta: the exponent.
        name: the output's name (generated when None).
        data_format: ``"NCHW"`` or ``"NHWC"``.

    Returns:
        A Variable of ``input``'s shape.

    Examples:
        >>> img = fluid.data(name="img", shape=[None, 8, 4, 4], dtype="float32")
        >>> y = fluid.layers.lrn(img)
    """
    _check(input, "lrn")
    if input.shape is None or len(input.shape) != 4:
        raise ValueError("lrn: input %r must be 4-D, got shape %s" % (input.name, input.shape))
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError("lrn: data_format must be 'NCHW' or 'NHWC', got %r" % (data_format,))
    if float(k) <= 0 or float(alpha) <= 0 or float(beta) <= 0 or int(n) <= 0:
        raise ValueError("lrn: n, k, alpha and beta must be positive, got n=%r k=%r alpha=%r beta=%r"
                         % (n, k, alpha, beta))
    helper = LayerHelper("lrn", name=name)
    mid = helper.create_variable_for_type_inference(input.dtype, stop_gradient=True)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op("lrn", inputs={"X": [input]}, outputs={"Out": [out], "MidOut": [mid]},
                     attrs={"n": int(n), "k": float(k), "alpha": float(alpha), "beta": float(beta),
                            "data_format": data_format})
    return out


def affine_channel(x: Variable, scale: Variable | None = None, bias: Variable | None = None,
                   data_layout: str = "NCHW", name: str | None = None, act: str | None = None) -> Variable:
    """``x * scale + bias`` per channel.

    Args:
        x: a tensor with channels on axis 1 (or last, NHWC).
        scale: a Variable with one value per channel.
        bias: a Variable with one value per channel.
        data_layout: ``"NCHW"`` or ``"NHWC"``.
        name: the output's name (generated when None).
        act: an activation name, or None.

    Returns:
        A Variable of ``x``'s shape.

    Examples:
        >>> img = fluid.data(name="img", shape=[None, 3, 4, 4], dtype="float32")
        >>> s = fluid.layers.create_parameter(shape=[3], dtype="float32")
        >>> b = fluid.layers.create_parameter(shape=[3], dtype="float32", is_bias=True)
        >>> y = fluid.layers.affine_channel(img, scale=s, bias=b)
    """
    _check(x, "affine_channel", "x")
    for arg, v in (("scale", scale), ("bias", bias)):
        if not isinstance(v, Variable):
            raise TypeError("affine_channel: %r must be a Variable (of the channel count), got %r"
                            % (arg, type(v).__name__))
    helper = LayerHelper("affine_channel", name=name, act=act)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("affine_channel", inputs={"X": [x], "Scale": [scale], "Bias": [bias]}, outputs={"Out": [out]},
                     attrs={"data_layout": data_layout})
    return helper.append_activation(out)


def spectral_norm(weight: Variable, dim: int = 0, power_iters: int = 1, eps: float = 1e-12,
                  name: str | None = None) -> Variable:
    """``weight`` divided by its largest singular value, estimated by power iteration.

    The weight is viewed as a matrix (``dim`` first, the rest flattened); two non-trainable
    Normal(0, 1) vectors U and V carry the iteration between runs. The gradient is Paddle 1.8's
    (checked against its numbers), not the textbook one.

    Args:
        weight: the parameter to normalise.
        dim: the dimension that becomes the rows.
        power_iters: power-iteration steps per run.
        eps: keeps the divisions finite.
        name: the output's name (generated when None).

    Returns:
        A Variable of ``weight``'s shape.

    Examples:
        >>> w = fluid.layers.create_parameter(shape=[8, 4], dtype="float32")
        >>> w_sn = fluid.layers.spectral_norm(w)
    """
    _check(weight, "spectral_norm", "weight")
    if not isinstance(dim, int) or not isinstance(power_iters, int) or not isinstance(eps, float):
        raise TypeError("spectral_norm: dim and power_iters must be ints and eps a float")
    helper = LayerHelper("spectral_norm", name=name)
    shape = list(weight.shape)
    h = shape[dim]
    w = int(np.prod(shape)) // h
    u = helper.create_parameter(attr=ParamAttr(), shape=[h], dtype=weight.dtype, default_initializer=Normal(0.0, 1.0))
    u.stop_gradient = True
    v = helper.create_parameter(attr=ParamAttr(), shape=[w], dtype=weight.dtype, default_initializer=Normal(0.0, 1.0))
    v.stop_gradient = True
    out = helper.create_variable_for_type_inference(weight.dtype)
    helper.append_op("spectral_norm", inputs={"Weight": [weight], "U": [u], "V": [v]}, outputs={"Out": [out]},
                     attrs={"dim": int(dim), "power_iters": int(power_iters), "eps": float(eps)})
    return out
