# Made from fluidist/paddle_paths.py by write_typing_stubs(): what type checkers see at Paddle's
# path fluidist.device_worker, which the import system finds through the table.
from typing import Any

DeviceWorker: Any
DeviceWorkerFactory: Any
DownpourSGD: Any
DownpourSGDOPT: Any
Hogwild: Any
Section: Any
