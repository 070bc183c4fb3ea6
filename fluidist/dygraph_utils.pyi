# Made from fluidist/paddle_paths.py by write_typing_stubs(): what type checkers see at Paddle's
# path fluidist.dygraph_utils, which the import system finds through the table.
from typing import Any

