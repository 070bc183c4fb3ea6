"""Stand-in for ``paddle.dataset.flowers``: synthetic colour pictures of 102 classes, not the
Oxford flowers.

A raw sample is ``(picture, label)``: a uint8 array of 256 x 256 x 3 (height, width, BGR channels,
as OpenCV decodes Paddle's JPEGs after its resize to 256) and an ``int`` label in 0..101. The
default mappers turn it into what Paddle's yield: the centre 224 x 224 crop, channel-major, minus
the per-channel means [103.94, 116.78, 123.68], flattened to float32[150528], and the label.
(Paddle's training mapper crops at a random place and may flip; these crop the centre, so a reader
yields the same samples every time.) A custom ``mapper`` receives the raw sample: the picture
array, where Paddle gives the JPEG's bytes.

408 training, 204 test and 204 validation samples (Paddle: 6149, 1020 and 1020); ``use_xmap`` and
``buffered_size`` are accepted and the mapper runs in this thread, in order.
"""
import functools
from typing import Any, Callable, Iterator, Tuple

import numpy as np

from . import _synthetic

__all__ = ['train', 'test', 'valid']

DATA_URL = 'http://paddlemodels.bj.bcebos.com/flowers/102flowers.tgz'
LABEL_URL = 'http://paddlemodels.bj.bcebos.com/flowers/imagelabels.mat'
SETID_URL = 'http://paddlemodels.bj.bcebos.com/flowers/setid.mat'
DATA_MD5 = '52808999861908f626f3c1f4e79d11fa'
LABEL_MD5 = 'e0620be6f572b9609742df49c70aed4d'
SETID_MD5 = 'a5357ecc9cb78c4bef273ce3793fc85c'
# Paddle trains on the set its files call 'tstid' and tests on 'trnid' (the larger set trains)
TRAIN_FLAG = 'tstid'
TEST_FLAG = 'trnid'
VALID_FLAG = 'valid'

CLASSES = 102
RAW_SIDE = 256
CROP_SIDE = 224
MEAN_BGR = [103.94, 116.78, 123.68]
SET_SIZES = {TRAIN_FLAG: 408, TEST_FLAG: 204, VALID_FLAG: 204}
NOISE = 48

Sample = Tuple[Any, int]


def _coarse_templates() -> np.ndarray:
    return _synthetic.coarse_templates(_synthetic.seeded("flowers", "templates"), CLASSES, channels=3, coarse=8)


def _raw_samples(dataset_name: str) -> Iterator[Tuple[np.ndarray, int]]:
    """(uint8 [256, 256, 3] picture, label) of the set ``dataset_name``, every class in turn."""
    grids = _coarse_templates()
    rng = _synthetic.seeded("flowers", dataset_name)
    for index in range(SET_SIZES[dataset_name]):
        label = index % CLASSES
        template = _synthetic.blow_up(grids[label], RAW_SIDE)
        picture = _synthetic.noisy_pixels(rng, template[None], np.array([0]), NOISE)[0]
        yield np.ascontiguousarray(picture.transpose(1, 2, 0)), label


def default_mapper(is_train: bool, sample: Sample) -> Tuple[np.ndarray, int]:
    """The centre 224 x 224 crop of the raw picture, channel-major, minus the channel means,
    flattened to float32[150528]; and the label. ``is_train`` is accepted for Paddle's signature
    (its training mapper crops at random; this one does not)."""
    picture, label = sample
    start = (RAW_SIDE - CROP_SIDE) // 2
    crop = np.asarray(picture, dtype=np.float32)[start:start + CROP_SIDE, start:start + CROP_SIDE]
    chw = crop.transpose(2, 0, 1) - np.array(MEAN_BGR, dtype=np.float32)[:, None, None]
    return chw.flatten().astype('float32'), label


train_mapper = functools.partial(default_mapper, True)
test_mapper = functools.partial(default_mapper, False)


def reader_creator(dataset_name: str, mapper: Callable[[Sample], Any], buffered_size: int = 1024,
                   use_xmap: bool = True, cycle: bool = False) -> Callable[[], Iterator[Any]]:
    """A reader of ``mapper(raw sample)`` for the set ``dataset_name`` (TRAIN_FLAG, TEST_FLAG or
    VALID_FLAG), over and over again when ``cycle``. ``buffered_size`` and ``use_xmap`` are
    accepted for Paddle's signature: the mapper runs here, in order."""
    if dataset_name not in SET_SIZES:
        raise ValueError("flowers has no set %r (sets: %s)" % (dataset_name, ", ".join(sorted(SET_SIZES))))
    return _synthetic.cycled(lambda: (mapper(raw) for raw in _raw_samples(dataset_name)), cycle)


def train(mapper: Callable[[Sample], Any] = train_mapper, buffered_size: int = 1024, use_xmap: bool = True,
          cycle: bool = False) -> Callable[[], Iterator[Any]]:
    """The training reader creator: ``mapper`` of each raw sample (default: float32[150528], int
    label in 0..101)."""
    return reader_creator(TRAIN_FLAG, mapper, buffered_size, use_xmap, cycle=cycle)


def test(mapper: Callable[[Sample], Any] = test_mapper, buffered_size: int = 1024, use_xmap: bool = True,
         cycle: bool = False) -> Callable[[], Iterator[Any]]:
    """The test reader creator: ``mapper`` of each raw sample (default: float32[150528], int label
    in 0..101)."""
    return reader_creator(TEST_FLAG, mapper, buffered_size, use_xmap, cycle=cycle)


def valid(mapper: Callable[[Sample], Any] = test_mapper, buffered_size: int = 1024,
          use_xmap: bool = True) -> Callable[[], Iterator[Any]]:
    """The validation reader creator: ``mapper`` of each raw sample (default: float32[150528], int
    label in 0..101)."""
    return reader_creator(VALID_FLAG, mapper, buffered_size, use_xmap)


def fetch() -> None:
    """Nothing to download: the samples are generated."""
