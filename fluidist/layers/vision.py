"""Spatial sampling layers: ``affine_grid`` and ``grid_sampler`` (spatial transformer networks)."""
from __future__ import annotations

from typing import Sequence

from ..framework.program import Variable
from ._build import check_var, int_list, one_op

__all__ = ["affine_grid", "grid_sampler"]


def affine_grid(theta: Variable, out_shape: Sequence[int] | Variable, name: str | None = None) -> Variable:
    """The sampling grid of affine transforms (the first half of a spatial transformer).

    Point ``(h, w)`` of the output, in normalised coordinates ``[-1, 1]``, maps to
    ``theta @ [x, y, 1]``.

    Args:
        theta: the transforms ``[N, 2, 3]``.
        out_shape: the output's ``[N, C, H, W]`` (a list, or an int ``[4]`` Variable).
        name: the output's name (generated when None).

    Returns:
        A Variable ``[N, H, W, 2]`` of ``(x, y)`` points in ``[-1, 1]``.

    Examples:
        >>> theta = fluid.layers.assign(np.array([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]], "float32"))
        >>> grid = fluid.layers.affine_grid(theta, out_shape=[1, 1, 2, 2])
        >>> fluid.Executor(fluid.CPUPlace()).run(fetch_list=[grid])[0][0].tolist()
        [[[-1.0, -1.0], [1.0, -1.0]], [[-1.0, 1.0], [1.0, 1.0]]]
    """
    check_var(theta, "affine_grid", "theta")
    if isinstance(out_shape, Variable):
        return one_op("affine_grid", {"Theta": theta, "OutputShape": out_shape}, out_slot="Output", name=name)
    return one_op("affine_grid", {"Theta": theta},
                  {"output_shape": int_list(list(out_shape), "affine_grid", "out_shape", 4)}, out_slot="Output",
                  name=name)


def grid_sampler(x: Variable, grid: Variable, name: str | None = None) -> Variable:
    """Images sampled bilinearly at the points of a grid (the second half of a spatial transformer).

    Args:
        x: images ``[N, C, H_in, W_in]``.
        grid: ``[N, H, W, 2]`` points ``(x, y)`` in ``[-1, 1]`` (-1: the first pixel's centre,
            1: the last one's); points outside read zeros.
        name: the output's name (generated when None).

    Returns:
        A Variable ``[N, C, H, W]``.

    Examples:
        >>> img = fluid.data(name="img", shape=[None, 3, 8, 8], dtype="float32")
        >>> theta = fluid.layers.fc(fluid.layers.flatten(img), size=6)
        >>> grid = fluid.layers.affine_grid(fluid.layers.reshape(theta, [-1, 2, 3]), out_shape=[1, 3, 4, 4])
        >>> fluid.layers.grid_sampler(img, grid).shape
        (-1, 3, 4, 4)
    """
    check_var(x, "grid_sampler", "x")
    check_var(grid, "grid_sampler", "grid")
    return one_op("grid_sampler", {"X": x, "Grid": grid}, out_slot="Output", name=name)
