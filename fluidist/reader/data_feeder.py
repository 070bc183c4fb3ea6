"""DataFeeder: a list of samples (tuples, one field per feed variable) -> a feed dict."""
from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from ..compat import refused_class
from ..core.tensor import LoDTensor
from ..framework.program import Program, Variable, default_main_program


class DataToLoDTensorConverter:
    """Gathers one feed variable's field of each sample of a batch into one LoDTensor, as Paddle's.

    With ``lod_level`` L a field is nested L deep (a paragraph of sentences of words for L = 2): each
    level's lengths become a level of the LoD, and the innermost items are the rows. The rows are
    stacked into an array of ``dtype``; when its rank differs from ``shape``'s (a column of words fed
    as scalars for shape ``[-1, 1]``) it is reshaped to ``shape`` (ValueError naming both shapes when
    it cannot be); a ``shape`` with more than one unknown dimension is not used."""

    def __init__(self, place: Any, lod_level: int, shape: Sequence[int], dtype: Any) -> None:
        self.place = place
        self.lod_level = int(lod_level or 0)
        self.shape = list(shape) if shape is not None and sum(1 for d in shape if d < 0) <= 1 else None
        self.dtype = convert_dtype(dtype)
        self._reset()

    def _reset(self) -> None:
        self.data: list = []
        self.lod: list = [[] for _ in range(self.lod_level)]

    def feed(self, data: Any) -> None:
        """Add one sample's field."""
        self._feed(data, self.lod, self.lod_level)

    def _feed(self, data, lod, lod_level):
        if lod_level == 0:
            self.data.append(data)
            return
        lod[0].append(len(data))
        for item in data:
            self._feed(item, lod[1:], lod_level - 1)

    def done(self) -> LoDTensor:
        """The LoDTensor of the fields fed since the last ``done``."""
        try:
            arr = np.array(self.data, dtype=self.dtype)
        except ValueError as e:
            raise ValueError("DataFeeder: the rows of a batch differ in shape (%s); a field of lod_level %d "
                             "is nested %d deep" % (e, self.lod_level, self.lod_level)) from None
        if self.shape and arr.ndim != len(self.shape):
            try:
                arr = arr.reshape(self.shape)
            except ValueError:
                raise ValueError("DataFeeder: the data layer is declared with shape %s but the batch has shape "
                                 "%s" % (self.shape, list(arr.shape))) from None
        tensor = LoDTensor()
        tensor.set(arr, self.place)
        if self.lod_level > 0:
            tensor.set_recursive_sequence_lengths(self.lod)
        self._reset()
        return tensor


class DataFeeder:
    """Turns a batch of samples into the ``feed`` dict of ``Executor.run``.

    A sample is a tuple (or list) with one field per variable of ``feed_list``, in that order;
    :meth:`feed` gathers each variable's fields into a LoDTensor of its dtype (see
    :class:`DataToLoDTensorConverter`): rows reshaped to the variable's shape, and for a variable with
    ``lod_level`` L > 0 fields nested L deep whose lengths become the LoD.

    Args:
        feed_list: the data Variables (or their names, looked up in ``program``'s global block).
        place: where the LoDTensors live (CPUPlace or CUDAPlace).
        program: the program the names belong to (default: the default main program).

    Raises:
        TypeError: ``feed_list`` holds something other than Variables and names.

    Examples:
        >>> img = fluid.data(name="img", shape=[None, 2, 2], dtype="float32")
        >>> label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        >>> words = fluid.data(name="words", shape=[None, 1], dtype="int64", lod_level=1)
        >>> feeder = fluid.DataFeeder(feed_list=[img, label, words], place=fluid.CPUPlace())
        >>> batch = [(np.zeros((2, 2)), [3], [1, 2, 3]), (np.ones((2, 2)), [5], [4])]
        >>> feed = feeder.feed(batch)
        >>> feed["img"].shape(), np.array(feed["label"]).tolist(), feed["words"].lod()
        ([2, 2, 2], [[3], [5]], [[0, 3, 4]])
    """

    def __init__(self, feed_list: Sequence[Variable | str], place: Any, program: Program | None = None) -> None:
        program = program or default_main_program()
        self.feed_vars = []
        for v in feed_list:
            if isinstance(v, str):
                v = program.global_block().var(v)
            if not isinstance(v, Variable):
                raise TypeError("DataFeeder: feed_list holds Variables or names, got %r" % type(v).__name__)
            self.feed_vars.append(v)
        self.place = place

    def feed(self, iterable: Iterable[Sequence[Any]]) -> dict[str, LoDTensor]:
        """The feed dict of one batch: ``{variable name: LoDTensor}``. A sample with the wrong number of
        fields is an error naming the sample and the variables."""
        converters = [DataToLoDTensorConverter(self.place, v.lod_level, v.shape, v.dtype) for v in self.feed_vars]
        for i, sample in enumerate(iterable):
            if len(sample) != len(converters):
                raise ValueError("DataFeeder: sample %d has %d fields for %d feed variables (%s)"
                                 % (i, len(sample), len(converters), [v.name for v in self.feed_vars]))
            for converter, field in zip(converters, sample):
                converter.feed(field)
        return {v.name: c.done() for v, c in zip(self.feed_vars, converters)}

    def feed_parallel(self, iterable: Sequence[Iterable[Sequence[Any]]],
                      num_places: int | None = None) -> Iterator[dict[str, LoDTensor]]:
        """One feed dict per place from one batch per place (``len(iterable)`` must be the number of
        places: ``num_places``, else CPU_NUM or the visible GPUs)."""
        places = self._places(num_places)
        if len(iterable) != len(places):
            raise ValueError("DataFeeder.feed_parallel: %d batches for %d places; give one batch per place"
                             % (len(iterable), len(places)))
        saved = self.place
        try:
            for place, batch in zip(places, iterable):
                self.place = place
                yield self.feed(batch)
        finally:
            self.place = saved

    def _places(self, num_places):
        from ..device.base import Place
        from ..device.places import cpu_places, cuda_places
        on_gpu = isinstance(self.place, Place) and self.place.is_device   # anything else: the CPU, as Paddle
        if num_places is not None:
            return [type(self.place)(i) if on_gpu else type(self.place)() for i in range(int(num_places))]
        return cuda_places() if on_gpu else cpu_places()

    def decorate_reader(self, reader: Callable[[], Iterable[Any]], multi_devices: bool, num_places: int | None = None,
                        drop_last: bool = True) -> Callable[[], Iterator[Any]]:
        """A reader of feed dicts from a reader of batches: with ``multi_devices`` each item is a list of
        feed dicts, one per place, from as many consecutive batches (a last incomplete group is dropped;
        ``drop_last=False`` then raises ValueError, as in Paddle)."""
        def feeds():
            if not multi_devices:
                for batch in reader():
                    yield self.feed(batch)
                return
            count = len(self._places(num_places))
            group = []
            for batch in reader():
                group.append(batch)
                if len(group) == count:
                    yield list(self.feed_parallel(group, count))
                    group = []
            if group and not drop_last:
                raise ValueError("DataFeeder.decorate_reader: %d batches left over for %d places; keeping them "
                                 "(drop_last=False) is not supported" % (len(group), count))
        return feeds


# ------------------------------------------------------------------ Paddle 1.8's argument checks
def convert_dtype(dtype: Any) -> str:
    """A dtype (string, NumPy dtype or VarType) as Paddle's string ('float32', 'int64', ...)."""
    from ..framework.dtypes import convert_dtype as _canonical
    return _canonical(dtype)


def _type_names(expected_type: Any) -> str:
    """``Variable`` / ``list or tuple`` for a type or a tuple of types."""
    types = expected_type if isinstance(expected_type, tuple) else (expected_type,)
    return " or ".join(getattr(t, "__name__", str(t)) for t in types)


def check_type(input: Any, input_name: str, expected_type: Any, op_name: str, extra_message: str = "") -> None:
    """TypeError naming ``op_name`` and ``input_name`` unless ``input`` is an ``expected_type``."""
    if not isinstance(input, expected_type):
        raise TypeError("%s: argument '%s' takes %s, got %s%s"
                        % (op_name, input_name, _type_names(expected_type), type(input).__name__,
                           (" (%s)" % extra_message) if extra_message else ""))


def check_dtype(input_dtype: Any, input_name: str, expected_dtype: str | Sequence[str], op_name: str,
                extra_message: str = "") -> None:
    """TypeError unless ``input_dtype`` is one of ``expected_dtype`` (a name or a list of names)."""
    expected = [expected_dtype] if isinstance(expected_dtype, str) else list(expected_dtype)
    if convert_dtype(input_dtype) not in expected:
        raise TypeError("%s: argument '%s' takes dtype %s, got %s%s"
                        % (op_name, input_name, " or ".join(expected), convert_dtype(input_dtype),
                           (" (%s)" % extra_message) if extra_message else ""))


def check_variable_and_dtype(input: Any, input_name: str, expected_dtype: str | Sequence[str], op_name: str,
                             extra_message: str = "") -> None:
    """``check_type(input, Variable)`` and ``check_dtype`` of its dtype."""
    check_type(input, input_name, Variable, op_name, extra_message)
    check_dtype(input.dtype, input_name, expected_dtype, op_name, extra_message)


BatchedTensorProvider = refused_class("fluid.data_feeder.BatchedTensorProvider",
                                      "batch with fluid.io.batch(reader, n) and feed with fluid.DataFeeder")
