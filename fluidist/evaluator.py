"""``fluid.evaluator``: Paddle's evaluators, deprecated since Paddle 1.2 in favour of ``fluid.metrics``.
Each raises NotImplementedError naming its ``fluid.metrics`` replacement."""
from .compat import refused_class

__all__ = ["ChunkEvaluator", "EditDistance", "DetectionMAP"]

Evaluator = refused_class("fluid.evaluator.Evaluator",
                          "deprecated in Paddle; subclass fluid.metrics.MetricBase and feed it fetched values")
ChunkEvaluator = refused_class("fluid.evaluator.ChunkEvaluator",
                               "deprecated in Paddle; use layers.chunk_eval with fluid.metrics.ChunkEvaluator")
EditDistance = refused_class("fluid.evaluator.EditDistance",
                             "deprecated in Paddle; use layers.edit_distance with fluid.metrics.EditDistance")
DetectionMAP = refused_class("fluid.evaluator.DetectionMAP", "compute mAP in NumPy on the fetched detections")
