"""Layers that rearrange an image tensor's elements: ``space_to_depth``, ``shuffle_channel``,
``temporal_shift`` and ``unfold`` (im2col); ``fluid.layers.manipulation`` re-exports them."""
from __future__ import annotations

from typing import Sequence

from ..framework.program import Variable
from ._build import check_var, int_list, one_op

__all__ = ["space_to_depth", "shuffle_channel", "temporal_shift", "unfold"]


def space_to_depth(x: Variable, blocksize: int, name: str | None = None) -> Variable:
    """Each ``blocksize`` x ``blocksize`` spatial block of an NCHW ``x`` moved into the channels.

    Args:
        x: a 4-D NCHW tensor whose height and width are multiples of ``blocksize``.
        blocksize: the block's side.
        name: the output's name (generated when None).

    Returns:
        A Variable of shape ``[N, C * blocksize ** 2, H / blocksize, W / blocksize]``.

    Examples:
        >>> img = fluid.data(name="img", shape=[None, 3, 8, 8], dtype="float32")
        >>> fluid.layers.space_to_depth(img, blocksize=2).shape
        (-1, 12, 4, 4)
    """
    check_var(x, "space_to_depth", "x")
    if not isinstance(blocksize, int) or blocksize < 1:
        raise ValueError("space_to_depth: blocksize must be a positive int, got %r" % (blocksize,))
    return one_op("space_to_depth", {"X": x}, {"blocksize": blocksize}, name=name)


def shuffle_channel(x: Variable, group: int, name: str | None = None) -> Variable:
    """The channels of an NCHW ``x`` regrouped across ``group`` groups (ShuffleNet's channel shuffle).

    Args:
        x: a 4-D NCHW tensor.
        group: the number of groups (divides the channels).
        name: the output's name (generated when None).

    Returns:
        A Variable of ``x``'s shape.

    Examples:
        >>> img = fluid.data(name="img", shape=[None, 6, 4, 4], dtype="float32")
        >>> shuffled = fluid.layers.shuffle_channel(img, group=2)
    """
    check_var(x, "shuffle_channel", "x")
    return one_op("shuffle_channel", {"X": x}, {"group": int(group)}, name=name)


def temporal_shift(x: Variable, seg_num: int, shift_ratio: float = 0.25, name: str | None = None) -> Variable:
    """Shift part of the channels one frame back and part one frame forward in time (TSM).

    Args:
        x: a tensor ``[N * seg_num, C, H, W]``: ``seg_num`` frames per clip.
        seg_num: frames per clip.
        shift_ratio: the fraction of channels shifted each way.
        name: the output's name (generated when None).

    Returns:
        A Variable of ``x``'s shape.

    Examples:
        >>> frames = fluid.data(name="frames", shape=[None, 8, 4, 4], dtype="float32")
        >>> shifted = fluid.layers.temporal_shift(frames, seg_num=2)
    """
    check_var(x, "temporal_shift", "x")
    return one_op("temporal_shift", {"X": x}, {"seg_num": int(seg_num), "shift_ratio": float(shift_ratio)}, name=name)


def unfold(x: Variable, kernel_sizes: int | Sequence[int], strides: int | Sequence[int] = 1,
           paddings: int | Sequence[int] = 0, dilations: int | Sequence[int] = 1, name: str | None = None) -> Variable:
    """Sliding blocks of an NCHW ``x`` as columns (im2col).

    Args:
        x: a 4-D NCHW tensor.
        kernel_sizes: the block size, an int or ``[kh, kw]``.
        strides: the step.
        paddings: zeros added around (one, two or four values).
        dilations: the spacing of block elements.
        name: the output's name (generated when None).

    Returns:
        A Variable of shape ``[N, C * kh * kw, L]``, L the number of blocks.

    Examples:
        >>> img = fluid.data(name="img", shape=[None, 3, 8, 8], dtype="float32")
        >>> cols = fluid.layers.unfold(img, kernel_sizes=2, strides=2)
    """
    check_var(x, "unfold", "x")
    pads = int_list(paddings, "unfold", "paddings", None if not isinstance(paddings, int) else 4)
    if len(pads) == 2:
        pads = pads * 2
    if len(pads) != 4:
        raise ValueError("unfold: paddings must have 1, 2 or 4 entries, got %s" % pads)
    attrs = {"kernel_sizes": int_list(kernel_sizes, "unfold", "kernel_sizes", 2),
             "strides": int_list(strides, "unfold", "strides", 2), "paddings": pads,
             "dilations": int_list(dilations, "unfold", "dilations", 2)}
    return one_op("unfold", {"X": x}, attrs, out_slot="Y", name=name)
