"""The old path of :mod:`fluidist.launch.etcd_client` (the launcher's), kept for imports written against it:
this name is that module."""
import sys

from fluidist.launch import etcd_client as _moved

sys.modules[__name__] = _moved
