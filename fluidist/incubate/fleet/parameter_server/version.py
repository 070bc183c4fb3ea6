"""``incubate.fleet.parameter_server.version``: which parameter-server build this is."""


def is_transpiler():
    """True: fluidist's parameter server is the transpiler's (Paddle's PSLib build is not provided)."""
    return True
