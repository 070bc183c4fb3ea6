"""Random layers of Paddle 1.8's ``layers/nn.py``: uniform_random, gaussian_random (and their
``_batch_size_like`` forms), randint, randn, randperm, sampling_id, random_crop.

Each draws fresh values in every run; a non-zero ``seed`` (or ``Program.random_seed``) makes the
draws repeat from run to run of a new program, as in Paddle."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..framework.dtypes import convert_dtype
from ..framework.program import Variable
from .hints import DType
from ..reader.data_feeder import check_dtype, check_type
from ._build import check_var, int_list
from .layer_helper import LayerHelper
from .shape_args import attr_values, has_variable, shape_tensor_inputs, tensor_list

__all__ = ["uniform_random", "gaussian_random", "uniform_random_batch_size_like", "gaussian_random_batch_size_like",
           "randint", "randn", "randperm", "sampling_id", "random_crop"]


def _random(op_type, shape, dtype, attrs, inputs=None, layer=None):
    helper = LayerHelper(layer or op_type)
    out = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    helper.append_op(op_type, inputs=inputs or {}, outputs={"Out": [out]}, attrs=dict(attrs, dtype=convert_dtype(dtype)))
    out.stop_gradient = True
    return out


def _shape(shape, layer):
    """An all-int ``shape`` (a list or tuple, TypeError otherwise, as Paddle 1.8's ``check_type``)."""
    check_type(shape, "shape", (list, tuple), layer)
    return int_list(list(shape), layer, "shape")


def _shape_inputs(shape, layer, constants_dtype, attr_with_tensors=True):
    """``(inputs, attrs)`` of a random op's shape, as Paddle 1.8's ``uniform_random`` / ``randint``
    build it: a Variable is the ``ShapeTensor``; a list holding Variables is the ``ShapeTensorList``
    (its ints ``constants_dtype`` constants) and, when ``attr_with_tensors``, the ``shape`` attr with
    -1 for each Variable (``randint`` leaves the attr out then)."""
    check_type(shape, "shape", (list, tuple, Variable), layer)
    if isinstance(shape, Variable):
        shape.stop_gradient = True
        return {"ShapeTensor": [shape]}, {}
    if not has_variable(shape):
        return {}, {"shape": int_list(list(shape), layer, "shape")}
    inputs = {"ShapeTensorList": tensor_list(shape, layer, "shape", constants_dtype)}
    return inputs, ({"shape": attr_values(shape, layer, "shape")} if attr_with_tensors else {})


def uniform_random(shape: Sequence[int | Variable] | Variable, dtype: DType = "float32", min: float = -1.0, max: float = 1.0,
                   seed: int = 0) -> Variable:
    """Values drawn uniformly from ``[min, max)``.

    Args:
        shape: the output's shape: a list of ints and int Variables (their values when the program
            runs), or an int Variable holding the whole shape.
        dtype: a float dtype.
        min: the lower bound.
        max: the upper bound (excluded).
        seed: 0 for fresh values each run; another value repeats the draws.

    Returns:
        A Variable of ``shape`` (no gradient).

    Raises:
        TypeError: ``shape`` is no list, tuple or Variable, or ``dtype`` is not a float (as Paddle 1.8).

    Examples:
        >>> u = fluid.layers.uniform_random(shape=[2, 3], min=0.0, max=1.0, seed=7)
        >>> out, = fluid.Executor(fluid.CPUPlace()).run(fetch_list=[u])
        >>> out.shape, bool(((out >= 0) & (out < 1)).all())
        ((2, 3), True)
    """
    check_dtype(dtype, "dtype", ("float32", "float64"), "uniform_random")
    inputs, attrs = _shape_inputs(shape, "uniform_random", "int64")
    return _random("uniform_random", None, dtype, dict(attrs, min=float(min), max=float(max), seed=int(seed)),
                   inputs=inputs)


def gaussian_random(shape: Sequence[int | Variable] | Variable, mean: float = 0.0, std: float = 1.0, seed: int = 0,
                    dtype: DType = "float32") -> Variable:
    """Values drawn from a normal distribution.

    Args:
        shape: the output's shape: a list of ints and int32 / int64 Variables, or an int Variable
            holding the whole shape.
        mean: the distribution's mean.
        std: its standard deviation.
        seed: 0 for fresh values each run; another value repeats the draws.
        dtype: a float dtype.

    Returns:
        A Variable of ``shape`` (no gradient).

    Raises:
        TypeError: ``shape`` is no list, tuple or Variable, or a shape Variable is not int32 / int64
            (as Paddle 1.8).

    Examples:
        >>> g = fluid.layers.gaussian_random(shape=[1000], mean=5.0, std=0.1)
        >>> out, = fluid.Executor(fluid.CPUPlace()).run(fetch_list=[g])
        >>> bool(abs(out.mean() - 5.0) < 0.05)
        True
    """
    if not isinstance(shape, (list, tuple, Variable)):
        raise TypeError("gaussian_random: argument 'shape' takes a Variable, a list or a tuple, got %s"
                        % type(shape).__name__)
    inputs: dict = {}
    attrs = {"mean": float(mean), "std": float(std), "seed": int(seed)}
    shape_tensor_inputs(inputs, attrs, shape, "gaussian_random")
    return _random("gaussian_random", None, dtype, attrs, inputs=inputs)


def uniform_random_batch_size_like(input: Variable, shape: Sequence[int], dtype: DType = "float32",
                                   input_dim_idx: int = 0, output_dim_idx: int = 0, min: float = -1.0,
                                   max: float = 1.0, seed: int = 0) -> Variable:
    """``uniform_random`` with one dimension taken from ``input`` when the program runs.

    Args:
        input: the tensor whose dimension ``input_dim_idx`` gives the size.
        shape: the output's shape; its entry ``output_dim_idx`` is replaced.
        dtype: a float dtype.
        input_dim_idx: the dimension of ``input`` to read.
        output_dim_idx: the dimension of the output to set.
        min: the lower bound.
        max: the upper bound (excluded).
        seed: 0 for fresh values each run.

    Returns:
        A Variable (no gradient).

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 8], dtype="float32")
        >>> noise = fluid.layers.uniform_random_batch_size_like(x, shape=[-1, 4])
        >>> out, = fluid.Executor(fluid.CPUPlace()).run(feed={"x": np.zeros((3, 8), "float32")}, fetch_list=[noise])
        >>> out.shape
        (3, 4)
    """
    check_var(input, "uniform_random_batch_size_like", "Input")
    return _random("uniform_random_batch_size_like", None, dtype,
                   {"shape": _shape(shape, "uniform_random_batch_size_like"), "input_dim_idx": int(input_dim_idx),
                    "output_dim_idx": int(output_dim_idx), "min": float(min), "max": float(max), "seed": int(seed)},
                   inputs={"Input": [input]})


def gaussian_random_batch_size_like(input: Variable, shape: Sequence[int], input_dim_idx: int = 0,
                                    output_dim_idx: int = 0, mean: float = 0.0, std: float = 1.0, seed: int = 0,
                                    dtype: DType = "float32") -> Variable:
    """``gaussian_random`` with one dimension taken from ``input`` when the program runs.

    Args:
        input: the tensor whose dimension ``input_dim_idx`` gives the size.
        shape: the output's shape; its entry ``output_dim_idx`` is replaced.
        input_dim_idx: the dimension of ``input`` to read.
        output_dim_idx: the dimension of the output to set.
        mean: the distribution's mean.
        std: its standard deviation.
        seed: 0 for fresh values each run.
        dtype: a float dtype.

    Returns:
        A Variable (no gradient).

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 8], dtype="float32")
        >>> noise = fluid.layers.gaussian_random_batch_size_like(x, shape=[-1, 4], std=0.01)
    """
    check_var(input, "gaussian_random_batch_size_like", "input")
    return _random("gaussian_random_batch_size_like", None, dtype,
                   {"shape": _shape(shape, "gaussian_random_batch_size_like"), "input_dim_idx": int(input_dim_idx),
                    "output_dim_idx": int(output_dim_idx), "mean": float(mean), "std": float(std), "seed": int(seed)},
                   inputs={"Input": [input]})


def randint(low: int, high: int | None = None, shape: Sequence[int | Variable] | Variable | None = None, out: Variable | None = None,
            dtype: DType | None = None, device: str | None = None, stop_gradient: bool = False, seed: int = 0,
            name: str | None = None) -> Variable:
    """Integers drawn uniformly from ``[low, high)``; ``randint(n)`` draws from ``[0, n)``.

    Args:
        low: the lower bound (or the upper one when ``high`` is None).
        high: the upper bound (excluded).
        shape: the output's shape (ints and int Variables, or one int Variable); ``[1]`` when None.
        out: accepted for Paddle's signature (not written to).
        dtype: int64 when None.
        device: accepted for Paddle's signature.
        stop_gradient: accepted for Paddle's signature (the output has no gradient).
        seed: 0 for fresh values each run.
        name: accepted for Paddle's signature.

    Returns:
        A Variable of ``shape``.

    Raises:
        ValueError: ``high <= low``.

    Examples:
        >>> r = fluid.layers.randint(low=0, high=10, shape=[5])
        >>> out, = fluid.Executor(fluid.CPUPlace()).run(fetch_list=[r])
        >>> out.dtype, bool(((out >= 0) & (out < 10)).all())
        (dtype('int64'), True)
    """
    if high is None:
        low, high = 0, low
    if high <= low:
        raise ValueError("randint: high %r must be greater than low %r" % (high, low))
    check_dtype(dtype or "int64", "dtype", ["int32", "int64"], "randint")
    inputs, attrs = _shape_inputs([1] if shape is None else shape, "randint", "int64", attr_with_tensors=False)
    return _random("randint", None, dtype or "int64", dict(attrs, low=int(low), high=int(high), seed=int(seed)),
                   inputs=inputs)


def randn(shape: Sequence[int], out: Variable | None = None, dtype: DType | None = None,
          device: str | None = None, stop_gradient: bool = True, name: str | None = None) -> Variable:
    """Values drawn from the standard normal distribution (a ``gaussian_random`` op).

    Args:
        shape: the output's shape.
        out: accepted for Paddle's signature (not written to).
        dtype: float32 when None.
        device: accepted for Paddle's signature.
        stop_gradient: accepted for Paddle's signature (the output has no gradient).
        name: accepted for Paddle's signature.

    Returns:
        A Variable of ``shape``.

    Examples:
        >>> z = fluid.layers.randn(shape=[2, 3])
        >>> z.shape
        (2, 3)
    """
    return _random("gaussian_random", None, dtype or "float32",
                   {"shape": _shape(shape, "randn"), "mean": 0.0, "std": 1.0, "seed": 0}, layer="randn")


def randperm(n: int, out: Variable | None = None, dtype: DType = "int64", device: str | None = None,
             stop_gradient: bool = True, seed: int = 0) -> Variable:
    """A random permutation of ``0 .. n-1``.

    Args:
        n: the number of items (>= 1).
        out: accepted for Paddle's signature (not written to).
        dtype: the output's dtype.
        device: accepted for Paddle's signature.
        stop_gradient: accepted for Paddle's signature (the output has no gradient).
        seed: 0 for a fresh permutation each run.

    Returns:
        A Variable ``[n]``.

    Raises:
        ValueError: ``n < 1``.

    Examples:
        >>> p = fluid.layers.randperm(5)
        >>> out, = fluid.Executor(fluid.CPUPlace()).run(fetch_list=[p])
        >>> sorted(out.tolist())
        [0, 1, 2, 3, 4]
    """
    if int(n) < 1:
        raise ValueError("randperm: n must be >= 1, got %r" % (n,))
    return _random("randperm", None, dtype, {"n": int(n), "seed": int(seed)})


def sampling_id(x: Variable, min: float = 0.0, max: float = 1.0, seed: int = 0, dtype: DType = "float32") -> Variable:
    """For each row of probabilities, a column index drawn with those probabilities.

    Args:
        x: probabilities ``[N, classes]`` (each row summing to 1).
        min: the lower bound of the uniform draw compared with the running sums.
        max: its upper bound.
        seed: 0 for fresh draws each run.
        dtype: accepted for Paddle's signature (the ids are int64).

    Returns:
        An int64 Variable ``[N]`` (no gradient).

    Examples:
        >>> probs = fluid.layers.assign(np.array([[0.0, 1.0], [1.0, 0.0]], "float32"))
        >>> ids = fluid.layers.sampling_id(probs)
        >>> fluid.Executor(fluid.CPUPlace()).run(fetch_list=[ids])[0].tolist()
        [1, 0]
    """
    check_var(x, "sampling_id", "x")
    helper = LayerHelper("sampling_id")
    out = helper.create_variable_for_type_inference("int64", stop_gradient=True)
    helper.append_op("sampling_id", inputs={"X": [x]}, outputs={"Out": [out]},
                     attrs={"min": float(min), "max": float(max), "seed": int(seed)})
    return out


def random_crop(x: Variable, shape: Sequence[int], seed: int | Variable | None = None) -> Variable:
    """Each instance of ``x`` cropped to ``shape`` at a random place.

    The seed lives in a persistable int64 variable that each run advances, so each run crops
    elsewhere.

    Args:
        x: a batch ``[N, ...]``.
        shape: the crop's size, for ``x``'s trailing dimensions.
        seed: the first seed (an int, or an int64 ``[1]`` Variable); drawn at random when None.

    Returns:
        A Variable ``[N] + shape``.

    Examples:
        >>> img = fluid.data(name="img", shape=[None, 3, 32, 32], dtype="float32")
        >>> crop = fluid.layers.random_crop(img, shape=[3, 24, 24], seed=1)
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> _ = exe.run(fluid.default_startup_program())
        >>> exe.run(feed={"img": np.zeros((2, 3, 32, 32), "float32")}, fetch_list=[crop])[0].shape
        (2, 3, 24, 24)
    """
    check_var(x, "random_crop", "x")
    shape = int_list(list(shape), "random_crop", "shape")
    helper = LayerHelper("random_crop")
    out = helper.create_variable_for_type_inference(x.dtype)
    attrs: dict[str, object] = {"shape": shape}
    if seed is None:
        seed = int(np.random.randint(1, 65536))
    if isinstance(seed, int):
        from ..initializer import ConstantInitializer
        attrs["startup_seed"] = seed
        seed_var = helper.create_global_variable(name=helper.name + ".seed", dtype="int64", shape=[1],
                                                 persistable=True)
        helper.set_variable_initializer(seed_var, ConstantInitializer(float(seed)))
        seed = seed_var
    check_var(seed, "random_crop", "seed")
    helper.append_op("random_crop", inputs={"X": [x], "Seed": [seed]}, outputs={"Out": [out], "SeedOut": [seed]},
                     attrs=attrs)
    return out


