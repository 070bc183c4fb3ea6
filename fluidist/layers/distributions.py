"""``fluid.layers.distributions``: Paddle 1.8's probability distributions (Uniform, Normal, Categorical,
MultivariateNormalDiag). fluidist does not provide them: each class exists and raises
NotImplementedError saying what to use instead."""
from ..compat import refused_class

_INSTEAD = ("write the density with fluid.layers (log, exp, square, reduce_sum: e.g. a normal's log_prob "
            "is -((x - loc) ** 2) / (2 * scale ** 2) - log(scale) - 0.5 * log(2 * pi)) and sample with "
            "layers.uniform_random / layers.gaussian_random")

Distribution = refused_class("fluid.layers.distributions.Distribution", _INSTEAD)
Uniform = refused_class("fluid.layers.Uniform", _INSTEAD)
Normal = refused_class("fluid.layers.Normal", _INSTEAD)
Categorical = refused_class("fluid.layers.Categorical", _INSTEAD)
MultivariateNormalDiag = refused_class("fluid.layers.MultivariateNormalDiag", _INSTEAD)

__all__ = ["Uniform", "Normal", "Categorical", "MultivariateNormalDiag"]
