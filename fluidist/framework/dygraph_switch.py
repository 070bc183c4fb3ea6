"""The dygraph switches of Paddle 1.8's ``framework`` module, as they behave in static mode, the only
mode fluidist has: no tracer is ever active, ``_dygraph_guard(None)`` (Paddle's way to say "build
static programs in here") is a no-op, and whatever would turn dygraph mode on refuses by name."""
import contextlib
import functools

from ..compat import refused

_DYGRAPH = ("fluidist runs static programs only: build the network with fluid.layers inside "
            "fluid.program_guard, then run it with fluid.Executor")

#: the active dygraph tracer: always None (static mode)
_dygraph_tracer_ = None
#: the place dygraph ops would run on: none (static mode)
_dygraph_current_expected_place_ = None


def _dygraph_tracer():
    """The active dygraph tracer: None, as in Paddle's static mode."""
    return None


def _current_expected_place():
    """The place dygraph would run on; in static mode Paddle answers None too."""
    return None


@contextlib.contextmanager
def _dygraph_guard(tracer):
    """``with _dygraph_guard(None):`` runs its body in static mode (a no-op here); a real tracer
    (dygraph mode) is refused."""
    if tracer is not None:
        refused("fluid.framework._dygraph_guard(tracer)", _DYGRAPH)()
    yield


_dygraph_place_guard = refused("fluid.framework._dygraph_place_guard", _DYGRAPH)


def _dygraph_not_support_(func):
    """Paddle's decorator for static-only functions: in static mode it calls ``func`` as it is."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)
    return wrapper


def _dygraph_only_(func):
    """Paddle's decorator for dygraph-only functions: in static mode calling one fails."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        refused("%s (dygraph only)" % getattr(func, "__name__", "function"), _DYGRAPH)()
    return wrapper


dygraph_not_support = _dygraph_not_support_
dygraph_only = _dygraph_only_
