"""Data layers: ``fluid.data`` (exact shape, checked at feed time) and ``layers.data``."""
from __future__ import annotations

from typing import Any, Sequence

from ..framework.dtypes import VarType, convert_dtype
from ..framework.program import Variable, default_main_program
from .hints import DType


def data(name: str, shape: Sequence[int | None], dtype: str = "float32", lod_level: int = 0) -> Variable:
    """Declare an input that is fed at run time (``fluid.data``): ``None`` or -1 in ``shape`` is any size.

    Each run checks the fed value's dtype and shape against the declaration and names the variable
    when they do not fit. Unlike ``fluid.layers.data``, no batch dimension is added.

    Args:
        name: the feed's name (the key in ``Executor.run(feed={...})``).
        shape: the full shape, batch dimension included (``[None, 784]``).
        dtype: the dtype.
        lod_level: the number of sequence (LoD) levels the fed value carries.

    Returns:
        The data Variable.

    Examples:
        >>> image = fluid.data(name="image", shape=[None, 1, 28, 28], dtype="float32")
        >>> image.shape
        (-1, 1, 28, 28)
    """
    shape = [-1 if d is None else int(d) for d in shape]
    return default_main_program().global_block().create_var(
        name=name, shape=shape, dtype=convert_dtype(dtype), type=VarType.LOD_TENSOR, lod_level=lod_level,
        stop_gradient=True, is_data=True, need_check_feed=True)


def layers_data(name: str, shape: Sequence[int], append_batch_size: bool = True, dtype: DType = "float32",
                lod_level: int = 0, type: str = VarType.LOD_TENSOR, stop_gradient: bool = True) -> Variable:
    """Declare an input the Paddle 1.x way (``fluid.layers.data``): a batch dimension is prepended.

    Args:
        name: the feed's name.
        shape: the shape of one sample (-1 prepended unless it already has a -1 or None).
        append_batch_size: prepend the batch dimension.
        dtype: the dtype.
        lod_level: the number of sequence (LoD) levels the fed value carries.
        type: the variable type (a LoD tensor).
        stop_gradient: no gradient is computed for it.

    Returns:
        The data Variable.

    Examples:
        >>> x = fluid.layers.data(name="x", shape=[13], dtype="float32")
        >>> x.shape
        (-1, 13)
    """
    shape = [-1 if d is None else int(d) for d in shape]
    if any(d < 0 for d in shape):
        append_batch_size = False
    if append_batch_size:
        shape = [-1] + shape
    return default_main_program().global_block().create_var(
        name=name, shape=shape, dtype=convert_dtype(dtype), type=type, lod_level=lod_level,
        stop_gradient=stop_gradient, is_data=True, need_check_feed=False)


def load(out: Variable, file_path: str, load_as_fp16: bool | None = None) -> None:
    """Fill ``out`` from ``file_path`` when the program runs (a ``load`` op).

    Args:
        out: the Variable to fill.
        file_path: a file that a ``save`` op or ``fluid.io.save_vars`` wrote.
        load_as_fp16: convert the value to float16.

    Examples:
        >>> w = fluid.layers.create_tensor(dtype="float32")
        >>> fluid.layers.load(w, "/tmp/w.npy")
    """
    from ..framework.program import Variable
    if not isinstance(out, Variable):
        raise TypeError("load: out must be a Variable, got %r" % type(out).__name__)
    attrs: dict = {"file_path": str(file_path)}
    if load_as_fp16 is not None:
        attrs["load_as_fp16"] = bool(load_as_fp16)
    default_main_program().current_block().append_op("load", outputs={"Out": [out]}, attrs=attrs)


# ---------------------------------------------------------------------------------- py_reader
def _py_reader(capacity, shapes, dtypes, lod_levels, name, use_double_buffer, feed_list):
    from ..framework.program import Program, default_startup_program, program_guard
    from ..reader.feeding import Producer, new_queue, unique_reader_name
    from ..reader.loader import add_reader_ops
    if feed_list is not None:
        if not isinstance(feed_list, list):
            raise TypeError("feed_list should be a list of Variable instead of %r" % type(feed_list).__name__)
        feed_vars = list(feed_list)
    else:
        if shapes is None or dtypes is None:
            raise ValueError("py_reader: shapes and dtypes must be given")
        if len(shapes) != len(dtypes):
            raise ValueError("py_reader: %d shapes but %d dtypes" % (len(shapes), len(dtypes)))
        lod_levels = list(lod_levels) if lod_levels is not None else [0] * len(shapes)
        if len(lod_levels) != len(shapes):
            raise ValueError("py_reader: %d shapes but %d lod_levels" % (len(shapes), len(lod_levels)))
        with program_guard(Program(), Program()):     # stand-ins that the batches are checked against
            feed_vars = [layers_data(str(i), list(s), append_batch_size=False, dtype=d, lod_level=l)
                         for i, (s, d, l) in enumerate(zip(shapes, dtypes, lod_levels))]
    if name is None:
        queue_name, reader_name, db_name = (unique_reader_name("lod_tensor_blocking_queue"),
                                            unique_reader_name("create_py_reader"), unique_reader_name("double_buffer"))
    else:
        queue_name, reader_name, db_name = name + "_queue", name + "_reader", name + "_double_buffer"
    queue = new_queue(capacity, queue_name)
    reader = add_reader_ops(default_main_program().current_block(), queue, feed_vars, reader_name, db_name,
                            use_double_buffer, startup_block=default_startup_program().current_block())
    reader._feed_vars = feed_vars
    _attach_feeding(reader, Producer(queue, feed_vars, "py_reader %s" % reader.name), queue, feed_vars)
    return reader


def _attach_feeding(reader, producer, queue, feed_vars):
    """Give the reader Variable Paddle's py_reader methods and attributes: decorate_*, start, reset,
    queue, and ``thread`` (the thread feeding the queue, once started: it ends when the generator
    is done, the queue is closed or ``reset`` is called) with its ``exited`` flag."""
    from ..reader.feeding import sample_list_to_batches
    source = {}

    def decorate_batch_generator(func, places=None):
        source["batches"] = func
        queue.expect_start()

    def decorate_sample_list_generator(paddle_reader, places=None):
        source["batches"] = sample_list_to_batches(paddle_reader, feed_vars)
        queue.expect_start()

    def start():
        if "batches" not in source:
            raise RuntimeError("py_reader %r: no data source; call decorate_sample_list_generator or "
                               "decorate_batch_generator first" % reader.name)
        producer.start(source["batches"])
        reader.thread, reader.exited = producer.thread, False

    def reset():
        producer.stop()
        reader.exited = True

    reader.queue = queue
    reader.decorate_tensor_provider = reader.decorate_batch_generator = decorate_batch_generator
    reader.decorate_paddle_reader = reader.decorate_sample_list_generator = decorate_sample_list_generator
    reader.start = start
    reader.reset = reset
    reader.thread, reader.exited = None, False


def py_reader(capacity: int, shapes: Sequence[Sequence[int]], dtypes: Sequence[DType],
              lod_levels: Sequence[int] | None = None, name: str | None = None,
              use_double_buffer: bool = True) -> Variable:
    """A reader Variable fed from Python; ``read_file(reader)`` gives its data variables.

    Give it a generator with ``decorate_sample_list_generator`` / ``decorate_batch_generator``, then
    call ``start()`` at each pass and run until ``fluid.core.EOFException``, then ``reset()``.
    ``fluid.io.DataLoader.from_generator`` is the newer way to do the same.

    Args:
        capacity: the number of batches the queue holds.
        shapes: one shape per value of a batch.
        dtypes: one dtype per value.
        lod_levels: one LoD level per value (0 when None).
        name: the reader's name (generated when None).
        use_double_buffer: read ahead (the queue already does).

    Returns:
        The reader Variable.

    Examples:
        >>> reader = fluid.layers.py_reader(capacity=4, shapes=[[-1, 13], [-1, 1]], dtypes=["float32", "float32"])
        >>> x, y = fluid.layers.read_file(reader)
    """
    return _py_reader(capacity, shapes, dtypes, lod_levels, name, use_double_buffer, None)


def create_py_reader_by_data(capacity: int, feed_list: Sequence[Variable], name: str | None = None,
                             use_double_buffer: bool = True) -> Variable:
    """A ``py_reader`` whose values are described by existing data variables.

    Args:
        capacity: the number of batches the queue holds.
        feed_list: the data Variables, one per value of a batch.
        name: the reader's name (generated when None).
        use_double_buffer: read ahead (the queue already does).

    Returns:
        The reader Variable.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 13], dtype="float32")
        >>> reader = fluid.layers.create_py_reader_by_data(capacity=4, feed_list=[x])
    """
    return _py_reader(capacity, None, None, None, name, use_double_buffer, feed_list)


def double_buffer(reader: Variable, place: Any = None, name: str | None = None) -> Variable:
    """A reader that reads ``reader`` ahead (its queue already does; kept for Paddle's program structure).

    Args:
        reader: a reader Variable.
        place: accepted for Paddle's signature.
        name: the new reader's name (generated when None).

    Returns:
        The reader Variable.

    Examples:
        >>> reader = fluid.layers.py_reader(capacity=4, shapes=[[-1, 13]], dtypes=["float32"])
        >>> reader = fluid.layers.double_buffer(reader)
    """
    from ..core import blocking_queue
    from ..framework import unique_name
    from ..framework.dtypes import VarType
    block = default_main_program().current_block()
    meta = blocking_queue.reader_meta(reader.name)
    if meta is None:
        raise ValueError("double_buffer: %r is not a reader made by py_reader / create_py_reader_by_data"
                         % getattr(reader, "name", reader))
    out = block.create_var(name=name or unique_name.generate("create_double_buffer_reader"), type=VarType.READER,
                           persistable=True, stop_gradient=True)
    block.append_op("create_double_buffer_reader", inputs={"UnderlyingReader": [reader]}, outputs={"Out": [out]},
                    attrs={"place": str(place).upper() if place is not None else ""})
    blocking_queue.register_reader(out.name, blocking_queue.reader_queue(reader.name), meta)
    for attr in ("queue", "start", "reset", "decorate_tensor_provider", "decorate_batch_generator",
                 "decorate_paddle_reader", "decorate_sample_list_generator", "_feed_vars"):
        if hasattr(reader, attr):
            setattr(out, attr, getattr(reader, attr))
    return out


def read_file(reader: Variable) -> Variable | list[Variable]:
    """The data variables of ``reader``, one per value of its batches (a ``read`` op fills them).

    Args:
        reader: a reader Variable.

    Returns:
        One Variable, or a list of them when a batch has several values.

    Examples:
        >>> reader = fluid.layers.py_reader(capacity=4, shapes=[[-1, 13], [-1, 1]], dtypes=["float32", "int64"])
        >>> image, label = fluid.layers.read_file(reader)
    """
    from ..core import blocking_queue
    from ..framework import unique_name
    meta = blocking_queue.reader_meta(reader.name)
    if meta is None:
        raise ValueError("read_file: %r is not a reader (make one with layers.py_reader)" % getattr(reader, "name",
                                                                                                     reader))
    block = default_main_program().current_block()
    outs = [block.create_var(name=unique_name.generate("read_file"), shape=shape, dtype=dtype, lod_level=lod,
                             stop_gradient=True) for shape, dtype, lod in meta]
    block.append_op("read", inputs={"Reader": [reader]}, outputs={"Out": outs})
    return outs[0] if len(outs) == 1 else outs
