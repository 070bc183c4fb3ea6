"""Stand-in for ``paddle.dataset.mnist``: synthetic digits, not MNIST.

Each sample is ``(image, label)`` as Paddle's: a float32 vector of 784 pixels (28 x 28, row-major)
in [-1, 1] (bytes scaled by ``/ 255 * 2 - 1``, background -1) and an ``int`` label in 0..9. An
image is the label's seven-segment glyph, shifted by up to 2 pixels either way, with its ink's
strength varied and noise added. 5000 training and 1000 test samples (Paddle: 60000 and 10000).
"""
from typing import Callable, Iterator, Tuple

import numpy as np

from . import _synthetic

__all__ = ['train', 'test']

URL_PREFIX = 'https://dataset.bj.bcebos.com/mnist/'
TRAIN_IMAGE_URL = URL_PREFIX + 'train-images-idx3-ubyte.gz'
TRAIN_LABEL_URL = URL_PREFIX + 'train-labels-idx1-ubyte.gz'
TEST_IMAGE_URL = URL_PREFIX + 't10k-images-idx3-ubyte.gz'
TEST_LABEL_URL = URL_PREFIX + 't10k-labels-idx1-ubyte.gz'

TRAIN_SIZE = 5000
TEST_SIZE = 1000
SIDE = 28
CHUNK = 100  # samples made at once (Paddle reads its files 100 samples at a time too)

# (row_start, row_stop, col_start, col_stop) of the seven segments a..g of a glyph
_SEGMENTS = {
    "a": (4, 7, 9, 20), "b": (5, 15, 17, 20), "c": (13, 24, 17, 20), "d": (21, 24, 9, 20),
    "e": (13, 24, 8, 11), "f": (5, 15, 8, 11), "g": (12, 15, 9, 20),
}
_DIGIT_SEGMENTS = ("abcdef", "bc", "abged", "abgcd", "fgbc", "afgcd", "afgedc", "abc", "abcdefg", "abcdfg")


def _glyphs() -> np.ndarray:
    """The ten 28 x 28 seven-segment glyphs, ink 1.0 on 0.0."""
    glyphs = np.zeros((10, SIDE, SIDE), dtype=np.float64)
    for digit, segments in enumerate(_DIGIT_SEGMENTS):
        for name in segments:
            r0, r1, c0, c1 = _SEGMENTS[name]
            glyphs[digit, r0:r1, c0:c1] = 1.0
    return glyphs


_GLYPHS = _glyphs()


def _images(rng: np.random.RandomState, labels: np.ndarray) -> np.ndarray:
    """uint8 images (n, 784) of ``labels``: shifted glyphs with varied ink and noise."""
    pictures = np.empty((len(labels), SIDE, SIDE), dtype=np.float64)
    shifts = rng.randint(-2, 3, size=(len(labels), 2))
    for i, label in enumerate(labels):
        pictures[i] = np.roll(_GLYPHS[label], (int(shifts[i, 0]), int(shifts[i, 1])), axis=(0, 1))
    ink = rng.uniform(160.0, 255.0, size=(len(labels), 1, 1))
    pixels = pictures * ink + rng.normal(0.0, 30.0, size=pictures.shape)
    return np.clip(np.rint(pixels), 0, 255).astype(np.uint8).reshape(len(labels), SIDE * SIDE)


def _samples(split_name: str, size: int) -> Iterator[Tuple[np.ndarray, int]]:
    rng = _synthetic.seeded("mnist", split_name)
    for count in _synthetic.chunked_counts(size, CHUNK):
        labels = rng.randint(0, 10, size=count)
        images = _images(rng, labels).astype(np.float32) / 255.0 * 2.0 - 1.0
        for i in range(count):
            yield images[i, :], int(labels[i])


def train() -> Callable[[], Iterator[Tuple[np.ndarray, int]]]:
    """The training reader creator: samples ``(float32[784] in [-1, 1], int label in 0..9)``."""
    return lambda: _samples("train", TRAIN_SIZE)


def test() -> Callable[[], Iterator[Tuple[np.ndarray, int]]]:
    """The test reader creator: samples ``(float32[784] in [-1, 1], int label in 0..9)``."""
    return lambda: _samples("test", TEST_SIZE)


def fetch() -> None:
    """Nothing to download: the samples are generated."""
