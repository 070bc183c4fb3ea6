"""``fluid.core.SelectedRows``: Paddle's pybind handle of a row-sparse value (``rows()``,
``height()``, ``set_rows``, ``get_tensor()`` ...), over fluidist's own ``SelectedRows`` value (whose
``rows`` / ``value`` / ``height`` are fields: the executor and kernels read them).

A handle from ``scope.var(name).get_selected_rows()`` is live, as the ``LoDTensor`` of
``get_tensor()`` is: it reads and writes whatever SelectedRows the scope holds under that name at
the time, so a run that replaces the value (an op's output) shows through a handle taken before it.
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

import numpy as np

from ..device.places import to_host
from .tensor import LoDTensor, SelectedRows


class _RowsValueSlot:
    """The storage of ``get_tensor()``: the ``value`` field of the handle's SelectedRows (a Tensor
    view reads and writes it through this, as it does a scope's value)."""

    def __init__(self, handle: SelectedRowsHandle):
        self._handle = handle

    def _find_value(self, name):
        return self._handle._target().value

    def _set_value(self, name, value):
        self._handle._target().value = value

    def _find_lod(self, name):
        return []

    def _set_lod(self, name, lod):
        if lod:
            raise ValueError("the value tensor of a SelectedRows carries no LoD")


class SelectedRowsHandle:
    """Paddle's ``core.SelectedRows``: ``SelectedRows(rows, height)`` makes one; scripts fill it
    with ``set_rows`` / ``set_height`` / ``get_tensor().set(array, place)`` and read ``rows()``,
    ``height()``, ``np.array(get_tensor())``.

    Examples:
        >>> sr = fluid.core.SelectedRows([0, 4], 10)
        >>> sr.get_tensor().set(np.ones((2, 3), "float32"), fluid.CPUPlace())
        >>> sr.rows(), sr.height(), sr.numel()
        ([0, 4], 10, 6)
    """

    def __init__(self, rows: Optional[Sequence[int]] = None, height: int = 0,
                 _scope: Any = None, _name: Optional[str] = None) -> None:
        self._scope, self._name = _scope, _name
        self._own = None
        if _scope is None:
            self._own = SelectedRows(np.asarray(list(rows or []), dtype=np.int64), None, height)

    def _target(self) -> SelectedRows:
        """The SelectedRows value this handle stands for (for a scope's: made there when the
        variable holds nothing; a variable holding another kind of value is a TypeError, as Paddle's
        variables keep their type)."""
        if self._own is not None:
            return self._own
        value = self._scope._find_value(self._name)
        if value is None:
            value = SelectedRows(np.zeros(0, dtype=np.int64), None, 0)
            self._scope._set_value(self._name, value)
        elif not isinstance(value, SelectedRows):
            raise TypeError("variable %r holds a %s, not a SelectedRows" % (self._name, type(value).__name__))
        return value

    def rows(self) -> List[int]:
        """The row index of each value row."""
        rows = self._target().rows
        return [] if rows is None else [int(r) for r in to_host(rows).reshape(-1)]

    def set_rows(self, rows: Sequence[int]) -> None:
        """Set the row index of each value row."""
        self._target().set_rows(list(rows))

    def height(self) -> int:
        """The number of rows of the dense tensor these rows belong to."""
        return int(self._target().height)

    def set_height(self, height: int) -> None:
        """Set the number of rows of the dense tensor."""
        self._target().set_height(height)

    def get_tensor(self) -> LoDTensor:
        """The value rows as a live LoDTensor (``set()`` on it sets them)."""
        return LoDTensor(_scope=_RowsValueSlot(self), _name=self._name or "selected_rows")

    def numel(self) -> int:
        """The number of elements of the value rows."""
        value = self._target().value
        return 0 if value is None else int(value.size)

    def sync_index(self) -> None:
        """Paddle rebuilds its row-id -> position map here; fluidist keeps none (it looks rows up
        when it needs them), so there is nothing to rebuild."""

    @property
    def value(self) -> Any:
        """The value rows as an array (fluidist's field), or None."""
        return self._target().value

    def __repr__(self):
        return repr(self._target())
