"""Scopes hold the values of variables by name. Values are raw arrays, SelectedRows or other objects."""
import contextlib

from .tensor import LoDTensor, SelectedRows


class ScopeVariable:
    """What ``scope.find_var(name)`` returns: a handle with ``get_tensor()`` and friends."""

    def __init__(self, scope, name):
        self._scope = scope
        self._name = name

    def name(self):
        return self._name

    def get_tensor(self):
        return LoDTensor(_scope=self._scope, _name=self._name)

    def get_selected_rows(self):
        v = self._scope._find_value(self._name)
        if not isinstance(v, SelectedRows):
            v = SelectedRows()
            self._scope._set_value(self._name, v)
        return v

    def is_initialized(self):
        return self._scope._find_value(self._name) is not None

    def value(self):
        return self._scope._find_value(self._name)

    def set_value(self, v):
        self._scope._set_value(self._name, v)


class Scope:
    def __init__(self, parent=None):
        self.parent = parent
        self.vals = {}   # name -> value; the executor reads and writes this dict directly
        self.lods = {}   # name -> LoD offsets, only for variables that carry LoD
        self._kids = []

    def var(self, name):
        """Create (if needed) and return the variable ``name`` in this scope."""
        if self._owner(name) is None:
            self.vals[name] = None
        return ScopeVariable(self._owner(name), name)

    def find_var(self, name):
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

    def erase(self, names):
        for n in names:
            self.vals.pop(n, None)
            self.lods.pop(n, None)

    def new_scope(self):
        kid = Scope(self)
        self._kids.append(kid)
        return kid

    def drop_kids(self):
        self._kids = []

    def local_var_names(self):
        return list(self.vals)

    def __contains__(self, name):
        return self._owner(name) is not None


_global_scope = Scope()


def global_scope():
    return _global_scope


def _switch_scope(scope):
    global _global_scope
    old = _global_scope
    _global_scope = scope
    return old


@contextlib.contextmanager
def scope_guard(scope):
    """Inside, ``global_scope()`` (and executors run without a scope) use ``scope``."""
    old = _switch_scope(scope)
    try:
        yield
    finally:
        _switch_scope(old)
