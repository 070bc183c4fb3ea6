"""Layers that give a tensor a new sequence structure: ``lod_reset``, ``lod_append`` and
``im2sequence`` (Paddle 1.8 keeps them in ``layers/nn.py``; ``sequence_lod`` re-exports them)."""
from __future__ import annotations

from typing import Sequence, Union

from ..framework.program import Variable
from ._build import one_op
from .layer_helper import check_variable

__all__ = ["lod_reset", "lod_append", "im2sequence"]

IntPair = Union[int, Sequence[int]]


def lod_reset(x: Variable, y: Variable | None = None, target_lod: Sequence[int] | None = None) -> Variable:
    """``x``'s rows with a new LoD (one level of offsets).

    The new LoD is ``y``'s LoD when ``y`` has one, else ``y``'s values read as offsets; without
    ``y``, ``target_lod``. The offsets must start at 0 and end at ``x``'s number of rows (checked
    when the program runs).

    Args:
        x: the tensor to regroup; its values are not changed.
        y: a Variable whose LoD (or whose int values, when it has no LoD) becomes the new LoD.
        target_lod: the offsets of the new LoD, used when ``y`` is None.

    Returns:
        A Variable with ``x``'s values and the new LoD.

    Raises:
        ValueError: neither ``y`` nor ``target_lod`` given.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 2], dtype="float32")
        >>> seqs = fluid.layers.lod_reset(x, target_lod=[0, 2, 5])
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> out, = exe.run(feed={"x": np.ones((5, 2), "float32")}, fetch_list=[seqs], return_numpy=False)
        >>> out.lod()
        [[0, 2, 5]]
    """
    check_variable(x, "lod_reset", "x")
    if y is not None:
        check_variable(y, "lod_reset", "y")
        return one_op("lod_reset", {"X": x, "Y": y})
    if target_lod is None:
        raise ValueError("lod_reset: give y or target_lod")
    return one_op("lod_reset", {"X": x}, {"target_lod": [int(v) for v in target_lod]})


def lod_append(x: Variable, level: Sequence[int] | Variable) -> Variable:
    """``x`` with one more LoD level below its own.

    Args:
        x: the tensor; its values are not changed.
        level: the offsets of the new innermost level (a list, or a Variable holding them).

    Returns:
        A Variable with ``x``'s values and ``x``'s LoD plus ``level``.

    Raises:
        ValueError: ``x`` is None or ``level`` is neither a list, a tuple nor a Variable.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 1], dtype="float32", lod_level=1)
        >>> nested = fluid.layers.lod_append(x, [0, 1, 3, 4])
    """
    if x is None:
        raise ValueError("lod_append: x can't be None")
    check_variable(x, "lod_append", "x")
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


def im2sequence(input: Variable, filter_size: IntPair = 1, stride: IntPair = 1, padding: IntPair = 0,
                input_image_size: Variable | None = None, out_stride: IntPair = 1,
                name: str | None = None) -> Variable:
    """Images to sequences of patches: one sequence per image, one row per patch.

    Each row is one ``filter_size`` patch of all channels, flattened (``C * fh * fw`` values); the
    patches are taken every ``stride`` over the padded image, row by row.

    Args:
        input: images ``[N, C, H, W]``.
        filter_size: the patch's height and width (an int for both, or ``[fh, fw]``).
        stride: the step between patches (an int or ``[sh, sw]``).
        padding: zeros around each image: an int, ``[h, w]`` or ``[up, left, down, right]``.
        input_image_size: int ``[N, 2]`` real heights and widths; with it each image gives only the
            patches of its real size divided by ``out_stride``.
        out_stride: the divisor of ``input_image_size`` (an int or a pair).
        name: the output's name (generated when None).

    Returns:
        A LoD Variable ``[patches, C * fh * fw]`` with one sequence per image.

    Raises:
        ValueError: a ``padding`` of 3 or more than 4 values, or a pair argument that is not a pair.

    Examples:
        >>> img = fluid.data(name="img", shape=[None, 3, 8, 8], dtype="float32")
        >>> patches = fluid.layers.im2sequence(img, filter_size=2, stride=2)
        >>> patches.shape
        (-1, 12)
    """
    check_variable(input, "im2sequence", "input")
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
        check_variable(input_image_size, "im2sequence", "input_image_size")
        inputs["Y"] = input_image_size
        attrs["out_stride"] = _pair(out_stride, "out_stride")
    return one_op("im2sequence", inputs, attrs, name=name, lod_level=1)
