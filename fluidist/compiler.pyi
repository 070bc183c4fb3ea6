# Made from fluidist/paddle_paths.py by write_typing_stubs(): what type checkers see at Paddle's
# path fluidist.compiler, which the import system finds through the table.
from typing import Any

from fluidist.executor.compiler import *  # noqa: F401,F403


def __getattr__(name: str) -> Any: ...
