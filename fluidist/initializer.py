"""Initializers: each prepends one op to the startup program's global block (Paddle's order: the
last created parameter's init op comes first). Seeds come from ``Program.random_seed`` when the
initializer has none, so the same seed gives the same parameters.

An initializer is given to a layer through ``param_attr`` / ``bias_attr``
(``fluid.ParamAttr(initializer=...)``, or the initializer itself)."""
from __future__ import annotations

import contextlib
from typing import Any, Iterator, Sequence

import numpy as np

from .framework.dtypes import convert_dtype

# Paddle 1.8's __all__ (and the base class): what a star import and a type checker take from here
__all__ = ["Constant", "Uniform", "Normal", "TruncatedNormal", "Xavier", "Bilinear", "MSRA", "ConstantInitializer",
           "UniformInitializer", "NormalInitializer", "TruncatedNormalInitializer", "XavierInitializer",
           "BilinearInitializer", "MSRAInitializer", "NumpyArrayInitializer", "force_init_on_cpu", "init_on_cpu",
           "Initializer"]

_force_cpu = [False]


def force_init_on_cpu() -> bool:
    """Whether constant initialisers are forced to fill on the CPU (inside ``init_on_cpu()``)."""
    return _force_cpu[0]


@contextlib.contextmanager
def init_on_cpu() -> Iterator[None]:
    """Within this block, constants (``fill_constant`` from ConstantInitializer) are made with
    ``force_cpu=True``, as in Paddle 1.x (used for learning-rate counters)."""
    before = _force_cpu[0]
    _force_cpu[0] = True
    try:
        yield
    finally:
        _force_cpu[0] = before


class Initializer:
    """The base of initializers: ``init(var, block)`` prepends the op that fills ``var`` to
    ``block`` (a startup program's global block).

    Args:
        seed: the random seed; 0 takes ``Program.random_seed`` (itself 0: a fresh seed each run).

    Examples:
        >>> class Ones(fluid.initializer.Initializer):
        ...     def __call__(self, var: Any, block: Any) -> Any:
        ...         return fluid.initializer.Constant(1.0)(var, block)
        >>> x = fluid.data(name="x", shape=[None, 2], dtype="float32")
        >>> y = fluid.layers.fc(x, size=1, param_attr=Ones())
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> _ = exe.run(fluid.default_startup_program())
        >>> np.array(fluid.global_scope().find_var("fc_0.w_0").get_tensor()).ravel().tolist()
        [1.0, 1.0]
    """

    def __init__(self, seed: int = 0):
        self._seed = int(seed or 0)

    def _seed_for(self, block):
        return self._seed or block.program.random_seed

    def __call__(self, var: Any, block: Any) -> Any:
        """Prepend the op that fills ``var`` to ``block``; returns the op."""
        raise NotImplementedError

    @staticmethod
    def _fill(var, block, op_type, attrs, prefix, prepend=True):
        """Add the op that fills ``var`` (``attrs`` without ``dtype``; prepended, or appended). As in Paddle
        1.8, a float16 ``var`` is filled through a float32 temporary ``<prefix>.<var>.tmp_<n>`` and a
        ``cast`` appended after it. Returns the filling op."""
        from .framework import unique_name
        out, dtype = var, convert_dtype(var.dtype)
        if dtype == "float16":
            out = block.create_var(name=unique_name.generate(".".join([prefix, var.name, "tmp"])),
                                   shape=var.shape, dtype="float32", persistable=False)
            dtype = "float32"
        add = block._prepend_op if prepend else block.append_op
        op = add(op_type, outputs={"Out": [out.name]}, attrs=dict(attrs, dtype=dtype))
        if out is not var:
            block.append_op("cast", inputs={"X": [out.name]}, outputs={"Out": [var.name]},
                            attrs={"in_dtype": "float32", "out_dtype": "float16"})
        return op

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
    """Fills the parameter with one value (``fill_constant``); ``Constant`` is its short name.

    Args:
        value: the value.
        force_cpu: make the value in host memory even when the program runs on a GPU.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 2], dtype="float32")
        >>> y = fluid.layers.fc(x, size=2, param_attr=fluid.initializer.Constant(0.5))
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> _ = exe.run(fluid.default_startup_program())
        >>> np.array(fluid.global_scope().find_var("fc_0.w_0").get_tensor()).tolist()
        [[0.5, 0.5], [0.5, 0.5]]
    """

    def __init__(self, value: float = 0.0, force_cpu: bool = False):
        super().__init__()
        self._value = float(value)
        self._force_cpu = force_cpu

    def __call__(self, var: Any, block: Any) -> Any:
        return self._fill(var, block, "fill_constant",
                          {"shape": list(var.shape), "value": self._value,
                           "force_cpu": bool(self._force_cpu or force_init_on_cpu())}, "constant_init")


class UniformInitializer(Initializer):
    """Fills the parameter with values drawn uniformly from ``[low, high)``; ``Uniform`` is its
    short name.

    Args:
        low: the lower bound.
        high: the upper bound.
        seed: the random seed (0: ``Program.random_seed``).
        diag_num: how many diagonal elements to set to ``diag_val`` after the draw (0: none); the
            i-th is element ``i * (diag_step + 1)`` of the flattened parameter.
        diag_step: the step between two diagonal elements (the width of a square matrix).
        diag_val: the value of the diagonal elements.

    Raises:
        AssertionError: as Paddle 1.8 asserts: ``low > high``, or only one of ``diag_num`` /
            ``diag_step`` positive.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 8], dtype="float32")
        >>> y = fluid.layers.fc(x, size=8, param_attr=fluid.initializer.Uniform(-0.1, 0.1, seed=1))
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> _ = exe.run(fluid.default_startup_program())
        >>> w = np.array(fluid.global_scope().find_var("fc_0.w_0").get_tensor())
        >>> bool((np.abs(w) <= 0.1).all())
        True
    """

    def __init__(self, low: float = -1.0, high: float = 1.0, seed: int = 0, diag_num: int = 0,
                 diag_step: int = 0, diag_val: float = 1.0):
        super().__init__(seed)
        if low > high:
            raise AssertionError("UniformInitializer: low (%s) must not exceed high (%s)" % (low, high))
        if (diag_num > 0 or diag_step > 0) and not (diag_num > 0 and diag_step > 0):
            raise AssertionError("UniformInitializer: diag_num (%s) and diag_step (%s) must both be positive "
                                 "to set a diagonal" % (diag_num, diag_step))
        self._low, self._high = float(low), float(high)
        self._diag = {"diag_num": int(diag_num), "diag_step": int(diag_step), "diag_val": float(diag_val)}

    def __call__(self, var: Any, block: Any, _prefix: str = "uniform_random") -> Any:
        return self._fill(var, block, "uniform_random", dict(self._diag, shape=list(var.shape), min=self._low,
                                                             max=self._high, seed=self._seed_for(block)), _prefix)


class NormalInitializer(Initializer):
    """Fills the parameter with values drawn from a normal distribution; ``Normal`` is its short name.

    Args:
        loc: the mean.
        scale: the standard deviation.
        seed: the random seed (0: ``Program.random_seed``).

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 8], dtype="float32")
        >>> y = fluid.layers.fc(x, size=8, param_attr=fluid.initializer.Normal(0.0, 0.02))
    """

    def __init__(self, loc: float = 0.0, scale: float = 1.0, seed: int = 0):
        super().__init__(seed)
        self._mean, self._std = float(loc), float(scale)

    _op = "gaussian_random"

    def __call__(self, var: Any, block: Any, _prefix: str = "") -> Any:
        return self._fill(var, block, self._op, {"shape": list(var.shape), "mean": self._mean, "std": self._std,
                                                 "seed": self._seed_for(block)}, _prefix or self._op)


class TruncatedNormalInitializer(NormalInitializer):
    """Like ``NormalInitializer``, with values beyond two standard deviations drawn again, as
    Paddle does; ``TruncatedNormal`` is its short name.

    Args:
        loc: the mean.
        scale: the standard deviation.
        seed: the random seed (0: ``Program.random_seed``).

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 8], dtype="float32")
        >>> y = fluid.layers.fc(x, size=8, param_attr=fluid.initializer.TruncatedNormal(0.0, 0.1))
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> _ = exe.run(fluid.default_startup_program())
        >>> w = np.array(fluid.global_scope().find_var("fc_0.w_0").get_tensor())
        >>> bool((np.abs(w) <= 0.2 + 1e-6).all())
        True
    """

    _op = "truncated_gaussian_random"


class XavierInitializer(Initializer):
    """Glorot / Xavier initialisation, the default for weights; ``Xavier`` is its short name.

    Uniform in ``[-sqrt(6 / (fan_in + fan_out)), +...]``, or normal with standard deviation
    ``sqrt(2 / (fan_in + fan_out))``. The fans are read from the shape as Paddle reads them (a
    matrix ``[in, out]``; a filter ``[out, in, k...]`` counts ``k...`` in both).

    Args:
        uniform: draw uniformly (True) or from a normal distribution.
        fan_in: overrides the fan-in read from the shape.
        fan_out: overrides the fan-out.
        seed: the random seed (0: ``Program.random_seed``).

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 8], dtype="float32")
        >>> y = fluid.layers.fc(x, size=4, param_attr=fluid.initializer.Xavier(uniform=False))
    """

    def __init__(self, uniform: bool = True, fan_in: float | None = None, fan_out: float | None = None,
                 seed: int = 0):
        super().__init__(seed)
        self._uniform, self._fan_in, self._fan_out = uniform, fan_in, fan_out

    def __call__(self, var: Any, block: Any) -> Any:
        fi, fo = self._fans(var)
        fi = self._fan_in if self._fan_in is not None else fi
        fo = self._fan_out if self._fan_out is not None else fo
        if self._uniform:
            limit = float(np.sqrt(6.0 / float(fi + fo)))
            return UniformInitializer(-limit, limit, self._seed)(var, block, "xavier_init")
        return NormalInitializer(0.0, float(np.sqrt(2.0 / float(fi + fo))), self._seed)(var, block, "xavier_init")


class MSRAInitializer(Initializer):
    """He / MSRA initialisation, for layers followed by ReLU; ``MSRA`` is its short name.

    Uniform in ``[-sqrt(6 / fan_in), +...]``, or normal with standard deviation
    ``sqrt(2 / fan_in)``.

    Args:
        uniform: draw uniformly (True) or from a normal distribution.
        fan_in: overrides the fan-in read from the shape.
        seed: the random seed (0: ``Program.random_seed``).

    Examples:
        >>> img = fluid.data(name="img", shape=[None, 3, 8, 8], dtype="float32")
        >>> conv = fluid.layers.conv2d(img, num_filters=4, filter_size=3,
        ...                            param_attr=fluid.initializer.MSRA(uniform=False), act="relu")
    """

    def __init__(self, uniform: bool = True, fan_in: float | None = None, seed: int = 0):
        super().__init__(seed)
        self._uniform, self._fan_in = uniform, fan_in

    def __call__(self, var: Any, block: Any) -> Any:
        fi, _ = self._fans(var)
        fi = self._fan_in if self._fan_in is not None else fi
        if self._uniform:     # "masra_init": Paddle 1.8's spelling of the float16 temporary
            limit = float(np.sqrt(6.0 / float(fi)))
            return UniformInitializer(-limit, limit, self._seed)(var, block, "masra_init")
        return NormalInitializer(0.0, float(np.sqrt(2.0 / float(fi))), self._seed)(var, block, "masra_init")


class NumpyArrayInitializer(Initializer):
    """Fills the parameter with the given array (``assign_value``).

    Args:
        value: an array of the parameter's shape (float32/64, int32/64 or bool).

    Raises:
        ValueError: an array of another shape (when the parameter is created).

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 2], dtype="float32")
        >>> w0 = np.array([[1.0, 2.0], [3.0, 4.0]], "float32")
        >>> y = fluid.layers.fc(x, size=2, param_attr=fluid.initializer.NumpyArrayInitializer(w0))
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> _ = exe.run(fluid.default_startup_program())
        >>> np.array(fluid.global_scope().find_var("fc_0.w_0").get_tensor()).tolist()
        [[1.0, 2.0], [3.0, 4.0]]
    """

    def __init__(self, value: np.ndarray | Sequence[Any]):
        super().__init__()
        self._value = np.asarray(value)

    def __call__(self, var: Any, block: Any) -> Any:
        v = self._value
        dt = convert_dtype(var.dtype)
        if dt == "float16":      # filled as float32, then cast (``_fill``)
            v, dt = v.astype("float32"), "float32"
        key = {"float32": "fp32_values", "float64": "fp32_values", "int32": "int32_values",
               "int64": "int64_values", "bool": "bool_values"}[dt]
        if tuple(v.shape) != tuple(var.shape):
            raise ValueError("NumpyArrayInitializer: value of shape %s for %r of shape %s"
                             % (list(v.shape), var.name, list(var.shape)))
        return self._fill(var, block, "assign_value", {"shape": list(v.shape), key: v.reshape(-1).tolist()},
                          "numpy_array_init")


class BilinearInitializer(Initializer):
    """Weights of a transposed convolution that upsamples by bilinear interpolation; ``Bilinear`` is
    its short name.

    A 4-D float32 filter ``[C_out, C_in, k, k]`` (at most 1024 * 1024 elements) whose every
    ``(c_out, c_in)`` slice is the same ``k x k`` kernel. As Paddle 1.8 computes it on Python 3, the
    row coordinate of element ``i`` is ``(i / k) % k`` with true division (a fraction), not the
    integer row: kept so that the parameters equal Paddle's.

    Raises:
        ValueError: a filter that is not 4-D, square, float32 (or float16) and small enough.

    Examples:
        >>> img = fluid.data(name="img", shape=[None, 3, 8, 8], dtype="float32")
        >>> up = fluid.layers.conv2d_transpose(img, num_filters=3, filter_size=4, stride=2, padding=1,
        ...                                    param_attr=fluid.ParamAttr(initializer=fluid.initializer.Bilinear(),
        ...                                                               learning_rate=0.0), bias_attr=False)
        >>> up.shape
        (-1, 3, 16, 16)
    """

    def __call__(self, var: Any, block: Any) -> Any:
        shape = list(var.shape or [])
        if len(shape) != 4:
            raise ValueError("BilinearInitializer: %r must be 4-D, got shape %s" % (var.name, shape))
        if shape[2] != shape[3]:
            raise ValueError("BilinearInitializer: %r needs a square kernel, got shape %s" % (var.name, shape))
        size = int(np.prod(shape))
        if size > 1024 * 1024:
            raise ValueError("BilinearInitializer: %r has %d elements, more than 1024 * 1024" % (var.name, size))
        if convert_dtype(var.dtype) not in ("float32", "float16"):
            raise ValueError("BilinearInitializer: %r must be float32 (or float16), got %s" % (var.name, var.dtype))
        k = shape[3]
        f = np.ceil(k / 2.0)
        c = (2 * f - 1 - f % 2) / (2.0 * f)
        i = np.arange(size, dtype=np.float64)
        col = i % k
        row = (i / k) % k
        weight = (1 - np.abs(col / f - c)) * (1 - np.abs(row / f - c))
        return self._fill(var, block, "assign_value",
                          {"shape": shape, "fp32_values": [float(v) for v in weight.astype(np.float32)]},
                          "bilinear_init", prepend=False)


Constant = ConstantInitializer
"""``Constant``: the short name of ``ConstantInitializer`` (the same class)."""
Uniform = UniformInitializer
"""``Uniform``: the short name of ``UniformInitializer`` (the same class)."""
Normal = NormalInitializer
"""``Normal``: the short name of ``NormalInitializer`` (the same class)."""
TruncatedNormal = TruncatedNormalInitializer
"""``TruncatedNormal``: the short name of ``TruncatedNormalInitializer`` (the same class)."""
Xavier = XavierInitializer
"""``Xavier``: the short name of ``XavierInitializer`` (the same class)."""
MSRA = MSRAInitializer
"""``MSRA``: the short name of ``MSRAInitializer`` (the same class)."""
Bilinear = BilinearInitializer
"""``Bilinear``: the short name of ``BilinearInitializer`` (the same class)."""
