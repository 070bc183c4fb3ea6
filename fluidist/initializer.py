"""Initializers: each prepends one op to the startup program's global block (Paddle's order: the
last created parameter's init op comes first). Seeds come from ``Program.random_seed`` when the
initializer has none, so the same seed gives the same parameters."""
import numpy as np

from .framework.dtypes import convert_dtype


class Initializer:
    def __init__(self, seed=0):
        self._seed = int(seed or 0)

    def _seed_for(self, block):
        return self._seed or block.program.random_seed

    def __call__(self, var, block):
        raise NotImplementedError

    @staticmethod
    def _fans(var):
        shape = var.shape
        if not shape:
            return 1, 1
        if len(shape) == 1:
            return shape[0], shape[0]
        if len(shape) == 2:
            return shape[0], shape[1]
        rf = int(np.prod(shape[2:]))
        return shape[1] * rf, shape[0] * rf


class ConstantInitializer(Initializer):
    def __init__(self, value=0.0, force_cpu=False):
        super().__init__()
        self._value = float(value)
        self._force_cpu = force_cpu

    def __call__(self, var, block):
        return block._prepend_op("fill_constant", outputs={"Out": [var.name]},
                                 attrs={"shape": list(var.shape), "value": self._value,
                                        "dtype": convert_dtype(var.dtype), "force_cpu": self._force_cpu})


class UniformInitializer(Initializer):
    def __init__(self, low=-1.0, high=1.0, seed=0):
        super().__init__(seed)
        if low > high:
            raise ValueError("UniformInitializer: low (%s) must not exceed high (%s)" % (low, high))
        self._low, self._high = float(low), float(high)

    def __call__(self, var, block):
        return block._prepend_op("uniform_random", outputs={"Out": [var.name]},
                                 attrs={"shape": list(var.shape), "min": self._low, "max": self._high,
                                        "seed": self._seed_for(block), "dtype": convert_dtype(var.dtype)})


class NormalInitializer(Initializer):
    def __init__(self, loc=0.0, scale=1.0, seed=0):
        super().__init__(seed)
        self._mean, self._std = float(loc), float(scale)

    _op = "gaussian_random"

    def __call__(self, var, block):
        return block._prepend_op(self._op, outputs={"Out": [var.name]},
                                 attrs={"shape": list(var.shape), "mean": self._mean, "std": self._std,
                                        "seed": self._seed_for(block), "dtype": convert_dtype(var.dtype)})


class TruncatedNormalInitializer(NormalInitializer):
    _op = "truncated_gaussian_random"


class XavierInitializer(Initializer):
    def __init__(self, uniform=True, fan_in=None, fan_out=None, seed=0):
        super().__init__(seed)
        self._uniform, self._fan_in, self._fan_out = uniform, fan_in, fan_out

    def __call__(self, var, block):
        fi, fo = self._fans(var)
        fi = self._fan_in if self._fan_in is not None else fi
        fo = self._fan_out if self._fan_out is not None else fo
        if self._uniform:
            limit = float(np.sqrt(6.0 / float(fi + fo)))
            return UniformInitializer(-limit, limit, self._seed)(var, block)
        return NormalInitializer(0.0, float(np.sqrt(2.0 / float(fi + fo))), self._seed)(var, block)


class MSRAInitializer(Initializer):
    def __init__(self, uniform=True, fan_in=None, seed=0):
        super().__init__(seed)
        self._uniform, self._fan_in = uniform, fan_in

    def __call__(self, var, block):
        fi, _ = self._fans(var)
        fi = self._fan_in if self._fan_in is not None else fi
        if self._uniform:
            limit = float(np.sqrt(6.0 / float(fi)))
            return UniformInitializer(-limit, limit, self._seed)(var, block)
        return NormalInitializer(0.0, float(np.sqrt(2.0 / float(fi))), self._seed)(var, block)


class NumpyArrayInitializer(Initializer):
    def __init__(self, value):
        super().__init__()
        self._value = np.asarray(value)

    def __call__(self, var, block):
        v = self._value
        dt = convert_dtype(var.dtype)
        key = {"float32": "fp32_values", "float64": "fp32_values", "int32": "int32_values",
               "int64": "int64_values", "bool": "bool_values"}[dt]
        if tuple(v.shape) != tuple(var.shape):
            raise ValueError("NumpyArrayInitializer: value of shape %s for %r of shape %s"
                             % (list(v.shape), var.name, list(var.shape)))
        return block._prepend_op("assign_value", outputs={"Out": [var.name]},
                                 attrs={"shape": list(v.shape), "dtype": dt, key: v.reshape(-1).tolist()})


Constant = ConstantInitializer
Uniform = UniformInitializer
Normal = NormalInitializer
TruncatedNormal = TruncatedNormalInitializer
Xavier = XavierInitializer
MSRA = MSRAInitializer
