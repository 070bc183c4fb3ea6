"""ParamAttr: how a layer's parameter is named, initialised, regularised, clipped and trained."""
from .initializer import Initializer


class ParamAttr:
    def __init__(self, name=None, initializer=None, learning_rate=1.0, regularizer=None, trainable=True,
                 gradient_clip=None, do_model_average=True):
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
        from .regularizer import WeightDecayRegularizer
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
    def __init__(self, dim=None, **kwargs):
        super().__init__(**kwargs)
        self.dim = dim
