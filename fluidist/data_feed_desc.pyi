# Made from fluidist/paddle_paths.py by write_typing_stubs(): what type checkers see at Paddle's
# path fluidist.data_feed_desc, which the import system finds through the table.
from typing import Any

DataFeedDesc: Any
