# Made from fluidist/paddle_paths.py by write_typing_stubs(): what type checkers see at Paddle's
# path fluidist.net_drawer, which the import system finds through the table.
from typing import Any

from fluidist.viz.net_drawer import *  # noqa: F401,F403


def __getattr__(name: str) -> Any: ...
