"""Stand-in for ``paddle.dataset.cifar``: synthetic 32 x 32 colour pictures, not CIFAR.

Each sample is ``(image, label)`` as Paddle's: a float32 vector of 3072 values in [0, 1] (bytes
``/ 255``, channel-major: the 1024 red, then green, then blue pixels of a 32 x 32 picture) and an
``int`` label, 0..9 for CIFAR-10 and 0..99 for CIFAR-100. A picture is its class's template (a
coarse grid of random colours, one per class) with a brightness change and noise.
2000 training and 500 test samples for each (Paddle: 50000 and 10000).
"""
from typing import Callable, Iterator, Tuple

import numpy as np

from . import _synthetic

__all__ = ['train100', 'test100', 'train10', 'test10']

URL_PREFIX = 'https://dataset.bj.bcebos.com/cifar/'
CIFAR10_URL = URL_PREFIX + 'cifar-10-python.tar.gz'
CIFAR10_MD5 = 'c58f30108f718f92721af3b95e74349a'
CIFAR100_URL = URL_PREFIX + 'cifar-100-python.tar.gz'
CIFAR100_MD5 = 'eb9058c3a382ffc7106e4002c42a8d85'

TRAIN_SIZE = 2000
TEST_SIZE = 500
CHUNK = 100
NOISE = 64

Reader = Callable[[], Iterator[Tuple[np.ndarray, int]]]


def _templates(classes: int) -> np.ndarray:
    grids = _synthetic.coarse_templates(_synthetic.seeded("cifar", classes, "templates"), classes,
                                        channels=3, coarse=4)
    return _synthetic.blow_up(grids, 32)


def pixel_chunks(classes: int, split_name: str) -> Iterator[Tuple[np.ndarray, np.ndarray]]:
    """The ``split_name`` ('train' or 'test') set of the ``classes``-class set as it would be stored:
    chunks of (uint8 pixels [count, 3072], int labels [count]), CHUNK samples at most each."""
    size = TRAIN_SIZE if split_name == "train" else TEST_SIZE
    templates = _templates(classes)
    rng = _synthetic.seeded("cifar", classes, split_name)
    for count in _synthetic.chunked_counts(size, CHUNK):
        labels = rng.randint(0, classes, size=count)
        yield _synthetic.noisy_pixels(rng, templates, labels, NOISE).reshape(count, 3072), labels


def _samples(classes: int, split_name: str) -> Iterator[Tuple[np.ndarray, int]]:
    for pixels, labels in pixel_chunks(classes, split_name):
        for i in range(len(labels)):
            yield (pixels[i] / 255.0).astype(np.float32), int(labels[i])


def reader_creator(classes: int, split_name: str, cycle: bool = False) -> Reader:
    """A reader of the ``split_name`` ('train' or 'test') samples of the ``classes``-class set,
    over and over again when ``cycle``."""
    return _synthetic.cycled(lambda: _samples(classes, split_name), cycle)


def train100() -> Reader:
    """CIFAR-100 training reader creator: ``(float32[3072] in [0, 1], int label in 0..99)``."""
    return reader_creator(100, "train")


def test100() -> Reader:
    """CIFAR-100 test reader creator: ``(float32[3072] in [0, 1], int label in 0..99)``."""
    return reader_creator(100, "test")


def train10(cycle: bool = False) -> Reader:
    """CIFAR-10 training reader creator: ``(float32[3072] in [0, 1], int label in 0..9)``;
    ``cycle`` repeats the samples without end."""
    return reader_creator(10, "train", cycle=cycle)


def test10(cycle: bool = False) -> Reader:
    """CIFAR-10 test reader creator: ``(float32[3072] in [0, 1], int label in 0..9)``;
    ``cycle`` repeats the samples without end."""
    return reader_creator(10, "test", cycle=cycle)


def fetch() -> None:
    """Nothing to download: the samples are generated."""
