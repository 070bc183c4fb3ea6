"""Paddle 1.x's ``paddle.fluid.incubate.fleet``: aliases of ``fluidist.fleet`` and ``fluidist.role_maker``."""
