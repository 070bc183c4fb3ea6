"""Shape inference at graph-building time: the ``InferShapeContext`` an op type's ``infer`` function
reads its op through (input variables' shapes, dtypes and LoD levels, attrs) and sets the output
variables with, and the common ``infer`` functions. ``registry.infer_shape`` runs them."""


class InferShapeContext:
    """What an ``infer`` function sees at graph-building time: input metas and attrs."""

    __slots__ = ("op", "block", "attrs")

    def __init__(self, op, block):
        self.op = op
        self.block = block
        self.attrs = op.attrs

    def _var(self, name):
        return self.block._find_var_recursive(name)

    def has_input(self, slot):
        return bool(self.op.inputs.get(slot))

    def has_output(self, slot):
        return bool(self.op.outputs.get(slot))

    def input_var(self, slot, i=0):
        names = self.op.inputs.get(slot) or []
        if len(names) <= i:
            return None
        return self._var(names[i])

    def input_vars(self, slot):
        return [self._var(n) for n in self.op.inputs.get(slot) or []]

    def input_shape(self, slot, i=0):
        v = self.input_var(slot, i)
        return tuple(v.shape) if v is not None and v.shape is not None else None

    def input_dtype(self, slot, i=0):
        v = self.input_var(slot, i)
        return v.dtype if v is not None else None

    def input_lod_level(self, slot, i=0):
        v = self.input_var(slot, i)
        return v.lod_level if v is not None else 0

    def attr(self, name):
        return self.op.attrs.get(name)

    def set_output(self, slot, shape, dtype=None, lod_level=None, i=0, type=None):
        names = self.op.outputs.get(slot)
        if not names or len(names) <= i:
            return
        v = self._var(names[i])
        if v is None:
            return
        v._set_inferred(tuple(map(int, shape)) if shape is not None else None, dtype, lod_level, type)

    def share(self, out_slot, in_slot, lod=True):
        """Output gets the input's shape and dtype (and LoD level)."""
        v = self.input_var(in_slot)
        if v is None:
            return
        self.set_output(out_slot, v.shape, v.dtype, v.lod_level if lod else None)


def same_shape(in_slot="X", out_slot="Out"):
    def infer(ctx):
        ctx.share(out_slot, in_slot)
    return infer


def no_infer(ctx):
    pass
