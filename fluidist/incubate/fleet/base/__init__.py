"""``paddle.fluid.incubate.fleet.base``: ``role_maker`` and ``fleet_base`` are aliases of
``fluidist.role_maker`` and ``fluidist.fleet.base``."""
