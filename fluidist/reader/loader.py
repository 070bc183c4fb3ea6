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
import warnings

from ..core import blocking_queue
from ..core.tensor import LoDTensor
from ..framework.dtypes import VarType
from ..framework.program import Variable, default_main_program
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


class GeneratorLoader:
    """What ``DataLoader.from_generator`` returns (see the module docstring)."""

    def __init__(self, feed_list=None, capacity=None, use_double_buffer=True, iterable=True, return_list=False,
                 drop_last=True):
        self._feed_list = _check_feed_list(feed_list, "DataLoader.from_generator")
        self._capacity = capacity
        self._use_double_buffer = bool(use_double_buffer)
        self._iterable = bool(iterable)
        self._return_list = bool(return_list)
        self._drop_last = bool(drop_last)
        self._batch_generator = None
        self._places = None
        self._queue = new_queue(capacity, unique_reader_name("lod_tensor_blocking_queue"))
        self._producer = Producer(self._queue, self._feed_list, "DataLoader %s" % self._queue.name)
        self._reader = None
        if not self._iterable:
            block = default_main_program().current_block()
            self._reader = add_reader_ops(block, self._queue, self._feed_list, unique_reader_name("create_py_reader"),
                                          unique_reader_name("double_buffer"), self._use_double_buffer)
            block.append_op("read", inputs={"Reader": [self._reader]}, outputs={"Out": self._feed_list},
                            attrs={"drop_last": self._drop_last})

    # ---------------------------------------------------------------- data sources
    def set_sample_generator(self, reader, batch_size, drop_last=True, places=None):
        return self.set_batch_generator(sample_to_batches(reader, self._feed_list, batch_size, drop_last), places)

    def set_sample_list_generator(self, reader, places=None):
        return self.set_batch_generator(sample_list_to_batches(reader, self._feed_list), places)

    def set_batch_generator(self, reader, places=None):
        if not callable(reader):
            raise TypeError("the data source must be a function returning an iterable (a generator function), "
                            "got %r" % type(reader).__name__)
        self._batch_generator = reader
        if self._iterable:
            self._places = _places(places, "DataLoader")
        return self

    @property
    def queue(self):
        return self._queue

    @property
    def iterable(self):
        return self._iterable

    def _need_source(self):
        if self._batch_generator is None:
            raise RuntimeError("the data source of this DataLoader has not been set: call set_sample_generator, "
                               "set_sample_list_generator or set_batch_generator first")

    # ---------------------------------------------------------------- iterable mode
    def __call__(self):
        return self

    def __iter__(self):
        if not self._iterable:
            raise TypeError("this DataLoader is not iterable (iterable=False): call start(), run the program until "
                            "fluid.core.EOFException, then reset()")
        self._need_source()
        self._producer.stop()
        self._producer.start(self._batch_generator)
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
        return [self._as_output(b) for b in per_place]

    def next(self):
        return self.__next__()

    def _as_output(self, batch):
        tensors = [LoDTensor(arr, lod) for arr, lod in batch]
        if self._return_list:
            return tensors
        return {v.name: t for v, t in zip(self._feed_list, tensors)}

    # ---------------------------------------------------------------- non-iterable mode
    def start(self):
        if self._iterable:
            raise TypeError("start() cannot be called when the DataLoader is iterable")
        self._need_source()
        self._producer.start(self._batch_generator)

    def reset(self):
        if self._iterable:
            raise TypeError("reset() cannot be called when the DataLoader is iterable")
        self._producer.stop()


class PyReader:
    """``fluid.io.PyReader``: the older name of ``DataLoader.from_generator``, with ``decorate_*``
    methods."""

    def __init__(self, feed_list=None, capacity=None, use_double_buffer=True, iterable=True, return_list=False):
        self._loader = GeneratorLoader(feed_list, capacity, use_double_buffer, iterable, return_list)

    @property
    def queue(self):
        return self._loader.queue

    @property
    def iterable(self):
        return self._loader.iterable

    def __call__(self):
        return self._loader()

    def __iter__(self):
        return self._loader.__iter__()

    def __next__(self):
        return self._loader.__next__()

    def start(self):
        self._loader.start()

    def reset(self):
        self._loader.reset()

    def decorate_sample_generator(self, sample_generator, batch_size, drop_last=True, places=None):
        self._loader.set_sample_generator(sample_generator, batch_size, drop_last, places)

    def decorate_sample_list_generator(self, reader, places=None):
        self._loader.set_sample_list_generator(reader, places)

    def decorate_batch_generator(self, reader, places=None):
        self._loader.set_batch_generator(reader, places)


class DataLoader:
    """Make loaders with ``DataLoader.from_generator(...)`` or ``DataLoader.from_dataset(...)``."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError("DataLoader(dataset=...) over a paddle.io.Dataset is not implemented in fluidist: "
                                  "use fluid.io.DataLoader.from_generator(feed_list, capacity, ...) or "
                                  "DataLoader.from_dataset(dataset, places)")

    @staticmethod
    def from_generator(feed_list=None, capacity=None, use_double_buffer=True, iterable=True, return_list=False,
                       use_multiprocess=False, drop_last=True):
        if use_multiprocess:
            _warn_once("DataLoader.from_generator(use_multiprocess=True) has no effect in fluidist (as in Paddle 1.8's "
                       "static graph mode): the generator runs in a thread")
        return GeneratorLoader(feed_list, capacity, use_double_buffer, iterable, return_list, drop_last)

    @staticmethod
    def from_dataset(dataset, places, drop_last=True):
        from .dataset_loader import DatasetLoader
        return DatasetLoader(dataset, places, drop_last)


def default_collate_fn(batch):
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
