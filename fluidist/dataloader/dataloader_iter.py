"""``fluid.dataloader.dataloader_iter``: the collate function batches are stacked with; Paddle's
``ParentWatchDog`` watched its reader subprocesses, which fluidist's loaders do not start."""
from ..compat import refused_class
from ..reader.loader import default_collate_fn  # noqa: F401

__all__ = []

ParentWatchDog = refused_class("fluid.dataloader.dataloader_iter.ParentWatchDog",
                               "fluidist's DataLoader reads in threads of the training process; "
                               "reader.multiprocess_reader runs reader processes")
