"""The op registry's table (op type -> its entry), which fills itself on its first read.

The op families in ``fluidist.ops`` register their ops when that package is imported. The package's
face imports it at its first use (``fluid.layers``, ``fluid.Program``, ...), and ``fluidist.layers``
imports it; a process that builds, loads or runs programs through the lower modules only
(``fluidist.framework``, ``fluidist.executor``: Paddle's op tests, ``fluid.core.Operator``) would find the
table empty. So the first question asked of the table imports the families. The registry sits below the
ops it holds, so it names their package instead of importing it: the one reference of the IR to a
package above it, made on first use.
"""
import importlib
import sys

#: the package whose import registers every op family
FAMILIES = "fluidist.ops"


#: the reads that first fill the table
_READS = ("get", "__contains__", "__getitem__", "__iter__", "__len__", "keys", "values", "items")


class OpTable(dict):
    """A dict of op entries whose reads first make sure the op families are registered."""

    filled = False      # the families' package is imported, completely

    @classmethod
    def _fill(cls):
        if cls.filled:
            return
        module = sys.modules.get(FAMILIES)
        if module is None or getattr(module.__spec__, "_initializing", False):
            # not imported yet, or being imported: by this thread (the families' own registrations
            # read the table; the import returns at once) or by another one (it waits for it)
            importlib.import_module(FAMILIES)
            return
        cls.filled = True
        for name in _READS:     # from now on a read is the dict's own (no check, no Python call)
            setattr(cls, name, getattr(dict, name))

    def get(self, key, default=None):
        if not self.filled:
            self._fill()
        return dict.get(self, key, default)

    def __contains__(self, key):
        if not self.filled:
            self._fill()
        return dict.__contains__(self, key)

    def __getitem__(self, key):
        if not self.filled:
            self._fill()
        return dict.__getitem__(self, key)

    def __iter__(self):
        if not self.filled:
            self._fill()
        return dict.__iter__(self)

    def __len__(self):
        if not self.filled:
            self._fill()
        return dict.__len__(self)

    def keys(self):
        if not self.filled:
            self._fill()
        return dict.keys(self)

    def values(self):
        if not self.filled:
            self._fill()
        return dict.values(self)

    def items(self):
        if not self.filled:
            self._fill()
        return dict.items(self)
