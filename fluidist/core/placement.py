"""Whole runtime values moved between the host and a place, through the place's ``to_device`` /
``to_host`` (the only calls that copy arrays across).

A value is an array, a ``SelectedRows`` (rows and values both move), a ``LoDTensorArray`` or a
``LoDTensor`` (their arrays move, their LoD stays host lists), a list of values (a duplicable slot),
or anything else (rank tables, readers, strings, Python numbers), which stays where it is.
"""
import numpy as np

from ..device.places import is_device_array, to_host
from .tensor import LoDTensor, LoDTensorArray, SelectedRows


def to_place(value, place):
    """``value`` with its arrays on ``place`` (the same object where nothing had to move)."""
    if isinstance(value, np.ndarray) or is_device_array(value):
        return value if place.owns(value) else place.to_device(value)
    if isinstance(value, np.generic):
        return place.to_device(np.asarray(value))
    return _map(value, lambda a: to_place(a, place))


def copy_to(value, place):
    """A copy of ``value`` on ``place`` that shares no array with it (one place's copy of a
    persistable in a data-parallel run)."""
    if isinstance(value, np.ndarray) or is_device_array(value):
        return value.copy() if place.owns(value) else place.to_device(value)
    if isinstance(value, np.generic):
        return place.to_device(np.asarray(value))
    return _map(value, lambda a: copy_to(a, place))


def to_host_value(value):
    """``value`` with its arrays on the host (NumPy)."""
    if isinstance(value, np.ndarray):
        return value
    if is_device_array(value):
        return to_host(value)
    return _map(value, to_host_value)


def is_placed(value, place):
    """Whether every array of ``value`` is on ``place`` (values without arrays are placed anywhere)."""
    if isinstance(value, np.ndarray) or is_device_array(value):
        return place.owns(value)
    if isinstance(value, SelectedRows):
        return all(a is None or is_placed(a, place) for a in (value.rows, value.value))
    if isinstance(value, LoDTensorArray):
        return all(t is None or t._array is None or is_placed(t._array, place) for t in value)
    if isinstance(value, LoDTensor) and value._scope is None:
        return value._array is None or is_placed(value._array, place)
    if type(value) is list:
        return all(is_placed(v, place) for v in value)
    return True


def _map(value, move):
    if isinstance(value, SelectedRows):
        rows = value.rows if value.rows is None else move(value.rows)
        vals = value.value if value.value is None else move(value.value)
        if rows is value.rows and vals is value.value:
            return value
        return SelectedRows(rows, vals, value.height)
    if isinstance(value, LoDTensorArray):
        out = LoDTensorArray()
        for t in value:
            out.append(None if t is None else LoDTensor(None if t._array is None else move(t._array), t._lod))
        return out
    if isinstance(value, LoDTensor) and value._scope is None:
        return LoDTensor(None if value._array is None else move(value._array), value._lod)
    if type(value) is list:
        return [None if v is None else move(v) for v in value]
    return value
