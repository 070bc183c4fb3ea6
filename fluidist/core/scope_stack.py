"""``fluid.default_scope_funcs``: a thread-local stack of scopes with the global scope at its bottom,
and shortcuts to make and find variables in the innermost one."""
import threading

from .scope import global_scope

__all__ = ["get_cur_scope", "enter_local_scope", "leave_local_scope", "var", "find_var", "scoped_function"]

_local = threading.local()


def _stack():
    if not hasattr(_local, "scopes"):
        _local.scopes = [global_scope()]
    return _local.scopes


def get_cur_scope():
    """The innermost scope of this thread (the global scope when none was entered)."""
    return _stack()[-1]


def enter_local_scope():
    """Push a new child of the current scope."""
    _stack().append(get_cur_scope().new_scope())


def leave_local_scope():
    """Pop the innermost scope and drop its children."""
    stack = _stack()
    if len(stack) == 1:
        raise RuntimeError("leave_local_scope: no local scope was entered")
    stack.pop()
    get_cur_scope().drop_kids()


def var(name):
    """The variable ``name`` of the current scope, made if missing."""
    return get_cur_scope().var(name)


def find_var(name):
    """The variable ``name`` in the current scope or its parents, or None."""
    return get_cur_scope().find_var(name)


def scoped_function(func):
    """Call ``func()`` inside a fresh local scope."""
    enter_local_scope()
    try:
        func()
    finally:
        leave_local_scope()
