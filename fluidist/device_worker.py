"""``fluid.device_worker``: the per-thread workers of Paddle's C++ trainers (Hogwild, DownpourSGD,
Section). fluidist's ``train_from_dataset`` runs Hogwild-style threads itself; these are refused."""
from .compat import refused_class

__all__ = ["DeviceWorker", "Hogwild", "DownpourSGD", "Section", "DownpourSGDOPT"]

_INSTEAD = "Executor.train_from_dataset(program, dataset, thread=n) runs Hogwild-style threads itself"
DeviceWorker = refused_class("fluid.device_worker.DeviceWorker", _INSTEAD)
Hogwild = refused_class("fluid.device_worker.Hogwild", _INSTEAD)
DownpourSGD = refused_class("fluid.device_worker.DownpourSGD",
                            "PSLib's Downpour is not provided; use fleet's parameter-server mode")
DownpourSGDOPT = refused_class("fluid.device_worker.DownpourSGDOPT",
                               "PSLib's Downpour is not provided; use fleet's parameter-server mode")
Section = refused_class("fluid.device_worker.Section",
                        "pipeline training is not provided; train with pservers or all-reduce")
DeviceWorkerFactory = refused_class("fluid.device_worker.DeviceWorkerFactory", _INSTEAD)
