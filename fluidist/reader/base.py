"""``fluid.reader.DataLoaderBase``: the base class of the loaders (generator and dataset ones)."""


class DataLoaderBase:
    """Paddle's base of its loaders: iterable (``for data in loader()``); a kind of loader says how
    it iterates (``__iter__`` / ``__next__`` raise NotImplementedError here)."""

    def __call__(self):
        return self

    def __iter__(self):
        raise NotImplementedError("%s does not say how it iterates" % type(self).__name__)

    def __next__(self):
        raise NotImplementedError("%s does not say how it iterates" % type(self).__name__)
