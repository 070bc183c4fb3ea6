"""``incubate.fleet.base.mode``: the kinds of Fleet."""
__all__ = ["Mode"]


class Mode:
    """TRANSPILER (parameter servers through the transpiler), PSLIB (Paddle's PSLib, not provided by
    fluidist), COLLECTIVE (all-reduce)."""
    TRANSPILER = 1
    PSLIB = 2
    COLLECTIVE = 3
