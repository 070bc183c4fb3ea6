"""``fluid.wrapped_decorator``: decorators that keep the wrapped function's signature."""
import contextlib
import functools

__all__ = ["wrap_decorator", "signature_safe_contextmanager"]


def wrap_decorator(decorator_func):
    """``decorator_func(func)`` returns a wrapper; the result keeps ``func``'s name, doc and signature."""
    def decorator(func):
        return functools.wraps(func)(decorator_func(func))
    return decorator


signature_safe_contextmanager = wrap_decorator(contextlib.contextmanager)
