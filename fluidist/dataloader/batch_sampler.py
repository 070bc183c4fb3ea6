"""``fluid.dataloader.batch_sampler``: lists of sample indices, batch by batch."""
import numpy as np

__all__ = ["BatchSampler"]


class BatchSampler:
    """Yields lists of ``batch_size`` indices into ``dataset`` (or of the given ``indices``), shuffled
    when ``shuffle``, the last short batch dropped when ``drop_last``."""

    def __init__(self, dataset=None, indices=None, shuffle=False, batch_size=1, drop_last=False):
        if (dataset is None) == (indices is None):
            raise ValueError("BatchSampler: give exactly one of dataset and indices")
        if not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError("BatchSampler: batch_size must be a positive int, got %r" % (batch_size,))
        self.indices = list(range(len(dataset))) if indices is None else list(indices)
        self.shuffle, self.batch_size, self.drop_last = bool(shuffle), batch_size, bool(drop_last)

    def __iter__(self):
        order = list(np.random.permutation(self.indices)) if self.shuffle else self.indices
        for start in range(0, len(order), self.batch_size):
            batch = order[start:start + self.batch_size]
            if len(batch) == self.batch_size or not self.drop_last:
                yield batch

    def __len__(self):
        full, rest = divmod(len(self.indices), self.batch_size)
        return full + (1 if rest and not self.drop_last else 0)
