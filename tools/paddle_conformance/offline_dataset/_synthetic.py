"""What the dataset modules share: seeded random states, made-up words, Zipf frequencies, class
templates for images, documents whose label is the word set they draw from, and cycling readers.

Every sample comes from a ``numpy.random.RandomState`` seeded by a CRC-32 of names (never Python's
salted ``hash``), so a reader yields the same samples in every call and every process."""
import zlib
from typing import Callable, Iterator, List, Sequence, Tuple

import numpy as np

_SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "be", "di", "fu", "go", "ha", "je", "pu", "zo")


def seeded(*parts: object) -> np.random.RandomState:
    """A random state whose seed is a CRC-32 of ``parts``: the same parts, the same stream."""
    return np.random.RandomState(zlib.crc32("/".join(str(p) for p in parts).encode("utf-8")))


def pseudo_word(index: int) -> str:
    """A pronounceable made-up word, distinct for each ``index`` >= 0 (two syllables at least)."""
    digits = []
    value = index + len(_SYLLABLES)
    while value:
        value, digit = divmod(value, len(_SYLLABLES))
        digits.append(_SYLLABLES[digit])
    return "".join(reversed(digits))


def zipf_probabilities(count: int, exponent: float = 1.0) -> np.ndarray:
    """Probabilities proportional to ``1 / (rank + 1) ** exponent`` over ``count`` ranks."""
    weights = 1.0 / np.arange(1, count + 1, dtype=np.float64) ** exponent
    return weights / weights.sum()


def cycled(make_samples: Callable[[], Iterator], cycle: bool) -> Callable[[], Iterator]:
    """A reader of ``make_samples()``'s samples, over and over again when ``cycle``."""

    def reader() -> Iterator:
        while True:
            for sample in make_samples():
                yield sample
            if not cycle:
                break

    return reader


def chunked_counts(total: int, chunk: int) -> Iterator[int]:
    """Sizes of consecutive chunks of at most ``chunk`` that add up to ``total``."""
    for start in range(0, total, chunk):
        yield min(chunk, total - start)


def coarse_templates(rng: np.random.RandomState, classes: int, channels: int, coarse: int) -> np.ndarray:
    """``classes`` random int16 ``channels x coarse x coarse`` grids of values in 30..225: one
    distinct picture per class once blown up (:func:`blow_up`)."""
    return rng.randint(30, 226, size=(classes, channels, coarse, coarse)).astype(np.int16)


def blow_up(grids: np.ndarray, size: int) -> np.ndarray:
    """Grids (..., coarse, coarse) enlarged to (..., size, size) by repeating each cell as a block."""
    repeat = -(-size // grids.shape[-1])
    blown = grids.repeat(repeat, axis=-2).repeat(repeat, axis=-1)
    return np.ascontiguousarray(blown[..., :size, :size])


def noisy_pixels(rng: np.random.RandomState, templates: np.ndarray, labels: np.ndarray,
                 noise: int) -> np.ndarray:
    """The labels' int16 templates (values in 0..255) as uint8, each with a brightness change in
    [-20, 20] and uniform noise in [-noise, noise] per pixel (integer arithmetic: a 256-pixel
    picture costs a few milliseconds, not ten)."""
    base = templates[labels].astype(np.int16)
    shape = (len(labels),) + (1,) * (base.ndim - 1)
    base += rng.randint(-20, 21, size=shape, dtype=np.int16)
    base += rng.randint(-noise, noise + 1, size=base.shape, dtype=np.int16)
    return np.clip(base, 0, 255).astype(np.uint8)


class PolarCorpus:
    """Documents of made-up words whose label says which of two word sets they draw from.

    Background words follow a Zipf law over ``type_count`` word types (ranks); the ranks in
    ``polar_sets[0]`` and ``polar_sets[1]`` never occur in the background, and a document of label
    ``k`` has 1 or more words of ``polar_sets[k]`` (a ``polar_share`` of its words on average) and
    none of the other set's, so a bag-of-words classifier separates the labels."""

    def __init__(self, type_count: int, polar_sets: Tuple[Sequence[int], Sequence[int]],
                 length_range: Tuple[int, int] = (10, 60), polar_share: float = 0.15) -> None:
        background = zipf_probabilities(type_count)
        for polar in polar_sets:
            background[list(polar)] = 0.0
        self._cumulative = np.cumsum(background / background.sum())
        self.polar_sets = tuple(np.asarray(polar, dtype=np.int64) for polar in polar_sets)
        self.length_range = length_range
        self.polar_share = polar_share

    def document(self, rng: np.random.RandomState, label: int) -> List[int]:
        """The word ranks of one document of ``label`` (0 or 1)."""
        low, high = self.length_range
        length = int(rng.randint(low, high + 1))
        draws = rng.random_sample(length)
        ranks = np.searchsorted(self._cumulative, draws, side="right")
        ranks = np.minimum(ranks, len(self._cumulative) - 1)
        polar_at = rng.random_sample(length) < self.polar_share
        polar_at[rng.randint(length)] = True
        polar = self.polar_sets[label]
        ranks[polar_at] = polar[rng.randint(len(polar), size=int(polar_at.sum()))]
        return ranks.tolist()


def zipf_ranks(rng: np.random.RandomState, cumulative: np.ndarray, count: int) -> np.ndarray:
    """``count`` ranks drawn from the distribution whose cumulative sums are ``cumulative``."""
    ranks = np.searchsorted(cumulative, rng.random_sample(count), side="right")
    return np.minimum(ranks, len(cumulative) - 1)
