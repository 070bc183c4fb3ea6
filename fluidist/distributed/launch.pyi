# Made from fluidist/paddle_paths.py by write_typing_stubs(): what type checkers see at Paddle's
# path fluidist.distributed.launch, which the import system finds through the table.
from typing import Any

from fluidist.launch.cli import *  # noqa: F401,F403


def __getattr__(name: str) -> Any: ...
