"""Paddle 1.8's native inference API (``fluid.core.PaddleTensor``, ``PaddleBuf``, ``PaddleDType``,
``NativeConfig``, ``AnalysisConfig``, ``create_paddle_predictor``, ``ZeroCopyTensor``) over fluidist's
Executor: a predictor loads a saved inference model (fluidist's ``__model__`` or Paddle's, a model
directory or a program file and a combined parameter file) into a scope of its own and runs it with
``run([PaddleTensor, ...])`` or the zero-copy path (``get_input_tensor(name).copy_from_cpu(array)``,
``zero_copy_run()``, ``get_output_tensor(name).copy_to_cpu()``). ``fluid.core`` finds these names
through ``fluidist.paddle_paths``. Paddle's graph optimisations (IR passes, MKL-DNN, TensorRT) have no
counterpart: their switches are recorded and change nothing."""
from .config import AnalysisConfig, NativeConfig  # noqa: F401
from .predictor import AnalysisPredictor, NativePaddlePredictor, PaddlePredictor, create_paddle_predictor  # noqa: F401
from .tensor import PaddleBuf, PaddleDType, PaddleTensor, ZeroCopyTensor  # noqa: F401

__all__ = ["PaddleTensor", "PaddleBuf", "PaddleDType", "NativeConfig", "AnalysisConfig", "PaddlePredictor",
           "AnalysisPredictor", "NativePaddlePredictor", "ZeroCopyTensor", "create_paddle_predictor"]
