# Made from fluidist/paddle_paths.py by write_typing_stubs(): what type checkers see at Paddle's
# path fluidist.trainer_desc, which the import system finds through the table.
from typing import Any

DistMultiTrainer: Any
MultiTrainer: Any
PipelineTrainer: Any
TrainerDesc: Any
