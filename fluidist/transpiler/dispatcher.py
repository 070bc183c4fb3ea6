"""Which pserver gets which block: RoundRobin (cycle) or HashName (a stable hash of the name).

Paddle's HashName used Python's salted ``hash``, so processes disagreed unless PYTHONHASHSEED was
fixed; ours is a CRC32 of the name, the same in every process."""
import zlib


class PSDispatcher:
    def __init__(self, pserver_endpoints):
        self._eps = list(pserver_endpoints)
        self._step = 0

    @property
    def eps(self):
        return self._eps

    def reset(self):
        self._step = 0

    def dispatch(self, varlist):
        raise NotImplementedError


class RoundRobin(PSDispatcher):
    def dispatch(self, varlist):
        out = []
        for _ in varlist:
            out.append(self._eps[self._step])
            self._step = (self._step + 1) % len(self._eps)
        return out


class HashName(PSDispatcher):
    def dispatch(self, varlist):
        return [self._eps[zlib.crc32(_name(v).encode()) % len(self._eps)] for v in varlist]


def _name(v):
    return v if isinstance(v, str) else v.name
