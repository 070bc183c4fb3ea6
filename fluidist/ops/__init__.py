"""Op families; importing this package registers every op type."""
from . import registry  # noqa: F401
from . import math, tensor, optimizer_ops  # noqa: F401
