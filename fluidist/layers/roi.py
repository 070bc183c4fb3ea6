"""Region-of-interest pooling layers of Paddle 1.8's ``layers.nn``: ``roi_pool``, ``roi_align``,
``psroi_pool`` and ``prroi_pool``. ROIs are ``[x1, y1, x2, y2]`` rows in input-image pixels; their LoD
(or ``rois_lod`` / ``batch_roi_nums``) says which image each is on."""
from __future__ import annotations

from ..reader.data_feeder import check_variable_and_dtype
from ..framework.program import Variable
from .layer_helper import LayerHelper

__all__ = ["roi_pool", "roi_align", "psroi_pool", "prroi_pool"]


def _pool(layer, inputs, attrs, with_argmax=False, name=None):
    helper = LayerHelper(layer, name=name)
    x = inputs["X"]
    out = helper.create_variable_for_type_inference(x.dtype)
    outputs = {"Out": [out]}
    if with_argmax:
        outputs["Argmax"] = [helper.create_variable_for_type_inference("int64")]
    helper.append_op(layer, inputs={k: [v] for k, v in inputs.items() if v is not None}, outputs=outputs, attrs=attrs)
    return out


def _check_int_float(layer, **args):
    for arg, (value, kind) in args.items():
        if not isinstance(value, kind) or isinstance(value, bool):
            raise TypeError("%s: %s must be %s type, got %r" % (layer, arg, kind.__name__, value))


def roi_pool(input: Variable, rois: Variable, pooled_height: int = 1, pooled_width: int = 1,
             spatial_scale: float = 1.0, rois_lod: Variable | None = None) -> Variable:
    """Max pooling of each ROI of ``input`` (NCHW) into ``pooled_height x pooled_width`` bins.

    Args:
        input: the feature map ``[N, C, H, W]``.
        rois: ``[R, 4]`` ROIs ``[x1, y1, x2, y2]``, one LoD sequence per image.
        pooled_height: the bins along the height.
        pooled_width: the bins along the width.
        spatial_scale: the feature map's scale of the image (its stride's inverse).
        rois_lod: the ROIs' image offsets as a tensor, instead of their LoD.

    Returns:
        A Variable ``[R, C, pooled_height, pooled_width]``.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 8, 16, 16], dtype="float32")
        >>> rois = fluid.data(name="rois", shape=[None, 4], dtype="float32", lod_level=1)
        >>> pooled = fluid.layers.roi_pool(x, rois, pooled_height=2, pooled_width=2, spatial_scale=0.5)
    """
    return _pool("roi_pool", {"X": input, "ROIs": rois, "RoisLod": rois_lod},
                 {"pooled_height": pooled_height, "pooled_width": pooled_width, "spatial_scale": spatial_scale},
                 with_argmax=True)


def roi_align(input: Variable, rois: Variable, pooled_height: int = 1, pooled_width: int = 1,
              spatial_scale: float = 1.0, sampling_ratio: int = -1, name: str | None = None,
              rois_lod: Variable | None = None) -> Variable:
    """Each bin of each ROI: the mean of bilinearly interpolated samples of ``input``.

    Args:
        input: the feature map ``[N, C, H, W]``.
        rois: ``[R, 4]`` ROIs ``[x1, y1, x2, y2]``, one LoD sequence per image.
        pooled_height: the bins along the height.
        pooled_width: the bins along the width.
        spatial_scale: the feature map's scale of the image.
        sampling_ratio: the samples per bin side (-1: the bin's size, rounded up).
        name: unused (Paddle's signature).
        rois_lod: the ROIs' image offsets as a tensor, instead of their LoD.

    Returns:
        A Variable ``[R, C, pooled_height, pooled_width]``.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 8, 16, 16], dtype="float32")
        >>> rois = fluid.data(name="rois", shape=[None, 4], dtype="float32", lod_level=1)
        >>> aligned = fluid.layers.roi_align(x, rois, pooled_height=2, pooled_width=2, spatial_scale=0.5)
    """
    check_variable_and_dtype(input, "input", ["float32", "float64"], "roi_align")
    check_variable_and_dtype(rois, "rois", ["float32", "float64"], "roi_align")
    return _pool("roi_align", {"X": input, "ROIs": rois, "RoisLod": rois_lod},
                 {"pooled_height": pooled_height, "pooled_width": pooled_width, "spatial_scale": spatial_scale,
                  "sampling_ratio": sampling_ratio}, name=name)


def psroi_pool(input: Variable, rois: Variable, output_channels: int, spatial_scale: float, pooled_height: int,
               pooled_width: int, name: str | None = None) -> Variable:
    """Position-sensitive ROI average pooling (R-FCN): ``input`` holds ``output_channels x
    pooled_height x pooled_width`` channels.

    Args:
        input: the feature map ``[N, C, H, W]``.
        rois: ``[R, 4]`` ROIs ``[x1, y1, x2, y2]``, one LoD sequence per image.
        output_channels: the output channels (``C = output_channels * pooled_height * pooled_width``).
        spatial_scale: the feature map's scale of the image (a float).
        pooled_height: the bins along the height.
        pooled_width: the bins along the width.
        name: unused (Paddle's signature).

    Returns:
        A Variable ``[R, output_channels, pooled_height, pooled_width]``.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 18, 16, 16], dtype="float32")
        >>> rois = fluid.data(name="rois", shape=[None, 4], dtype="float32", lod_level=1)
        >>> pooled = fluid.layers.psroi_pool(x, rois, 2, 0.5, 3, 3)
    """
    _check_int_float("psroi_pool", output_channels=(output_channels, int), spatial_scale=(spatial_scale, float),
                     pooled_height=(pooled_height, int), pooled_width=(pooled_width, int))
    return _pool("psroi_pool", {"X": input, "ROIs": rois},
                 {"output_channels": output_channels, "spatial_scale": spatial_scale, "pooled_height": pooled_height,
                  "pooled_width": pooled_width}, name=name)


def prroi_pool(input: Variable, rois: Variable, spatial_scale: float = 1.0, pooled_height: int = 1,
               pooled_width: int = 1, batch_roi_nums: Variable | None = None, name: str | None = None) -> Variable:
    """Precise ROI pooling: the exact integral of the bilinear interpolation over each bin, divided
    by its area (differentiable in the ROIs too).

    Args:
        input: the feature map ``[N, C, H, W]``.
        rois: ``[R, 4]`` ROIs ``[x1, y1, x2, y2]``, one LoD sequence per image.
        spatial_scale: the feature map's scale of the image (a float).
        pooled_height: the bins along the height.
        pooled_width: the bins along the width.
        batch_roi_nums: ``[N]`` the number of ROIs of each image, instead of their LoD.
        name: unused (Paddle's signature).

    Returns:
        A Variable ``[R, C, pooled_height, pooled_width]``.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 8, 16, 16], dtype="float32")
        >>> rois = fluid.data(name="rois", shape=[None, 4], dtype="float32", lod_level=1)
        >>> pooled = fluid.layers.prroi_pool(x, rois, spatial_scale=0.5, pooled_height=2, pooled_width=2)
    """
    _check_int_float("prroi_pool", spatial_scale=(spatial_scale, float), pooled_height=(pooled_height, int),
                     pooled_width=(pooled_width, int))
    return _pool("prroi_pool", {"X": input, "ROIs": rois, "BatchRoINums": batch_roi_nums},
                 {"spatial_scale": spatial_scale, "pooled_height": pooled_height, "pooled_width": pooled_width},
                 name=name)
