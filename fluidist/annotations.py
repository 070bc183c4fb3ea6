"""``fluid.annotations``: Paddle's ``@deprecated(since, instead)`` decorator."""
import functools
import warnings

__all__ = ["deprecated"]


def deprecated(since, instead, extra_message=""):
    """A decorator: calling the function warns (DeprecationWarning) that it is deprecated since
    ``since`` and names ``instead``, then runs it."""
    def decorator(func):
        message = "API %s is deprecated since %s. Please use %s instead.%s" % (
            func.__name__, since, instead, (" " + extra_message) if extra_message else "")

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            warnings.warn(message, DeprecationWarning, stacklevel=2)
            return func(*args, **kwargs)
        wrapper.__doc__ = (func.__doc__ or "") + "\n    " + message
        return wrapper
    return decorator
