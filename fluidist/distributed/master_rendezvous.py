"""The old path of :mod:`fluidist.launch.master_rendezvous` (the launcher's), kept for imports written against it:
this name is that module."""
import sys

from fluidist.launch import master_rendezvous as _moved

sys.modules[__name__] = _moved
