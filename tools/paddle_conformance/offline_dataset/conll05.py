"""Stand-in for ``paddle.dataset.conll05``: synthetic semantic-role sentences of made-up words, not
CoNLL-2005.

Dictionaries of Paddle's sizes: 44068 words (``'<unk>'`` id 0, as Paddle's ``UNK_IDX``, then
``'bos'``, ``'eos'`` and made-up words), 3162 verbs, and 107 labels (``B-``/``I-`` of 53 role tags,
then ``'O'`` last, as Paddle builds them). A sentence has 5..30 words drawn from a Zipf law and
one verb; its labels follow a fixed rule: ``B-V`` on the verb, a role of the verb's class over the
1..3 words before it and another over the 1..4 words after it (``B-`` then ``I-``), ``O``
elsewhere, so the labels are learnable from the words' places relative to the verb and the verb.
2000 samples (Paddle: about 5300).

A sample is Paddle's 9 slots, each a list of ints as long as the sentence: word ids, the ids of
the words 2 and 1 before the verb, the verb itself, 1 and 2 after it (``'bos'``/``'eos'`` past the
ends; each repeated over the sentence), the predicate's id (repeated), the 0/1 mark of the 5
words around the verb, and the label ids. ``get_embedding()`` writes (once) and returns a file in
Paddle's layout: a 16-byte header, then float32 vectors of 32 per word (44068 x 32).
"""
import functools
import os
import struct
from typing import Callable, Dict, Iterator, List, Optional, Tuple

import numpy as np

from . import _synthetic
from . import common

__all__ = ['test', 'get_dict', 'get_embedding']

DATA_URL = 'http://paddlemodels.bj.bcebos.com/conll05st/conll05st-tests.tar.gz'
DATA_MD5 = '387719152ae52d60422c016e92a742fc'
WORDDICT_URL = 'http://paddlemodels.bj.bcebos.com/conll05st%2FwordDict.txt'
VERBDICT_URL = 'http://paddlemodels.bj.bcebos.com/conll05st%2FverbDict.txt'
TRGDICT_URL = 'http://paddlemodels.bj.bcebos.com/conll05st%2FtargetDict.txt'
EMB_URL = 'http://paddlemodels.bj.bcebos.com/conll05st%2Femb'

UNK_IDX = 0

WORDS = 44068
VERBS = 3162
ROLE_TAGS = ["V"] + ["A%d" % i for i in range(6)] + ["AM-%s" % _synthetic.pseudo_word(i).upper() for i in range(16)] \
    + ["C-A%d" % i for i in range(6)] + ["R-A%d" % i for i in range(6)] \
    + ["C-AM-%s" % _synthetic.pseudo_word(i).upper() for i in range(9)] \
    + ["R-AM-%s" % _synthetic.pseudo_word(i).upper() for i in range(9)]
EMBEDDING_WIDTH = 32
SAMPLES = 2000
LENGTH_RANGE = (5, 30)

Corpus = Callable[[], Iterator[Tuple[List[str], str, List[str]]]]


@functools.lru_cache(maxsize=1)
def _word_list() -> List[str]:
    return ['<unk>', 'bos', 'eos'] + [_synthetic.pseudo_word(i) for i in range(WORDS - 3)]


def _verb_list() -> List[str]:
    return ["v" + _synthetic.pseudo_word(i) for i in range(VERBS)]


def load_dict(filename: str) -> Dict[str, int]:
    """``{line: line number}`` of the text file ``filename`` (Paddle's word and verb files)."""
    with open(filename, 'r') as f:
        return {line.strip(): i for i, line in enumerate(f)}


def _label_dict(tags: List[str]) -> Dict[str, int]:
    labels: Dict[str, int] = {}
    for tag in tags:
        labels["B-" + tag] = len(labels)
        labels["I-" + tag] = len(labels)
    labels["O"] = len(labels)
    return labels


def load_label_dict(filename: str) -> Dict[str, int]:
    """The label dictionary of a target file of ``B-<tag>``/``I-<tag>`` lines: ``B-`` and ``I-``
    of each tag (first seen first), then ``'O'``."""
    tags: List[str] = []
    with open(filename, 'r') as f:
        for line in f:
            line = line.strip()
            if line.startswith("B-") or line.startswith("I-"):
                if line[2:] not in tags:
                    tags.append(line[2:])
    return _label_dict(tags)


def get_dict() -> Tuple[Dict[str, int], Dict[str, int], Dict[str, int]]:
    """The word (44068), verb (3162) and label (107) dictionaries."""
    word_dict = {w: i for i, w in enumerate(_word_list())}
    verb_dict = {v: i for i, v in enumerate(_verb_list())}
    return word_dict, verb_dict, _label_dict(ROLE_TAGS)


def _role_labels(length: int, verb_at: int, verb_rank: int, rng: np.random.RandomState) -> List[str]:
    """``O`` everywhere, ``B-V`` on the verb, a role of the verb's class before and after it."""
    labels = ["O"] * length
    labels[verb_at] = "B-V"
    before_tag = ROLE_TAGS[1 + verb_rank % 6]
    after_tag = ROLE_TAGS[1 + (verb_rank // 6) % (len(ROLE_TAGS) - 1)]
    before = min(verb_at, int(rng.randint(1, 4)))
    after = min(length - verb_at - 1, int(rng.randint(1, 5)))
    for offset in range(before):
        labels[verb_at - before + offset] = ("B-" if offset == 0 else "I-") + before_tag
    for offset in range(after):
        labels[verb_at + 1 + offset] = ("B-" if offset == 0 else "I-") + after_tag
    return labels


def corpus_reader(data_path: Optional[str] = None, words_name: Optional[str] = None,
                  props_name: Optional[str] = None) -> Corpus:
    """A reader of ``(sentence words, predicate, label strings)``; the arguments name Paddle's
    files and are not read."""

    def reader() -> Iterator[Tuple[List[str], str, List[str]]]:
        words, verbs = _word_list(), _verb_list()
        cumulative = np.cumsum(_synthetic.zipf_probabilities(len(words) - 3))
        verb_cumulative = np.cumsum(_synthetic.zipf_probabilities(VERBS, 0.8))
        rng = _synthetic.seeded("conll05", "test")
        for _ in range(SAMPLES):
            length = int(rng.randint(LENGTH_RANGE[0], LENGTH_RANGE[1] + 1))
            sentence = [words[3 + r] for r in _synthetic.zipf_ranks(rng, cumulative, length)]
            verb_rank = int(_synthetic.zipf_ranks(rng, verb_cumulative, 1)[0])
            verb_at = int(rng.randint(length))
            sentence[verb_at] = verbs[verb_rank][1:]
            yield sentence, verbs[verb_rank], _role_labels(length, verb_at, verb_rank, rng)

    return reader


def _context(sentence: List[str], verb_at: int, offset: int) -> str:
    at = verb_at + offset
    if at < 0:
        return 'bos'
    if at >= len(sentence):
        return 'eos'
    return sentence[at]


def reader_creator(corpus_reader: Corpus, word_dict: Optional[Dict[str, int]] = None,
                   predicate_dict: Optional[Dict[str, int]] = None,
                   label_dict: Optional[Dict[str, int]] = None) -> Callable[[], Iterator[tuple]]:
    """A reader of Paddle's 9-slot samples from ``(sentence, predicate, labels)`` of ``corpus_reader``."""
    assert word_dict is not None and predicate_dict is not None and label_dict is not None

    def reader() -> Iterator[tuple]:
        for sentence, predicate, labels in corpus_reader():
            length = len(sentence)
            verb_at = labels.index('B-V')
            mark = [1 if abs(i - verb_at) <= 2 else 0 for i in range(length)]
            contexts = [[word_dict.get(_context(sentence, verb_at, offset), UNK_IDX)] * length
                        for offset in (-2, -1, 0, 1, 2)]
            word_idx = [word_dict.get(w, UNK_IDX) for w in sentence]
            pred_idx = [predicate_dict.get(predicate)] * length
            label_idx = [label_dict.get(w) for w in labels]
            yield (word_idx, contexts[0], contexts[1], contexts[2], contexts[3], contexts[4], pred_idx, mark,
                   label_idx)

    return reader


def get_embedding() -> str:
    """The path of the word embedding file (written under ``DATA_HOME/conll05st`` the first time):
    a 16-byte header, then 44068 x 32 float32 values."""
    path = os.path.join(common.DATA_HOME, "conll05st", "emb")
    expected_bytes = 16 + WORDS * EMBEDDING_WIDTH * 4
    if not (os.path.exists(path) and os.path.getsize(path) == expected_bytes):
        values = _synthetic.seeded("conll05", "embedding").normal(0.0, 0.1, size=(WORDS, EMBEDDING_WIDTH))
        header = struct.pack("<iIQ", 0, 4, WORDS * EMBEDDING_WIDTH)
        common.write_file_atomically(path, header + values.astype("<f4").tobytes())
    return path


def test() -> Callable[[], Iterator[tuple]]:
    """The reader creator of the 2000 samples (Paddle trains on its test set: the training set is
    not free)."""
    word_dict, verb_dict, label_dict = get_dict()
    return reader_creator(corpus_reader(), word_dict, verb_dict, label_dict)


def fetch() -> None:
    """Nothing to download: the samples are generated."""
