"""``fluid.layer_helper_base``: Paddle split its layer helper in two classes; fluidist has one,
``LayerHelper``, which is also ``LayerHelperBase`` here."""
from .layers.layer_helper import LayerHelper as LayerHelperBase  # noqa: F401

__all__ = []
