"""Paddle 1.x's ``incubate.fleet.parameter_server``: see ``distribute_transpiler``."""
