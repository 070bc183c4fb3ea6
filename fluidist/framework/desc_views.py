"""``program.desc``, ``block.desc``, ``op.desc``, ``var.desc`` and ``op.attr_type(name)``: Paddle's pybind
descriptions of the IR's objects, which fluidist makes as views over the IR in
:mod:`fluidist.paddle_format.desc` (with Paddle's attribute types of each op); and
``Program.parse_from_string``, the reader of Paddle's ProgramDesc bytes in :mod:`fluidist.paddle_format`.

That module sits above the IR (it reads and writes programs in Paddle's format), so the IR names it
instead of importing it, as the op table names the op families: the view is made on first use, in
any process (one that imports only ``fluidist.framework`` and ``fluidist.layers``, as Paddle's tests
do, gets ``program.desc`` too).
"""
import importlib
from typing import Any

#: the module that makes the views, and the package that reads Paddle's program files
VIEWS = "fluidist.paddle_format.desc"
FORMATS = "fluidist.paddle_format"


class DescView:
    """The ``desc`` attribute of an IR class: the view class ``view`` of :data:`VIEWS` over the object."""

    def __init__(self, view: str) -> None:
        self.view = view
        self.__doc__ = "Paddle's %s of this object (a view: see fluidist.paddle_format.desc)." % view

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if obj is None:
            return self
        return getattr(importlib.import_module(VIEWS), self.view)(obj)


def attr_type(op: Any, name: str) -> int:
    """Paddle's ``AttrType`` code of attr ``name`` of ``op`` (``fluidist.paddle_format.desc.op_attr_type``)."""
    return importlib.import_module(VIEWS).op_attr_type(op, name)


def parse_program(binary_str: bytes) -> Any:
    """A Program from the bytes of a Paddle ProgramDesc (``fluidist.paddle_format.parse_from_string``)."""
    return importlib.import_module(FORMATS).parse_from_string(binary_str)
