"""Data layers: ``fluid.data`` (exact shape, checked at feed time) and ``layers.data``."""
from __future__ import annotations

from ..framework.dtypes import VarType, convert_dtype
from typing import Sequence

from ..framework.program import Variable, default_main_program


def data(name: str, shape: Sequence[int | None], dtype: str = "float32", lod_level: int = 0) -> Variable:
    """A variable fed at run time; ``None`` or -1 in ``shape`` is any size. Feeds are checked for
    dtype and shape against it."""
    shape = [-1 if d is None else int(d) for d in shape]
    return default_main_program().global_block().create_var(
        name=name, shape=shape, dtype=convert_dtype(dtype), type=VarType.LOD_TENSOR, lod_level=lod_level,
        stop_gradient=True, is_data=True, need_check_feed=True)


def layers_data(name, shape, append_batch_size=True, dtype="float32", lod_level=0, type=VarType.LOD_TENSOR,
                stop_gradient=True):
    """Paddle's ``layers.data``: prepends a batch dimension (-1) unless ``shape`` has one already."""
    shape = [-1 if d is None else int(d) for d in shape]
    if any(d < 0 for d in shape):
        append_batch_size = False
    if append_batch_size:
        shape = [-1] + shape
    return default_main_program().global_block().create_var(
        name=name, shape=shape, dtype=convert_dtype(dtype), type=type, lod_level=lod_level,
        stop_gradient=stop_gradient, is_data=True, need_check_feed=False)


def load(out, file_path, load_as_fp16=None):
    """Fill the Variable ``out`` from ``file_path`` at run time (a ``load`` op; the file is one that a
    ``save`` op or ``fluid.io.save_vars`` wrote). ``load_as_fp16`` converts the value to float16."""
    from ..framework.program import Variable
    if not isinstance(out, Variable):
        raise TypeError("load: out must be a Variable, got %r" % type(out).__name__)
    attrs = {"file_path": str(file_path)}
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
    """Give the reader Variable Paddle's py_reader methods: decorate_*, start, reset, queue."""
    from ..reader.feeding import sample_list_to_batches
    source = {}

    def decorate_batch_generator(func, places=None):
        source["batches"] = func

    def decorate_sample_list_generator(paddle_reader, places=None):
        source["batches"] = sample_list_to_batches(paddle_reader, feed_vars)

    def start():
        if "batches" not in source:
            raise RuntimeError("py_reader %r: no data source; call decorate_sample_list_generator or "
                               "decorate_batch_generator first" % reader.name)
        producer.start(source["batches"])

    def reset():
        producer.stop()

    reader.queue = queue
    reader.decorate_tensor_provider = reader.decorate_batch_generator = decorate_batch_generator
    reader.decorate_paddle_reader = reader.decorate_sample_list_generator = decorate_sample_list_generator
    reader.start = start
    reader.reset = reset


def py_reader(capacity, shapes, dtypes, lod_levels=None, name=None, use_double_buffer=True):
    """A reader Variable fed from Python (``read_file(reader)`` gives its data variables):
    ``decorate_sample_list_generator`` / ``decorate_batch_generator``, then ``start()`` each pass,
    run until ``fluid.core.EOFException``, ``reset()``."""
    return _py_reader(capacity, shapes, dtypes, lod_levels, name, use_double_buffer, None)


def create_py_reader_by_data(capacity, feed_list, name=None, use_double_buffer=True):
    """``py_reader`` whose values are described by existing data variables (``feed_list``)."""
    return _py_reader(capacity, None, None, None, name, use_double_buffer, feed_list)


def double_buffer(reader, place=None, name=None):
    """A reader reading ``reader`` ahead (its queue already does; the op is kept for Paddle's
    program structure)."""
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


def read_file(reader):
    """The data variables of ``reader`` (one per value of its batches), filled by a ``read`` op."""
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
