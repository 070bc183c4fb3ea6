"""``fluid.trainer_factory``: where Paddle 1.8 defines ``FetchHandler`` and its monitor thread (also
``fluid.executor.FetchHandler``); ``TrainerFactory`` built Paddle's C++ trainers and is refused."""
from .compat import refused_class
from .executor.dataset_runner import FetchHandler, FetchHandlerMonitor  # noqa: F401

__all__ = ["TrainerFactory", "FetchHandler", "FetchHandlerMonitor"]

TrainerFactory = refused_class("fluid.trainer_factory.TrainerFactory",
                               "Executor.train_from_dataset(program, dataset, thread=n) chooses its trainer itself")
