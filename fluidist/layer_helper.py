"""``fluid.layer_helper``: the helper layers use to make parameters, variables and ops (custom layers
in scripts subclass or call it)."""
from .layers.layer_helper import LayerHelper  # noqa: F401

__all__ = []
