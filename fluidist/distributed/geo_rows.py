"""A GEO-SGD pserver's memory of which rows of its row-sparse parameters changed (Paddle's
``AsyncSparseParamUpdateRecorder``): when a trainer's row-sparse delta is added to a parameter, its
rows are noted for every trainer; a trainer's ``get`` of that parameter naming it as ``table``
is answered with only the rows noted for it since its last such get (then forgotten for it)."""
import numpy as np

from ..device.places import to_host
from ..core.tensor import SelectedRows


class UpdatedRows:
    """``sparse_grad_to_param``: ``listen_and_serv``'s ``["delta:param", ...]``; ``fanin``: the trainers."""

    def __init__(self, sparse_grad_to_param, fanin):
        self.param_of = {}
        for entry in sparse_grad_to_param or []:
            delta, sep, param = str(entry).rpartition(":")
            if not sep or not delta or not param:
                raise ValueError("listen_and_serv: sparse_grad_to_param entry %r must be 'delta:param'" % (entry,))
            self.param_of[delta] = param
        self._rows = {p: [set() for _ in range(fanin)] for p in self.param_of.values()}

    def tracks(self, param):
        return param in self._rows

    def record(self, delta, value):
        """A delta was added: its rows changed for every trainer."""
        param = self.param_of.get(delta)
        if param is None or not isinstance(value, SelectedRows) or value.rows is None:
            return
        rows = set(np.asarray(to_host(value.rows), dtype=np.int64).tolist())
        for seen in self._rows[param]:
            seen |= rows

    def take(self, param, trainer, value):
        """The rows of ``value`` (the parameter) that changed since ``trainer``'s last take."""
        rows = np.array(sorted(self._rows[param][trainer]), dtype=np.int64)
        self._rows[param][trainer] = set()
        host = to_host(value)
        return SelectedRows(rows, np.array(host[rows]), host.shape[0])
