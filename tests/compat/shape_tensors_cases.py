"""Layers given Variables where Paddle 1.8 takes them inside a shape, axes, sizes or a factor
(``fill_constant(shape=[layers.shape(x)[0], 1])``, ``reshape(x, shape=Variable)``, ...): one
procedure (``run``) builds a case, records its ops (types, input slots, the attrs named in ``ATTRS``),
the declared shape and the values it computes, on Paddle 1.8 (``tools/paddle18_layer_facts.py``
wrote ``data/paddle18_shape_tensors.json``) and on fluidist (``test_paddle18_shape_tensors.py``).
A case Paddle refuses records the exception's type only."""
import numpy as np

X = np.arange(18, dtype="float32").reshape(3, 6)    # fed as x, declared [-1, 6]

# name -> the call, with L = fluid.layers, x the data Variable and np NumPy
CASES = {
    "fill_constant_list_var": "L.fill_constant(shape=[L.shape(x)[0], 1], dtype='float32', value=2.5)",
    "fill_constant_shape_var": "L.fill_constant(shape=L.shape(x), dtype='int64', value=3)",
    "fill_constant_shape_var64": "L.fill_constant(shape=L.cast(L.shape(x), 'int64'), dtype='int64', value=3)",
    "fill_constant_list_var64": "L.fill_constant(shape=[L.cast(L.shape(x)[0], 'int64'), 2], dtype='float32', "
                                "value=1)",
    "fill_constant_value_var": "L.fill_constant(shape=[2, 1], dtype='float32', value=L.fill_constant([1], "
                               "'float32', 4.0))",
    "zeros_list_var": "L.zeros(shape=[L.shape(x)[0], 2], dtype='float32')",
    "zeros_shape_var": "L.zeros(shape=L.shape(x), dtype='float32')",
    "ones_shape_var": "L.ones(shape=L.shape(x), dtype='float32')",
    "full_list_var": "L.full(shape=[L.shape(x)[0], 2], fill_value=1.5, dtype='float32')",
    "full_value_var": "L.full(shape=[2, 2], fill_value=L.fill_constant([1], 'float32', 4.0), dtype='float32')",
    "uniform_list_var": "L.uniform_random(shape=[L.shape(x)[0], 2], seed=1)",
    "uniform_shape_var": "L.uniform_random(shape=L.shape(x), seed=1)",
    "gaussian_list_var": "L.gaussian_random(shape=[L.shape(x)[0], 2], seed=1)",
    "gaussian_shape_var": "L.gaussian_random(shape=L.shape(x), seed=1)",
    "randint_list_var": "L.randint(low=0, high=5, shape=[L.shape(x)[0], 2], seed=1)",
    "randint_shape_var": "L.randint(low=0, high=5, shape=L.shape(x), seed=1)",
    "randn_list_var": "L.randn(shape=[L.shape(x)[0], 2])",
    "reshape_list_var": "L.reshape(x, shape=[L.shape(x)[0], 3, 2])",
    "reshape_shape_var": "L.reshape(x, shape=L.assign(np.array([3, 3, 2], 'int32')))",
    "reshape_actual_shape": "L.reshape(x, shape=[-1, 6], actual_shape=L.assign(np.array([3, 6], 'int32')))",
    "expand_list_var": "L.expand(x, expand_times=[L.fill_constant([1], 'int32', 2), 1])",
    "expand_var": "L.expand(x, expand_times=L.assign(np.array([1, 2], 'int32')))",
    "crop_tensor_list_var": "L.crop_tensor(x, shape=[L.fill_constant([1], 'int32', 2), 3], "
                            "offsets=[1, L.fill_constant([1], 'int32', 2)])",
    "slice_list_var": "L.slice(x, axes=[0, 1], starts=[L.fill_constant([1], 'int32', 1), 0], "
                      "ends=[3, L.fill_constant([1], 'int32', 4)])",
    "slice_var": "L.slice(x, axes=[0, 1], starts=L.assign(np.array([1, 0], 'int32')), "
                 "ends=L.assign(np.array([3, 4], 'int32')))",
    "strided_slice_list_var": "L.strided_slice(x, axes=[1], starts=[L.fill_constant([1], 'int32', 0)], ends=[6], "
                              "strides=[L.fill_constant([1], 'int32', 2)])",
    "unsqueeze_list_var": "L.unsqueeze(x, axes=[L.fill_constant([1], 'int32', 0), 2])",
    "unsqueeze_var": "L.unsqueeze(x, axes=L.assign(np.array([0, 2], 'int32')))",
    "concat_axis_var": "L.concat([x, x], axis=L.fill_constant([1], 'int32', 1))",
    "split_dim_var": "L.split(x, num_or_sections=2, dim=L.fill_constant([1], 'int32', 1))[0]",
    "split_sections_var": "L.split(x, num_or_sections=[L.fill_constant([1], 'int32', 2), 4], dim=1)[1]",
    "scale_var": "L.scale(x, scale=L.fill_constant([1], 'float32', 3.0), bias=1.0)",
    "pow_var": "L.pow(x, factor=L.fill_constant([1], 'float32', 2.0))",
    "topk_var": "L.topk(x, k=L.fill_constant([1], 'int32', 2))[0]",
    "one_hot_var": "L.one_hot(L.cast(L.reshape(L.slice(x, [1], [0], [1]), [-1, 1]), 'int64') * 0 + 1, "
                   "depth=L.fill_constant([1], 'int32', 4))",
    "resize_bilinear_list_var": "L.resize_bilinear(L.reshape(x, [1, 1, 3, 6]), "
                                "out_shape=[L.fill_constant([1], 'int32', 6), 12])",
    "resize_bilinear_var": "L.resize_bilinear(L.reshape(x, [1, 1, 3, 6]), "
                           "out_shape=L.assign(np.array([6, 12], 'int32')))",
    "resize_nearest_scale_var": "L.resize_nearest(L.reshape(x, [1, 1, 3, 6]), "
                                "scale=L.fill_constant([1], 'float32', 2.0))",
    "crop_var": "L.crop(x, shape=L.fill_constant([2, 3], 'float32', 0.0), offsets=[1, 1])",
    "pad2d_var": "L.pad2d(L.reshape(x, [1, 1, 3, 6]), paddings=L.assign(np.array([1, 1, 0, 2], 'int32')))",
    "range_var": "L.range(0, L.fill_constant([1], 'int32', 5), 1, 'int32')",
    "linspace_var": "L.linspace(0, 1, L.fill_constant([1], 'int32', 5), 'float32')",
}

# drawn values: compared by shape (and range), not value (Paddle's generator is not fluidist's)
RANDOM = {"uniform_list_var", "uniform_shape_var", "gaussian_list_var", "gaussian_shape_var",
          "randint_list_var", "randint_shape_var"}

# what fluidist does differently, on purpose: name -> why
DIFFERENCES = {
    # Paddle's ``ones`` multiplies the shape's entries to assert they are positive: with a Variable
    # among them that appends a scale, a fill_constant and a greater_than op that nothing reads
    "ones_list_var": "no dead ops",
    # Paddle declares the size of the last axis as the ``k`` attr's default (1) when K is a tensor
    "topk_var": "declared shape [-1, -1]",
    # Paddle declares the input's shape whatever the paddings tensor holds
    "pad2d_var": "declared shape [1, 1, -1, -1]",
}
CASES["ones_list_var"] = "L.ones(shape=[L.shape(x)[0], 2], dtype='float32')"

ATTRS = ("shape", "value", "str_value", "axes", "starts", "ends", "strides", "infer_flags", "expand_times",
         "offsets", "axis", "sections", "num", "scale", "bias", "factor", "k", "depth", "out_h", "out_w",
         "paddings", "dtype", "min", "max", "low", "high", "force_cpu", "decrease_axis")


def _dtype_name(fluid, dtype):
    """A dtype as its name ('float32'); Paddle's op attrs hold its VarType enum as an int."""
    if isinstance(dtype, int) and not isinstance(dtype, bool) and hasattr(fluid.core, "VarDesc"):
        dtype = fluid.core.VarDesc.VarType(dtype)
    try:
        return str(fluid.data_feeder.convert_dtype(dtype))
    except (TypeError, ValueError):
        return str(dtype)


def _op_record(fluid, op):
    attrs = {k: op.attr(k) for k in ATTRS if op.has_attr(k)}
    if "dtype" in attrs:
        attrs["dtype"] = _dtype_name(fluid, attrs["dtype"])
    return [op.type, sorted(k for k in op.input_names if op.input(k)), attrs]


def run(fluid, name):
    """``{"error": exception name}``, or ``{"ops", "shape", "dtype", "out_shape", "out"}`` of case
    ``name`` built and run on ``fluid`` (Paddle's or fluidist's)."""
    layers = fluid.layers
    prog = fluid.Program()
    with fluid.program_guard(prog, fluid.Program()):
        x = fluid.data(name="x", shape=[-1, 6], dtype="float32")
        try:
            y = eval(CASES[name], {"L": layers, "x": x, "np": np})
        except TypeError as e:
            return {"error": type(e).__name__}
        record = {"ops": [_op_record(fluid, op) for op in prog.global_block().ops],
                  "shape": list(y.shape), "dtype": _dtype_name(fluid, y.dtype)}
    out, = fluid.Executor(fluid.CPUPlace()).run(prog, feed={"x": X}, fetch_list=[y])
    out = np.array(out)
    record["out_shape"] = list(out.shape)
    record["out"] = None if name in RANDOM else out.reshape(-1).tolist()
    return record
