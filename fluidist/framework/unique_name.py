"""Unique names for variables and layers (``fc_0``, ``fc_0.w_0``, ...), as Paddle generates them."""
import contextlib
from collections import defaultdict


class UniqueNameGenerator:
    def __init__(self, prefix=""):
        self.ids = defaultdict(int)
        self.prefix = prefix

    def __call__(self, key):
        n = self.ids[key]
        self.ids[key] += 1
        return "%s%s_%d" % (self.prefix, key, n)


generator = UniqueNameGenerator()


def generate(key):
    """``generate('fc')`` -> ``'fc_0'``, then ``'fc_1'``, ..."""
    return generator(key)


def generate_with_ignorable_key(key):
    return generator(key)


def switch(new_generator=None):
    global generator
    old = generator
    generator = new_generator if new_generator is not None else UniqueNameGenerator()
    return old


@contextlib.contextmanager
def guard(new_generator=None):
    """Names generated inside start again from 0 (or use ``new_generator``, a prefix string or generator)."""
    if isinstance(new_generator, str):
        new_generator = UniqueNameGenerator(new_generator)
    old = switch(new_generator)
    try:
        yield
    finally:
        switch(old)


from ..compat import refused_class as _refused_class  # noqa: E402

DygraphParameterNameChecker = _refused_class("fluid.unique_name.DygraphParameterNameChecker",
                                             "fluidist has no dygraph mode; parameters are named by "
                                             "unique_name.generate under fluid.unique_name.guard()")
