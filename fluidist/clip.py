"""Gradient clipping (per ParamAttr ``gradient_clip`` or global); the clip ops run under each
parameter's optimize guard, so the transpiler moves them to the pserver with the update."""
from .framework.serialization import serializable


class BaseGradientClipAttr:
    def _create_operators(self, param, grad):
        raise NotImplementedError


@serializable
class GradientClipByValue(BaseGradientClipAttr):
    def __init__(self, max, min=None):
        max = float(max)
        min = -max if min is None else float(min)
        if min > max:
            raise ValueError("GradientClipByValue: min (%s) must not exceed max (%s)" % (min, max))
        self.max, self.min = max, min

    def _create_operators(self, param, grad):
        block = grad.block
        out = block.create_var(name=grad.name + "@CLIP", dtype=grad.dtype, shape=grad.shape)
        block.append_op("clip", inputs={"X": [grad]}, outputs={"Out": [out]}, attrs={"min": self.min, "max": self.max})
        return param, out


def append_gradient_clip_ops(params_grads, global_clip=None):
    out = []
    for p, g in params_grads:
        clip = getattr(p, "gradient_clip_attr", None) or global_clip
        if g is None or clip is None:
            out.append((p, g))
            continue
        with p.block.program._optimized_guard([p, g]):
            out.append(clip._create_operators(p, g))
    return out
