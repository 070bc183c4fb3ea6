"""Kernels called through a wrapper for a while, as the profiler wraps them (the executor's tests)."""
import contextlib

from fluidist.executor import plan as plan_mod


@contextlib.contextmanager
def wrapped_kernels(note=None, on=True):
    """Inside, every kernel the executor plans is called through a wrapper (so plans hold kernels, not
    binders), which first calls ``note(ctx, op)`` when given; the wrapper is unset on the way out.
    ``on=False``: nothing is wrapped (a test's unwrapped case)."""
    if not on:
        yield
        return

    def wrapper(kernel, op):
        def call(ctx, ins, attrs):
            if note is not None:
                note(ctx, op)
            return kernel(ctx, ins, attrs)
        return call
    plan_mod.set_kernel_wrapper(wrapper)
    try:
        yield
    finally:
        plan_mod.set_kernel_wrapper(None)
