"""Reader ops: what a program runs to take its next batch from a Python data source.

``create_py_reader`` (in the startup program for ``layers.py_reader``, in the main program for a
non-iterable ``DataLoader``) and ``create_double_buffer_reader`` declare the reader variables, as in
Paddle's programs; ``read`` pops the next batch from the reader's queue into its ``Out`` variables
(with their LoD) and raises ``fluid.core.EOFException`` when the pass is over.

A reader variable names a :class:`~fluidist.core.blocking_queue.BlockingQueue` registered in this
process by the Python object that feeds it (``py_reader``, ``DataLoader``, ``PyReader``), so every
place of a data-parallel program, each in its own scope, reads from the same queue: each ``read``
takes a batch of its own, as each device did in Paddle.
"""
from ..core import blocking_queue
from ..framework.dtypes import VarType
from ..framework.registry import register_op

_HOST = 'pops batches a Python thread prepared on the host'

_READER_ATTRS: dict = {"shape_concat": [], "lod_levels": [], "dtypes": [], "need_check_feed": [], "ranks": []}


def _reader_infer(ctx):
    ctx.set_output("Out", None, type=VarType.READER)


@register_op("create_py_reader", inputs=["blocking_queue"], outputs=["Out"], attrs=dict(_READER_ATTRS),
             infer=_reader_infer, side_effect=True, inputs_are_names=True)
def create_py_reader(ctx, ins, attrs):
    """Check that the queue feeding this reader exists in this process (the reader itself is the
    queue: nothing to build)."""
    queue = ctx.op.inputs["blocking_queue"][0]
    blocking_queue.queue_by_name(queue, ctx.op.outputs["Out"][0])
    return {}


@register_op("create_double_buffer_reader", inputs=["UnderlyingReader"], outputs=["Out"], attrs={"place": ""},
             infer=_reader_infer, side_effect=True, inputs_are_names=True)
def create_double_buffer_reader(ctx, ins, attrs):
    """The double-buffered reader reads the queue of its underlying reader; the producer thread
    already runs ahead of the program by the queue's capacity."""
    return {}


def _read_infer(ctx):
    meta = blocking_queue.reader_meta(ctx.op.inputs["Reader"][0])
    if meta is None:
        return
    for i, (shape, dtype, lod_level) in enumerate(meta):
        ctx.set_output("Out", shape, dtype, lod_level, i=i)


@register_op("read", host=_HOST, inputs=["Reader"], outputs=["Out*"], attrs={"throw_eof_exp": True, "drop_last": True,
                                                                "infer_out": True},
             infer=_read_infer, side_effect=True, inputs_are_names=True, batch_from="Reader")
def read(ctx, ins, attrs):
    """Out = the next batch of the reader's queue (values and LoD); EOFException at the end of a pass."""
    reader = ctx.op.inputs["Reader"][0]
    queue = blocking_queue.reader_queue(reader)
    batch = queue.pop()
    outs = ctx.op.outputs["Out"]
    if len(batch) != len(outs):
        raise ValueError("read: reader %r gave %d values but the op reads %d variables %s"
                         % (reader, len(batch), len(outs), outs))
    xp = ctx.xp
    values = []
    for i, (array, lod) in enumerate(batch):
        values.append(array if xp.__name__ == "numpy" else xp.asarray(array))
        ctx.set_lod("Out", lod, i)
    return {"Out": values}
