"""``fluid.layers.collective``: the private helpers Paddle's collective training code calls to append
collective ops (``c_allreduce_*``, ``c_broadcast``, ``c_allgather``, ``c_reducescatter``, the stream
syncs). ``_allreduce`` and ``_broadcast`` built Paddle's older ``allreduce`` / ``broadcast`` ops;
here they build ``c_allreduce_<type>`` / ``c_broadcast`` on ring 0, which fluidist's collective
runtime runs."""
from ..framework import unique_name
from .layer_helper import LayerHelper

_REDUCE_TYPES = ("sum", "prod", "max", "min")


def _new_like(helper, x, suffix, stop_gradient=False):
    return helper.create_variable(name=unique_name.generate_with_ignorable_key(".".join([x.name, suffix])),
                                  shape=x.shape, dtype=x.dtype, type=x.type, persistable=x.persistable,
                                  stop_gradient=stop_gradient)


def _c_allreduce(x, out=None, reduce_type="sum", ring_id=0, use_calc_stream=False):
    """``out`` = the ``reduce_type`` of ``x`` over the ranks of ring ``ring_id``."""
    if reduce_type not in _REDUCE_TYPES:
        raise TypeError("_c_allreduce: reduce_type must be one of %s, got %r" % (list(_REDUCE_TYPES), reduce_type))
    op_type = "c_allreduce_" + reduce_type
    helper = LayerHelper("c_allreduce")
    if out is None:
        out = _new_like(helper, x, op_type)
    helper.append_op(op_type, inputs={"X": [x]}, outputs={"Out": [out]},
                     attrs={"ring_id": int(ring_id), "use_calc_stream": bool(use_calc_stream)})
    return out


def _allreduce(x, out=None, reduce_type="sum", sync_mode=False):
    """All-reduce of ``x`` over ring 0 (a ``c_allreduce_<reduce_type>`` op); ``sync_mode`` runs it on
    the calculation stream."""
    if out is None:
        out = _new_like(LayerHelper("allreduce"), x, "tmp", stop_gradient=True)
    return _c_allreduce(x, out, reduce_type, 0, bool(sync_mode))


def _c_broadcast(x, root=0, ring_id=0, use_calc_stream=False):
    """``x`` overwritten in place with rank ``root``'s value."""
    helper = LayerHelper("c_broadcast")
    helper.append_op("c_broadcast", inputs={"X": [x]}, outputs={"Out": [x]},
                     attrs={"root": int(root), "ring_id": int(ring_id), "use_calc_stream": bool(use_calc_stream)})
    return x


def _broadcast(x, root, sync_mode=False):
    """``x`` overwritten with rank ``root``'s value over ring 0."""
    return _c_broadcast(x, root, 0, bool(sync_mode))


def _c_allgather(x, nranks, ring_id=0, use_calc_stream=False):
    """The ``x`` of every rank concatenated along axis 0."""
    helper = LayerHelper("c_allgather")
    shape = list(x.shape)
    if shape and shape[0] > 0:
        shape[0] *= nranks
    out = helper.create_variable(name=unique_name.generate_with_ignorable_key(".".join([x.name, "c_allgather"])),
                                 shape=shape, dtype=x.dtype, type=x.type, persistable=x.persistable)
    helper.append_op("c_allgather", inputs={"X": [x]}, outputs={"Out": [out]},
                     attrs={"nranks": int(nranks), "ring_id": int(ring_id), "use_calc_stream": bool(use_calc_stream)})
    return out


def _c_reducescatter(x, nranks, ring_id=0, use_calc_stream=False):
    """This rank's 1/``nranks`` share (along axis 0) of the sum of ``x`` over the ranks."""
    if x.shape[0] > 0 and x.shape[0] % nranks:
        raise ValueError("_c_reducescatter: dimension 0 of %r (%d) is not divisible by nranks %d"
                         % (x.name, x.shape[0], nranks))
    helper = LayerHelper("c_reducescatter")
    shape = list(x.shape)
    if shape[0] > 0:
        shape[0] //= nranks
    out = helper.create_variable(name=unique_name.generate_with_ignorable_key(".".join([x.name, "c_reducescatter"])),
                                 shape=shape, dtype=x.dtype, type=x.type, persistable=x.persistable)
    helper.append_op("c_reducescatter", inputs={"X": [x]}, outputs={"Out": [out]},
                     attrs={"nranks": int(nranks), "ring_id": int(ring_id), "use_calc_stream": bool(use_calc_stream)})
    return out


def _c_sync_calc_stream(x):
    """Wait for the calculation stream to finish ``x``."""
    LayerHelper("c_sync_calc_stream").append_op("c_sync_calc_stream", inputs={"X": [x]}, outputs={"Out": [x]})
    return x


def _c_sync_comm_stream(x, ring_id):
    """Wait for ring ``ring_id``'s communication stream to finish ``x``."""
    LayerHelper("c_sync_comm_stream").append_op("c_sync_comm_stream", inputs={"X": [x]}, outputs={"Out": [x]},
                                                attrs={"ring_id": int(ring_id)})
    return x
