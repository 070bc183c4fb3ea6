"""The files that ``common.download`` writes instead of fetching them: synthetic stand-ins, in the
formats their callers parse, of the files Paddle's tests download by URL and read themselves (its
distributed tests' data, the book tests' CIFAR-10 archive, the download test's flowers labels, the
async-executor demo's data). ``_dist_files`` and ``_archive_files`` say what each holds.

They are not Paddle's files: their MD5s are not the ones Paddle's callers pass to ``download``.
Each file's bytes are the same in every process (fixed seeds, no time stamps in the archives), so
any process may write it and every process reads the same data.
"""
import functools
from typing import Callable, Dict

from . import _archive_files, _dist_files

__all__ = ['SYNTHETIC_FILES', 'is_synthetic', 'payload']

SYNTHETIC_FILES: Dict[str, Callable[[], bytes]] = dict(_dist_files.FILES, **_archive_files.FILES)


def is_synthetic(url: str) -> bool:
    """Whether ``download`` writes a synthetic stand-in for ``url``."""
    return url in SYNTHETIC_FILES


@functools.lru_cache(maxsize=None)
def _made(maker: Callable[[], bytes]) -> bytes:
    return maker()


def payload(url: str) -> bytes:
    """The bytes of ``url``'s synthetic stand-in (made once per process, also where two URLs name
    the same file); KeyError for another URL."""
    return _made(SYNTHETIC_FILES[url])
