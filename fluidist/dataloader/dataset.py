"""``fluid.dataloader.dataset``: the map-style dataset base class."""
__all__ = ["Dataset"]


class Dataset:
    """A map-style dataset: subclasses give ``__getitem__(idx)`` (one sample, a list of fields) and
    ``__len__()``."""

    def __getitem__(self, idx):
        raise NotImplementedError("'%s' does not implement __getitem__" % type(self).__name__)

    def __len__(self):
        raise NotImplementedError("'%s' does not implement __len__" % type(self).__name__)
