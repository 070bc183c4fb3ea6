"""Optimizer update ops. Dense updates are in place on the parameter's array (cheap for big models);
SelectedRows gradients update only their rows."""
from .registry import register_op
from ..executor.tensor import SelectedRows


def _lr(ins):
    return ins["LearningRate"].reshape(()) if ins["LearningRate"].ndim else ins["LearningRate"]


@register_op("sgd", inputs=["Param", "Grad", "LearningRate"], outputs=["ParamOut"])
def sgd(ctx, ins, attrs):
    p, g = ins["Param"], ins["Grad"]
    lr = _lr(ins)
    if isinstance(g, SelectedRows):
        g = g.merged(ctx.xp)
        p[g.rows] -= (lr * g.value).astype(p.dtype, copy=False)
        return {"ParamOut": p}
    p -= (lr * g).astype(p.dtype, copy=False)
    return {"ParamOut": p}
