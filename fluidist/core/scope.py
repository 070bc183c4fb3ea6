"""Scopes hold the values of variables by name. Values are raw arrays, SelectedRows or other objects."""
from __future__ import annotations

import contextlib
from typing import Any, Dict, Iterator, List, Optional

from .rows_handle import SelectedRowsHandle
from .tensor import LoDRankTable, LoDTensor, LoDTensorArray


class ScopeVariable:
    """What ``scope.find_var(name)`` returns: a handle with ``get_tensor()`` and friends.

    Examples:
        >>> scope = fluid.Scope()
        >>> scope.var("x").get_tensor().set(np.ones((2, 3), "float32"), fluid.CPUPlace())
        >>> handle = scope.find_var("x")
        >>> handle.name(), handle.is_initialized(), np.array(handle.get_tensor()).shape
        ('x', True, (2, 3))
    """

    def __init__(self, scope: Scope, name: str):
        self._scope = scope
        self._name = name

    def name(self) -> str:
        """The variable's name."""
        return self._name

    def get_tensor(self) -> LoDTensor:
        """A live view of the value: reading it reads the scope, ``set()`` writes it."""
        return LoDTensor(_scope=self._scope, _name=self._name)

    def get_selected_rows(self) -> SelectedRowsHandle:
        """The row-sparse value, as Paddle's ``core.SelectedRows`` handle (live: it reads and writes
        the SelectedRows the scope holds, making an empty one when the variable holds none)."""
        handle = SelectedRowsHandle(_scope=self._scope, _name=self._name)
        handle._target()    # the variable holds a SelectedRows from now on, as in Paddle
        return handle

    def get_lod_tensor_array(self) -> LoDTensorArray:
        """The LoDTensorArray the variable holds (an empty one is made when it holds none);
        ``append`` to it fills the variable."""
        return self._holding(LoDTensorArray, LoDTensorArray)

    def get_lod_rank_table(self) -> LoDRankTable:
        """The LoDRankTable the variable holds (an empty one is made when it holds none)."""
        return self._holding(LoDRankTable, lambda: LoDRankTable([]))

    def _holding(self, kind, make):
        v = self._scope._find_value(self._name)
        if not isinstance(v, kind):
            v = make()
            self._scope._set_value(self._name, v)
        return v

    def set_float(self, value: float) -> None:
        """Hold a float scalar (Paddle's variables may hold one instead of a tensor)."""
        self._scope._set_value(self._name, float(value))

    def get_float(self) -> float:
        """The float scalar the variable holds."""
        return float(self._scalar(float, "get_float"))

    def is_float(self) -> bool:
        """Whether the variable holds a float scalar."""
        return type(self._scope._find_value(self._name)) is float

    def set_int(self, value: int) -> None:
        """Hold an int scalar."""
        self._scope._set_value(self._name, int(value))

    def get_int(self) -> int:
        """The int scalar the variable holds."""
        return int(self._scalar(int, "get_int"))

    def is_int(self) -> bool:
        """Whether the variable holds an int scalar."""
        return type(self._scope._find_value(self._name)) is int

    def _scalar(self, kind, what):
        v = self._scope._find_value(self._name)
        if type(v) is not kind:
            raise TypeError("%s: variable %r holds %s, not a %s" % (what, self._name, type(v).__name__,
                                                                    kind.__name__))
        return v

    def is_initialized(self) -> bool:
        """Whether the variable holds a value."""
        return self._scope._find_value(self._name) is not None

    def value(self) -> Any:
        """The raw value (an array, a SelectedRows, ...), or None."""
        return self._scope._find_value(self._name)

    def set_value(self, v: Any) -> None:
        """Replace the raw value."""
        self._scope._set_value(self._name, v)


class Scope:
    """Where variables' values live, by name: a program declares variables, a Scope holds their values.

    The Executor reads feeds from and writes results into a Scope (the global scope unless told
    otherwise). A child scope (``new_scope``) sees its parents' values; loops run each step in one.

    Args:
        parent: the scope whose values this one sees, or None.

    Examples:
        >>> scope = fluid.Scope()
        >>> with fluid.scope_guard(scope):
        ...     main, startup = fluid.Program(), fluid.Program()
        ...     with fluid.program_guard(main, startup):
        ...         w = fluid.layers.create_parameter(shape=[2, 2], dtype="float32", name="w")
        ...     _ = fluid.Executor(fluid.CPUPlace()).run(startup)
        >>> np.array(scope.find_var("w").get_tensor()).shape
        (2, 2)
    """

    def __init__(self, parent: Optional[Scope] = None) -> None:
        self.parent = parent
        self.vals: Dict[str, object] = {}   # name -> value; the executor reads and writes this dict directly
        self.lods: Dict[str, list] = {}   # name -> LoD offsets, only for variables that carry LoD
        self._kids: List[Scope] = []

    def var(self, name: str) -> ScopeVariable:
        """Create (if needed) and return the variable ``name`` in this scope."""
        if self._owner(name) is None:
            self.vals[name] = None
        return ScopeVariable(self._owner(name), name)

    def find_var(self, name: str) -> Optional[ScopeVariable]:
        """The variable ``name`` from this scope or its parents, or None."""
        owner = self._owner(name)
        return ScopeVariable(owner, name) if owner is not None else None

    def _owner(self, name):
        s = self
        while s is not None:
            if name in s.vals:
                return s
            s = s.parent
        return None

    def _find_value(self, name):
        s = self._owner(name)
        return s.vals[name] if s is not None else None

    def _find_lod(self, name):
        s = self
        while s is not None:
            if name in s.lods:
                return s.lods[name]
            if name in s.vals:
                return []
            s = s.parent
        return []

    def _set_value(self, name, value):
        owner = self._owner(name) or self
        owner.vals[name] = value

    def _set_lod(self, name, lod):
        (self._owner(name) or self)._set_lod_here(name, lod)

    def _set_lod_here(self, name, lod):
        if lod:
            self.lods[name] = lod
        else:
            self.lods.pop(name, None)

    def erase(self, names: List[str]) -> None:
        """Drop the values of ``names`` from this scope."""
        for n in names:
            self.vals.pop(n, None)
            self.lods.pop(n, None)

    def new_scope(self) -> Scope:
        """A child scope that sees this one's values."""
        kid = Scope(self)
        self._kids.append(kid)
        return kid

    def drop_kids(self) -> None:
        """Forget the child scopes."""
        self._kids = []

    def local_var_names(self) -> List[str]:
        """The names whose values this scope itself holds."""
        return list(self.vals)

    def __contains__(self, name):
        return self._owner(name) is not None


_global_scope = Scope()


def global_scope() -> Scope:
    """The scope that executors use when none is given (``scope_guard`` swaps it)."""
    return _global_scope


def _switch_scope(scope):
    global _global_scope
    old = _global_scope
    _global_scope = scope
    return old


@contextlib.contextmanager
def scope_guard(scope: Scope) -> Iterator[None]:
    """Inside the ``with``, ``global_scope()`` (and executors run without a scope) use ``scope``."""
    old = _switch_scope(scope)
    try:
        yield
    finally:
        _switch_scope(old)
