"""``Block.edits()`` and ``Block.renames()``: many insertions by reference, or many variables
renamed, applied to the block's ops in one pass."""


class BlockEdits:
    """Insertions collected by ``Block.edits()`` and applied in one pass."""

    def __init__(self, block):
        self.block = block
        self.after, self.before, self.new = {}, {}, []

    def insert_after(self, anchor, type, inputs=None, outputs=None, attrs=None):
        op = self._new(type, inputs, outputs, attrs)
        self.after.setdefault(id(anchor), []).insert(0, op)   # right after the anchor
        return op

    def insert_before(self, anchor, type, inputs=None, outputs=None, attrs=None):
        op = self._new(type, inputs, outputs, attrs)
        self.before.setdefault(id(anchor), []).append(op)     # right before the anchor
        return op

    def _new(self, type, inputs, outputs, attrs):
        op = self.block._make_op(type, inputs, outputs, attrs)
        self.new.append(op)
        return op

    def _emit(self, anchor, out):
        """Append to ``out`` ``anchor`` with what goes before and after it (new ops can be anchors too)."""
        stack = [anchor]
        while stack:
            item = stack.pop()
            if isinstance(item, tuple):
                out.append(item[1])
                continue
            before = self.before.pop(id(item), ())
            after = self.after.pop(id(item), ())
            stack.extend(reversed(after))
            stack.append(("emit", item))
            stack.extend(reversed(before))

    def commit(self):
        if not self.new:
            return
        out = []
        before, after = self.before, self.after
        for op in self.block._ops:
            key = id(op)
            if key in before or key in after:
                self._emit(op, out)
            else:
                out.append(op)
        if self.after or self.before:
            raise ValueError("block %d edits: an anchor op is not in the block" % self.block.idx)
        self.block._ops = out
        if self.block._defuse is not None:
            for op in self.new:
                self.block._defuse.add(op)
        self.block.program._bump_version()


class BlockRenames:
    """Renames collected by ``Block.renames()``: each variable renamed at once, the ops' references
    in one pass when ``apply`` runs (at once through the def-use index, when the block has one)."""

    def __init__(self, block):
        self.block = block
        self.pending = {}       # old name -> new name, not yet in the ops

    def rename(self, old, new):
        block = self.block
        if block._defuse is not None:
            return block._rename_var(old, new)
        if old in self.pending or old in self.pending.values():
            self.apply()        # (a name renamed again: its ops first)
        v = block._rename_entry(old, new)
        self.pending[old] = new
        return v

    def apply(self):
        pending = self.pending
        if not pending:
            return
        olds = pending.keys()
        for op in self.block._ops:
            for slots in (op.inputs, op.outputs):
                for names in slots.values():
                    if not olds.isdisjoint(names):
                        names[:] = [pending.get(n, n) for n in names]
        self.pending = {}
        self.block.program._bump_version()
