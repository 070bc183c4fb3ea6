"""ParamAttr: how a layer's parameter is named, initialised, regularised, clipped and trained."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .initializer import Initializer

# Paddle 1.8's __all__: what a star import and a type checker take from here
__all__ = ["ParamAttr", "WeightNormParamAttr"]

if TYPE_CHECKING:
    from .passes.regularizer import WeightDecayRegularizer


class ParamAttr:
    """How a layer's parameter is named, initialised, regularised, clipped and trained.

    A layer's ``param_attr`` / ``bias_attr`` take one (or a name, an initializer, a regularizer,
    or ``False`` for no bias, which the layer turns into one). Two layers given the same ``name``
    share one parameter.

    Args:
        name: the parameter's name; generated (``fc_0.w_0``, ...) when None.
        initializer: how the startup program fills it; the layer's default (Xavier for weights,
            zeros for biases) when None.
        learning_rate: a factor on the optimizer's learning rate for this parameter.
        regularizer: a regularizer for this parameter (it wins over the optimizer's).
        trainable: False keeps the parameter fixed (no gradient, no update).
        gradient_clip: a ``GradientClip*`` for this parameter's gradient, used when the optimizer
            has no ``grad_clip`` of its own.
        do_model_average: whether ``ModelAverage`` averages it.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> w = fluid.ParamAttr(name="shared_w", initializer=fluid.initializer.Constant(0.5),
        ...                     learning_rate=0.1, regularizer=fluid.regularizer.L2Decay(1e-4))
        >>> a = fluid.layers.fc(x, size=2, param_attr=w)
        >>> b = fluid.layers.fc(x, size=2, param_attr=w)
        >>> sorted(p.name for p in fluid.default_main_program().all_parameters())
        ['fc_0.b_0', 'fc_1.b_0', 'shared_w']
    """

    def __init__(self, name: str | None = None, initializer: Initializer | None = None, learning_rate: float = 1.0,
                 regularizer: WeightDecayRegularizer | None = None, trainable: bool = True,
                 gradient_clip: Any = None, do_model_average: bool = True):
        self.name = name
        self.initializer = initializer
        self.learning_rate = learning_rate
        self.regularizer = regularizer
        self.trainable = trainable
        self.gradient_clip = gradient_clip
        self.do_model_average = do_model_average

    @staticmethod
    def _to_attr(arg):
        if arg is None:
            return ParamAttr()
        if isinstance(arg, (list, tuple)):
            return [ParamAttr._to_attr(a) for a in arg]
        if isinstance(arg, ParamAttr):
            return arg
        if isinstance(arg, str):
            return ParamAttr(name=arg)
        if isinstance(arg, Initializer):
            return ParamAttr(initializer=arg)
        if isinstance(arg, bool):
            return ParamAttr() if arg else False
        from .passes.regularizer import WeightDecayRegularizer
        if isinstance(arg, WeightDecayRegularizer):
            return ParamAttr(regularizer=arg)
        raise TypeError("%r cannot be turned into a ParamAttr" % type(arg).__name__)

    def _to_kwargs(self, with_initializer=False):
        kw = {"name": self.name, "optimize_attr": {"learning_rate": self.learning_rate},
              "regularizer": self.regularizer, "trainable": self.trainable,
              "gradient_clip_attr": self.gradient_clip, "do_model_average": self.do_model_average}
        if with_initializer:
            kw["initializer"] = self.initializer
        return kw


class WeightNormParamAttr(ParamAttr):
    """A ``ParamAttr`` that asks for weight normalisation: the layer's weight is ``g * v / ||v||``
    with the parameters ``<name>_g`` (the magnitude) and ``<name>_v`` (the direction), the norm taken
    over every dimension but ``dim`` (see ``layers.weight_norm``). ``params_with_weight_norm``
    lists the weights so made.

    Args:
        dim: the dimension the norm leaves out (one norm per index of it); None: one norm of all.
        **kwargs: the ``ParamAttr`` arguments.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> y = fluid.layers.fc(x, size=3, param_attr=fluid.WeightNormParamAttr(dim=None, name="w"))
    """

    params_with_weight_norm: list = []

    def __init__(self, dim: int | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.dim = dim
