"""Runtime values: LoDTensor (an array plus level-of-detail offsets) and SelectedRows."""
from __future__ import annotations

from typing import Any, List, Sequence

import numpy as np

from ..framework.dtypes import var_type_value
from ..device.base import checked_place
from ..device.places import array_module, is_device_array, to_host
from .row_sums import sums_in_order


def scatter_add(xp, out, idx, val):
    """``out[idx] += val`` with repeated indices accumulated (numpy's add.at, cupyx's scatter_add)."""
    if xp is np:
        if not _add_rows_by_rank(out, idx, val):
            np.add.at(out, idx, val)
    elif getattr(xp, "__name__", "") == "cupy":
        import cupyx
        cupyx.scatter_add(out, idx, val)
    else:
        xp.add.at(out, idx, val)
    return out


MAX_RANKS = 8     # rows repeated more often than this are left to np.add.at


def _add_rows_by_rank(out, idx, val):
    """``np.add.at(out, idx, val)`` for whole rows (``idx`` 1-D non-negative ints, ``val`` one row of
    ``out``'s dtype per index), with the same result bit for bit: rows are added in rounds, the first
    occurrence of every index, then the second, ... so each row receives its values in their order, as
    add.at adds them; a round is one ``take``, one add and one assignment of distinct rows, where
    add.at visits the rows one by one (25x slower on a sync pserver's table of 500K x 16 rows).
    Returns False, doing nothing, for any other case."""
    if (type(out) is not np.ndarray or type(idx) is not np.ndarray or type(val) is not np.ndarray
            or out.ndim < 2 or idx.ndim != 1 or idx.dtype.kind not in "iu" or val.dtype != out.dtype
            or val.shape != idx.shape + out.shape[1:] or not out.flags.c_contiguous or not len(idx)):
        return False
    if idx.dtype.kind == "i" and int(idx.min()) < 0:
        return False          # -1 and n-1 name one row: left to add.at
    order = np.argsort(idx, kind="stable")
    ranked = idx[order]
    if int(ranked[-1]) >= len(out):
        raise IndexError("index %d is out of bounds for axis 0 with size %d" % (int(ranked[-1]), len(out)))
    starts = np.flatnonzero(np.r_[True, ranked[1:] != ranked[:-1]])
    if len(starts) == len(idx):       # no index repeats: one round
        rounds = [slice(None)]
    else:
        lengths = np.diff(np.r_[starts, len(idx)])
        if int(lengths.max()) > MAX_RANKS:
            return False
        rank = np.empty(len(idx), dtype=np.int64)
        rank[order] = np.arange(len(idx)) - np.repeat(starts, lengths)
        rounds = [np.flatnonzero(rank == k) for k in range(int(lengths.max()))]
    for sel in rounds:
        rows = idx[sel]
        part = out.take(rows, axis=0)
        part += val[sel]
        out[rows] = part
    return True


def scatter_max(xp, out, idx, val):
    """``out[idx] = max(out[idx], val)`` with repeated indices (numpy's maximum.at, cupyx's scatter_max)."""
    if getattr(xp, "__name__", "") == "cupy":
        import cupyx
        cupyx.scatter_max(out, idx, val)
    else:
        xp.maximum.at(out, idx, val)
    return out


def unique_rows(xp, rows):
    """(sorted distinct rows, order, starts): ``rows[order]`` is sorted (a stable sort, so equal rows
    keep their order) and ``starts`` are the positions in it where a new row begins. One sort serves
    both the distinct rows and, with ``sum_rows``, the sums of their values."""
    order = xp.argsort(rows, kind="stable")
    ordered = xp.take(rows, order)
    if ordered.size == 0:
        return ordered, order, xp.zeros(0, dtype=order.dtype)
    starts = xp.flatnonzero(_run_starts(xp, ordered))
    return xp.take(ordered, starts), order, starts


def _run_starts(xp, ordered):
    """True where a new value begins in the sorted, non-empty 1-D ``ordered``."""
    new = xp.empty(ordered.shape, dtype=bool)
    new[:1] = True
    xp.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    return new


def distinct(xp, values):
    """The sorted distinct values of a 1-D array: ``xp.unique`` without its extra bookkeeping (one
    sort and one mask; NumPy's unique takes 1.7x as long on a batch's 26K ids). Ids of a table
    (``_id_range``) are marked in a mask over their range instead: no sort at all (0.25 ms against
    0.8 ms for a batch's 26,624 ids of a 1M-row table)."""
    top = _id_range(values) if xp is np else None
    if top is not None:
        return _distinct_in_range(values, top)
    s = xp.sort(values)
    return s if s.size < 2 else s[_run_starts(xp, s)]


def sum_rows(xp, value, order, starts):
    """The values of each distinct row summed, in the order of ``unique_rows``: on the host as Paddle
    1.8's CPU merge sums them (``row_sums``: from zeros, each row in turn, in the order they came);
    on a device one segmented ``add.reduceat`` (Paddle's GPU merge adds with atomics, in no set order)."""
    if xp is np:
        return sums_in_order(value, order, np.diff(starts, append=len(order)))
    return xp.add.reduceat(xp.take(value, order, axis=0), starts, axis=0)


_IDS_PER_ROW = 64        # a mask over the id range is cheaper than a sort up to about 120 entries per id
_RADIX_RANKS = 1 << 16   # NumPy's stable argsort is a radix sort for 16-bit integers only


def _id_range(rows):
    """``max + 1`` of a NumPy 1-D array of non-negative integers (ids of a table) when the range is
    at most ``_IDS_PER_ROW`` times their count, else None (other arrays, empty ones, negative ids)."""
    if type(rows) is not np.ndarray or rows.ndim != 1 or rows.dtype.kind not in "iu" or rows.size < 2:
        return None
    top = int(rows.max()) + 1
    if top > _IDS_PER_ROW * rows.size or int(rows.min()) < 0:
        return None
    return top


def _distinct_in_range(rows, top):
    """The sorted distinct values of ``rows``, all in ``[0, top)``, in their dtype."""
    seen = np.zeros(top, dtype=bool)
    seen[rows] = True
    return np.flatnonzero(seen).astype(rows.dtype, copy=False)


def merge_rows(xp, rows, value):
    """Paddle's MergeAdd of a row-sparse value: (the sorted distinct ``rows``, the ``value`` rows of
    each one summed), the sums those of ``unique_rows`` and ``sum_rows`` bit for bit.

    Ids of a table (``_id_range``) with at most 65,536 distinct values are ranked without a sort on
    NumPy: a mask over the range gives the distinct ids, a position map each id's rank, a radix sort
    of the 16-bit ranks the same stable order (a ctr batch's 26,624 gradient rows of 10,864 ids:
    1.0 ms against 1.6 ms sorted, best of runs on a busy 2-core machine)."""
    top = _id_range(rows) if xp is np else None
    if top is not None and type(value) is np.ndarray and value.ndim >= 1 and value.shape[0] == rows.shape[0]:
        uniq = _distinct_in_range(rows, top)
        if uniq.size <= _RADIX_RANKS:
            return uniq, _sum_by_rank(rows, value, uniq, top)
    uniq, order, starts = unique_rows(xp, rows)
    return uniq, sum_rows(xp, value, order, starts)


def _sum_by_rank(rows, value, uniq, top):
    """``merge_rows``' sums of ``value`` over the rows of each of ``uniq`` (the distinct ``rows``)."""
    rank = np.empty(top, dtype=np.uint16)
    rank[uniq] = np.arange(uniq.size, dtype=np.uint16)
    ranks = rank[rows]
    return sums_in_order(value, np.argsort(ranks, kind="stable"), np.bincount(ranks, minlength=uniq.size))


class SelectedRows:
    """A row-sparse tensor: ``value[i]`` is row ``rows[i]`` of a ``height`` x width tensor.

    Rows may repeat (gradients of repeated ids); ``merged()`` sums duplicates.
    """

    __slots__ = ("rows", "value", "height")

    def __init__(self, rows=None, value=None, height=0):
        self.rows = rows
        self.value = value
        self.height = int(height)

    def get_tensor(self) -> LoDTensor:
        """The value rows, as a LoDTensor."""
        return LoDTensor(self.value)

    def set_rows(self, rows: Sequence[int]) -> None:
        """The row index of each value row."""
        self.rows = np.asarray(rows, dtype=np.int64)

    def set_height(self, h: int) -> None:
        """The number of rows of the dense tensor these rows belong to."""
        self.height = int(h)

    def merged(self, xp: Any = None) -> SelectedRows:
        """Duplicate rows summed (``xp``: the array module of the values' place, found when None)."""
        if self.rows is None or len(self.rows) == 0:
            return self
        xp = xp or array_module(self.value)
        rows = self.rows.reshape(-1)
        if xp is np and type(rows) is np.ndarray and bool((rows[1:] > rows[:-1]).all()):
            return self     # rows sorted and distinct already (a sum's output): nothing to merge
        uniq, value = merge_rows(xp, rows, self.value)
        if len(uniq) == len(rows):
            return self
        return SelectedRows(uniq, value, self.height)

    def to_dense(self, xp: Any = None) -> Any:
        """The dense ``height`` x width tensor, on the values' place."""
        xp = xp or array_module(self.value)
        out = xp.zeros((self.height,) + tuple(self.value.shape[1:]), dtype=self.value.dtype)
        return scatter_add(xp, out, self.rows, self.value)

    def __repr__(self):
        return "SelectedRows(height=%d, rows=%s, value shape=%s)" % (
            self.height, None if self.rows is None else list(to_host(self.rows)),
            None if self.value is None else tuple(self.value.shape))


def lengths_to_offsets(lengths: Sequence[int]) -> List[int]:
    """Sequence lengths to LoD offsets: ``[2, 3]`` -> ``[0, 2, 5]``."""
    off = [0]
    for n in lengths:
        off.append(off[-1] + int(n))
    return off


def offsets_to_lengths(offsets: Sequence[int]) -> List[int]:
    """LoD offsets to sequence lengths: ``[0, 2, 5]`` -> ``[2, 3]``."""
    return [offsets[i + 1] - offsets[i] for i in range(len(offsets) - 1)]


def lod_problem(lod: Sequence[Sequence[int]]) -> str | None:
    """Why ``lod`` (offsets, one list per level) is not a LoD, or None when it is one: each level
    holds at least one sequence, starts at 0 and never decreases, and a level's last offset is the
    number of sequences of the level below (Paddle's check of a LoD before the data is known)."""
    for k, offsets in enumerate(lod):
        if len(offsets) < 2 or offsets[0] != 0 or any(b < a for a, b in zip(offsets, offsets[1:])):
            return "level %d %s is not offsets from 0 that never decrease" % (k, list(offsets))
        if k + 1 < len(lod) and offsets[-1] != len(lod[k + 1]) - 1:
            return "level %d ends at %d but level %d has %d sequences" % (k, offsets[-1], k + 1, len(lod[k + 1]) - 1)
    return None


class LoDMismatchError(ValueError, AssertionError):
    """Sequence lengths that do not fit the data given to ``create_lod_tensor``: a ValueError, and
    an AssertionError as Paddle's ``create_lod_tensor`` asserts the fit."""


def _index_keeping_dims(index, shape):
    """Paddle's tensor indexing: an int picks one row but keeps its axis (``t[1]`` of a [3, 4]
    tensor is [1, 4]; out of range is an IndexError, which also ends iteration); slices are Python's."""
    items = index if isinstance(index, tuple) else (index,)
    if len(items) > len(shape):
        raise IndexError("%d indices for a tensor of %d dims" % (len(items), len(shape)))
    out = []
    for axis, item in enumerate(items):
        if isinstance(item, (int, np.integer)) and not isinstance(item, bool):
            i = int(item)
            if not -shape[axis] <= i < shape[axis]:
                raise IndexError("index %d is out of range for axis %d of size %d" % (i, axis, shape[axis]))
            i %= shape[axis]
            out.append(slice(i, i + 1))
        elif isinstance(item, slice):
            out.append(item)
        else:
            raise TypeError("a tensor is indexed by ints and slices, got %r" % (type(item).__name__,))
    return tuple(out)


class Tensor:
    """Paddle's ``core.Tensor``: an array on a place (``np.array(t)`` gives the data); ``LoDTensor``
    adds level-of-detail offsets. The underscored methods are the ones Paddle's pybind gives scripts
    (``_get_dims``, ``_get_float_element``, ``_alloc_float``, ...), with Paddle's behaviour.

    A tensor obtained from ``scope.find_var(name).get_tensor()`` is a live view: reading it reads
    the scope, ``set()`` writes the scope.
    """

    def __init__(self, array=None, lod=None, _scope=None, _name=None):
        self._array = array
        self._lod = [list(l) for l in lod] if lod else []
        self._scope = _scope
        self._name = _name
        self._dims = None       # dims set by _set_dims before any memory is allocated

    # storage
    def _get(self):
        if self._scope is not None:
            return self._scope._find_value(self._name)
        return self._array

    def _get_lod(self):
        if self._scope is not None:
            return self._scope._find_lod(self._name)
        return self._lod

    def _put(self, arr):
        if self._scope is not None:
            self._scope._set_value(self._name, arr)
        else:
            self._array = arr

    def set(self, array: Any, place: Any = None) -> None:
        """Store a copy of ``array`` on ``place`` (a device place copies it there through its
        ``to_device``; no place or a CPU place keeps it on the host)."""
        if place is not None and checked_place(place, "LoDTensor.set").is_device:
            arr = place.to_device(array if is_device_array(array) else np.asarray(array))
            if arr is array:
                arr = arr.copy()
        else:
            arr = np.array(to_host(array), copy=True)
        self._put(arr)

    def shape(self) -> List[int]:
        """The shape of the value (or of the dims set before any memory)."""
        a = self._get()
        return list(a.shape) if a is not None else list(self._dims or [])

    def _dtype(self):
        """The data type as Paddle's ``VarType`` value (which is also the dtype name), or None."""
        a = self._get()
        if a is None:
            return None
        try:
            return var_type_value(np.dtype(a.dtype).name)
        except ValueError:      # a dtype Paddle has no VarType for
            return a.dtype

    def _to_dlpack(self) -> Any:
        """The data as a DLPack capsule (``core.from_dlpack`` reads it back, as other frameworks do)."""
        return _value_for_dlpack(self).__dlpack__()

    def __array__(self, dtype=None, copy=None):
        a = to_host(self._get())
        if a is None:
            raise ValueError("tensor %r holds no value yet" % (self._name or "<tensor>"))
        if isinstance(a, SelectedRows):
            a = to_host(a.value)
        return np.array(a, dtype=dtype, copy=True)

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__, self.shape())

    def __getitem__(self, index: Any) -> Tensor:
        """A new Tensor holding a copy of the indexed part (``t[1:3]``, ``t[0::2, 1:]``, ``t[1]``)."""
        a = self._get()
        if a is None:
            raise ValueError("tensor %r holds no value yet" % (self._name or "<tensor>"))
        return Tensor(a[_index_keeping_dims(index, a.shape)].copy())


    # Paddle's pybind methods
    from .tensor_methods import (_alloc_double, _alloc_float, _alloc_int, _clear,  # type: ignore[misc]  # noqa: E402
                                 _copy, _get_dims, _get_double_element, _get_float_element, _is_initialized,
                                 _mutable_data, _place, _set_dims, _set_double_element, _set_float_element,
                                 _set_layout, _share_data_with)


class LoDTensor(Tensor):
    """An array with optional LoD (offsets per level). ``np.array(t)`` gives the data.

    Examples:
        >>> t = fluid.LoDTensor()
        >>> t.set(np.arange(5, dtype="float32").reshape(5, 1), fluid.CPUPlace())
        >>> t.set_recursive_sequence_lengths([[2, 3]])
        >>> t.lod(), t.recursive_sequence_lengths(), t.has_valid_recursive_sequence_lengths()
        ([[0, 2, 5]], [[2, 3]], True)
    """

    def set_lod(self, lod: Sequence[Sequence[int]]) -> None:
        """Set the LoD: one list of offsets per level (ValueError for offsets that are no LoD)."""
        lod = [list(map(int, l)) for l in lod]
        problem = lod_problem(lod)
        if problem is not None:
            raise ValueError("%s is not a LoD: %s" % (lod, problem))
        if self._scope is not None:
            self._scope._set_lod(self._name, lod)
        else:
            self._lod = lod

    def lod(self) -> List[List[int]]:
        """The LoD: one list of offsets per level (``[]`` without)."""
        return [list(l) for l in (self._get_lod() or [])]

    def set_recursive_sequence_lengths(self, lengths: Sequence[Sequence[int]]) -> None:
        """Set the LoD from sequence lengths, one list per level."""
        self.set_lod([lengths_to_offsets(l) for l in lengths])

    def recursive_sequence_lengths(self) -> List[List[int]]:
        """The sequence lengths, one list per level."""
        return [offsets_to_lengths(l) for l in self.lod()]

    def has_valid_recursive_sequence_lengths(self) -> bool:
        """Whether the LoD is one and its last level's offsets end at the number of rows."""
        lod = self.lod()
        arr = self._get()
        if not lod:
            return True
        return lod_problem(lod) is None and lod[-1][-1] == (arr.shape[0] if arr is not None else 0)

    def __repr__(self):
        return "LoDTensor(%s%s)" % (self.shape(), ", lod=%s" % self.lod() if self.lod() else "")


def create_lod_tensor(data: Any, recursive_seq_lens: Sequence[Sequence[int]] | None, place: Any = None) -> LoDTensor:
    """A LoDTensor from an array (or a list of sequences, of int64 ids) and sequence lengths per level.

    Args:
        data: a NumPy array whose rows are the sequences' steps, a LoDTensor, or a list of
            sequences (each a list of ids; they become an int64 ``[rows, 1]`` array).
        recursive_seq_lens: the sequence lengths, one list per LoD level (``[[2, 3]]``: two
            sequences of 2 and 3 rows).
        place: accepted for Paddle's signature (the value is moved when it is fed).

    Returns:
        The LoDTensor.

    Raises:
        LoDMismatchError: lengths that do not add up to the rows (a ValueError, and an
            AssertionError as in Paddle).

    Examples:
        >>> t = fluid.create_lod_tensor(np.ones((5, 2), "float32"), [[2, 3]], fluid.CPUPlace())
        >>> t.lod()
        [[0, 2, 5]]
        >>> fluid.create_lod_tensor([[1, 2], [3]], [[2, 1]], fluid.CPUPlace()).recursive_sequence_lengths()
        [[2, 1]]
    """
    if isinstance(data, LoDTensor):
        t = LoDTensor(np.array(data))
    elif isinstance(data, list):
        flat = np.concatenate([np.asarray(seq).reshape(len(seq), -1) for seq in data]).astype(np.int64)
        t = LoDTensor(flat)
    else:
        t = LoDTensor(np.asarray(data))
    if recursive_seq_lens:
        t.set_recursive_sequence_lengths(recursive_seq_lens)
        if not t.has_valid_recursive_sequence_lengths():
            raise LoDMismatchError("sequence lengths %s do not add up to the %d rows of the data"
                             % (recursive_seq_lens, t.shape()[0]))
    return t


def _value_for_dlpack(tensor):
    a = tensor._get()
    if a is None:
        raise ValueError("tensor %r holds no value yet" % (tensor._name or "<tensor>"))
    return a


class _Capsule:
    """A DLPack capsule as the object NumPy's ``from_dlpack`` takes (a CPU tensor's)."""

    def __init__(self, capsule):
        self._capsule = capsule

    def __dlpack__(self, stream=None):
        return self._capsule

    def __dlpack_device__(self):
        return (1, 0)       # kDLCPU


def from_dlpack(dltensor: Any) -> Tensor:
    """A Tensor holding the data of a DLPack capsule or of an object with ``__dlpack__`` (NumPy,
    CuPy, ... arrays), shared, not copied."""
    if hasattr(dltensor, "__dlpack__"):
        source = dltensor
        dev = getattr(dltensor, "__dlpack_device__", lambda: (1, 0))()[0]
    else:
        source, dev = _Capsule(dltensor), 1
    if dev != 1:
        import cupy
        return Tensor(cupy.from_dlpack(source))
    try:
        return Tensor(np.from_dlpack(source))
    except (RuntimeError, BufferError, TypeError):      # a device capsule: CuPy reads it
        import cupy
        return Tensor(cupy.from_dlpack(dltensor))


class LoDTensorArray(list):
    """Paddle's ``LoDTensorArray``: a list of LoDTensors (``write_to_array`` / ``read_from_array``).

    Items are ``LoDTensor`` objects holding an array and its LoD; a slot never written is ``None``
    (a gradient array holds only the steps that received a gradient; a missing item reads as zeros)."""

    def append(self, tensor: Any) -> None:
        list.append(self, tensor if isinstance(tensor, LoDTensor) or tensor is None else LoDTensor(tensor))

    def item(self, i: int) -> tuple:
        """(array, lod) of item ``i``, or (None, []) where nothing was written."""
        t = self[i] if 0 <= i < len(self) else None
        if t is None:
            return None, []
        return t._array, t._lod

    def put(self, i: int, array: Any, lod: Any = None) -> None:
        """Set item ``i`` (the array grows with empty slots up to it)."""
        while len(self) <= i:
            list.append(self, None)
        self[i] = LoDTensor(array, lod)

    def __repr__(self):
        return "LoDTensorArray(%s)" % ", ".join("None" if t is None else repr(t) for t in self)


class LoDRankTable:
    """The sequences of one LoD level sorted by length, longest first (ties keep their order):
    ``ranked`` is a list of ``(sequence index, length)`` (``items()`` gives it, as Paddle's table
    does); ``coarse_lod`` the LoD levels above it."""

    __slots__ = ("ranked", "coarse_lod")

    def __init__(self, items, coarse_lod=None):
        self.ranked = [(int(i), int(n)) for i, n in items]
        self.coarse_lod = [list(l) for l in coarse_lod] if coarse_lod else []

    def items(self):
        """``[(sequence index, length), ...]``, longest first."""
        return list(self.ranked)

    @classmethod
    def from_lod(cls, lod, level):
        offsets = lod[level]
        lengths = [offsets[k + 1] - offsets[k] for k in range(len(offsets) - 1)]
        order = sorted(range(len(lengths)), key=lambda k: -lengths[k])   # sorted() is stable
        return cls([(k, lengths[k]) for k in order], lod[:level])

    def __repr__(self):
        return "LoDRankTable(%s)" % self.ranked
