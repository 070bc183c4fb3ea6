"""Paddle 1.x's ``paddle.fluid.incubate`` import paths, leading to fluidist's modules."""
from . import data_generator  # noqa: F401
