"""Tensor ops: constants, assign, cast, sum, concat, split, reshape, transpose, and the small
integer ops LR schedules need (the random initialisers are in ``random_init``)."""
import weakref

import numpy as np

from ..framework.registry import Bound, register_binder, register_grad, register_op, same_shape
from ..core.tensor import LoDTensorArray, SelectedRows, merge_rows, scatter_add
from .shape_tensors import SHAPE_INPUTS, SHAPE_SLOTS, creation_infer, scalar_from_tensor, tensor_length, \
    values_from_tensors, with_tensor_shape


def _shape_attr_infer(ctx):
    ctx.set_output("Out", ctx.attr("shape"), ctx.attr("dtype"))


@register_op("fill_constant", inputs=["ValueTensor?"] + SHAPE_INPUTS, outputs=["Out"],
             attrs={"shape": [], "value": 0.0, "dtype": "float32", "force_cpu": False, "str_value": ""},
             infer=creation_infer(), init="fill", host_inputs=SHAPE_SLOTS, no_grad=("ValueTensor",) + SHAPE_SLOTS)
def fill_constant(ctx, ins, attrs):
    """A tensor of ``shape`` (or the ShapeTensor inputs') filled with ``value`` (or ValueTensor's)."""
    shape = tuple(with_tensor_shape(ins, attrs)["shape"])
    if ins.get("ValueTensor") is None:
        return {"Out": ctx.xp.full(shape, _fill_value(attrs), dtype=attrs["dtype"])}
    out = ctx.xp.empty(shape, dtype=attrs["dtype"])
    out[...] = ins["ValueTensor"].reshape(-1)[0]
    return {"Out": out}


@register_binder("fill_constant")
def _bind_fill_constant(ctx, attrs):
    if any(ctx.op.inputs.get(s) for s in ("ValueTensor",) + SHAPE_SLOTS):
        return None
    shape, value, dtype, xp = tuple(attrs["shape"]), _fill_value(attrs), attrs["dtype"], ctx.xp
    if xp is np and int(np.prod(shape)) <= 4096:    # a copy of a small one is the cheaper fill
        return Bound(np.full(shape, value, dtype=dtype).copy, (), ("Out",))
    return Bound(lambda: xp.full(shape, value, dtype=dtype), (), ("Out",))


@register_op("fill", outputs=["Out"], attrs={"value": [], "shape": [], "dtype": "float32", "force_cpu": False},
             infer=_shape_attr_infer)
def fill(ctx, ins, attrs):
    """A tensor of ``shape`` holding the ``value`` list in order; the values are float32 attrs
    (Paddle's FLOATS) converted to ``dtype``."""
    values = np.asarray(attrs["value"], dtype=np.float32)
    if values.size != int(np.prod(attrs["shape"])):
        raise ValueError("op 'fill': %d values do not fill shape %s" % (values.size, list(attrs["shape"])))
    return {"Out": ctx.xp.asarray(values.astype(attrs["dtype"]).reshape(attrs["shape"]))}


def _fill_value(attrs):
    """``str_value`` (when set) wins over the float ``value``: it keeps big int64 values exact."""
    sv = attrs.get("str_value")
    if not sv:
        return attrs["value"]
    if np.dtype(attrs["dtype"]).kind in "iu":
        try:
            return int(sv)
        except ValueError:
            return int(float(sv))
    return float(sv)


def _bsl_infer(ctx):
    shape = list(ctx.attr("shape"))
    xs = ctx.input_shape("Input")
    if xs is not None:
        shape[ctx.attr("output_dim_idx")] = xs[ctx.attr("input_dim_idx")]
    ctx.set_output("Out", shape, ctx.attr("dtype"))


@register_op("fill_constant_batch_size_like", inputs=["Input"], outputs=["Out"],
             attrs={"shape": [], "value": 0.0, "dtype": "float32", "input_dim_idx": 0, "output_dim_idx": 0,
                    "force_cpu": False, "str_value": ""},
             infer=_bsl_infer)
def fill_constant_batch_size_like(ctx, ins, attrs):
    """``shape`` filled with ``value``, its ``output_dim_idx`` axis as long as Input's ``input_dim_idx``
    one; for a LoD Input and ``input_dim_idx`` 0, as many as its last LoD level's sequences (Paddle 1.8)."""
    shape = list(attrs["shape"])
    shape[attrs["output_dim_idx"]] = ins["Input"].shape[attrs["input_dim_idx"]]
    lod = ctx.lod("Input") if attrs["input_dim_idx"] == 0 else None
    if lod:
        shape[attrs["output_dim_idx"]] = len(lod[-1]) - 1
    return {"Out": ctx.xp.full(tuple(shape), _fill_value(attrs), dtype=attrs["dtype"])}


@register_op("fill_zeros_like", inputs=["X"], outputs=["Out"], infer=same_shape())
def fill_zeros_like(ctx, ins, attrs):
    if isinstance(ins["X"], LoDTensorArray):
        return {"Out": LoDTensorArray()}    # an array gradient with no items: zeros
    return {"Out": ctx.xp.zeros_like(ins["X"])}


def _assign_infer(ctx):
    ctx.share("Out", "X")


@register_op("assign", inputs=["X"], outputs=["Out"], infer=_assign_infer, share_lod=("X", "Out"), keeps_rows=True,
             init="copy")
def assign(ctx, ins, attrs):
    x = ins["X"]
    if isinstance(x, SelectedRows):
        return {"Out": SelectedRows(x.rows.copy(), x.value.copy(), x.height)}
    return {"Out": x.copy()}


@register_grad("assign", inputs=["Out@GRAD"])
def assign_grad(ctx, ins, attrs):
    return {"X@GRAD": ins["Out@GRAD"]}


@register_op("assign_value", outputs=["Out"],
             attrs={"shape": [], "dtype": "float32", "fp32_values": [], "int32_values": [],
                    "int64_values": [], "bool_values": []}, infer=_shape_attr_infer, init="values")
def assign_value(ctx, ins, attrs):
    dt = attrs["dtype"]
    key = {"float32": "fp32_values", "float64": "fp32_values", "int32": "int32_values",
           "int64": "int64_values", "bool": "bool_values"}[dt]
    return {"Out": ctx.xp.asarray(np.array(attrs[key], dtype=dt).reshape(attrs["shape"]))}


def _cast_infer(ctx):
    ctx.set_output("Out", ctx.input_shape("X"), ctx.attr("out_dtype"), ctx.input_lod_level("X"))


def _cast_grad_maker(op):
    return [{"type": "cast", "inputs": {"X": [n + "@GRAD" for n in op.outputs["Out"]]},
             "outputs": {"Out": [n + "@GRAD" for n in op.inputs["X"]]},
             "attrs": {"in_dtype": op.attrs["out_dtype"], "out_dtype": op.attrs["in_dtype"]}}]


@register_op("cast", inputs=["X"], outputs=["Out"], attrs={"in_dtype": "float32", "out_dtype": "float32"},
             infer=_cast_infer, grad=_cast_grad_maker, share_lod=("X", "Out"))
def cast(ctx, ins, attrs):
    return {"Out": ins["X"].astype(attrs["out_dtype"])}


def _sum_infer(ctx):
    v = ctx.input_var("X")
    if v is not None:
        ctx.set_output("Out", v.shape, v.dtype, type=v.type)


def _sum_grad_maker(op):
    out_g = op.outputs["Out"][0] + "@GRAD"
    return [{"type": "scale", "inputs": {"X": [out_g]}, "outputs": {"Out": [n + "@GRAD"]},
             "attrs": {"scale": 1.0, "bias": 0.0, "bias_after_scale": True}} for n in op.inputs["X"]]


@register_op("sum", inputs=["X*"], outputs=["Out"], attrs={"use_mkldnn": False}, infer=_sum_infer,
             grad=_sum_grad_maker, share_lod=("X", "Out"), keeps_rows=True)
def sum_(ctx, ins, attrs):
    """Sum of dense tensors; of SelectedRows, Paddle 1.8's merge: each distinct row once (sorted), its
    values summed over every input (inputs without rows left out), or, where no row repeats, the
    inputs' rows and values one after another as they are; mixed gives dense.
    Out keeps the LoD of the first X, as in Paddle (summed gradients of a LoD input keep its LoD)."""
    xs = [x for x in ins["X"] if x is not None]
    xp = ctx.xp
    if all(isinstance(x, SelectedRows) for x in xs):
        xs = [x for x in xs if x.rows is not None and len(x.rows)]
        if not xs:
            return {"Out": SelectedRows(xp.zeros(0, dtype=np.int64), None, ins["X"][0].height)}
        rows = xp.concatenate([x.rows.reshape(-1) for x in xs])
        value = xp.concatenate([x.value for x in xs])
        uniq, summed = merge_rows(xp, rows, value)     # Paddle's MergeAdd: distinct rows, sorted
        if len(uniq) == len(rows):
            return {"Out": SelectedRows(rows, value, xs[0].height)}
        return {"Out": SelectedRows(uniq, summed, xs[0].height)}
    dense = [x for x in xs if not isinstance(x, SelectedRows)]
    out = dense[0] + dense[1] if len(dense) > 1 else dense[0].copy()
    for x in dense[2:]:
        out += x
    for x in xs:
        if isinstance(x, SelectedRows) and x.rows is not None and len(x.rows):
            scatter_add(xp, out, x.rows, x.value)
    return {"Out": out}


def _concat_infer(ctx):
    shapes = [v.shape for v in ctx.input_vars("X")]
    if not shapes or any(s is None for s in shapes):
        return
    if ctx.has_input("AxisTensor"):     # the axis is known at run time only: every size is unknown
        ctx.set_output("Out", [-1] * len(shapes[0]), ctx.input_dtype("X"))
        return
    axis = ctx.attr("axis")
    axis = axis + len(shapes[0]) if axis < 0 else axis
    out = list(shapes[0])
    out[axis] = -1 if any(s[axis] < 0 for s in shapes) else sum(s[axis] for s in shapes)
    ctx.set_output("Out", out, ctx.input_dtype("X"), ctx.input_lod_level("X"))


def _concat_lod(ctx, count, axis):
    """Paddle's LoD of a concatenation: along axis 0 the inputs' sequences one after another (when
    every input has LoD of one depth), along another axis the first input's."""
    lods = [ctx.lod("X", i) for i in range(count)]
    if axis != 0:
        return lods[0]
    if not all(lods) or len({len(lod) for lod in lods}) != 1:
        return None
    merged = [list(level) for level in lods[0]]
    for lod in lods[1:]:
        for level, offsets in zip(merged, lod):
            base = level[-1]
            level.extend(base + int(o) for o in offsets[1:])
    return merged


def _with_axis_tensor(op, inputs):
    """``inputs`` with the op's AxisTensor, when it has one (its gradient op reads the axis too)."""
    if op.inputs.get("AxisTensor"):
        inputs["AxisTensor"] = list(op.inputs["AxisTensor"])
    return inputs


def _concat_grad_maker(op):
    return [{"type": "concat_grad", "inputs": _with_axis_tensor(op, {"X": list(op.inputs["X"]),
                                                                     "Out@GRAD": [op.outputs["Out"][0] + "@GRAD"]}),
             "outputs": {"X@GRAD": [n + "@GRAD" for n in op.inputs["X"]]}, "attrs": {"axis": op.attrs["axis"]}}]


@register_op("concat", inputs=["X*", "AxisTensor?"], outputs=["Out"], attrs={"axis": 0}, infer=_concat_infer,
             grad=_concat_grad_maker, no_grad=("AxisTensor",))
def concat(ctx, ins, attrs):
    xs = ins["X"]
    axis = int(scalar_from_tensor(ins, "AxisTensor", attrs["axis"]))
    lod = _concat_lod(ctx, len(xs), axis % max(xs[0].ndim, 1))
    if lod:
        ctx.set_lod("Out", lod)
    if ins.get("AxisTensor") is not None:
        return {"Out": ctx.xp.concatenate(xs, axis=axis)}
    if attrs.get("op_role") == _DIST_ROLE:
        # the transpiler's concat of a parameter's received blocks: write into the parameter's
        # previous buffer (a fresh multi-MB array every step costs page faults), when it is ours
        prev = ctx.scope.vals.get(ctx.op.outputs["Out"][0])
        xp = ctx.xp
        if isinstance(prev, xp.ndarray) and getattr(prev.flags, "writeable", True) and prev.dtype == xs[0].dtype and \
                prev.shape[0] == sum(x.shape[0] for x in xs) and prev.shape[1:] == xs[0].shape[1:]:
            if attrs["axis"] == 0 and _are_row_blocks_of(prev, xs):
                return {"Out": prev}     # recv wrote the blocks straight into the parameter's rows
            if not any(xp.may_share_memory(prev, x) for x in xs):
                return {"Out": xp.concatenate(xs, axis=attrs["axis"], out=prev)}
    xp = ctx.xp
    if xp is np:      # (on the host only: one strided copy per run of a batch's slot blocks)
        out = _concat_columns_by_runs(xp, xs) if len(xs) >= _MIN_RUN and attrs["axis"] in (1, -1) else None
        if out is not None:
            return {"Out": out}
    return {"Out": ctx.xp.concatenate(xs, axis=attrs["axis"])}


_MIN_RUN = 4     # blocks in a run worth one strided copy


def _concat_columns_by_runs(xp, xs):
    """``xp.concatenate(xs, axis=1)`` (``xp``: NumPy, the host's kernels only) of 2-D NumPy arrays of one dtype and row count, each run of inputs
    that are equal blocks of one array at evenly spaced addresses (``merge_ids``' outputs: a batch's
    embedding rows of each slot) copied by one strided copy, the run's blocks side by side. NumPy copies
    each input row by row (a CTR batch's 26 slots of 16 floats into 1024 x 429: 0.7 ms, 0.3 ms by a
    run). None when no run of ``_MIN_RUN`` blocks is there, or the inputs differ otherwise."""
    x0 = xs[0]
    if any(type(x) is not np.ndarray or x.ndim != 2 or x.dtype != x0.dtype or x.shape[0] != x0.shape[0]
           for x in xs):
        return None
    runs, i = [], 0
    while i < len(xs):
        j = _spaced_run_end(xs, i)
        runs.append((i, j))
        i = j
    if max(j - i for i, j in runs) < _MIN_RUN:
        return None
    out = np.empty((x0.shape[0], sum(x.shape[1] for x in xs)), dtype=x0.dtype)
    col = 0
    for i, j in runs:
        width = sum(x.shape[1] for x in xs[i:j])
        dst = out[:, col:col + width]
        if j - i >= _MIN_RUN:
            dst = dst.reshape(x0.shape[0], j - i, xs[i].shape[1])
            if dst.base is not out:      # (a column slice splits into blocks as a view: never a copy)
                return None
            step = xs[i + 1].__array_interface__["data"][0] - xs[i].__array_interface__["data"][0]
            # every address of this view is an element of one of the run's blocks
            dst[...] = np.lib.stride_tricks.as_strided(xs[i], (j - i,) + xs[i].shape, (step,) + xs[i].strides,
                                                       writeable=False).transpose(1, 0, 2)
        else:
            xp.concatenate(xs[i:j], axis=1, out=dst)
        col += width
    return out


def _spaced_run_end(xs, i):
    """The end of the longest run ``xs[i:j]`` of blocks of one array with one shape and strides, each
    at a fixed number of bytes after the one before (``i + 1`` when ``xs[i]`` starts none)."""
    first = xs[i]
    if first.base is None or i + 1 >= len(xs):
        return i + 1
    at = first.__array_interface__["data"][0]
    step, j = None, i + 1
    while j < len(xs):
        x = xs[j]
        if x.base is not first.base or x.shape != first.shape or x.strides != first.strides:
            break
        here = x.__array_interface__["data"][0]
        if step is None:
            step = here - at
        if step == 0 or here - at != step:
            break
        at, j = here, j + 1
    return j


_DIST_ROLE = 0x0008   # OpRole.Dist


def _are_row_blocks_of(whole, xs):
    """Whether ``xs`` are, in order, the consecutive row blocks of the C-contiguous ``whole``."""
    if not whole.flags.c_contiguous:
        return False
    row = whole.strides[0] if whole.ndim else 0
    at = whole.__array_interface__["data"][0]
    for x in xs:
        if not x.flags.c_contiguous or x.__array_interface__["data"][0] != at:
            return False
        at += x.shape[0] * row
    return True


@register_grad("concat", inputs=["X*", "AxisTensor?", "Out@GRAD"])
def concat_grad(ctx, ins, attrs):
    xs, d = ins["X"], ins["Out@GRAD"]
    axis = int(scalar_from_tensor(ins, "AxisTensor", attrs["axis"])) % d.ndim
    idx = np.cumsum([x.shape[axis] for x in xs])[:-1]
    return {"X@GRAD": ctx.xp.split(d, idx, axis=axis)}


def _split_infer(ctx):
    xs = ctx.input_shape("X")
    if xs is None:
        return
    n = len(ctx.op.outputs.get("Out", []))
    if ctx.has_input("AxisTensor"):     # the axis is known at run time only: every size is unknown
        for i in range(n):
            ctx.set_output("Out", [-1] * len(xs), ctx.input_dtype("X"), i=i)
        return
    axis = ctx.attr("axis") % len(xs)
    sections = ctx.attr("sections") or []
    if not ctx.has_input("SectionsTensorList"):     # there a -1 is a tensor's, not "the rest"
        sections = _resolve_sections(sections, xs[axis])
    for i in range(n):
        s = list(xs)
        if sections:
            s[axis] = sections[i]
        elif xs[axis] >= 0:
            s[axis] = xs[axis] // n
        ctx.set_output("Out", s, ctx.input_dtype("X"), i=i)


def _resolve_sections(sections, total):
    """Paddle lets one entry of ``sections`` be -1: the rest of the axis (once its size is known)."""
    sections = list(sections)
    if sections.count(-1) > 1:
        raise ValueError("split: at most one entry of sections may be -1, got %s" % sections)
    if -1 in sections and total is not None and total >= 0:
        sections[sections.index(-1)] = total - sum(s for s in sections if s != -1)
    return sections


def _split_kernel(ctx, ins, attrs):
    x = ins["X"]
    axis = int(scalar_from_tensor(ins, "AxisTensor", attrs["axis"])) % x.ndim
    n = len(ctx.op.outputs["Out"])
    sections = values_from_tensors(ins, "", "SectionsTensorList", attrs["sections"])
    if sections:
        sections = _resolve_sections(sections, x.shape[axis])
        if sum(sections) != x.shape[axis] or any(s < 0 for s in sections):
            raise ValueError("split: sections %s do not add up to %d, the size of axis %d of X %r"
                             % (attrs["sections"], x.shape[axis], axis, ctx.op.inputs["X"][0]))
        idx = np.cumsum(sections)[:-1]
        parts = ctx.xp.split(x, idx, axis=axis)
    else:
        parts = ctx.xp.split(x, n, axis=axis)
    return {"Out": [p.copy() for p in parts]}


def _split_grad_maker(op):
    return [{"type": "concat", "inputs": _with_axis_tensor(op, {"X": [n + "@GRAD" for n in op.outputs["Out"]]}),
             "outputs": {"Out": [op.inputs["X"][0] + "@GRAD"]}, "attrs": {"axis": op.attrs["axis"]}}]


register_op("split", inputs=["X", "AxisTensor?", "SectionsTensorList*?"], outputs=["Out*"],
            attrs={"axis": 0, "num": 0, "sections": []}, infer=_split_infer, grad=_split_grad_maker,
            no_grad=("AxisTensor", "SectionsTensorList"))(_split_kernel)


def _reshape_target(xshape, shape):
    shape = list(shape)
    for i, d in enumerate(shape):
        if d == 0:
            shape[i] = xshape[i]
    return shape


def _reshape_infer(ctx):
    xs = ctx.input_shape("X")
    if xs is None:
        return
    attr = list(ctx.attr("shape"))
    ctx.set_output("XShape", (0,) + tuple(xs), ctx.input_dtype("X"))
    if ctx.has_input("ShapeTensor"):    # Paddle's: the attr (-1 for the tensors' entries), 0s copied
        ctx.set_output("Out", _reshape_target(xs, attr), ctx.input_dtype("X"))
        return
    if ctx.has_input("Shape") and not attr:
        n = tensor_length(ctx, "Shape")
        ctx.set_output("Out", None if n is None else [-1] * n, ctx.input_dtype("X"))
        return
    shape = _reshape_target(xs, attr)
    unknown = [i for i, d in enumerate(attr) if d == -1]
    copied = {i for i, d in enumerate(attr) if d == 0}  # same size in and out: they cancel out
    rest_in = [d for i, d in enumerate(xs) if i not in copied]
    if len(unknown) == 1 and all(d >= 0 for d in rest_in):
        known = int(np.prod([d for i, d in enumerate(shape) if i not in copied and i != unknown[0]]))
        shape[unknown[0]] = int(np.prod(rest_in)) // max(known, 1)
    ctx.set_output("Out", shape, ctx.input_dtype("X"))


def _reshape_grad_maker(op):
    return [{"type": "reshape2_grad", "inputs": {"XShape": list(op.outputs["XShape"]),
                                                 "Out@GRAD": [op.outputs["Out"][0] + "@GRAD"]},
             "outputs": {"X@GRAD": [op.inputs["X"][0] + "@GRAD"]}, "attrs": {}}]


@register_op("reshape2", inputs=["X", "Shape?", "ShapeTensor*?"], outputs=["Out", "XShape?"], attrs={"shape": []},
             infer=_reshape_infer, grad=_reshape_grad_maker)
def reshape2(ctx, ins, attrs):
    """X with the shape of the ShapeTensor list, else of the Shape tensor, else of the attr (Paddle's
    order); 0 copies X's size there, one -1 takes the rest."""
    x = ins["X"]
    target = values_from_tensors(ins, "", "ShapeTensor", attrs["shape"])
    if ins.get("Shape") is not None and not ins.get("ShapeTensor"):
        target = [int(d) for d in ins["Shape"].reshape(-1).tolist()]
    shape = _reshape_target(x.shape, target)
    return {"Out": x.reshape(shape), "XShape": np.array(x.shape, dtype=np.int64)}


@register_grad("reshape2", inputs=["XShape", "Out@GRAD"])
def reshape2_grad(ctx, ins, attrs):
    return {"X@GRAD": ins["Out@GRAD"].reshape(tuple(int(d) for d in ins["XShape"]))}


def _transpose_infer(ctx):
    xs = ctx.input_shape("X")
    if xs is None:
        return
    ctx.set_output("Out", [xs[a] for a in ctx.attr("axis")], ctx.input_dtype("X"))
    ctx.set_output("XShape", (0,) + tuple(xs), ctx.input_dtype("X"))


def _transpose_grad_maker(op):
    return [{"type": "transpose2_grad", "inputs": {"Out@GRAD": [op.outputs["Out"][0] + "@GRAD"]},
             "outputs": {"X@GRAD": [op.inputs["X"][0] + "@GRAD"]}, "attrs": {"axis": op.attrs["axis"]}}]


@register_op("transpose2", inputs=["X"], outputs=["Out", "XShape?"], attrs={"axis": []},
             infer=_transpose_infer, grad=_transpose_grad_maker)
def transpose2(ctx, ins, attrs):
    x = ins["X"]
    return {"Out": ctx.xp.ascontiguousarray(x.transpose(attrs["axis"])),
            "XShape": np.array(x.shape, dtype=np.int64)}


@register_grad("transpose2", inputs=["Out@GRAD"])
def transpose2_grad(ctx, ins, attrs):
    inv = np.argsort(attrs["axis"])
    return {"X@GRAD": ctx.xp.ascontiguousarray(ins["Out@GRAD"].transpose(inv))}


def _increment_grad_maker(op):
    """In place (a loop counter): the reverse increment, which gives the gradient ops of a loop step
    back the counter value they read (the gradient passes through unchanged, under the same name).
    Otherwise ``X@GRAD = Out@GRAD``."""
    x, out = op.input("X")[0], op.output("Out")[0]
    if x == out:
        return [{"type": "increment", "inputs": {"X": [out]}, "outputs": {"Out": [x]},
                 "attrs": {"step": -float(op.attrs.get("step", 1.0))}, "keep": True}]
    return [{"type": "scale", "inputs": {"X": [out + "@GRAD"]}, "outputs": {"Out": [x + "@GRAD"]},
             "attrs": {"scale": 1.0, "bias": 0.0, "bias_after_scale": True}}]


@register_op("increment", inputs=["X"], outputs=["Out"], attrs={"step": 1.0}, infer=same_shape(),
             grad=_increment_grad_maker, reversible=True, counter=True)
def increment(ctx, ins, attrs):
    x = ins["X"]
    return {"Out": (x + attrs["step"]).astype(x.dtype, copy=False)}


@register_op("shape", inputs=["Input"], outputs=["Out"],
             infer=lambda c: c.set_output("Out", [len(c.input_shape("Input") or [])], "int32"))
def shape_op(ctx, ins, attrs):
    return {"Out": ctx.xp.asarray(np.array(ins["Input"].shape, dtype=np.int32))}


# ------------------------------------------------------------------ coalesce_tensor
_FUSED: dict = {}    # id -> weak reference of the buffers coalesce_tensor made (collectives reduce them in place)


def is_fused_buffer(x):
    """True for a FusedOutput of ``coalesce_tensor``: its parts are other variables' values."""
    ref = _FUSED.get(id(x))
    return ref is not None and ref() is x


def _remember_fused(x):
    key = id(x)
    _FUSED[key] = weakref.ref(x, lambda _, key=key: _FUSED.pop(key, None))


def _coalesce_infer(ctx):
    total, known = 0, True
    for v in ctx.input_vars("Input"):
        if v is None or v.shape is None or any(d < 0 for d in v.shape):
            known = False
            break
        total += int(np.prod(v.shape))
    ctx.set_output("FusedOutput", [total] if known else [-1], ctx.input_dtype("Input") or ctx.attr("dtype"))


def _data_ptr(a):
    return a.data.ptr if hasattr(a.data, "ptr") else a.ctypes.data      # CuPy | NumPy


def _reusable_fused(ctx, xs, dtype):
    """The buffer this op made at the previous step, when it fits again: as Paddle's fused gradient
    buffer lives across steps, and a data-parallel step then allocates no new buffer per place. Not
    reused when an input lies in it anywhere but its own part (the copy would read what it overwrote)."""
    if not xs:
        return None
    old = ctx.find_value(ctx.output_name("FusedOutput"))
    if old is None or not is_fused_buffer(old) or type(old) is not type(xs[0]) or old.dtype != dtype \
            or old.size != sum(int(x.size) for x in xs):
        return None
    begin = 0
    for x in xs:
        if ctx.xp.may_share_memory(x, old) and _data_ptr(x) != _data_ptr(old[begin:begin + x.size]):
            return None
        begin += x.size
    return old


@register_op("coalesce_tensor", inputs=["Input*"], outputs=["Output*", "FusedOutput"],
             attrs={"copy_data": False, "set_constant": False, "constant": 0.0, "dtype": "float32",
                    "check_name": False}, infer=_coalesce_infer)
def coalesce_tensor(ctx, ins, attrs):
    """One flat ``FusedOutput`` holding every ``Input`` back to back; ``Output[i]`` is a view of its
    part, shaped like ``Input[i]`` (so an op that writes ``FusedOutput`` in place, an all-reduce of all
    gradients at once, updates every ``Output``). ``copy_data`` copies the inputs in; ``set_constant``
    fills ``constant`` instead."""
    xs = ins["Input"]
    dtype = xs[0].dtype if xs else np.dtype(attrs["dtype"])
    for x, name in zip(xs, ctx.op.inputs["Input"]):
        if x.dtype != dtype:
            raise TypeError("coalesce_tensor: %r is %s but %r is %s: the fused tensor has one dtype"
                            % (name, x.dtype, ctx.op.inputs["Input"][0], dtype))
    fused = _reusable_fused(ctx, xs, dtype)
    if fused is None:
        fused = ctx.xp.empty(sum(int(x.size) for x in xs), dtype=dtype)
    if attrs["set_constant"]:
        fused.fill(attrs["constant"])
    outs, begin = [], 0
    for x in xs:
        part = fused[begin:begin + x.size]
        if attrs["copy_data"] and not attrs["set_constant"]:
            part[...] = x.reshape(-1)
        outs.append(part.reshape(x.shape))
        begin += x.size
    _remember_fused(fused)
    return {"Output": outs, "FusedOutput": fused}
