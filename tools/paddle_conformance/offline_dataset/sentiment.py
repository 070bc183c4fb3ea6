"""Stand-in for ``paddle.dataset.sentiment``: synthetic movie reviews of made-up words, not NLTK's
movie_reviews corpus.

2000 reviews, as Paddle has, a negative then a positive one in turn (file ids ``neg/cv000_...``,
``pos/cv000_...``, ...), of 10..60 words each: background words from a Zipf law over the 39768 word
types (the size of Paddle's dictionary, which its own test checks), plus words of the negative set
(ranks 300..339) in negative reviews or of the positive set (ranks 340..379) in positive ones.
A sample is ``(word ids, label)``: a list of ints (ranks in ``get_word_dict()``) and 0 for a
negative review, 1 for a positive one. ``train()`` yields the first 1600, ``test()`` the other
400; like Paddle's, both return a generator of samples, not a reader creator.
"""
from typing import Iterator, List, Tuple

from . import _synthetic

__all__ = ['train', 'test', 'get_word_dict']

URL = "https://corpora.bj.bcebos.com/movie_reviews%2Fmovie_reviews.zip"
MD5 = '155de2b77c6834dd8eea7cbe88e93acb'

NUM_TRAINING_INSTANCES = 1600
NUM_TOTAL_INSTANCES = 2000
WORD_TYPES = 39768
NEGATIVE_RANKS = tuple(range(300, 340))
POSITIVE_RANKS = tuple(range(340, 380))

_CORPUS = _synthetic.PolarCorpus(WORD_TYPES, (NEGATIVE_RANKS, POSITIVE_RANKS))

Sample = Tuple[List[int], int]


def download_data_if_not_yet() -> None:
    """Nothing to download: the reviews are generated."""


def get_word_dict() -> List[Tuple[str, int]]:
    """``(word, id)`` pairs of all 39768 word types, most frequent first, ids 0, 1, 2, ..."""
    return [(_synthetic.pseudo_word(rank), rank) for rank in range(WORD_TYPES)]


def sort_files() -> List[str]:
    """The review file ids, a negative and a positive one in turn."""
    files = []
    for pair in range(NUM_TOTAL_INSTANCES // 2):
        files.append("neg/cv%03d_%05d.txt" % (pair % 1000, pair))
        files.append("pos/cv%03d_%05d.txt" % (pair % 1000, pair))
    return files


def load_sentiment_data() -> List[Sample]:
    """All 2000 samples ``(word ids, label)``, in ``sort_files()`` order."""
    data_set = []
    rng = _synthetic.seeded("sentiment")
    for sample_file in sort_files():
        category = 0 if 'neg' in sample_file else 1
        data_set.append((_CORPUS.document(rng, category), category))
    return data_set


def reader_creator(data: List[Sample]) -> Iterator[Sample]:
    """A generator of the samples ``(word ids, label)`` of ``data``."""
    for each in data:
        yield each[0], each[1]


def train() -> Iterator[Sample]:
    """A generator of the first 1600 samples (labels 0, 1, 0, 1, ...)."""
    return reader_creator(load_sentiment_data()[0:NUM_TRAINING_INSTANCES])


def test() -> Iterator[Sample]:
    """A generator of the last 400 samples (labels 0, 1, 0, 1, ...)."""
    return reader_creator(load_sentiment_data()[NUM_TRAINING_INSTANCES:])


def fetch() -> None:
    """Nothing to download: the reviews are generated."""
