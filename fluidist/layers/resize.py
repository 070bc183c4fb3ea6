"""Image resizing layers with Paddle 1.8 signatures: image_resize, resize_bilinear, resize_nearest,
resize_trilinear, image_resize_short."""
from __future__ import annotations

from typing import Sequence

from ..framework.program import Variable
from .layer_helper import LayerHelper
from .tensor import fill_constant

__all__ = ["image_resize", "resize_bilinear", "resize_nearest", "resize_trilinear", "image_resize_short",
           "interpolate"]

_METHODS = {"BILINEAR": "bilinear", "TRILINEAR": "trilinear", "NEAREST": "nearest"}


def image_resize(input: Variable, out_shape: Sequence[int | Variable] | Variable | None = None,
                 scale: float | Variable | None = None, name: str | None = None, resample: str = "BILINEAR",
                 actual_shape: Variable | None = None, align_corners: bool = True, align_mode: int = 1,
                 data_format: str = "NCHW") -> Variable:
    """Resize a 4-D (``BILINEAR``, ``NEAREST``) or 5-D (``TRILINEAR``) input.

    Args:
        input: a 4-D or 5-D tensor.
        out_shape: ``[H, W]`` (or ``[D, H, W]``) of ints or ``[1]`` int32 Variables, or one int32 Variable.
        scale: a factor (a float or a Variable) used when ``out_shape`` is None.
        name: the output's name (generated when None).
        resample: ``"BILINEAR"``, ``"NEAREST"`` or ``"TRILINEAR"``.
        actual_shape: a Variable that overrides both at run time.
        align_corners: align the corner pixels of input and output.
        align_mode: 0 or 1, Paddle's two ways of placing samples when corners are not aligned.
        data_format: ``"NCHW"`` / ``"NHWC"`` (or ``"NCDHW"`` / ``"NDHWC"``).

    Returns:
        The resized Variable.

    Examples:
        >>> img = fluid.data(name="img", shape=[None, 3, 8, 8], dtype="float32")
        >>> fluid.layers.image_resize(img, out_shape=[16, 16]).shape
        (-1, 3, 16, 16)
    """
    return _resize("image_resize", _METHODS, input, out_shape, scale, name, resample, actual_shape, align_corners,
                   align_mode, data_format)


def interpolate(input: Variable, out_shape: Sequence[int | Variable] | Variable | None = None,
                scale: float | Variable | None = None, name: str | None = None, resample: str = "BILINEAR",
                actual_shape: Variable | None = None, align_corners: bool = True, align_mode: int = 1,
                data_format: str = "NCHW") -> Variable:
    """``image_resize`` that also takes ``resample="BICUBIC"`` (4-D input).

    Args:
        input: a 4-D or 5-D tensor.
        out_shape: the output's spatial size, as for ``image_resize``.
        scale: a factor used when ``out_shape`` is None.
        name: the output's name (generated when None).
        resample: ``"BILINEAR"``, ``"NEAREST"``, ``"TRILINEAR"`` or ``"BICUBIC"``.
        actual_shape: a Variable that overrides the size at run time.
        align_corners: align the corner pixels of input and output.
        align_mode: 0 or 1 (see ``image_resize``).
        data_format: the layout.

    Returns:
        The resized Variable.

    Examples:
        >>> img = fluid.data(name="img", shape=[None, 3, 8, 8], dtype="float32")
        >>> up = fluid.layers.interpolate(img, scale=2.0, resample="BICUBIC")
    """
    return _resize("interpolate", dict(_METHODS, BICUBIC="bicubic"), input, out_shape, scale, name, resample,
                   actual_shape, align_corners, align_mode, data_format)


def _resize(layer, methods, input, out_shape, scale, name, resample, actual_shape, align_corners, align_mode,
            data_format):
    if resample not in methods:
        raise ValueError("%s: resample must be one of %s, got %r" % (layer, sorted(methods), resample))
    if not isinstance(input, Variable):
        raise TypeError("%s: 'input' must be a Variable, got %r" % (layer, type(input).__name__))
    rank = len(input.shape)
    if resample in ("BILINEAR", "NEAREST", "BICUBIC") and rank != 4:
        raise ValueError("%s: %s needs a 4-D input, got %r of shape %s" % (layer, resample, input.name,
                                                                       list(input.shape)))
    if resample == "TRILINEAR" and rank != 5:
        raise ValueError("%s: TRILINEAR needs a 5-D input, got %r of shape %s" % (layer, input.name,
                                                                                            list(input.shape)))
    if not isinstance(align_corners, bool):
        raise TypeError("%s: align_corners must be a bool, got %r" % (layer, align_corners,))
    if align_mode not in (0, 1):
        raise ValueError("%s: align_mode must be 0 or 1, got %r" % (layer, align_mode,))
    if out_shape is None and scale is None:
        raise ValueError("%s: one of out_shape and scale must be given" % layer)
    formats = ("NCHW", "NHWC") if rank == 4 else ("NCDHW", "NDHWC")
    if data_format not in formats:
        raise ValueError("%s: data_format must be one of %s for a %d-D input, got %r"
                         % (layer, formats, rank, data_format))
    method = methods[resample]
    helper = LayerHelper("%s_interp" % method, name=name)
    inputs = {"X": [input]}
    attrs = {"out_d": -1, "out_h": -1, "out_w": -1, "interp_method": method, "align_corners": align_corners,
             "align_mode": int(align_mode), "data_layout": "NCHW" if data_format in ("NCHW", "NCDHW") else "NHWC"}
    keys = ["out_h", "out_w"] if rank == 4 else ["out_d", "out_h", "out_w"]
    if out_shape is not None:
        if isinstance(out_shape, Variable):
            out_shape.stop_gradient = True
            inputs["OutSize"] = [out_shape]
        else:
            if not isinstance(out_shape, (list, tuple)):
                raise TypeError("%s: out_shape must be a list, a tuple or a Variable" % layer)
            if len(out_shape) != len(keys):
                raise ValueError("%s: out_shape must have %d elements for a %d-D input, got %r"
                                 % (layer, len(keys), rank, out_shape))
            if any(isinstance(d, Variable) for d in out_shape):
                tensors, sizes = [], []
                for d in out_shape:
                    if isinstance(d, Variable):
                        d.stop_gradient = True
                        tensors.append(d)
                        sizes.append(-1)
                    else:
                        tmp = helper.create_variable_for_type_inference("int32")
                        fill_constant([1], "int32", int(d), force_cpu=True, out=tmp)
                        tensors.append(tmp)
                        sizes.append(int(d))
                inputs["SizeTensor"] = tensors
            else:
                if any(int(d) <= 0 for d in out_shape):
                    raise ValueError("%s: every size in out_shape must be > 0, got %r" % (layer, out_shape,))
                sizes = [int(d) for d in out_shape]
            attrs.update(zip(keys, sizes))
    elif isinstance(scale, Variable):
        scale.stop_gradient = True
        inputs["Scale"] = [scale]
    elif isinstance(scale, (int, float)):
        if scale <= 0:
            raise ValueError("%s: scale must be > 0, got %r" % (layer, scale,))
        attrs["scale"] = float(scale)
    else:
        raise TypeError("%s: scale must be a float, an int or a Variable, got %r" % (layer, type(scale).__name__))
    if isinstance(actual_shape, Variable):
        actual_shape.stop_gradient = True
        inputs["OutSize"] = [actual_shape]
    elif actual_shape is not None:
        raise TypeError("%s: actual_shape must be a Variable or None" % layer)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op("%s_interp" % method, inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    return out


def resize_bilinear(input: Variable, out_shape: Sequence[int | Variable] | Variable | None = None,
                    scale: float | Variable | None = None, name: str | None = None,
                    actual_shape: Variable | None = None, align_corners: bool = True, align_mode: int = 1,
                    data_format: str = "NCHW") -> Variable:
    """``image_resize`` with bilinear interpolation.

    Args:
        input: a 4-D tensor.
        out_shape: ``[H, W]``, as for ``image_resize``.
        scale: a factor used when ``out_shape`` is None.
        name: the output's name (generated when None).
        actual_shape: a Variable that overrides the size at run time.
        align_corners: align the corner pixels of input and output.
        align_mode: 0 or 1 (see ``image_resize``).
        data_format: ``"NCHW"`` or ``"NHWC"``.

    Returns:
        The resized Variable.

    Examples:
        >>> img = fluid.data(name="img", shape=[None, 3, 8, 8], dtype="float32")
        >>> up = fluid.layers.resize_bilinear(img, out_shape=[12, 12])
    """
    return image_resize(input, out_shape, scale, name, "BILINEAR", actual_shape, align_corners, align_mode,
                        data_format)


def resize_trilinear(input: Variable, out_shape: Sequence[int | Variable] | Variable | None = None,
                     scale: float | Variable | None = None, name: str | None = None,
                     actual_shape: Variable | None = None, align_corners: bool = True, align_mode: int = 1,
                     data_format: str = "NCDHW") -> Variable:
    """``image_resize`` of a 5-D input with trilinear interpolation.

    Args:
        input: a 5-D tensor.
        out_shape: ``[D, H, W]``, as for ``image_resize``.
        scale: a factor used when ``out_shape`` is None.
        name: the output's name (generated when None).
        actual_shape: a Variable that overrides the size at run time.
        align_corners: align the corner voxels of input and output.
        align_mode: 0 or 1 (see ``image_resize``).
        data_format: ``"NCDHW"`` or ``"NDHWC"``.

    Returns:
        The resized Variable.

    Examples:
        >>> vol = fluid.data(name="vol", shape=[None, 1, 4, 4, 4], dtype="float32")
        >>> up = fluid.layers.resize_trilinear(vol, out_shape=[8, 8, 8])
    """
    return image_resize(input, out_shape, scale, name, "TRILINEAR", actual_shape, align_corners, align_mode,
                        data_format)


def resize_nearest(input: Variable, out_shape: Sequence[int | Variable] | Variable | None = None,
                   scale: float | Variable | None = None, name: str | None = None,
                   actual_shape: Variable | None = None, align_corners: bool = True,
                   data_format: str = "NCHW") -> Variable:
    """``image_resize`` with nearest-neighbour sampling.

    Args:
        input: a 4-D tensor.
        out_shape: ``[H, W]``, as for ``image_resize``.
        scale: a factor used when ``out_shape`` is None.
        name: the output's name (generated when None).
        actual_shape: a Variable that overrides the size at run time.
        align_corners: align the corner pixels of input and output.
        data_format: ``"NCHW"`` or ``"NHWC"``.

    Returns:
        The resized Variable.

    Examples:
        >>> img = fluid.data(name="img", shape=[None, 3, 8, 8], dtype="float32")
        >>> up = fluid.layers.resize_nearest(img, scale=2.0)
    """
    return image_resize(input, out_shape, scale, name, "NEAREST", actual_shape, align_corners, 1, data_format)


def image_resize_short(input: Variable, out_short_len: int, resample: str = "BILINEAR") -> Variable:
    """Resize so that the shorter of height and width becomes ``out_short_len``, keeping the aspect ratio.

    Args:
        input: a 4-D NCHW tensor with known height and width.
        out_short_len: the new length of the shorter side.
        resample: ``"BILINEAR"`` or ``"NEAREST"``.

    Returns:
        The resized Variable.

    Examples:
        >>> img = fluid.data(name="img", shape=[None, 3, 8, 16], dtype="float32")
        >>> fluid.layers.image_resize_short(img, out_short_len=4).shape
        (-1, 3, 4, 8)
    """
    if input.shape is None or len(input.shape) != 4:
        raise ValueError("image_resize_short: input must be 4-D (N, C, H, W), got shape %s" % (input.shape,))
    hw = list(input.shape[2:4])
    short = hw.index(min(hw))
    out = list(hw)
    out[short] = out_short_len
    out[1 - short] = int(float(hw[1 - short]) * (float(out_short_len) / float(hw[short])) + 0.5)
    return image_resize(input=input, out_shape=out, resample=resample)
