"""Stand-in for ``paddle.dataset.imikolov``: sentences of made-up words from a small fixed grammar,
not the Penn Treebank.

The language has 10000 word types (``bytes``, as Paddle reads the tar). A sentence has 6..20 words:
the first is drawn from a Zipf law over the types; each next one is, with probability 0.6, the
previous word's fixed successor (one of the 100 most frequent types), otherwise a new Zipf draw,
so the previous words say much about the next one. ``ptb.train.txt`` has 3000 sentences,
``ptb.valid.txt`` and ``ptb.test.txt`` 300 (Paddle: 42068 and 3370).

``build_dict(min_word_freq=50)`` keeps the words whose count in the nominal full-size corpus
(count ``105621 // (rank + 1)``; ``'<s>'`` and ``'<e>'`` one per sentence of 45000) exceeds
``min_word_freq``, by falling count, then ``'<unk>'`` (``str`` keys for the marks): 2074 ids with
the default, Paddle's is of the same order. Samples are Paddle's: an n-gram tuple of ids over
``['<s>'] + words + ['<e>']`` (``DataType.NGRAM``), or ``(src, trg)`` id lists ``[<s>] + words``
and ``words + [<e>]`` (``DataType.SEQ``, sentences longer than ``n`` left out when ``n > 0``).
"""
import collections
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Union

import numpy as np

from . import _synthetic

__all__ = ['train', 'test', 'build_dict']

URL = 'https://dataset.bj.bcebos.com/imikolov%2Fsimple-examples.tgz'
MD5 = '30177ea32e27c525793142b6bf2c8e2d'

TRAIN_FILE = './simple-examples/data/ptb.train.txt'
VALID_FILE = './simple-examples/data/ptb.valid.txt'
TEST_FILE = './simple-examples/data/ptb.test.txt'
SENTENCES = {TRAIN_FILE: 3000, VALID_FILE: 300, TEST_FILE: 300}

TYPE_COUNT = 10000
NOMINAL_TOP_COUNT = 105621
NOMINAL_SENTENCES = 45000
LENGTH_RANGE = (6, 20)
FOLLOW = 0.6
SUCCESSOR_RANKS = 100

WordIdx = Dict[Union[bytes, str], int]


class DataType(object):
    NGRAM = 1
    SEQ = 2


_WORDS = [_synthetic.pseudo_word(rank).encode("ascii") for rank in range(TYPE_COUNT)]
_CUMULATIVE = np.cumsum(_synthetic.zipf_probabilities(TYPE_COUNT))
_SUCCESSOR = _synthetic.seeded("imikolov", "successor").randint(0, SUCCESSOR_RANKS, size=TYPE_COUNT)


def _nominal_counts() -> Dict[Union[bytes, str], int]:
    counts: Dict[Union[bytes, str], int] = {w: NOMINAL_TOP_COUNT // (r + 1) for r, w in enumerate(_WORDS)}
    counts['<s>'] = NOMINAL_SENTENCES
    counts['<e>'] = NOMINAL_SENTENCES
    return counts


def word_count(f: Iterable[bytes], word_freq: Optional[Dict] = None) -> Dict:
    """Add the counts of the words of the lines ``f`` (and a ``'<s>'`` and an ``'<e>'`` per line)
    to ``word_freq`` (a new counter when None) and return it."""
    if word_freq is None:
        word_freq = collections.defaultdict(int)
    for line in f:
        for w in line.strip().split():
            word_freq[w] += 1
        word_freq['<s>'] += 1
        word_freq['<e>'] += 1
    return word_freq


def _sort_key(item: tuple) -> tuple:
    word = item[0]
    return (-item[1], word.encode("ascii") if isinstance(word, str) else word)


def build_dict(min_word_freq: int = 50) -> WordIdx:
    """Words whose nominal count exceeds ``min_word_freq``, by falling count (ties by the word),
    numbered from 0; then ``'<unk>'``."""
    kept = sorted((x for x in _nominal_counts().items() if x[1] > min_word_freq), key=_sort_key)
    word_idx: WordIdx = {word: index for index, (word, _) in enumerate(kept)}
    word_idx['<unk>'] = len(kept)
    return word_idx


def _sentences(filename: str) -> Iterator[List[bytes]]:
    """The sentences (lists of words) of the synthetic ``filename``."""
    if filename not in SENTENCES:
        raise KeyError("imikolov has no file %r (files: %s)" % (filename, ", ".join(sorted(SENTENCES))))
    rng = _synthetic.seeded("imikolov", filename)
    for _ in range(SENTENCES[filename]):
        length = int(rng.randint(LENGTH_RANGE[0], LENGTH_RANGE[1] + 1))
        fresh = _synthetic.zipf_ranks(rng, _CUMULATIVE, length)
        follow = rng.random_sample(length) < FOLLOW
        ranks = [int(fresh[0])]
        for i in range(1, length):
            ranks.append(int(_SUCCESSOR[ranks[-1]]) if follow[i] else int(fresh[i]))
        yield [_WORDS[r] for r in ranks]


def reader_creator(filename: str, word_idx: WordIdx, n: int, data_type: int) -> Callable[[], Iterator]:
    """A reader of n-grams (``DataType.NGRAM``) or ``(src, trg)`` sequences (``DataType.SEQ``) of
    the sentences of ``filename``, words numbered by ``word_idx`` (``'<unk>'`` when absent)."""

    def reader() -> Iterator:
        unk = word_idx['<unk>']
        for words in _sentences(filename):
            if data_type == DataType.NGRAM:
                assert n > -1, 'Invalid gram length'
                marked: List[Union[bytes, str]] = ['<s>', *words, '<e>']
                if len(marked) >= n:
                    ids = [word_idx.get(w, unk) for w in marked]
                    for i in range(n, len(ids) + 1):
                        yield tuple(ids[i - n:i])
            elif data_type == DataType.SEQ:
                ids = [word_idx.get(w, unk) for w in words]
                src_seq = [word_idx['<s>']] + ids
                trg_seq = ids + [word_idx['<e>']]
                if n > 0 and len(src_seq) > n:
                    continue
                yield src_seq, trg_seq
            else:
                assert False, 'Unknow data type'

    return reader


def train(word_idx: WordIdx, n: int, data_type: int = DataType.NGRAM) -> Callable[[], Iterator]:
    """The training reader creator: n-gram tuples of ``n`` ids, or ``(src, trg)`` id lists of at
    most ``n`` ids (any length when ``n`` <= 0) for ``DataType.SEQ``."""
    return reader_creator(TRAIN_FILE, word_idx, n, data_type)


def test(word_idx: WordIdx, n: int, data_type: int = DataType.NGRAM) -> Callable[[], Iterator]:
    """The test reader creator (Paddle's reads ptb.valid.txt): as ``train``."""
    return reader_creator(VALID_FILE, word_idx, n, data_type)


def fetch() -> None:
    """Nothing to download: the sentences are generated."""
