"""Optimizers: ``Optimizer`` and its kinds, each made from its update op's ``UpdateRule``
(Paddle's ``fluid.optimizer`` is :mod:`fluidist.optim.optimizer`).

| module | what it holds |
|---|---|
| ``base`` | ``Optimizer``: accumulators, the learning rate, ``minimize`` (backward, clip, regularizer, update ops) |
| ``optimizer`` | the kinds (``SGD``, ``Momentum``, ``Adam``, ...), as Paddle's ``fluid.optimizer`` names them |
| ``adam`` | ``Adam``, ``Adamax`` and ``LAMB``: the kinds with two moments and their beta powers |
| ``recompute_optimizer`` | ``RecomputeOptimizer``: recomputes forward segments in the backward pass |
| ``lookahead`` | ``LookaheadOptimizer``: slow weights pulled towards the fast ones every k steps |
| ``model_averaging`` | ``ModelAverage`` and ``ExponentialMovingAverage``: averaged parameters to evaluate with |
| ``paddle_imports`` | the names Paddle's optimizer module imports for itself, which scripts take from there |

The learning-rate schedules (``fluid.layers.exponential_decay``, ...) are layers: they append ops
that compute the rate to the program (``fluidist.layers.learning_rate_scheduler``).
"""
