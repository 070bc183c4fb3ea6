"""``fluid.trainer_desc``: the C++ trainers Paddle's ``train_from_dataset`` configured. fluidist's
``Executor.train_from_dataset`` runs its own threads; these classes are refused."""
from .compat import refused_class

__all__ = ["TrainerDesc", "MultiTrainer", "DistMultiTrainer", "PipelineTrainer"]

_INSTEAD = ("Executor.train_from_dataset(program, dataset, thread=n, fetch_list=..., fetch_info=...) "
            "chooses its trainer itself")
TrainerDesc = refused_class("fluid.TrainerDesc", _INSTEAD)
MultiTrainer = refused_class("fluid.MultiTrainer", _INSTEAD)
DistMultiTrainer = refused_class("fluid.DistMultiTrainer", _INSTEAD)
PipelineTrainer = refused_class("fluid.PipelineTrainer",
                                "pipeline training is not provided; train with pservers or all-reduce")
