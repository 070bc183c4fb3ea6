"""Synthetic stand-ins of the dataset archives that Paddle's book tests, its demo and its download
test fetch with ``common.download`` and open themselves:

* ``cifar-10-python.tar.gz`` (``book/high-level-api/cifar10_small_test_set.py``; also Paddle's own
  ``paddle.dataset.cifar`` URL): ``cifar-10-batches-py/data_batch_1`` .. ``data_batch_5`` and
  ``test_batch``, each a pickled dict with ``bytes`` keys as CIFAR's Python 2 pickles load under
  ``encoding='bytes'``: ``b'data'`` uint8 [n, 3072] (channel-major 32 x 32 pictures), ``b'labels'`` a
  list of ints 0..9, ``b'batch_label'`` and ``b'filenames'``; plus ``batches.meta``. The pictures are
  exactly the ``cifar.train10()`` / ``cifar.test10()`` samples (2000 in five batches of 400, and 500)
  before their ``/ 255``.
* ``flowers/imagelabels.mat`` and ``flowers/setid.mat`` (``unittests/test_dataset_download.py``;
  Paddle's ``paddle.dataset.flowers`` reads them with ``scipy.io.loadmat``): MATLAB level 5 files with
  ``labels`` (1 x 816 doubles, 1..102) and ``trnid``, ``valid``, ``tstid`` (1 x n image numbers), the
  labels and sets of the ``flowers`` stand-in's samples (images 1..408 are its training set
  ``tstid``, then 204 ``trnid``, then 204 ``valid``; Paddle has 8189 images).
* ``train_data.tar.gz`` of the async-executor demo (``demo/executor_train_dataset.py``, saved under
  ``imdb``): ``train_data/part-0`` .. ``part-11``, 100 reviews each in the MultiSlot text format of
  its two slots, ``"<n> <word id> ... 1 <label>"``: word ids below the demo's ``dict_dim`` 89528 whose
  words say the label as imdb's do (see ``imdb``), label 0 or 1 in turn.
"""
import pickle
from typing import Callable, Dict, List, Tuple

import numpy as np

from . import _packing, _synthetic, cifar, flowers

CIFAR10_URLS = ("https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz", cifar.CIFAR10_URL)
CIFAR10_TRAIN_BATCHES = 5
CIFAR10_LABEL_NAMES = [b"airplane", b"automobile", b"bird", b"cat", b"deer", b"dog", b"frog", b"horse",
                       b"ship", b"truck"]
DEMO_IMDB_URL = ("http://paddle-unittest-data.gz.bcebos.com/"
                 "python_paddle_fluid_tests_demo_async-executor/train_data.tar.gz")
DEMO_PARTS = 12
DEMO_REVIEWS_PER_PART = 100
DEMO_WORD_TYPES = 89527  # the demo's bow_net embeds dict_dim = 89528 ids
_DEMO_CORPUS = _synthetic.PolarCorpus(DEMO_WORD_TYPES, (tuple(range(120, 160)), tuple(range(160, 200))))


class _PortableArray:
    """Pickles as ``numpy.ndarray(shape, dtype, buffer)``: an array that every NumPy unpickles (a
    plain array pickle names NumPy 2's ``numpy._core``, which NumPy 1.21 cannot import), writable
    (its buffer is a ``bytearray``), with the same values."""

    def __init__(self, array: np.ndarray) -> None:
        self.array = np.ascontiguousarray(array)

    def __reduce__(self):
        return np.ndarray, (self.array.shape, self.array.dtype.str, bytearray(self.array.tobytes()))


def _cifar10_batch(batch_label: str, pixels: np.ndarray, labels: List[int], first: int) -> bytes:
    names = [b"synthetic_%06d.png" % (first + i) for i in range(len(labels))]
    batch = {b"batch_label": batch_label.encode("ascii"), b"labels": labels, b"data": _PortableArray(pixels),
             b"filenames": names}
    return pickle.dumps(batch, protocol=4)


def cifar10_tar() -> bytes:
    """``cifar-10-python.tar.gz`` holding the ``cifar`` stand-in's CIFAR-10 pictures as bytes."""
    members: List[Tuple[str, bytes]] = []
    meta = {b"label_names": CIFAR10_LABEL_NAMES, b"num_cases_per_batch": cifar.TRAIN_SIZE // CIFAR10_TRAIN_BATCHES,
            b"num_vis": 3072}
    members.append(("cifar-10-batches-py/batches.meta", pickle.dumps(meta, protocol=2)))
    for split_name in ("train", "test"):
        chunks = list(cifar.pixel_chunks(10, split_name))
        pixels = np.concatenate([p for p, _ in chunks])
        labels = [int(label) for _, chunk_labels in chunks for label in chunk_labels]
        if split_name == "test":
            members.append(("cifar-10-batches-py/test_batch",
                            _cifar10_batch("testing batch 1 of 1", pixels, labels, 0)))
            continue
        size = len(labels) // CIFAR10_TRAIN_BATCHES
        for index in range(CIFAR10_TRAIN_BATCHES):
            part = slice(index * size, (index + 1) * size)
            members.append(("cifar-10-batches-py/data_batch_%d" % (index + 1), _cifar10_batch(
                "training batch %d of %d" % (index + 1, CIFAR10_TRAIN_BATCHES), pixels[part], labels[part],
                index * size)))
    return _packing.tar_gz(members, folders=["cifar-10-batches-py"], compresslevel=1)


def _flowers_image_sets() -> Dict[str, np.ndarray]:
    """{set flag: the 1-based image numbers of that set}, the sets one after another."""
    sets, first = {}, 1
    for flag in (flowers.TRAIN_FLAG, flowers.TEST_FLAG, flowers.VALID_FLAG):
        sets[flag] = np.arange(first, first + flowers.SET_SIZES[flag])
        first += flowers.SET_SIZES[flag]
    return sets


def flowers_labels() -> bytes:
    """``imagelabels.mat``: ``labels``, the 1-based class of each image (the stand-in's label + 1)."""
    labels = np.concatenate([np.arange(len(numbers)) % flowers.CLASSES + 1
                             for numbers in _flowers_image_sets().values()])
    return _packing.mat_v5({"labels": labels})


def flowers_setid() -> bytes:
    """``setid.mat``: ``trnid``, ``valid`` and ``tstid``, the image numbers of each set."""
    sets = _flowers_image_sets()
    return _packing.mat_v5({flag: sets[flag] for flag in ("trnid", "valid", "tstid")})


def demo_imdb_train_data() -> bytes:
    """``train_data.tar.gz``: 12 MultiSlot text parts of word-id reviews and labels."""
    members = []
    for part in range(DEMO_PARTS):
        rng = _synthetic.seeded("demo_imdb", part)
        lines = []
        for index in range(DEMO_REVIEWS_PER_PART):
            label = index % 2
            ids = _DEMO_CORPUS.document(rng, label)
            lines.append("%d %s 1 %d" % (len(ids), " ".join(map(str, ids)), label))
        members.append(("train_data/part-%d" % part, _packing.text_lines(lines)))
    return _packing.tar_gz(members, folders=["train_data"])


FILES: Dict[str, Callable[[], bytes]] = {
    CIFAR10_URLS[0]: cifar10_tar,
    CIFAR10_URLS[1]: cifar10_tar,
    flowers.LABEL_URL: flowers_labels,
    flowers.SETID_URL: flowers_setid,
    DEMO_IMDB_URL: demo_imdb_train_data,
}
