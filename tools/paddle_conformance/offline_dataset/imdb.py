"""Stand-in for ``paddle.dataset.imdb``: synthetic reviews of made-up words, not IMDB's.

The corpus has Paddle's layout: documents named ``aclImdb/{train,test}/{pos,neg}/<id>_<rating>.txt``
whose words are ``bytes`` (Paddle tokenizes the tar's bytes), 1000 positive and 1000 negative
training reviews and 500 of each for testing (Paddle: 12500 of each in both). A review has 10..60
words: background words from a Zipf law over 8000 word types, plus words of the positive set
(ranks 200..239) in positive reviews or of the negative set (ranks 240..279) in negative ones,
never both, so the words say the label.

A sample is ``(word ids, label)``: a list of ints (``word_idx[w]``, ``word_idx['<unk>']`` for a
word not in it) and an int label, 0 for a positive review and 1 for a negative one, as Paddle's;
the positive reviews come first. ``word_dict()`` is the 5147 most frequent word types by rank,
then ``'<unk>'`` (a ``str`` key, as Paddle's): 5148 entries, Paddle's is of the same order.
``build_dict(pattern, cutoff)`` counts the words of the documents whose name matches ``pattern``.
"""
import collections
import re
from typing import Callable, Dict, Iterator, List, Pattern, Tuple, Union

from . import _synthetic

__all__ = ['build_dict', 'train', 'test']

URL = 'https://dataset.bj.bcebos.com/imdb%2FaclImdb_v1.tar.gz'
MD5 = '7c2ac02c03563afcf9b574c7e56c153a'

TYPE_COUNT = 8000
DICT_WORDS = 5147
POSITIVE_RANKS = tuple(range(200, 240))
NEGATIVE_RANKS = tuple(range(240, 280))
SET_SIZES = {"train": 1000, "test": 500}  # reviews of each polarity

WordIdx = Dict[Union[bytes, str], int]
_CORPUS = _synthetic.PolarCorpus(TYPE_COUNT, (POSITIVE_RANKS, NEGATIVE_RANKS))


def _word(rank: int) -> bytes:
    return _synthetic.pseudo_word(rank).encode("ascii")


_WORDS = [_word(rank) for rank in range(TYPE_COUNT)]


def _documents() -> Iterator[Tuple[str, List[bytes]]]:
    """(name, words) of every review: train pos, train neg, test pos, test neg."""
    for split_name in ("train", "test"):
        for polarity, label in (("pos", 0), ("neg", 1)):
            rng = _synthetic.seeded("imdb", split_name, polarity)
            for doc_id in range(SET_SIZES[split_name]):
                ranks = _CORPUS.document(rng, label)
                rating = 7 + doc_id % 4 if label == 0 else 1 + doc_id % 4
                name = "aclImdb/%s/%s/%d_%d.txt" % (split_name, polarity, doc_id, rating)
                yield name, [_WORDS[r] for r in ranks]


def tokenize(pattern: Pattern) -> Iterator[List[bytes]]:
    """The words of each document whose name ``pattern.match``es, in corpus order."""
    for name, words in _documents():
        if pattern.match(name):
            yield words


def build_dict(pattern: Pattern, cutoff: int) -> WordIdx:
    """The words occurring more than ``cutoff`` times in the documents matching ``pattern``, by
    falling count (ties by the word), numbered from 0; then ``'<unk>'``."""
    word_freq: Dict[bytes, int] = collections.defaultdict(int)
    for doc in tokenize(pattern):
        for word in doc:
            word_freq[word] += 1
    kept = sorted((x for x in word_freq.items() if x[1] > cutoff), key=lambda x: (-x[1], x[0]))
    word_idx: WordIdx = {word: index for index, (word, _) in enumerate(kept)}
    word_idx['<unk>'] = len(kept)
    return word_idx


def reader_creator(pos_pattern: Pattern, neg_pattern: Pattern,
                   word_idx: WordIdx) -> Callable[[], Iterator[Tuple[List[int], int]]]:
    """A reader of ``(word ids, 0)`` for the documents matching ``pos_pattern``, then ``(word ids,
    1)`` for those matching ``neg_pattern``."""
    unk = word_idx['<unk>']

    def reader() -> Iterator[Tuple[List[int], int]]:
        for pattern, label in ((pos_pattern, 0), (neg_pattern, 1)):
            for doc in tokenize(pattern):
                yield [word_idx.get(w, unk) for w in doc], label

    return reader


def train(word_idx: WordIdx) -> Callable[[], Iterator[Tuple[List[int], int]]]:
    """The training reader creator: ``(list of word ids, int label)``, label 0 positive, 1 negative."""
    return reader_creator(re.compile(r"aclImdb/train/pos/.*\.txt$"),
                          re.compile(r"aclImdb/train/neg/.*\.txt$"), word_idx)


def test(word_idx: WordIdx) -> Callable[[], Iterator[Tuple[List[int], int]]]:
    """The test reader creator: ``(list of word ids, int label)``, label 0 positive, 1 negative."""
    return reader_creator(re.compile(r"aclImdb/test/pos/.*\.txt$"),
                          re.compile(r"aclImdb/test/neg/.*\.txt$"), word_idx)


def word_dict() -> WordIdx:
    """The 5147 most frequent word types (``bytes``), numbered by rank, then ``'<unk>'``: 5148 ids."""
    word_idx: WordIdx = {word: rank for rank, word in enumerate(_WORDS[:DICT_WORDS])}
    word_idx['<unk>'] = DICT_WORDS
    return word_idx


def fetch() -> None:
    """Nothing to download: the samples are generated."""
