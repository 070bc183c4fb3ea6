"""Weight normalisation (``WeightNormParamAttr``, https://arxiv.org/abs/1602.07868): a layer's weight
``w`` becomes ``g * v / ||v||`` with two parameters, the magnitude ``<name>_g`` and the direction
``<name>_v``, as Paddle 1.8 builds it.

``dim``: the norm is taken over every dimension but ``dim`` (over all of them when None), and ``g``
has ``v``'s shape with 1 everywhere but at ``dim``. The startup program initialises ``v`` with the
attr's initializer and ``g`` with ``||v||``, so that ``w`` starts as ``v``; the main program computes
``w`` from both with ops (abs, pow, reduce_sum, elementwise_div / mul, reshape2, transpose2), so
gradients reach ``g`` and ``v``.
"""
import copy

from ..framework import unique_name


def _temp(helper, block, dtype, what):
    return block.create_var(name=unique_name.generate_with_ignorable_key(".".join([helper.name, what])),
                            dtype=dtype, persistable=False)


def _norm(helper, block, dtype, x, out=None, dim=None):
    """``out = (sum |x|^2 over dim (all when None)) ^ 0.5``."""
    out = out if out is not None else _temp(helper, block, dtype, "weight_norm_norm")
    abs_out = _temp(helper, block, dtype, "weight_norm_abs")
    block.append_op("abs", inputs={"X": [x]}, outputs={"Out": [abs_out]})
    pow_out = _temp(helper, block, dtype, "weight_norm_pow")
    block.append_op("pow", inputs={"X": [abs_out]}, outputs={"Out": [pow_out]}, attrs={"factor": 2.0})
    sum_out = _temp(helper, block, dtype, "weight_norm_sum")
    block.append_op("reduce_sum", inputs={"X": [pow_out]}, outputs={"Out": [sum_out]},
                    attrs={"dim": dim if dim is not None else [0], "keep_dim": False, "reduce_all": dim is None})
    block.append_op("pow", inputs={"X": [sum_out]}, outputs={"Out": [out]}, attrs={"factor": 0.5})
    return out


def _reshape(helper, block, dtype, x, shape, out=None):
    out = out if out is not None else _temp(helper, block, dtype, "weight_norm_reshape")
    xshape = _temp(helper, block, dtype, "weight_norm_xshape")
    block.append_op("reshape2", inputs={"X": [x]}, outputs={"Out": [out], "XShape": [xshape]},
                    attrs={"shape": list(shape)})
    return out


def _transpose(helper, block, dtype, x, perm, out=None):
    out = out if out is not None else _temp(helper, block, dtype, "weight_norm_transpose")
    xshape = _temp(helper, block, dtype, "weight_norm_xshape")
    block.append_op("transpose2", inputs={"X": [x]}, outputs={"Out": [out], "XShape": [xshape]},
                    attrs={"axis": list(perm)})
    return out


def _norm_except_dim(helper, block, dtype, x, dim, out=None):
    """The norm of ``x`` over every dimension but ``dim`` (all when None), shaped as ``g``."""
    out = out if out is not None else _temp(helper, block, dtype, "weight_norm_norm")
    shape, rank = list(x.shape), len(x.shape)
    if dim is None:
        return _norm(helper, block, dtype, x, out)
    if dim in (0, rank - 1):
        rows = [shape[0], -1] if dim == 0 else [-1, shape[-1]]
        norm = _norm(helper, block, dtype, _reshape(helper, block, dtype, x, rows), dim=[1 - min(dim, 1)])
        keep = [1] * rank
        keep[dim] = shape[dim]
        return _reshape(helper, block, dtype, norm, keep, out)
    perm = list(range(rank))
    perm[0], perm[dim] = dim, 0
    moved = _transpose(helper, block, dtype, x, perm)
    norm = _norm(helper, block, dtype, _reshape(helper, block, dtype, moved, [shape[dim], -1]), dim=[1])
    back = _reshape(helper, block, dtype, norm, [shape[dim]] + [1] * (rank - 1))
    return _transpose(helper, block, dtype, back, perm, out)


def create_weight_normalized(helper, attr, shape, dtype, init):
    """The weight ``g * v / ||v||`` of ``attr`` (a WeightNormParamAttr), with ``<name>_g`` and
    ``<name>_v`` made in both programs (``init`` initialises ``v``)."""
    g_attr, v_attr = copy.deepcopy(attr), copy.deepcopy(attr)
    g_attr.name, v_attr.name = attr.name + "_g", attr.name + "_v"
    g_shape = [1] * len(shape)
    if attr.dim is not None:
        g_shape[attr.dim] = shape[attr.dim]
    startup = helper.startup_program.global_block()
    g0 = startup.create_parameter(shape=g_shape, dtype=dtype, **g_attr._to_kwargs())
    v0 = startup.create_parameter(shape=list(shape), dtype=dtype, **v_attr._to_kwargs())
    init(v0, startup)
    _norm_except_dim(helper, startup, dtype, v0, attr.dim, out=g0)
    _reshape(helper, startup, dtype, g0, g_shape, out=g0)

    main = helper.main_program.global_block()
    g = main.create_parameter(shape=g_shape, dtype=dtype, **g_attr._to_kwargs())
    v = main.create_parameter(shape=list(shape), dtype=dtype, **v_attr._to_kwargs())
    for p in (g, v):
        p.stop_gradient = not p.trainable
    block = helper.main_program.current_block()
    scale = _temp(helper, block, dtype, "weight_norm_scale")
    block.append_op("elementwise_div", inputs={"X": [g], "Y": [_norm_except_dim(helper, block, dtype, v, attr.dim)]},
                    outputs={"Out": [scale]}, attrs={"axis": -1})
    if attr.dim is not None:
        scale = _reshape(helper, block, dtype, scale, [shape[attr.dim]])
    w = _temp(helper, block, dtype, "weight_norm_w")
    block.append_op("elementwise_mul", inputs={"X": [v], "Y": [scale]}, outputs={"Out": [w]},
                    attrs={"axis": -1 if attr.dim is None else attr.dim})
    return w
