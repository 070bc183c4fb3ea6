"""Shapes, axes and sizes given as tensors: the optional inputs of Paddle 1.8's ops that override an
int-list attr at run time (``ShapeTensor`` / ``ShapeTensorList`` of ``fill_constant`` and the random
ops, ``StartsTensorList`` of ``slice``, ``AxesTensor`` of ``unsqueeze2``, ...). The whole tensor
wins over the list of ``[1]`` tensors, which wins over the attr, as in Paddle's kernels; a layer
writes -1 in the attr where a tensor gives the value (Paddle's ``infer_flags``)."""

SHAPE_SLOTS = ("ShapeTensor", "ShapeTensorList")
SHAPE_INPUTS = ["ShapeTensor?", "ShapeTensorList*?"]


def values_from_tensors(ins, tensor_slot, list_slot, default):
    """The ints of the whole tensor ``tensor_slot``, else of the ``[1]`` tensors of ``list_slot``,
    else ``default`` (the attr)."""
    if ins.get(tensor_slot) is not None:
        return [int(v) for v in ins[tensor_slot].reshape(-1).tolist()]
    if ins.get(list_slot):
        return [int(t.reshape(-1)[0]) for t in ins[list_slot]]
    return list(default)


def scalar_from_tensor(ins, slot, default):
    """The first value of the tensor ``slot`` (a host number), else ``default`` (the attr)."""
    t = ins.get(slot)
    if t is None:
        return default
    return t.reshape(-1)[:1].tolist()[0]


def with_tensor_shape(ins, attrs):
    """``attrs`` with ``shape`` taken from the ShapeTensor inputs when there are any."""
    if ins.get("ShapeTensor") is None and not ins.get("ShapeTensorList"):
        return attrs
    return dict(attrs, shape=values_from_tensors(ins, "ShapeTensor", "ShapeTensorList", attrs["shape"]))


def tensor_length(ctx, slot):
    """The number of values a whole 1-D tensor input holds, when its declared shape says (else None)."""
    shape = ctx.input_shape(slot)
    return shape[0] if shape is not None and len(shape) == 1 and shape[0] >= 0 else None


def declared_shape(ctx, all_unknown_with_list=False):
    """The output shape a creation op declares, as Paddle 1.8's: the ``shape`` attr (-1 where a
    ShapeTensorList entry is a Variable); a whole ShapeTensor: -1 for each of its values (None when
    its length is unknown). ``all_unknown_with_list``: every size -1 once a ShapeTensorList is given
    (``uniform_random``, ``randint``)."""
    inputs = ctx.op.inputs      # (what ctx.has_input reads: this runs for every initialiser appended)
    if inputs.get("ShapeTensor"):
        n = tensor_length(ctx, "ShapeTensor")
        return None if n is None else [-1] * n
    attr = list(ctx.attrs.get("shape") or [])
    if inputs.get("ShapeTensorList"):
        n = len(inputs["ShapeTensorList"])
        if all_unknown_with_list or len(attr) != n:
            return [-1] * n
    return attr


def creation_infer(all_unknown_with_list=False):
    """The ``infer`` of an op that makes a tensor of its ``shape`` and ``dtype`` attrs."""
    def infer(ctx):
        ctx.set_output("Out", declared_shape(ctx, all_unknown_with_list), ctx.attrs.get("dtype"))
    return infer
