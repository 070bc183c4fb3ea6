"""Spatial sampling layers: ``affine_grid`` and ``grid_sampler`` (spatial transformer networks)."""
from ..framework.program import Variable
from ._build import check_var, int_list, one_op

__all__ = ["affine_grid", "grid_sampler"]


def affine_grid(theta, out_shape, name=None):
    """The [N, H, W, 2] sampling grid of the affine transforms ``theta`` ([N, 2, 3]) for an output of
    ``out_shape`` [N, C, H, W] (a list, or an int Variable)."""
    check_var(theta, "affine_grid", "theta")
    if isinstance(out_shape, Variable):
        return one_op("affine_grid", {"Theta": theta, "OutputShape": out_shape}, out_slot="Output", name=name)
    return one_op("affine_grid", {"Theta": theta},
                  {"output_shape": int_list(list(out_shape), "affine_grid", "out_shape", 4)}, out_slot="Output",
                  name=name)


def grid_sampler(x, grid, name=None):
    """``x`` (NCHW) sampled bilinearly at the points of ``grid`` ([N, H, W, 2] in [-1, 1])."""
    check_var(x, "grid_sampler", "x")
    check_var(grid, "grid_sampler", "grid")
    return one_op("grid_sampler", {"X": x, "Grid": grid}, out_slot="Output", name=name)
