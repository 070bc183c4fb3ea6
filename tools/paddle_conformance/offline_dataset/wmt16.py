"""Stand-in for ``paddle.dataset.wmt16``: synthetic English-German pairs of made-up words, not
Multi30K.

Each language's dictionary is ``<s>``, ``<e>``, ``<unk>`` (ids 0, 1, 2, in both languages, as
Paddle's) and then its made-up words by falling frequency, Paddle's 11250 entries for English and
19220 for German at most; a dictionary of ``dict_size`` keeps the first ``dict_size`` entries. A
pair is a sentence of 3..20 "meanings" drawn from a Zipf law, each said by the English word and
the German word of its rank, so the target is a fixed function of the source either way round.

A sample is Paddle's ``(src_ids, trg_ids, trg_ids_next)``: ``[0] + source ids + [1]``,
``[0] + target ids`` and ``target ids + [1]``, a word outside its dictionary as id 2.
2000 training, 200 test and 200 validation pairs (Paddle: 29000, 1000 and 1014).
Nothing is written to ``DATA_HOME`` (Paddle writes its dictionaries there), so ``get_dict`` works
before any reader was made.
"""
import functools
from typing import Callable, Dict, Iterator, List, Tuple

import numpy as np

from . import _synthetic

__all__ = ["train", "test", "validation", "fetch", "get_dict"]

DATA_URL = "http://paddlemodels.bj.bcebos.com/wmt/wmt16.tar.gz"
DATA_MD5 = "0c38be43600334966403524a40dcd81e"

TOTAL_EN_WORDS = 11250
TOTAL_DE_WORDS = 19220

START_MARK = "<s>"
END_MARK = "<e>"
UNK_MARK = "<unk>"

MEANINGS = TOTAL_EN_WORDS - 3
LENGTH_RANGE = (3, 20)
SET_SIZES = {"wmt16/train": 2000, "wmt16/test": 200, "wmt16/val": 200}

Sample = Tuple[List[int], List[int], List[int]]
_CUMULATIVE = np.cumsum(_synthetic.zipf_probabilities(MEANINGS))


@functools.lru_cache(maxsize=None)
def _words(lang: str) -> List[str]:
    """The made-up words of ``lang`` by rank (cached: do not modify)."""
    total = TOTAL_EN_WORDS if lang == "en" else TOTAL_DE_WORDS
    return [lang + _synthetic.pseudo_word(rank) for rank in range(total - 3)]


def _load_dict(lang: str, dict_size: int, reverse: bool = False) -> Dict:
    entries = [START_MARK, END_MARK, UNK_MARK] + _words(lang)
    kept = entries[:max(dict_size, 3)]
    if reverse:
        return dict(enumerate(kept))
    return {word: index for index, word in enumerate(kept)}


def _get_dict_size(src_dict_size: int, trg_dict_size: int, src_lang: str) -> Tuple[int, int]:
    src_total, trg_total = (TOTAL_EN_WORDS, TOTAL_DE_WORDS) if src_lang == "en" else (TOTAL_DE_WORDS, TOTAL_EN_WORDS)
    return min(src_dict_size, src_total), min(trg_dict_size, trg_total)


def _check_lang(src_lang: str) -> None:
    if src_lang not in ["en", "de"]:
        raise ValueError("src_lang must be 'en' (English) or 'de' (German), got %r" % (src_lang,))


def _pairs(file_name: str) -> Iterator[Tuple[List[str], List[str]]]:
    """(English words, German words) of the pairs of ``file_name``."""
    english, german = _words("en"), _words("de")
    rng = _synthetic.seeded("wmt16", file_name)
    for _ in range(SET_SIZES[file_name]):
        length = int(rng.randint(LENGTH_RANGE[0], LENGTH_RANGE[1] + 1))
        ranks = _synthetic.zipf_ranks(rng, _CUMULATIVE, length)
        yield [english[r] for r in ranks], [german[r] for r in ranks]


def reader_creator(file_name: str, src_dict_size: int, trg_dict_size: int,
                   src_lang: str) -> Callable[[], Iterator[Sample]]:
    """A reader of the pairs of ``file_name`` ('wmt16/train', 'wmt16/test' or 'wmt16/val'), source
    ``src_lang``, with dictionaries of the given sizes."""

    def reader() -> Iterator[Sample]:
        trg_lang = "de" if src_lang == "en" else "en"
        src_dict = _load_dict(src_lang, src_dict_size)
        trg_dict = _load_dict(trg_lang, trg_dict_size)
        start_id, end_id, unk_id = src_dict[START_MARK], src_dict[END_MARK], src_dict[UNK_MARK]
        for english, german in _pairs(file_name):
            src_words, trg_words = (english, german) if src_lang == "en" else (german, english)
            src_ids = [start_id] + [src_dict.get(w, unk_id) for w in src_words] + [end_id]
            trg_ids = [trg_dict.get(w, unk_id) for w in trg_words]
            yield src_ids, [start_id] + trg_ids, trg_ids + [end_id]

    return reader


def _creator(file_name: str, src_dict_size: int, trg_dict_size: int,
             src_lang: str) -> Callable[[], Iterator[Sample]]:
    _check_lang(src_lang)
    src_dict_size, trg_dict_size = _get_dict_size(src_dict_size, trg_dict_size, src_lang)
    return reader_creator(file_name, src_dict_size, trg_dict_size, src_lang)


def train(src_dict_size: int, trg_dict_size: int, src_lang: str = "en") -> Callable[[], Iterator[Sample]]:
    """The training reader creator: ``(src_ids, trg_ids, trg_ids_next)`` lists of ints; source
    language ``src_lang``, 'en' or 'de' (ValueError otherwise)."""
    return _creator("wmt16/train", src_dict_size, trg_dict_size, src_lang)


def test(src_dict_size: int, trg_dict_size: int, src_lang: str = "en") -> Callable[[], Iterator[Sample]]:
    """The test reader creator: as ``train``."""
    return _creator("wmt16/test", src_dict_size, trg_dict_size, src_lang)


def validation(src_dict_size: int, trg_dict_size: int, src_lang: str = "en") -> Callable[[], Iterator[Sample]]:
    """The validation reader creator: as ``train``."""
    return _creator("wmt16/val", src_dict_size, trg_dict_size, src_lang)


def get_dict(lang: str, dict_size: int, reverse: bool = False) -> Dict:
    """The dictionary of ``lang`` ('en' or anything else for German) with ``min(dict_size, total)``
    entries: ``{word: id}``, or ``{id: word}`` when ``reverse``."""
    dict_size = min(dict_size, TOTAL_EN_WORDS if lang == "en" else TOTAL_DE_WORDS)
    return _load_dict(lang if lang == "en" else "de", dict_size, reverse)


def fetch() -> None:
    """Nothing to download: the samples are generated."""
