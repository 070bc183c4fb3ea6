"""Stand-in for ``paddle.dataset.wmt14``: synthetic sentence pairs of made-up words, not WMT14's.

Both dictionaries hold Paddle's 30000 entries, ``<s>``, ``<e>``, ``<unk>`` (ids 0, 1, 2) and then
made-up words by falling frequency; ``dict_size`` keeps the first ``dict_size`` of them, as Paddle
keeps the first lines of its dictionary files. A source sentence has 3..30 words drawn from a Zipf
law over the 29997 source words; its target is a fixed function of it: the same number of words,
source word of rank ``r`` turned into target word of rank ``r``, in the same order.

A sample is Paddle's ``(src_ids, trg_ids, trg_ids_next)``: ``[0] + source ids + [1]``,
``[0] + target ids`` and ``target ids + [1]``, a word outside the dictionary as id 2.
2000 training, 200 test and 100 ``gen`` samples (Paddle's shrunk set is larger).
"""
import functools
from typing import Callable, Dict, Iterator, List, Tuple

import numpy as np

from . import _synthetic

__all__ = ['train', 'test', 'get_dict']

URL_DEV_TEST = ('http://www-lium.univ-lemans.fr/~schwenk/'
                'cslm_joint_paper/data/dev+test.tgz')
URL_TRAIN = 'http://paddlemodels.bj.bcebos.com/wmt/wmt14.tgz'
MD5_TRAIN = '0791583d57d5beb693b9414c5b36798c'
URL_MODEL = 'http://paddlemodels.bj.bcebos.com/wmt%2Fwmt14.tgz'
MD5_MODEL = '0cb4a5366189b6acba876491c8724fa3'

START = "<s>"
END = "<e>"
UNK = "<unk>"
UNK_IDX = 2

DICT_ENTRIES = 30000
WORD_COUNT = DICT_ENTRIES - 3
LENGTH_RANGE = (3, 30)
SET_SIZES = {"train": 2000, "test": 200, "gen": 100}

Sample = Tuple[List[int], List[int], List[int]]
_CUMULATIVE = np.cumsum(_synthetic.zipf_probabilities(WORD_COUNT))


@functools.lru_cache(maxsize=None)
def _words(language: str) -> List[str]:
    """The made-up words of ``language`` ('s' source, 't' target) by rank (cached: do not modify)."""
    return [language + _synthetic.pseudo_word(rank) for rank in range(WORD_COUNT)]


def _to_dict(words: List[str], size: int) -> Dict[str, int]:
    entries = [START, END, UNK] + words
    return {word: index for index, word in enumerate(entries[:max(size, 0)])}


def _dicts(dict_size: int) -> Tuple[Dict[str, int], Dict[str, int]]:
    return _to_dict(_words("s"), dict_size), _to_dict(_words("t"), dict_size)


def _pairs(split_name: str) -> Iterator[Tuple[List[str], List[str]]]:
    """(source words, target words) of the set ``split_name``."""
    source_words, target_words = _words("s"), _words("t")
    rng = _synthetic.seeded("wmt14", split_name)
    for _ in range(SET_SIZES[split_name]):
        length = int(rng.randint(LENGTH_RANGE[0], LENGTH_RANGE[1] + 1))
        ranks = _synthetic.zipf_ranks(rng, _CUMULATIVE, length)
        yield [source_words[r] for r in ranks], [target_words[r] for r in ranks]


def reader_creator(split_name: str, dict_size: int) -> Callable[[], Iterator[Sample]]:
    """A reader of the samples of ``split_name`` ('train', 'test' or 'gen') with dictionaries of
    ``dict_size`` entries."""

    def reader() -> Iterator[Sample]:
        src_dict, trg_dict = _dicts(dict_size)
        for src_words, trg_words in _pairs(split_name):
            src_ids = [src_dict.get(w, UNK_IDX) for w in [START] + src_words + [END]]
            trg_ids = [trg_dict.get(w, UNK_IDX) for w in trg_words]
            if len(src_ids) > 80 or len(trg_ids) > 80:
                continue
            yield src_ids, [trg_dict[START]] + trg_ids, trg_ids + [trg_dict[END]]

    return reader


def train(dict_size: int) -> Callable[[], Iterator[Sample]]:
    """The training reader creator: ``(src_ids, trg_ids, trg_ids_next)`` lists of ints."""
    return reader_creator("train", dict_size)


def test(dict_size: int) -> Callable[[], Iterator[Sample]]:
    """The test reader creator: ``(src_ids, trg_ids, trg_ids_next)`` lists of ints."""
    return reader_creator("test", dict_size)


def gen(dict_size: int) -> Callable[[], Iterator[Sample]]:
    """The generation reader creator: ``(src_ids, trg_ids, trg_ids_next)`` lists of ints."""
    return reader_creator("gen", dict_size)


def get_dict(dict_size: int, reverse: bool = True) -> Tuple[dict, dict]:
    """The source and target dictionaries of ``dict_size`` entries: ``{id: word}`` when
    ``reverse`` (the default), ``{word: id}`` otherwise."""
    src_dict, trg_dict = _dicts(dict_size)
    if reverse:
        return {v: k for k, v in src_dict.items()}, {v: k for k, v in trg_dict.items()}
    return src_dict, trg_dict


def fetch() -> None:
    """Nothing to download: the samples are generated."""
