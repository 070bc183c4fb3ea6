"""Offline stand-ins for ``paddle.dataset``: the conformance runner installs this package as
``paddle.dataset`` in its scratch folder, so Paddle's unit tests and book tests that read datasets
run without a network.

These are synthetic stand-ins of the same shapes, not Paddle's data, and numbers trained on them
are not Paddle's. Each module keeps the public API of Paddle 1.7/1.8's ``paddle/dataset/<name>.py``
(functions, arguments and defaults, sample layout, dtypes, value ranges, dictionary sizes and
special tokens) and yields deterministic samples from seeded ``numpy.random.RandomState``s (whose
streams NumPy keeps fixed: the same samples under NumPy 1.x and 2.x, in every process), made
lazily when a reader is iterated and learnable by the small models of Paddle's tests (class
templates plus noise, prices linear in the features, labels said by word sets, a small grammar,
targets that are fixed functions of the sources). Sets are smaller than Paddle's (a few thousand
samples at most, flowers a few hundred); each module's docstring says how its samples are made.

Nothing is downloaded: ``common.download`` returns a file already in ``common.DATA_HOME`` with the
right MD5; for the files that Paddle's tests download by URL and parse themselves (listed in
``downloads``: the distributed tests' CTR, simnet, text classification and transformer data, the
book tests' CIFAR-10 archive, flowers' label files, the async-executor demo's data) it writes a
synthetic stand-in in the caller's format (not Paddle's file: its MD5 differs) and returns its
path; for any other URL it raises ``common.NoNetworkError`` ("no network in the conformance runner:
<url>"). Nothing is written to disk but there and where the API returns a path
(``conll05.get_embedding``), always under ``DATA_HOME``, a scratch folder. Only NumPy is needed.
"""
from . import common
from . import mnist
from . import imikolov
from . import imdb
from . import cifar
from . import movielens
from . import conll05
from . import uci_housing
from . import sentiment
from . import wmt14
from . import wmt16
from . import flowers

__all__ = [
    'mnist',
    'imikolov',
    'imdb',
    'cifar',
    'movielens',
    'conll05',
    'uci_housing',
    'sentiment',
    'wmt14',
    'wmt16',
    'flowers',
]
