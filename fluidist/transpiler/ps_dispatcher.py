"""``transpiler.ps_dispatcher``: how the pserver transpiler assigns variable blocks to pservers."""
from .dispatcher import HashName, PSDispatcher, RoundRobin  # noqa: F401
