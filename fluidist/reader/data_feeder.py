"""DataFeeder: a list of samples (tuples, one field per feed variable) -> a feed dict."""
from __future__ import annotations

from typing import Any, Iterable, Sequence

import numpy as np

from ..compat import refused_class
from ..core.tensor import create_lod_tensor
from ..framework.program import Program, Variable, default_main_program


class DataFeeder:
    """Turns a batch of samples into the ``feed`` dict of ``Executor.run``.

    A sample is a tuple (or list) with one field per variable of ``feed_list``, in that order;
    :meth:`feed` stacks the fields of a batch column by column, converts them to each variable's dtype
    and reshapes them to its shape (the batch size in the first dimension). A variable with
    ``lod_level`` 1 gets a LoDTensor whose LoD holds each sample's sequence length.

    Paddle 1.8 difference: a LoD variable gets one LoD level (the samples' lengths), whatever its
    ``lod_level``; ``feed_parallel`` and ``decorate_reader`` do not exist (``CompiledProgram``
    splits one batch over its places).

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
        >>> batch = [(np.zeros(4), 3, [1, 2, 3]), (np.ones(4), 5, [4])]
        >>> feed = feeder.feed(batch)
        >>> feed["img"].shape, feed["label"].tolist(), feed["words"].lod()
        ((2, 2, 2), [[3], [5]], [[0, 3, 4]])
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

    def feed(self, iterable: Iterable[Sequence[Any]]) -> dict[str, Any]:
        """The feed dict of one batch: ``{variable name: array or LoDTensor}``. A sample with the wrong
        number of fields is an error naming the sample and the variables."""
        columns: list[list[Any]] = [[] for _ in self.feed_vars]
        for i, sample in enumerate(iterable):
            if len(sample) != len(self.feed_vars):
                raise ValueError("DataFeeder: sample %d has %d fields for %d feed variables (%s)"
                                 % (i, len(sample), len(self.feed_vars), [v.name for v in self.feed_vars]))
            for col, value in zip(columns, sample):
                col.append(value)
        out: dict[str, Any] = {}
        for var, col in zip(self.feed_vars, columns):
            if var.lod_level:
                seqs = [np.asarray(s, dtype=var.dtype).reshape(len(s), -1) for s in col]
                out[var.name] = create_lod_tensor(np.concatenate(seqs).astype(var.dtype),
                                                  [[len(s) for s in seqs]], self.place)
            else:
                arr = np.asarray(col, dtype=var.dtype)
                shape = [d if d >= 0 else -1 for d in var.shape] if var.shape else None
                if shape and shape[0] == -1:
                    arr = arr.reshape([len(col)] + [d if d >= 0 else -1 for d in shape[1:]])
                out[var.name] = arr
        return out


# ------------------------------------------------------------------ Paddle 1.8's argument checks
def convert_dtype(dtype: Any) -> str:
    """A dtype (string, NumPy dtype or VarType) as Paddle's string ('float32', 'int64', ...)."""
    from ..framework.dtypes import convert_dtype as _canonical
    return _canonical(dtype)


def check_type(input: Any, input_name: str, expected_type: Any, op_name: str, extra_message: str = "") -> None:
    """TypeError naming ``op_name`` and ``input_name`` unless ``input`` is an ``expected_type``."""
    if not isinstance(input, expected_type):
        raise TypeError("The type of '%s' in %s must be %s, but received %s. %s"
                        % (input_name, op_name, expected_type, type(input), extra_message))


def check_dtype(input_dtype: Any, input_name: str, expected_dtype: str | Sequence[str], op_name: str,
                extra_message: str = "") -> None:
    """TypeError unless ``input_dtype`` is one of ``expected_dtype`` (a name or a list of names)."""
    expected = [expected_dtype] if isinstance(expected_dtype, str) else list(expected_dtype)
    if convert_dtype(input_dtype) not in expected:
        raise TypeError("The data type of '%s' in %s must be %s, but received %s. %s"
                        % (input_name, op_name, expected, convert_dtype(input_dtype), extra_message))


def check_variable_and_dtype(input: Any, input_name: str, expected_dtype: str | Sequence[str], op_name: str,
                             extra_message: str = "") -> None:
    """``check_type(input, Variable)`` and ``check_dtype`` of its dtype."""
    check_type(input, input_name, Variable, op_name, extra_message)
    check_dtype(input.dtype, input_name, expected_dtype, op_name, extra_message)


DataToLoDTensorConverter = refused_class("fluid.data_feeder.DataToLoDTensorConverter",
                                         "use fluid.DataFeeder(feed_list, place).feed(samples)")
BatchedTensorProvider = refused_class("fluid.data_feeder.BatchedTensorProvider",
                                      "batch with fluid.io.batch(reader, n) and feed with fluid.DataFeeder")
