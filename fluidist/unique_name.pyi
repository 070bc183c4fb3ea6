# Made from fluidist/paddle_paths.py by write_typing_stubs(): what type checkers see at Paddle's
# path fluidist.unique_name, which the import system finds through the table.
from typing import Any

from fluidist.framework.unique_name import *  # noqa: F401,F403


def __getattr__(name: str) -> Any: ...
