"""Places: where kernels run (the CPU, a CUDA GPU through CuPy, a stand-in GPU), in one package.

- :mod:`fluidist.device.base`: ``Place``, what every place is (``kind``, ``is_device``, ``xp``,
  ``owns``, ``to_device``, ``to_host``, ``device_context``);
- :mod:`fluidist.device.places`: ``CPUPlace``, ``CUDAPlace``, ``CUDAPinnedPlace``, CuPy's status,
  and where an array lives (``place_of``, ``to_host``, ``array_module``);
- :mod:`fluidist.device.standin`: a stand-in GPU, an array module that refuses what CuPy refuses
  (implicit conversions between host and device arrays) and counts every transfer
  (:mod:`fluidist.device.transfers`), with ``StandinPlace`` to run programs on;
- :mod:`fluidist.device.switch`: :func:`use` (``fluidist.device.use("standin")``), which makes
  ``fluid.CPUPlace()`` another device's place in this process when a script or a test harness asks.

The package imports nothing of fluidist outside it, so that ``core`` (values) and everything above
can name places; whole values (``SelectedRows``, tensor arrays) move through ``core.placement``.
"""
from .base import Place  # noqa: F401
from .switch import active, default_place, suspended, use, use_from_env  # noqa: F401

__all__ = ["Place", "use", "use_from_env", "active", "suspended", "default_place"]
