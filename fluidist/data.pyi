# Made from fluidist/paddle_paths.py by write_typing_stubs(): what type checkers see at Paddle's
# path fluidist.data, which the import system finds through the table.
from typing import Any

from fluidist.layers.io import data as data


def __getattr__(name: str) -> Any: ...
