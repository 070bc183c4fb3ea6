"""Synthetic stand-ins of the files Paddle's distributed tests download and parse themselves
(``unittests/dist_ctr_reader.py`` and ``ctr_dataset_reader.py``, ``dist_simnet_bow.py`` and
``dist_save_load.py``, ``dist_text_classification.py``, ``test_dist_transformer.py``), in the formats
those readers parse, small, and learnable by the tests' models:

* ``avazu_ctr_data.tgz``: ``avazu_ctr_data/{train,test,infer,data.meta}.txt``. A record is
  ``"<dnn ids>\\t<lr id>:1 ...\\t<click>"`` (infer records have no click); ``data.meta.txt`` is the two
  lines ``dnn_input_dim: 1000`` and ``lr_input_dim: 2000``. An impression has one value of each of
  10 fields of 5 to 213 values (dnn ids 0..999, each field's after the one before); its lr ids are
  those ids and 2 crossed features (1000..1999); the click is 1 where a hidden linear score of the
  dnn ids plus noise is high (about a third of the impressions), the fields with fewer values
  weighing more. 1000 training, 200 test and 100 infer records.
* ``simnet.train.1000`` (saved as ``simnet/train``): 1000 lines
  ``"<line id>;<positives> <negatives>;<query ids>;<title ids>;...;"`` (the positive titles, then the
  negative ones), word ids below 1500 (the test's ``dict_dim``). A query draws its words from one of
  30 topics; its positive titles from the same topic, its negative titles from other topics.
* ``imdb.vocab`` and ``text_classification.tar.gz``: a vocabulary of 5000 words (one a line) and
  reviews ``{train,test}/{pos,neg}/<id>_<rating>.txt`` (names that Paddle's patterns ``train/pos/.*``
  match from the start) whose words say the label as imdb's do (see ``imdb``), with capitals and
  punctuation the reader strips; 250 + 250 training and 100 + 100 test reviews.
* ``dist_transformer/``: ``vocab.bpe.32000`` (``<s>``, ``<e>``, ``<unk>``, then 1000 tokens) and
  ``"<source tokens>\\t<target tokens>"`` lines: the target is the source, token by token, through a
  fixed map from the first 500 tokens to the last 500. ``train.tok.clean.bpe.32000.en-de`` has 200
  pairs; ``.train_0`` and ``.train_1`` split it so that the local run's batch k of 20 pairs is
  trainer 0's batch k of 10 then trainer 1's (the test compares their losses); the test set has 40.
"""
from typing import Callable, Dict, Iterator, List, Tuple

import numpy as np

from . import _packing, _synthetic

CTR_URL = "http://paddle-ctr-data.bj.bcebos.com/avazu_ctr_data.tgz"
SIMNET_URL = "http://paddle-dist-ce-data.bj.bcebos.com/simnet.train.1000"
TEXT_VOCAB_URL = "http://paddle-dist-ce-data.bj.bcebos.com/imdb.vocab"
TEXT_DATA_URL = "http://paddle-dist-ce-data.bj.bcebos.com/text_classification.tar.gz"
TRANSFORMER_URL_PREFIX = "http://paddle-unittest-data.bj.bcebos.com/dist_transformer/"

# --- avazu CTR ------------------------------------------------------------------------------------

# how many values each field takes (a device type has a few, a site many); a field's dnn ids follow
# the fields before it: 0..4 are field 0's, 5..12 field 1's, ..., up to 999
CTR_FIELD_VALUES = (5, 8, 24, 40, 60, 100, 150, 200, 200, 213)
CTR_DNN_INPUT_DIM = sum(CTR_FIELD_VALUES)
CTR_LR_INPUT_DIM = 2000
CTR_SET_SIZES = {"train": 1000, "test": 200, "infer": 100}
_CTR_CROSSES = ((0, 1), (2, 3))  # pairs of fields crossed into lr features 1000..1999
_CTR_CLICK_THRESHOLD = 1.5  # on the hidden score: about a third of the impressions are clicked


def _ctr_records(set_name: str) -> Iterator[str]:
    cardinality = np.array(CTR_FIELD_VALUES)
    offsets = np.concatenate([[0], np.cumsum(cardinality)[:-1]])
    weight_rng = _synthetic.seeded("avazu_ctr", "weights")
    # fields with few values weigh more, as a device type says more about a click than a site id does
    weights = np.concatenate([weight_rng.normal(0.0, 3.0 * count ** -0.35, size=count) for count in cardinality])
    rng = _synthetic.seeded("avazu_ctr", set_name)
    for _ in range(CTR_SET_SIZES[set_name]):
        values = (rng.random_sample(len(cardinality)) * cardinality).astype(np.int64)
        dnn_ids = (offsets + values).tolist()
        crosses = [CTR_DNN_INPUT_DIM + (int(values[a]) * int(cardinality[b]) + int(values[b]))
                   % (CTR_LR_INPUT_DIM - CTR_DNN_INPUT_DIM) for a, b in _CTR_CROSSES]
        score = weights[dnn_ids].sum() + rng.logistic(0.0, 0.3)
        fields = [" ".join(map(str, dnn_ids)), " ".join("%d:1" % i for i in dnn_ids + crosses)]
        if set_name != "infer":
            fields.append(str(int(score > _CTR_CLICK_THRESHOLD)))
        yield "\t".join(fields)


def avazu_ctr_tgz() -> bytes:
    """``avazu_ctr_data.tgz``: the folder ``avazu_ctr_data`` with the three sets and the meta file."""
    members = [("avazu_ctr_data/%s.txt" % name, _packing.text_lines(_ctr_records(name)))
               for name in ("train", "test", "infer")]
    meta = ["dnn_input_dim: %d" % CTR_DNN_INPUT_DIM, "lr_input_dim: %d" % CTR_LR_INPUT_DIM]
    members.append(("avazu_ctr_data/data.meta.txt", _packing.text_lines(meta)))
    return _packing.tar_gz(members, folders=["avazu_ctr_data"])


# --- simnet ---------------------------------------------------------------------------------------

SIMNET_LINES = 1000
SIMNET_DICT_DIM = 1500
SIMNET_TOPICS = 30
SIMNET_TOPIC_WORDS = 40  # topic t owns the ids t * 40 .. t * 40 + 39; ids from 1200 up are common words


def _simnet_words(rng: np.random.RandomState, topic: int, low: int, high: int) -> List[int]:
    count = int(rng.randint(low, high + 1))
    topical = topic * SIMNET_TOPIC_WORDS + rng.randint(0, SIMNET_TOPIC_WORDS, size=count)
    common = rng.randint(SIMNET_TOPICS * SIMNET_TOPIC_WORDS, SIMNET_DICT_DIM, size=count)
    return np.where(rng.random_sample(count) < 0.75, topical, common).tolist()


def simnet_train() -> bytes:
    """``simnet.train.1000``: a query, one or two positive titles, one to three negative titles a line."""
    rng = _synthetic.seeded("simnet", "train")
    lines = []
    for line_id in range(SIMNET_LINES):
        topic = int(rng.randint(SIMNET_TOPICS))
        positives, negatives = int(rng.randint(1, 3)), int(rng.randint(1, 4))
        others = (topic + rng.randint(1, SIMNET_TOPICS, size=negatives)) % SIMNET_TOPICS
        sequences = ([_simnet_words(rng, topic, 2, 5)] + [_simnet_words(rng, topic, 3, 8) for _ in range(positives)]
                     + [_simnet_words(rng, int(other), 3, 8) for other in others])
        fields = [str(line_id), "%d %d" % (positives, negatives)] + [" ".join(map(str, s)) for s in sequences]
        lines.append("".join(field + ";" for field in fields))
    return _packing.text_lines(lines)


# --- text classification --------------------------------------------------------------------------

TEXT_VOCAB_SIZE = 5000
TEXT_TYPE_COUNT = 6000  # word types in the reviews; those past the vocabulary are out of it
TEXT_SET_SIZES = {"train": 250, "test": 100}  # reviews of each polarity
_TEXT_CORPUS = _synthetic.PolarCorpus(TEXT_TYPE_COUNT, (tuple(range(150, 190)), tuple(range(190, 230))))


def text_vocab() -> bytes:
    """``imdb.vocab``: the 5000 most frequent word types, one a line."""
    return _packing.text_lines(_synthetic.pseudo_word(rank) for rank in range(TEXT_VOCAB_SIZE))


def _review_text(rng: np.random.RandomState, label: int) -> str:
    words = [_synthetic.pseudo_word(rank) for rank in _TEXT_CORPUS.document(rng, label)]
    sentences, start = [], 0
    while start < len(words):
        end = start + int(rng.randint(4, 12))
        sentence = " ".join(words[start:end])
        sentences.append(sentence[:1].upper() + sentence[1:] + rng.choice([".", "!", "?", "..."]))
        start = end
    return " ".join(sentences) + "\n"


def text_classification_tar() -> bytes:
    """``text_classification.tar.gz``: ``{train,test}/{pos,neg}/<id>_<rating>.txt`` reviews."""
    members: List[Tuple[str, bytes]] = []
    for split_name in ("train", "test"):
        for polarity, label in (("pos", 0), ("neg", 1)):
            rng = _synthetic.seeded("text_classification", split_name, polarity)
            for doc_id in range(TEXT_SET_SIZES[split_name]):
                rating = 7 + doc_id % 4 if label == 0 else 1 + doc_id % 4
                name = "%s/%s/%d_%d.txt" % (split_name, polarity, doc_id, rating)
                members.append((name, _review_text(rng, label).encode("utf-8")))
    folders = ["train", "train/pos", "train/neg", "test", "test/pos", "test/neg"]
    return _packing.tar_gz(members, folders=folders)


# --- transformer ----------------------------------------------------------------------------------

TRANSFORMER_SPECIAL_TOKENS = ("<s>", "<e>", "<unk>")
TRANSFORMER_TOKENS = 1000  # after the special ones; sources use the first half, targets the second
TRANSFORMER_TRAIN_PAIRS = 200
TRANSFORMER_TEST_PAIRS = 40
TRANSFORMER_LOCAL_BATCH = 20  # the local run's batch: trainer 0 takes its first half, trainer 1 the rest


def _transformer_token(index: int) -> str:
    word = _synthetic.pseudo_word(index)
    return word + "@@" if index % 3 == 0 else word  # BPE's mark of a word piece that goes on


def transformer_vocab() -> bytes:
    """``vocab.bpe.32000``: the special tokens, then the tokens, one a line."""
    tokens = list(TRANSFORMER_SPECIAL_TOKENS) + [_transformer_token(i) for i in range(TRANSFORMER_TOKENS)]
    return _packing.text_lines(tokens)


def _transformer_pairs(set_name: str, count: int) -> List[str]:
    half = TRANSFORMER_TOKENS // 2
    translation = half + _synthetic.seeded("dist_transformer", "translation").permutation(half)
    cumulative = np.cumsum(_synthetic.zipf_probabilities(half))
    rng = _synthetic.seeded("dist_transformer", set_name)
    pairs = []
    for _ in range(count):
        source = _synthetic.zipf_ranks(rng, cumulative, int(rng.randint(4, 15)))
        pairs.append("%s\t%s" % (" ".join(_transformer_token(int(i)) for i in source),
                                 " ".join(_transformer_token(int(translation[i])) for i in source)))
    return pairs


def transformer_train(trainer_id: int = -1) -> bytes:
    """The training pairs: all of them (``trainer_id`` -1), or trainer ``trainer_id``'s (0 or 1) half
    of each local batch."""
    pairs = _transformer_pairs("train", TRANSFORMER_TRAIN_PAIRS)
    if trainer_id >= 0:
        share = TRANSFORMER_LOCAL_BATCH // 2
        pairs = [p for i, p in enumerate(pairs) if (i // share) % 2 == trainer_id]
    return _packing.text_lines(pairs)


def transformer_test() -> bytes:
    """``newstest2013.tok.bpe.32000.en-de``: the test pairs."""
    return _packing.text_lines(_transformer_pairs("test", TRANSFORMER_TEST_PAIRS))


FILES: Dict[str, Callable[[], bytes]] = {
    CTR_URL: avazu_ctr_tgz,
    SIMNET_URL: simnet_train,
    TEXT_VOCAB_URL: text_vocab,
    TEXT_DATA_URL: text_classification_tar,
    TRANSFORMER_URL_PREFIX + "vocab.bpe.32000": transformer_vocab,
    TRANSFORMER_URL_PREFIX + "train.tok.clean.bpe.32000.en-de": transformer_train,
    TRANSFORMER_URL_PREFIX + "train.tok.clean.bpe.32000.en-de.train_0": lambda: transformer_train(0),
    TRANSFORMER_URL_PREFIX + "train.tok.clean.bpe.32000.en-de.train_1": lambda: transformer_train(1),
    TRANSFORMER_URL_PREFIX + "newstest2013.tok.bpe.32000.en-de": transformer_test,
}
