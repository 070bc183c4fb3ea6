"""``fluidist.layers``: what users call to build graphs."""
from .io import data, layers_data  # noqa: F401
from .nn import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .layer_helper import LayerHelper  # noqa: F401

from . import io as _io

data = _io.layers_data
