"""Weight decay, per optimizer or per ParamAttr (the ParamAttr's wins)."""
from .framework.op_role import OpRole  # noqa: F401
from .framework.serialization import serializable


class WeightDecayRegularizer:
    def __call__(self, param, grad, block):
        raise NotImplementedError


def append_regularization_ops(params_grads, regularization=None):
    """For each (param, grad): grad += regularization term, under the param's optimize guard."""
    out = []
    for param, grad in params_grads:
        reg = getattr(param, "regularizer", None) or regularization
        if grad is None or reg is None:
            out.append((param, grad))
            continue
        program = param.block.program
        with program._optimized_guard([param, grad]):
            term = reg(param, grad, grad.block)
            new_grad = grad
            grad.block.append_op("elementwise_add", inputs={"X": [grad], "Y": [term]},
                                 outputs={"Out": [new_grad]})
        out.append((param, new_grad))
    return out


@serializable
class L2DecayRegularizer(WeightDecayRegularizer):
    def __init__(self, regularization_coeff=0.0):
        self._regularization_coeff = float(regularization_coeff)

    def __call__(self, param, grad, block):
        decay = block.create_var(name=param.name + "@L2DECAY", dtype=param.dtype, shape=param.shape)
        block.append_op("scale", inputs={"X": [param]}, outputs={"Out": [decay]},
                        attrs={"scale": self._regularization_coeff})
        return decay


@serializable
class L1DecayRegularizer(WeightDecayRegularizer):
    def __init__(self, regularization_coeff=0.0):
        self._regularization_coeff = float(regularization_coeff)

    def __call__(self, param, grad, block):
        sign = block.create_var(name=param.name + "@L1SIGN", dtype=param.dtype, shape=param.shape)
        decay = block.create_var(name=param.name + "@L1DECAY", dtype=param.dtype, shape=param.shape)
        block.append_op("sign", inputs={"X": [param]}, outputs={"Out": [sign]})
        block.append_op("scale", inputs={"X": [sign]}, outputs={"Out": [decay]},
                        attrs={"scale": self._regularization_coeff})
        return decay


L2Decay = L2DecayRegularizer
L1Decay = L1DecayRegularizer
