"""``fluid.layers.device``: Paddle 1.8 deprecated its one layer, ``get_places`` (``__all__`` is empty)."""
from ..compat import refused

__all__ = []

get_places = refused("fluid.layers.get_places",
                     "deprecated in Paddle 1.8; use fluid.cpu_places(n) or fluid.cuda_places() and "
                     "CompiledProgram(...).with_data_parallel(places=...)")
