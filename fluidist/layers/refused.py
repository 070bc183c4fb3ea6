"""Layers of Paddle 1.8's ``fluid.layers`` that fluidist does not provide: each raises
NotImplementedError naming itself and what to use instead (``fluidist.compat.refused``)."""
from ..compat import refused

_DETECTION = "detection and region ops are outside fluidist (Paddle's detection API is not provided)"

deformable_roi_pooling = refused("fluid.layers.deformable_roi_pooling",
                                 _DETECTION + "; crop regions in the data pipeline and feed them")

__all__ = ["deformable_roi_pooling"]
