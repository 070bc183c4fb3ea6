"""``fluid.reader``: DataLoader and PyReader, and the reader decorators of ``paddle.reader``
(``batch``, ``shuffle``, ``buffered``, ``xmap_readers``, ...), all also reachable as ``fluid.io.*``."""
from .decorator import (ComposeNotAligned, batch, buffered, cache, chain, compose, firstn, map_readers,  # noqa: F401
                        multiprocess_reader, shuffle, xmap_readers)
from .loader import DataLoader, PyReader, default_collate_fn  # noqa: F401

__all__ = ["PyReader", "DataLoader", "default_collate_fn"]
