"""The names Paddle 1.8's ``fluid/optimizer.py`` imports for its own use, which scripts import from
there as well (``from paddle.fluid.optimizer import Program, LayerHelper``): ``fluidist.optimizer``
re-exports them from here. Not part of that module's ``__all__`` in Paddle either."""
import logging  # noqa: F401
from collections import defaultdict  # noqa: F401
from functools import reduce  # noqa: F401
import numpy as np  # noqa: F401

import fluidist.core as core  # noqa: F401
import fluidist.dygraph as _dygraph
import fluidist.framework as framework  # noqa: F401
import fluidist.layers as layers  # noqa: F401
from ..passes.backward import append_backward  # noqa: F401
from ..passes.clip import (GradientClipBase, GradientClipByNorm, append_gradient_clip_ops,  # noqa: F401
                   error_clip_callback)
from ..transpiler.distribute_lookup_table import find_distributed_lookup_table  # noqa: F401
from ..framework import (Program, default_main_program, default_startup_program, device_guard,  # noqa: F401
                        program_guard)
from ..framework import unique_name  # noqa: F401
from ..initializer import Constant  # noqa: F401
from ..layers.layer_helper import LayerHelper  # noqa: F401
from ..layers import ops, tensor  # noqa: F401
from ..passes.regularizer import append_regularization_ops  # noqa: F401
from ..wrapped_decorator import signature_safe_contextmanager  # noqa: F401

# fluid.dygraph's names are refused ones (static programs only), made when that module is imported
LearningRateDecay = getattr(_dygraph, "LearningRateDecay")
no_grad = getattr(_dygraph, "no_grad")
imperative_base = getattr(_dygraph, "base")

__all__ = ['logging', 'defaultdict', 'reduce', 'np', 'core', 'framework', 'layers', 'append_backward',
           'GradientClipBase', 'GradientClipByNorm', 'append_gradient_clip_ops', 'error_clip_callback',
           'find_distributed_lookup_table', 'LearningRateDecay', 'no_grad', 'imperative_base', 'Program',
           'default_main_program', 'default_startup_program', 'device_guard', 'program_guard', 'unique_name',
           'Constant', 'LayerHelper', 'ops', 'tensor', 'append_regularization_ops',
           'signature_safe_contextmanager']
