"""The def-use index of a block (see ``Block.writers_of`` / ``readers_of`` / ``last_writer``)."""


class DefUse:
    """The def-use index of one block: variable name -> the ops that write it / read it.

    Kept up to date by every edit made through Block and Operator methods, so that passes find
    the writers and readers of a variable in O(its uses) instead of scanning every op."""

    __slots__ = ("writers", "readers")

    def __init__(self, ops=()):
        self.writers = {}   # name -> {id(op): op}, in insertion order
        self.readers = {}
        for op in ops:
            self.add(op)

    def add(self, op):
        key = id(op)
        readers, writers = self.readers, self.writers
        for names in op.inputs.values():
            for n in names:
                d = readers.get(n)
                if d is None:
                    readers[n] = {key: op}
                else:
                    d[key] = op
        for names in op.outputs.values():
            for n in names:
                d = writers.get(n)
                if d is None:
                    writers[n] = {key: op}
                else:
                    d[key] = op

    def discard(self, op):
        key = id(op)
        for table, slots in ((self.readers, op.inputs), (self.writers, op.outputs)):
            for names in slots.values():
                for n in names:
                    d = table.get(n)
                    if d is not None:
                        d.pop(key, None)
                        if not d:
                            del table[n]

    def same_as(self, other):
        def norm(t):
            return {n: set(d) for n, d in t.items() if d}
        return norm(self.writers) == norm(other.writers) and norm(self.readers) == norm(other.readers)
