"""``fluid.reader``: DataLoader and PyReader, and the reader decorators of ``paddle.reader``
(``batch``, ``shuffle``, ``buffered``, ``xmap_readers``, ...), all also reachable as ``fluid.io.*``."""
from .decorator import (ComposeNotAligned, batch, buffered, cache, chain, compose, firstn, map_readers,  # noqa: F401
                        multiprocess_reader, shuffle, xmap_readers)
from .loader import DataLoader, PyReader, default_collate_fn  # noqa: F401

__all__ = ["PyReader", "DataLoader", "default_collate_fn"]
from .dataset_loader import DatasetLoader  # noqa: F401,E402
from .base import DataLoaderBase  # noqa: F401,E402
from .loader import GeneratorLoader  # noqa: F401,E402
from ..compat import refused_class as _refused_class  # noqa: E402

DygraphGeneratorLoader = _refused_class("fluid.reader.DygraphGeneratorLoader",
                                        "fluidist has no dygraph mode; use fluid.io.DataLoader.from_generator "
                                        "with feed_list for a static program")
_keep_order = {"value": True}


def keep_data_loader_order(*args):
    """Paddle's switch for keeping multi-device batches in order; fluidist's loaders always keep it.
    With no argument it returns the setting."""
    if not args:
        return _keep_order["value"]
    _keep_order["value"] = bool(args[0])
