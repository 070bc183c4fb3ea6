"""Stand-in for ``paddle.dataset.uci_housing``: synthetic houses, not the UCI Boston housing data.

506 rows of 13 raw features drawn in the UCI columns' ranges and normalised as Paddle does
(``(x - mean) / (max - min)`` per column over all rows), then split as Paddle splits: the first
80% (404 rows) train, the other 102 test. A sample is ``(features, price)``, float64 arrays of
shapes (13,) and (1,) as Paddle yields them; the price (in thousands, about 5..50) is a fixed
linear function of the normalised features plus Gaussian noise (standard deviation 1).
"""
import tarfile
import tempfile
from typing import Callable, Iterator, Optional, Tuple

import numpy as np

from . import _synthetic
from . import common

__all__ = ['train', 'test']

URL = 'http://paddlemodels.bj.bcebos.com/uci_housing/housing.data'
MD5 = 'd4accdce7a25600298819f8e28e8d593'
FLUID_URL_MODEL = 'https://github.com/PaddlePaddle/book/raw/develop/01.fit_a_line/fluid/fit_a_line.fluid.tar'
FLUID_MD5_MODEL = '6e6dd637ccd5993961f68bfbde46090b'

feature_names = [
    'CRIM', 'ZN', 'INDUS', 'CHAS', 'NOX', 'RM', 'AGE', 'DIS', 'RAD', 'TAX', 'PTRATIO', 'B', 'LSTAT'
]

ROWS = 506
RATIO = 0.8
# the price's weights on the normalised features (same order as feature_names) and its mean
PRICE_WEIGHTS = np.array([-4.0, 2.0, -1.0, 1.5, -4.0, 18.0, -1.0, -5.0, 2.5, -3.0, -7.0, 2.5, -15.0])
PRICE_MEAN = 22.5
PRICE_NOISE = 1.0

UCI_TRAIN_DATA: Optional[np.ndarray] = None
UCI_TEST_DATA: Optional[np.ndarray] = None


def _raw_features(rng: np.random.RandomState) -> np.ndarray:
    """(ROWS, 13) raw features, each column drawn in its UCI column's range."""
    n = ROWS
    columns = [
        np.minimum(rng.exponential(3.6, n), 89.0),                          # CRIM
        np.where(rng.random_sample(n) < 0.73, 0.0, rng.uniform(12.5, 100.0, n)),  # ZN
        rng.uniform(0.46, 27.74, n),                                        # INDUS
        (rng.random_sample(n) < 0.07).astype(np.float64),                   # CHAS
        rng.uniform(0.385, 0.871, n),                                       # NOX
        np.clip(rng.normal(6.28, 0.7, n), 3.56, 8.78),                      # RM
        rng.uniform(2.9, 100.0, n),                                         # AGE
        1.13 + np.minimum(rng.exponential(2.7, n), 11.0),                   # DIS
        rng.choice([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 24.0], n),      # RAD
        rng.uniform(187.0, 711.0, n),                                       # TAX
        rng.uniform(12.6, 22.0, n),                                         # PTRATIO
        np.maximum(396.9 - rng.exponential(40.0, n), 0.32),                 # B
        rng.uniform(1.73, 37.97, n),                                        # LSTAT
    ]
    return np.stack(columns, axis=1)


def _table() -> np.ndarray:
    """(ROWS, 14): the normalised features and the price, as Paddle's table after load_data."""
    rng = _synthetic.seeded("uci_housing")
    features = _raw_features(rng)
    maximums, minimums = features.max(axis=0), features.min(axis=0)
    averages = features.sum(axis=0) / features.shape[0]
    normalised = (features - averages) / (maximums - minimums)
    # summed column by column, not by a matrix product, whose BLAS may round differently elsewhere
    weighted = sum(normalised[:, i] * PRICE_WEIGHTS[i] for i in range(len(PRICE_WEIGHTS)))
    price = PRICE_MEAN + weighted + rng.normal(0.0, PRICE_NOISE, ROWS)
    return np.concatenate([normalised, price[:, None]], axis=1)


def load_data(filename: Optional[str] = None, feature_num: int = 14, ratio: float = RATIO) -> None:
    """Fill ``UCI_TRAIN_DATA`` and ``UCI_TEST_DATA`` (once) from the synthetic table, split at
    ``int(rows * ratio)``. ``filename`` is accepted for Paddle's signature and not read."""
    global UCI_TRAIN_DATA, UCI_TEST_DATA
    if UCI_TRAIN_DATA is not None and UCI_TEST_DATA is not None:
        return
    data = _table()
    offset = int(data.shape[0] * ratio)
    UCI_TRAIN_DATA = data[:offset]
    UCI_TEST_DATA = data[offset:]


def _reader(rows: Callable[[], np.ndarray]) -> Callable[[], Iterator[Tuple[np.ndarray, np.ndarray]]]:
    def reader() -> Iterator[Tuple[np.ndarray, np.ndarray]]:
        for d in rows():
            yield d[:-1], d[-1:]

    return reader


def _train_rows() -> np.ndarray:
    load_data()
    assert UCI_TRAIN_DATA is not None
    return UCI_TRAIN_DATA


def _test_rows() -> np.ndarray:
    load_data()
    assert UCI_TEST_DATA is not None
    return UCI_TEST_DATA


def train() -> Callable[[], Iterator[Tuple[np.ndarray, np.ndarray]]]:
    """The training reader creator: 404 samples ``(float64[13] features, float64[1] price)``."""
    load_data()
    return _reader(_train_rows)


def test() -> Callable[[], Iterator[Tuple[np.ndarray, np.ndarray]]]:
    """The test reader creator: 102 samples ``(float64[13] features, float64[1] price)``."""
    load_data()
    return _reader(_test_rows)


def predict_reader() -> Tuple[np.ndarray]:
    """The first test sample's features, as a one-element tuple (Paddle's inference input)."""
    return (_test_rows()[0][:-1],)


def fluid_model() -> str:
    """A new temporary folder holding Paddle's trained fit-a-line model, unpacked from its tar in
    ``DATA_HOME/uci_housing``; with no network and no such file, NoNetworkError names its URL."""
    parameter_tar = common.download(FLUID_URL_MODEL, 'uci_housing', FLUID_MD5_MODEL, 'fit_a_line.fluid.tar')
    dirpath = tempfile.mkdtemp()
    with tarfile.TarFile(parameter_tar, mode='r') as tar:
        tar.extractall(path=dirpath)
    return dirpath


def fetch() -> None:
    """Nothing to download: the samples are generated."""
