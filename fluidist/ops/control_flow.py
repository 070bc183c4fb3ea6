"""Control-flow ops: comparisons, logical ops and ``conditional_block`` (the op under
``layers.Switch``, ``layers.cond`` and ``piecewise_decay``)."""
from .math import _bcast
from ..framework.registry import register_op


def _cmp_infer(ctx):
    xs, ys = ctx.input_shape("X"), ctx.input_shape("Y")
    out = xs if xs is not None and (ys is None or len(xs) >= len(ys)) else ys
    ctx.set_output("Out", out, "bool", ctx.input_lod_level("X"))


def _compare(type, fn):
    """``Out = X <op> Y`` (bool), Y broadcast against X by Paddle's ``axis`` rule."""
    def kernel(ctx, ins, attrs):
        x, y = ins["X"], ins["Y"]
        if y.ndim > x.ndim:
            return {"Out": fn(_bcast(y, x, attrs["axis"]), y)}
        return {"Out": fn(x, _bcast(x, y, attrs["axis"]))}
    kernel.__doc__ = "Out = X %s Y, elementwise, as bool." % type
    register_op(type, inputs=["X", "Y"], outputs=["Out"], attrs={"axis": -1, "force_cpu": False},
                infer=_cmp_infer)(kernel)


_compare("less_than", lambda x, y: x < y)
_compare("less_equal", lambda x, y: x <= y)
_compare("greater_than", lambda x, y: x > y)
_compare("greater_equal", lambda x, y: x >= y)
_compare("equal", lambda x, y: x == y)
_compare("not_equal", lambda x, y: x != y)


def _logical(type, fn, unary=False):
    if unary:
        register_op(type, inputs=["X"], outputs=["Out"], infer=_cmp_infer)(
            lambda ctx, ins, attrs: {"Out": fn(ctx.xp, ins["X"].astype(bool), None)})
    else:
        register_op(type, inputs=["X", "Y"], outputs=["Out"], infer=_cmp_infer)(
            lambda ctx, ins, attrs: {"Out": fn(ctx.xp, ins["X"].astype(bool), ins["Y"].astype(bool))})


_logical("logical_and", lambda xp, x, y: xp.logical_and(x, y))
_logical("logical_or", lambda xp, x, y: xp.logical_or(x, y))
_logical("logical_xor", lambda xp, x, y: xp.logical_xor(x, y))
_logical("logical_not", lambda xp, x, y: xp.logical_not(x), unary=True)


def _cond_holds(ctx, conds, is_scalar):
    if is_scalar:
        if len(conds) != 1 or conds[0].size != 1:
            raise ValueError("conditional_block: with is_scalar_condition the condition %r must hold one "
                             "value, got shape %s" % (ctx.op.inputs["Cond"][0], list(conds[0].shape)))
        return bool(conds[0].reshape(()))
    # Paddle's rule without a scalar condition: run when every Cond tensor is non-empty
    return all(c is not None and c.size > 0 for c in conds)


@register_op("conditional_block", inputs=["Cond*", "Input*?"], outputs=["Out*?", "Scope?"],
             attrs={"sub_block": None, "is_scalar_condition": False}, side_effect=True)
def conditional_block(ctx, ins, attrs):
    """Run ``sub_block`` when the condition holds.

    The sub-block runs in the scope of the enclosing block (Paddle used a child scope kept in the
    ``Scope`` output); its ops then write the ``Out`` variables where they live, and temporaries of
    the sub-block stay in that scope. ``Input`` lists what the sub-block reads from outside (so that
    graph passes see the dependency); the kernel itself does not need it.
    """
    sub = attrs["sub_block"]
    if sub is None:
        raise ValueError("conditional_block: attr 'sub_block' is not set")
    if _cond_holds(ctx, ins["Cond"], attrs["is_scalar_condition"]):
        ctx.run_block(sub)
    return {}
