"""LazyRows: a height x width tensor whose rows are materialised when first written.

A pserver's shard of a big distributed table holds the table's rows densely, but the optimizer's
accumulators of that table (Adagrad's Moment, ...) start as a constant and change only in the rows a
gradient touches. As ``LazyRows`` they cost memory only for those rows (plus a slot map of 4 bytes a
row): a row never written reads as the fill value, exactly what a dense accumulator holds there.
Update rules that touch only the gradient's rows (the registry's ``UpdateRule.row_wise``) can use
them; a rule that updates every row (Adam without lazy_mode) cannot, and the transpiler keeps such
tables off them.
"""
import numpy as np

_FIRST_CAPACITY = 1024


class LazyRows:
    """Rows of a ``(height, width)`` tensor: ``self[rows]`` reads them (the fill value where never
    written), ``self[rows] = values`` writes them (materialising the new ones). ``rows`` are integer
    arrays; written rows must be distinct (a merged gradient's rows are)."""

    __slots__ = ("height", "width", "dtype", "fill", "xp", "_slot", "_data", "_used")

    def __init__(self, height, width, dtype="float32", fill=0.0, xp=np):
        self.height, self.width = int(height), int(width)
        self.dtype = np.dtype(dtype)
        self.fill = fill
        self.xp = xp
        index_type = np.int32 if self.height < 2 ** 31 else np.int64
        self._slot = xp.full((self.height,), -1, dtype=index_type)   # row -> its slot in _data, or -1
        self._data = xp.empty((0, self.width), dtype=self.dtype)
        self._used = 0

    @property
    def shape(self):
        return (self.height, self.width)

    @property
    def ndim(self):
        return 2

    @property
    def rows_materialised(self):
        return self._used

    @property
    def nbytes(self):
        return int(self._slot.nbytes + self._data.nbytes)

    def _check(self, rows):
        rows = self.xp.asarray(rows).reshape(-1)
        if rows.dtype.kind not in "iu":
            raise TypeError("LazyRows: rows must be integers, got dtype %s" % rows.dtype)
        if rows.size and (int(rows.min()) < 0 or int(rows.max()) >= self.height):
            raise IndexError("LazyRows: rows outside [0, %d)" % self.height)
        return rows

    def __getitem__(self, rows):
        xp = self.xp
        rows = self._check(rows)
        slots = xp.take(self._slot, rows)
        out = xp.full((rows.size, self.width), self.fill, dtype=self.dtype)
        have = xp.flatnonzero(slots >= 0)
        if have.size:
            out[have] = xp.take(self._data, xp.take(slots, have), axis=0)
        return out

    def __setitem__(self, rows, values):
        xp = self.xp
        rows = self._check(rows)
        slots = xp.take(self._slot, rows)
        fresh = xp.take(rows, xp.flatnonzero(slots < 0))
        if fresh.size:
            fresh = xp.unique(fresh)
            self._grow(self._used + fresh.size)
            self._slot[fresh] = xp.arange(self._used, self._used + fresh.size, dtype=self._slot.dtype)
            self._used += int(fresh.size)
            slots = xp.take(self._slot, rows)
        self._data[slots] = xp.asarray(values, dtype=self.dtype).reshape(rows.size, self.width)

    def _grow(self, need):
        if need <= self._data.shape[0]:
            return
        capacity = max(_FIRST_CAPACITY, self._data.shape[0])
        while capacity < need:
            capacity *= 2
        data = self.xp.empty((capacity, self.width), dtype=self.dtype)
        data[:self._used] = self._data[:self._used]
        self._data = data

    def to_dense(self):
        """The whole tensor as an array (for saving or inspecting a small table)."""
        out = self.xp.full(self.shape, self.fill, dtype=self.dtype)
        have = self.xp.flatnonzero(self._slot >= 0)
        out[have] = self.xp.take(self._data, self.xp.take(self._slot, have), axis=0)
        return out

    def __array__(self, dtype=None, copy=None):
        from ..device.places import to_host
        out = to_host(self.to_dense())
        return out.astype(dtype, copy=False) if dtype is not None else out

    def __repr__(self):
        return "LazyRows(shape=%s, %d rows materialised, fill=%r)" % (list(self.shape), self._used, self.fill)
