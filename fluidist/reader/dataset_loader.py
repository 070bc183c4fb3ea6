"""``DataLoader.from_dataset(dataset, places, drop_last)``: the batches of a ``fluid.dataset``
Dataset as an iterable loader, one thread's stream per place (``len(places)`` threads)."""
import warnings

from ..core.tensor import LoDTensor
from .base import DataLoaderBase


class DatasetLoader(DataLoaderBase):
    def __init__(self, dataset, places, drop_last=True):
        from ..dataset import DatasetBase
        if not isinstance(dataset, DatasetBase):
            raise TypeError("DataLoader.from_dataset: dataset must be made by fluid.DatasetFactory, got %r"
                            % type(dataset).__name__)
        if places is None:
            raise ValueError("DataLoader.from_dataset: places cannot be None (e.g. fluid.cpu_places())")
        self._places = list(places) if isinstance(places, (list, tuple)) else [places]
        if dataset.thread_num not in (0, len(self._places)):
            warnings.warn("thread_num %d which is set in Dataset is ignored: DataLoader.from_dataset reads with one "
                          "thread per place (%d)" % (dataset.thread_num, len(self._places)))
        self._dataset = dataset
        self._drop_last = bool(drop_last)
        self._streams = None

    def __call__(self):
        return self

    def __iter__(self):
        self._dataset._prepare_to_run()
        self._streams = self._dataset._thread_batches(len(self._places))
        return self

    def _next_batch(self, stream):
        for batch in stream:
            n = batch[0][0].shape[0] if not batch[0][1] else len(batch[0][1][0]) - 1
            if self._drop_last and n < self._dataset.batch_size:
                continue
            return batch
        return None

    def __next__(self):
        if self._streams is None:
            self.__iter__()
        names = [s.name for s in self._dataset.slots]
        out = []
        for stream in self._streams[:len(self._places)]:
            batch = self._next_batch(stream)
            if batch is None:
                self._streams = None
                raise StopIteration
            out.append({n: LoDTensor(arr, lod) for n, (arr, lod) in zip(names, batch)})
        if len(out) < len(self._places):        # fewer streams than places: not enough data to share
            self._streams = None
            raise StopIteration
        return out

    def next(self):
        return self.__next__()
