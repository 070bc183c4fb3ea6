"""``fluid.layers.deformable_conv``: deformable convolution (DCN v2 with a modulation mask, DCN v1
without), a filter parameter and a bias, as Paddle 1.8 builds it."""
from __future__ import annotations

from typing import Sequence

from ..reader.data_feeder import check_type, check_variable_and_dtype
from ..framework.program import Variable
from .hints import ParamAttrLike
from ..initializer import Normal
from .conv import _int_list
from .layer_helper import LayerHelper

__all__ = ["deformable_conv"]


def deformable_conv(input: Variable, offset: Variable, mask: Variable | None, num_filters: int,
                    filter_size: int | Sequence[int], stride: int | Sequence[int] = 1,
                    padding: int | Sequence[int] = 0, dilation: int | Sequence[int] = 1, groups: int | None = None,
                    deformable_groups: int | None = None, im2col_step: int | None = None,
                    param_attr: ParamAttrLike = None, bias_attr: ParamAttrLike = None, modulated: bool = True,
                    name: str | None = None) -> Variable:
    """A 2-D convolution whose taps sample the input at learned offsets (bilinearly), each sample
    scaled by ``mask`` when ``modulated`` (the ``deformable_conv`` op) or not (``deformable_conv_v1``).

    Args:
        input: the input ``[N, C, H, W]``.
        offset: ``[N, 2 * deformable_groups * KH * KW, OH, OW]``: each tap's (dy, dx).
        mask: ``[N, deformable_groups * KH * KW, OH, OW]`` modulation, or None with ``modulated=False``.
        num_filters: the output channels.
        filter_size: the kernel size, an int or ``[KH, KW]``.
        stride: the stride, an int or a pair.
        padding: the zero padding, an int or a pair.
        dilation: the dilation, an int or a pair.
        groups: the convolution groups (None: 1).
        deformable_groups: the groups of input channels sharing offsets (None: 1).
        im2col_step: the images Paddle's kernel unfolds at once (no effect on the result; None: 64).
        param_attr: the filter's attribute.
        bias_attr: the bias's attribute; ``False`` for no bias.
        modulated: DCN v2 (with ``mask``) or v1.
        name: unused (Paddle's signature).

    Returns:
        The output ``[N, num_filters, OH, OW]``.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4, 8, 8], dtype="float32")
        >>> off = fluid.data(name="off", shape=[None, 18, 8, 8], dtype="float32")
        >>> m = fluid.data(name="m", shape=[None, 9, 8, 8], dtype="float32")
        >>> y = fluid.layers.deformable_conv(x, off, m, num_filters=6, filter_size=3, padding=1)
    """
    check_variable_and_dtype(input, "input", ["float32", "float64"], "deformable_conv")
    check_variable_and_dtype(offset, "offset", ["float32", "float64"], "deformable_conv")
    check_type(mask, "mask", (Variable, type(None)), "deformable_conv")
    if param_attr is False:
        raise ValueError("deformable_conv: param_attr should not be False")
    channels = input.shape[1]
    if groups is not None and channels % groups:
        raise ValueError("deformable_conv: num_channels (%d) must be divisible by groups (%d)" % (channels, groups))
    helper = LayerHelper("deformable_conv", input=input, param_attr=param_attr, bias_attr=bias_attr, name=name)
    dtype = helper.input_dtype()
    kernel = _int_list(filter_size, 2, "filter_size", "deformable_conv")
    std = (2.0 / (kernel[0] * kernel[1] * channels)) ** 0.5
    w = helper.create_parameter(attr=helper.param_attr, shape=[num_filters, channels // (groups or 1)] + kernel,
                                dtype=dtype, default_initializer=Normal(0.0, std, 0))
    pre_bias = helper.create_variable_for_type_inference(dtype)
    inputs = {"Input": [input], "Filter": [w], "Offset": [offset]}
    if modulated:
        inputs["Mask"] = [mask]
    attrs = {"strides": _int_list(stride, 2, "stride", "deformable_conv"),
             "paddings": _int_list(padding, 2, "padding", "deformable_conv"),
             "dilations": _int_list(dilation, 2, "dilation", "deformable_conv"), "groups": groups,
             "deformable_groups": deformable_groups, "im2col_step": im2col_step}
    helper.append_op("deformable_conv" if modulated else "deformable_conv_v1", inputs=inputs,
                     outputs={"Output": [pre_bias]}, attrs={k: v for k, v in attrs.items() if v is not None})
    return helper.append_bias_op(pre_bias, dim_start=1, dim_end=2)
