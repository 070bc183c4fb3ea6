"""``transpiler.details.vars_distributed``: the record of how a transpiled job placed its variables on
the pservers (Paddle's ``program._parameters_on_pservers``).

Each entry (``VarDistributed``) ties a variable of the origin program (``origin``) to the piece one
pserver holds (``slice``): a parameter block (``vtype`` ``"Param"``) or an optimizer accumulator of it
(``"Optimizer"``), with the block's index and its offset, counted in elements of the flattened origin
variable. ``fluid.io.save_persistables`` on a trainer program reads it to fetch the pservers'
optimizer state; ``fluid.io.load_persistables`` on a pserver program to cut its pieces out of the
whole variables saved.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Union


class VarStruct:
    """A variable's properties held in Python (a stand-in for a Variable where there is none)."""

    def __init__(self, name: str, shape: Any, dtype: Any, type: Any, lod_level: int, persistable: bool) -> None:
        self.name = name
        self.shape = shape
        self.dtype = dtype
        self.type = type
        self.lod_level = lod_level
        self.persistable = persistable

    @classmethod
    def of(cls, var: Any) -> "VarStruct":
        """The properties of a Variable (a VarStruct is returned as is)."""
        if isinstance(var, VarStruct):
            return var
        return cls(var.name, list(var.shape) if var.shape is not None else None, var.dtype, var.type,
                   getattr(var, "lod_level", 0) or 0, bool(var.persistable))

    def _key(self):
        return (self.name, self.type, list(self.shape or []), self.dtype, self.lod_level, self.persistable)


class VarDistributed:
    """One piece of an origin variable on one pserver.

    Attributes:
        origin: the whole variable (VarStruct).
        slice: the piece the pserver holds (VarStruct; the origin itself when it is not split).
        is_slice: whether ``slice`` is a block of rows of ``origin``.
        block_id: the block's index among the origin's blocks.
        offset: the elements of the flattened origin before the block.
        vtype: ``"Param"``, ``"Optimizer"`` or ``"RemotePrefetch"``.
        endpoint: the pserver holding it.
    """

    def __init__(self, origin_var: Any, slice_var: Any, is_slice: Optional[bool] = None,
                 block_id: Optional[int] = None, offset: Optional[int] = None, vtype: Optional[str] = None,
                 endpoint: Optional[str] = None) -> None:
        self.origin = VarStruct.of(origin_var)
        self.slice = VarStruct.of(slice_var)
        self.is_slice = (not self.equal(self.origin, self.slice)) if is_slice is None else bool(is_slice)
        self.block_id = 0 if block_id is None else int(block_id)
        self.offset = 0 if offset is None else int(offset)
        self.vtype = vtype
        self.endpoint = endpoint

    @staticmethod
    def equal(var1: VarStruct, var2: VarStruct) -> bool:
        """Whether two VarStructs describe the same variable (every property equal)."""
        return var1._key() == var2._key()

    def __str__(self) -> str:
        return ("var owned: %s, origin var: ( %s : %s%s %s ), slice var: ( %s : %s%s %s, slice %s, block %d, "
                "offset %d ), endpoint: %s" % (
                    self.vtype, self.origin.name, self.origin.type, self.origin.shape, self.origin.dtype,
                    self.slice.name, self.slice.type, self.slice.shape, self.slice.dtype, self.is_slice,
                    self.block_id, self.offset, self.endpoint))


class VarsDistributed:
    """Every ``VarDistributed`` of a job, with the look-ups ``fluid.io`` and the transpiler's users make.

    ``fill`` (fluidist): a function that records the entries (``fill(self)``, calling
    ``add_distributed_var``), called when ``distributed_vars`` is first read: the transpiler's record
    of a job costs nothing to a process that never reads it (only a distributed save or load does)."""

    def __init__(self, fill: Optional[Callable[["VarsDistributed"], None]] = None) -> None:
        self._distributed_vars: List[VarDistributed] = []
        self._fill = fill

    @property
    def distributed_vars(self) -> List[VarDistributed]:
        """Every entry, in the order recorded."""
        fill = self._fill
        if fill is not None:
            self._fill = None       # (fill adds through this property)
            kept = len(self._distributed_vars)
            try:
                fill(self)
            except BaseException:
                del self._distributed_vars[kept:]
                self._fill = fill
                raise
        return self._distributed_vars

    @distributed_vars.setter
    def distributed_vars(self, entries: List[VarDistributed]) -> None:
        self._fill = None
        self._distributed_vars = entries

    def _fill_pending(self) -> bool:
        """Whether ``fill`` has yet to run."""
        return self._fill is not None

    def _replace_fill(self, fill: Callable[["VarsDistributed"], None]) -> None:
        """Record the entries with ``fill`` instead, when first read (one that gives the same entries
        from other sources: see ``transpiler.pserver_plan.keep_placement_only``)."""
        if self._fill is not None:
            self._fill = fill

    def add_distributed_var(self, origin_var: Any, slice_var: Any, is_slice: Optional[bool] = None,
                            block_id: Optional[int] = None, offset: Optional[int] = None,
                            vtype: Optional[str] = None, endpoint: Optional[str] = None) -> None:
        """Record one piece (the arguments are ``VarDistributed``'s)."""
        self.distributed_vars.append(VarDistributed(origin_var, slice_var, is_slice, block_id, offset, vtype,
                                                    endpoint))

    def get_distributed_var_by_slice(self, var_name: str) -> Optional[VarDistributed]:
        """The entry whose slice is named ``var_name``, or None."""
        return next((v for v in self.distributed_vars if v.slice.name == var_name), None)

    @staticmethod
    def equal(var1: VarStruct, var2: VarStruct) -> bool:
        """Whether two VarStructs describe the same variable."""
        return VarDistributed.equal(var1, var2)

    def get_distributed_var_by_origin_and_ep(self, origin_var_name: str, endpoint: str) -> Optional[VarDistributed]:
        """The first entry of origin ``origin_var_name`` on ``endpoint``, or None."""
        return next((v for v in self.distributed_vars
                     if v.origin.name == origin_var_name and v.endpoint == endpoint), None)

    def get_distributed_vars_by_vtypes(self, vtypes: Sequence[str], groupby: bool = False
                                       ) -> Union[List[VarDistributed], Dict[str, List[VarDistributed]]]:
        """The entries of these vtypes; with ``groupby``, ``{origin name: [entries]}``."""
        found = [v for v in self.distributed_vars if v.vtype in vtypes]
        if not groupby:
            return found
        grouped: Dict[str, List[VarDistributed]] = {}
        for v in found:
            grouped.setdefault(v.origin.name, []).append(v)
        return grouped

    def get_distributed_vars_by_ep(self, endpoint: str, vtype: Optional[str] = None) -> List[VarDistributed]:
        """The entries held by ``endpoint`` (of ``vtype`` only, when given)."""
        return [v for v in self.distributed_vars if v.endpoint == endpoint and (not vtype or v.vtype == vtype)]

    def overview(self) -> str:
        """One line per entry."""
        return "\n".join(str(v) for v in self.distributed_vars)
