"""``fluid.io.DataLoader`` and ``fluid.io.PyReader``: Python generators feeding programs.

*Iterable* loaders are Python iterables: ``for data in loader(): exe.run(prog, feed=data)``, where
``data`` is a list with one ``{name: LoDTensor}`` dict per place (a list of lists of LoDTensors
with ``return_list=True``). *Non-iterable* loaders add ``create_py_reader`` (and
``create_double_buffer_reader``) and a ``read`` op to the main program, which then runs without
feeds: ``loader.start()``, ``exe.run(prog)`` until ``fluid.core.EOFException``, ``loader.reset()``.

Either way a background thread runs the generator and fills a queue of ``capacity`` batches; an
error raised by the generator ends the pass in the training loop with that same error.
``use_double_buffer`` is accepted: the thread already reads ahead, and values are moved to the
device by the ``read`` op (or by the Executor's feed); ``use_multiprocess`` is accepted and has no
effect (the generator runs in a thread), as in Paddle 1.8's static graph mode.
"""
from __future__ import annotations

import warnings
from typing import Any, Callable, Iterable, Sequence

from ..core import blocking_queue
from ..core.tensor import LoDTensor
from ..framework.dtypes import VarType
from ..framework.program import Variable, default_main_program
from ..console.progress import Progress
from ..core import next_batch
from .base import DataLoaderBase
from .feeding import Producer, new_queue, sample_list_to_batches, sample_to_batches, unique_reader_name

__all__ = ["DataLoader", "PyReader", "default_collate_fn"]


def _check_feed_list(feed_list, who):
    if not feed_list:
        raise ValueError("%s: feed_list must be given (the variables the loader feeds, made by fluid.data)" % who)
    if not isinstance(feed_list, (list, tuple)) or not all(isinstance(v, Variable) for v in feed_list):
        raise TypeError("%s: feed_list must be a list of Variables, got %r" % (who, feed_list))
    return list(feed_list)


def _places(places, who):
    if places is None:
        raise ValueError("%s: places cannot be None when the loader is iterable (e.g. fluid.cpu_places())" % who)
    if not isinstance(places, (list, tuple)):
        places = [places]
    if not places:
        raise ValueError("%s: places is empty" % who)
    return list(places)


def add_reader_ops(block, queue, feed_vars, reader_name, double_buffer_name, use_double_buffer, startup_block=None):
    """The ops a non-iterable reader adds: ``create_py_reader`` (into ``startup_block`` when given,
    the reader variable then being declared in both programs, as Paddle's ``py_reader`` did),
    ``create_double_buffer_reader``, and ``read`` into ``feed_vars``; returns the reader variable
    the ``read`` op reads."""
    meta = [(tuple(v.shape) if v.shape is not None else None, v.dtype, v.lod_level) for v in feed_vars]
    attrs = {"shape_concat": [int(d) for v in feed_vars for d in (v.shape or ())],
             "ranks": [len(v.shape or ()) for v in feed_vars], "lod_levels": [v.lod_level for v in feed_vars],
             "dtypes": [v.dtype for v in feed_vars],
             "need_check_feed": [int(bool(v.need_check_feed)) for v in feed_vars]}
    create_in = startup_block if startup_block is not None else block
    q = create_in.create_var(name=queue.name, type=VarType.RAW, persistable=True, stop_gradient=True)
    reader = create_in.create_var(name=reader_name, type=VarType.READER, persistable=True, stop_gradient=True)
    create_in.append_op("create_py_reader", inputs={"blocking_queue": [q]}, outputs={"Out": [reader]}, attrs=attrs)
    if startup_block is not None:
        reader = block.create_var(name=reader_name, type=VarType.READER, persistable=True, stop_gradient=True)
    blocking_queue.register_reader(reader.name, queue, meta)
    if use_double_buffer:
        db = block.create_var(name=double_buffer_name, type=VarType.READER, persistable=True, stop_gradient=True)
        block.append_op("create_double_buffer_reader", inputs={"UnderlyingReader": [reader]}, outputs={"Out": [db]})
        blocking_queue.register_reader(db.name, queue, meta)
        reader = db
    return reader


class GeneratorLoader(DataLoaderBase):
    """What ``DataLoader.from_generator`` returns: a loader fed by a Python generator (see the
    module docstring); its data source is set with one of the ``set_*_generator`` methods.

    Args:
        feed_list: the data Variables the batches fill, in order.
        capacity: the number of batches the queue holds.
        use_double_buffer: accepted (the thread already reads ahead).
        iterable: a Python iterable (True), or (False) ``read`` ops appended to the main program
            where the loader is made: make it before the layers that use its variables.
        return_list: iterate lists of LoDTensors instead of ``{name: LoDTensor}`` dicts.
        drop_last: drop a last pass's incomplete set of per-place batches.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 2], dtype="float32")
        >>> total = fluid.layers.reduce_sum(x)
        >>> loader = fluid.io.DataLoader.from_generator(feed_list=[x], capacity=4)
        >>> def batches():
        ...     for i in range(3):
        ...         yield [np.full((2, 2), i, "float32")]
        >>> _ = loader.set_batch_generator(batches, places=fluid.cpu_places(1))
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> [exe.run(feed=data, fetch_list=[total])[0].tolist() for data in loader()]
        [[0.0], [4.0], [8.0]]
    """

    def __init__(self, feed_list: Sequence[Variable] | None = None, capacity: int | None = None,
                 use_double_buffer: bool = True, iterable: bool = True, return_list: bool = False,
                 drop_last: bool = True):
        self._feed_list = _check_feed_list(feed_list, "DataLoader.from_generator")
        self._capacity = capacity
        self._use_double_buffer = bool(use_double_buffer)
        self._iterable = bool(iterable)
        self._return_list = bool(return_list)
        self._drop_last = bool(drop_last)
        self._batch_generator: Callable[[], Iterable[Any]] | None = None
        self._places = None
        self._queue = new_queue(capacity, unique_reader_name("lod_tensor_blocking_queue"))
        self._producer = Producer(self._queue, self._feed_list, "DataLoader %s" % self._queue.name)
        self._progress: Progress | None = None
        self._reader = None
        if not self._iterable:
            block = default_main_program().current_block()
            self._reader = add_reader_ops(block, self._queue, self._feed_list, unique_reader_name("create_py_reader"),
                                          unique_reader_name("double_buffer"), self._use_double_buffer)
            block.append_op("read", inputs={"Reader": [self._reader]}, outputs={"Out": self._feed_list},
                            attrs={"drop_last": self._drop_last})

    # ---------------------------------------------------------------- data sources
    def set_sample_generator(self, reader: Callable[[], Iterable[Any]], batch_size: int, drop_last: bool = True,
                             places: Any = None) -> GeneratorLoader:
        """The data source: ``reader()`` yields samples (one value per feed variable), batched here
        by ``batch_size``; ``places`` (iterable mode) are where the batches go. Returns the loader."""
        return self.set_batch_generator(sample_to_batches(reader, self._feed_list, batch_size, drop_last), places)

    def set_sample_list_generator(self, reader: Callable[[], Iterable[Any]], places: Any = None) -> GeneratorLoader:
        """The data source: ``reader()`` yields lists of samples (``fluid.io.batch`` of a sample
        reader), one batch each. Returns the loader."""
        return self.set_batch_generator(sample_list_to_batches(reader, self._feed_list), places)

    def set_batch_generator(self, reader: Callable[[], Iterable[Any]], places: Any = None) -> GeneratorLoader:
        """The data source: ``reader()`` yields batches, one array (or LoDTensor) per feed variable.
        Returns the loader; TypeError when ``reader`` is not callable."""
        if not callable(reader):
            raise TypeError("the data source must be a function returning an iterable (a generator function), "
                            "got %r" % type(reader).__name__)
        self._batch_generator = reader
        self._queue.expect_start()
        if self._iterable:
            self._places = _places(places, "DataLoader")
        return self

    @property
    def queue(self) -> Any:
        """The blocking queue the background thread fills."""
        return self._queue

    @property
    def iterable(self) -> bool:
        """Whether the loader is iterated in Python (else it feeds the program's ``read`` op)."""
        return self._iterable

    def _need_source(self):
        if self._batch_generator is None:
            raise RuntimeError("the data source of this DataLoader has not been set: call set_sample_generator, "
                               "set_sample_list_generator or set_batch_generator first")

    @classmethod
    def _check_input_array(cls, item: Any) -> Any:
        """``item`` as one NumPy array; TypeError when it is not one regular array (nested lists of
        different lengths: make such data a LoDTensor with ``fluid.create_lod_tensor``)."""
        import numpy as np
        try:
            arr = np.asarray(item)
        except ValueError:          # (NumPy >= 1.24 refuses ragged lists itself)
            arr = None
        if arr is None or arr.dtype == object:
            raise TypeError("the batch data %s is not a regular array (nested lists of different lengths?): give "
                            "such data as a LoDTensor made by fluid.create_lod_tensor" % type(item).__name__)
        return arr

    def _reset(self) -> None:
        """End the pass now (either mode): the generator's thread stops and the queue is emptied."""
        self._producer.stop()

    # ---------------------------------------------------------------- iterable mode
    def __iter__(self):
        if not self._iterable:
            raise TypeError("this DataLoader is not iterable (iterable=False): call start(), run the program until "
                            "fluid.core.EOFException, then reset()")
        self._need_source()
        self._producer.stop()
        self._producer.start(self._batch_generator)
        self._progress = Progress("DataLoader")   # a line every FLUIDIST_PROGRESS seconds of a long pass
        return self

    def __next__(self):
        if not self._iterable:
            raise TypeError("this DataLoader is not iterable (iterable=False)")
        per_place = []
        try:
            for _ in self._places:
                per_place.append(self._queue.pop())
        except blocking_queue.EOFException:
            self._producer.stop()
            if per_place and not self._drop_last:
                return [self._as_output(b) for b in per_place]
            raise StopIteration from None
        except BaseException:
            self._producer.stop()
            raise
        if self._progress is not None:
            self._progress.step()
        out = [self._as_output(b) for b in per_place]
        if len(out) == 1 and not self._return_list:    # a run fed with it may look at the next batch
            next_batch.note(self._queue, out[0], [v.name for v in self._feed_list])
        return out

    def next(self) -> Any:
        """The next batch (``__next__``)."""
        return self.__next__()

    def _as_output(self, batch):
        tensors = [LoDTensor(arr, lod) for arr, lod in batch]
        if self._return_list:
            return tensors
        return {v.name: t for v, t in zip(self._feed_list, tensors)}

    # ---------------------------------------------------------------- non-iterable mode
    def start(self) -> None:
        """Non-iterable mode: start a pass (the program's ``read`` ops take its batches until
        ``fluid.core.EOFException``)."""
        if self._iterable:
            raise TypeError("start() cannot be called when the DataLoader is iterable")
        self._need_source()
        self._producer.start(self._batch_generator)

    def reset(self) -> None:
        """Non-iterable mode: end the pass (after ``EOFException``), ready for ``start`` again."""
        if self._iterable:
            raise TypeError("reset() cannot be called when the DataLoader is iterable")
        self._producer.stop()


class PyReader:
    """``fluid.io.PyReader``: the older name of ``DataLoader.from_generator``, with ``decorate_*``
    methods for the data source.

    Args:
        feed_list: the data Variables the batches fill, in order.
        capacity: the number of batches the queue holds.
        use_double_buffer: accepted (the thread already reads ahead).
        iterable: a Python iterable (True) or ``read`` ops in the program (False).
        return_list: iterate lists of LoDTensors instead of dicts.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 2], dtype="float32")
        >>> reader = fluid.io.PyReader(feed_list=[x], capacity=4, iterable=False)   # before x's readers
        >>> total = fluid.layers.reduce_sum(x)
        >>> def samples():
        ...     for i in range(4):
        ...         yield (np.array([i, i], "float32"),)
        >>> reader.decorate_sample_generator(samples, batch_size=2)
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> reader.start()
        >>> sums = []
        >>> try:
        ...     while True:
        ...         sums.append(exe.run(fetch_list=[total])[0].tolist())
        ... except fluid.core.EOFException:
        ...     reader.reset()
        >>> sums
        [[2.0], [10.0]]
    """

    def __init__(self, feed_list: Sequence[Variable] | None = None, capacity: int | None = None,
                 use_double_buffer: bool = True, iterable: bool = True, return_list: bool = False):
        self._loader = GeneratorLoader(feed_list, capacity, use_double_buffer, iterable, return_list)

    @property
    def queue(self) -> Any:
        """The blocking queue the background thread fills."""
        return self._loader.queue

    @property
    def iterable(self) -> bool:
        """Whether the reader is iterated in Python."""
        return self._loader.iterable

    def __call__(self):
        return self._loader()

    def __iter__(self):
        return self._loader.__iter__()

    def __next__(self):
        return self._loader.__next__()

    def start(self) -> None:
        """Non-iterable mode: start a pass."""
        self._loader.start()

    def reset(self) -> None:
        """Non-iterable mode: end the pass, ready for ``start`` again."""
        self._loader.reset()

    def decorate_sample_generator(self, sample_generator: Callable[[], Iterable[Any]], batch_size: int,
                                  drop_last: bool = True, places: Any = None) -> None:
        """``GeneratorLoader.set_sample_generator``."""
        self._loader.set_sample_generator(sample_generator, batch_size, drop_last, places)

    def decorate_sample_list_generator(self, reader: Callable[[], Iterable[Any]], places: Any = None) -> None:
        """``GeneratorLoader.set_sample_list_generator``."""
        self._loader.set_sample_list_generator(reader, places)

    def decorate_batch_generator(self, reader: Callable[[], Iterable[Any]], places: Any = None) -> None:
        """``GeneratorLoader.set_batch_generator``."""
        self._loader.set_batch_generator(reader, places)


class DataLoader:
    """Make loaders with ``DataLoader.from_generator(...)`` or ``DataLoader.from_dataset(...)``.

    Paddle 1.8 difference: ``use_multiprocess`` has no effect (the generator runs in a thread, as
    in Paddle 1.8's static graph mode), and ``DataLoader(dataset=...)`` (Paddle 2's) is refused.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 2], dtype="float32")
        >>> total = fluid.layers.reduce_sum(x)
        >>> loader = fluid.io.DataLoader.from_generator(feed_list=[x], capacity=4)
        >>> def batches():
        ...     for i in range(3):
        ...         yield [np.full((2, 2), i, "float32")]
        >>> _ = loader.set_batch_generator(batches, places=fluid.cpu_places(1))
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> [exe.run(feed=data, fetch_list=[total])[0].tolist() for data in loader()]
        [[0.0], [4.0], [8.0]]
    """

    def __init__(self, *args: Any, **kwargs: Any):
        raise NotImplementedError("DataLoader(dataset=...) over a paddle.io.Dataset is not implemented in fluidist: "
                                  "use fluid.io.DataLoader.from_generator(feed_list, capacity, ...) or "
                                  "DataLoader.from_dataset(dataset, places)")

    @staticmethod
    def from_generator(feed_list: Sequence[Variable] | None = None, capacity: int | None = None,
                       use_double_buffer: bool = True, iterable: bool = True, return_list: bool = False,
                       use_multiprocess: bool = False, drop_last: bool = True) -> GeneratorLoader:
        """A loader fed by a Python generator: a ``GeneratorLoader`` (its arguments), whose data
        source is set next with ``set_sample_generator``, ``set_sample_list_generator`` or
        ``set_batch_generator``. ``use_multiprocess`` warns once that it has no effect."""
        if use_multiprocess:
            _warn_once("DataLoader.from_generator(use_multiprocess=True) has no effect in fluidist (as in Paddle 1.8's "
                       "static graph mode): the generator runs in a thread")
        return GeneratorLoader(feed_list, capacity, use_double_buffer, iterable, return_list, drop_last)

    @staticmethod
    def from_dataset(dataset: Any, places: Any, drop_last: bool = True) -> Any:
        """A loader over a ``fluid.DatasetFactory`` dataset (its files and slots), one batch per
        place per step."""
        from .dataset_loader import DatasetLoader
        return DatasetLoader(dataset, places, drop_last)


def default_collate_fn(batch: Sequence[Sequence[Any]]) -> list:
    """Samples (tuples of fields) -> one array per field, stacked along a new first axis."""
    import numpy as np
    if not batch:
        raise ValueError("default_collate_fn: the batch is empty")
    fields = len(batch[0])
    return [np.stack([np.asarray(sample[i]) for sample in batch]) for i in range(fields)]


_warned: set = set()


def _warn_once(msg):
    if msg not in _warned:
        _warned.add(msg)
        warnings.warn(msg, stacklevel=3)
