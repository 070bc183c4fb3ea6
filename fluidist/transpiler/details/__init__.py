"""Small helpers shared by the transpiler modes (``wait_server_ready`` is the runtime's, kept here
under Paddle's import path), and Paddle's ``transpiler.details`` modules: ``checkport``,
``program_utils``, ``ufind``, ``vars_distributed``."""
from __future__ import annotations

import functools
import gc
import numbers
import sys
from typing import Callable, Optional, TypeVar


if sys.version_info >= (3, 10):
    from typing import ParamSpec
else:  # Python 3.9: typing_extensions has it (and mypy reads it from there)
    from typing_extensions import ParamSpec

from ...distributed.ports import split_endpoint
from ...distributed.ports import wait_server_ready  # noqa: F401


P = ParamSpec("P")
R = TypeVar("R")


def gc_paused(fn: Callable[P, R]) -> Callable[P, R]:
    """Run ``fn`` with Python's cyclic garbage collector paused. A pass allocates many small objects
    that all stay alive (ops, variables, name lists); collections triggered meanwhile find nothing
    to free but scan every live object each time, which made transpiling big programs about twice
    as slow and grow faster than linearly.

    When it ends, the objects tracked so far go to the collector's oldest generation (``gc.freeze``
    then ``gc.unfreeze``: two list splices) instead of waiting in the youngest: the program the pass
    built is long-lived, and left young it would be scanned by the next young collections (one
    right after the pass, another ten later: about 0.1 s for 1,000 parameters) to no avail. The
    process's other young objects are promoted too (a cycle of them is freed by the next full
    collection instead of a young one). Not done when the process froze objects itself (``gc.freeze``:
    unfreezing would undo it) or had the collector disabled."""
    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        was_on = gc.isenabled()
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            if was_on:
                if not gc.get_freeze_count():
                    gc.freeze()
                    gc.unfreeze()
                gc.enable()
    return wrapper


def parse_endpoints(value, what, allow_port_zero=False):
    """The ``ip:port`` list ``value`` (a comma-separated string or a list), checked: not empty, each
    endpoint well-formed (port 0, a server binding any free port, with ``allow_port_zero``), none
    twice; errors name ``what`` (the argument)."""
    if isinstance(value, (list, tuple)):
        eps = [str(e).strip() for e in value]
    elif isinstance(value, str):
        eps = [e.strip() for e in value.split(",") if e.strip()]
    else:
        raise TypeError("%s must be a comma-separated string or a list of ip:port, got %r" % (what, value))
    if not eps:
        raise ValueError("%s is empty (%r): give at least one ip:port, e.g. '127.0.0.1:6170,127.0.0.1:6171'"
                         % (what, value))
    for ep in eps:
        split_endpoint(ep, what, allow_port_zero=allow_port_zero)
    if len(set(eps)) != len(eps):
        raise ValueError("%s lists an endpoint twice: %s" % (what, eps))
    return eps




def check_int(value: object, what: str, minimum: Optional[int] = 0) -> int:
    """``value`` as an int (any integral number, or a float with an integral value such as ``2.0``;
    not a bool) ``>= minimum`` (None: no lower bound); else an error naming ``what``."""
    if isinstance(value, numbers.Real) and not isinstance(value, (bool, numbers.Integral)) \
            and float(value).is_integer():
        value = int(float(value))
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError("%s must be an int, got %r (%s)" % (what, value, type(value).__name__))
    number = int(value)
    if minimum is not None and number < minimum:
        raise ValueError("%s must be >= %d, got %d" % (what, minimum, number))
    return number


def check_bool(value: object, what: str) -> bool:
    """``value``'s truth value, as Paddle 1.8 takes a flag (``if config.slice_var_up:``): None is False.
    ``what`` names the flag for the error of a value that has no truth value (a NumPy array of several
    elements)."""
    try:
        return bool(value)
    except (TypeError, ValueError) as err:
        raise TypeError("%s must be True or False, got %r (%s): %s" % (what, value, type(value).__name__, err)) \
            from None


# Paddle's details package gives its modules' names at its top (``from ...details import VarStruct``)
from .program_utils import (block_to_code, delete_ops, find_op_by_input_arg, find_op_by_output_arg,  # noqa: E402,F401
                            get_indent_space, op_to_code, program_to_code, variable_to_code)
from .ufind import UnionFind  # noqa: E402,F401
from .vars_distributed import VarDistributed, VarStruct, VarsDistributed  # noqa: E402,F401
