"""Devices besides the CPU that fluidist can run kernels on without a GPU.

:mod:`fluidist.device.standin` is a stand-in GPU: an array module that refuses what CuPy refuses
(implicit conversions between host and device arrays) and counts every transfer, with a Place to
run programs on it. It imports nothing of fluidist but its own modules, so that ``core`` (the
places) can name it; ``core.switch`` makes ``fluid.CPUPlace()`` a stand-in place on request.
"""
