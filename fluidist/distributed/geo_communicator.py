"""GEO-SGD on the trainer (Paddle 1.8's ``GeoSgdCommunicator``): the trainer runs its optimizer
locally, and every ``push_nums`` steps it pushes what its parameters moved to the pservers, which add
it, and takes back what the pservers hold.

For each parameter the communicator keeps ``old``: where the trainer last left the parameter in
agreement with the pservers (at start-up: the parameters received from them). Every ``push_nums``
steps, for a dense parameter::

    delta = (param - old) / trainers;   old += delta;   send delta      (pserver: param += delta)
    z = the pserver's parameter;        param += z - old;   old = z

so the trainer keeps its own progress not yet pushed (``param - old``) and gains the others'. A
row-sparse parameter (an embedding trained with ``is_sparse``) does this for the rows its lookups
touched in those steps; the pserver answers its ``get`` with the rows any trainer's delta touched
since this trainer's last one (Paddle's ``AsyncSparseParamUpdateRecorder``).

The arithmetic on the parameters runs on the trainer's thread, at the end of a step (the program's
last op, a ``send`` of the lookups' ids), so it never races the optimizer; the network (the
deltas out, the parameters back, one round trip to each pserver) runs on a background thread while
the next ``push_nums`` steps train. At most one push is in flight: a push waits for the one before
to come back and applies it first, so ``old`` always matches the pserver state it is compared with,
and one trainer trains exactly as it would alone. ``stop()`` pushes the steps of a last, partial
window too (Paddle dropped them) and applies the final answer.
"""
import queue
import threading
import weakref

import numpy as np

from ..device.places import to_host
from ..core.tensor import SelectedRows
from . import rpc
from . import trainer_session as session
from ..framework import registry
from .communicator import GEO, Communicator, CommunicatorError

PARAM_INIT = "param_init"
_snapshots: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()   # scope -> {param: its value when the trainer startup ended}


def delta_name(block_name):
    """The name a parameter block's delta travels under (Paddle's ``VarToDeltaVar``)."""
    return block_name + ".delta"


def snapshot_params(scope, names, values):
    """The trainer startup's ``send`` of ``param_init``: remember the parameters as received, for
    the GEO communicator of ``scope`` (running now, or started later)."""
    copies = {n: np.array(to_host(v), copy=True) for n, v in zip(names, values)}
    _snapshots[scope] = copies
    from .communicator import active
    comm = active()
    if isinstance(comm, GeoCommunicator) and comm.scope is scope:
        comm.param_init(copies)


class _GeoVar:
    """One parameter: its blocks ``(name, first row, rows, endpoint)`` and whether it is row-sparse."""

    def __init__(self, name, info):
        self.name = name
        names = list(info["var_names"])
        sections = [int(s) for s in info["sections"]]
        eps = list(info["epmap"])
        if not (len(names) == len(sections) == len(eps)):
            raise ValueError("GEO-SGD: parameter %r has %d blocks, %d sections and %d endpoints"
                             % (name, len(names), len(sections), len(eps)))
        sparse = info.get("is_sparse", False)
        if isinstance(sparse, (list, tuple)):
            sparse = sparse[0] if sparse else False
        self.sparse = str(sparse).lower() in ("true", "1")
        self.blocks, at = [], 0
        for n, rows, ep in zip(names, sections, eps):
            self.blocks.append((n, at, rows, ep))
            at += rows
        self.rows = at


class GeoCommunicator(Communicator):
    """GEO-SGD's trainer side (module doc). ``vars_info`` is the transpiler's
    ``_get_vars_info()`` (Paddle's ``push_vars``), ``trainers`` the number of trainers and
    ``push_nums`` the steps between pushes (``geo_sgd_need_push_nums``)."""

    mode = GEO

    def __init__(self, program, scope=None, flags=None, vars_info=None, trainers=1, push_nums=100, trainer_id=0):
        super().__init__(program, scope, flags)
        if not vars_info:
            raise ValueError("GEO-SGD communicator: no parameters to push (push_vars / vars_info is empty)")
        if not isinstance(trainers, int) or trainers < 1:
            raise ValueError("GEO-SGD communicator: trainers must be an int >= 1, got %r" % (trainers,))
        if not isinstance(push_nums, int) or push_nums < 1:
            raise ValueError("GEO-SGD communicator: push_nums (geo_sgd_need_push_nums) must be an int >= 1, got %r"
                             % (push_nums,))
        self.vars = [_GeoVar(n, info) for n, info in vars_info.items()]
        self.trainers, self.push_nums, self.trainer_id = trainers, push_nums, int(trainer_id)
        self.endpoints = sorted({b[3] for v in self.vars for b in v.blocks})
        self._step_ops = {id(op) for op in program.global_block().ops
                          if registry.peer_direction(op) == "send" and not op.attr("epmap") and PARAM_INIT not in
                          (op.attr("send_varnames") or [])}
        self._old = None
        self._steps = 0
        self._touched = {v.name: [] for v in self.vars if v.sparse}
        self._jobs = queue.Queue()
        self._answers = queue.Queue()
        self._inflight = False
        self._wakeup = threading.Event()
        copies = _snapshots.get(self.scope)
        if copies is not None:
            self.param_init(copies)

    # ---------------------------------------------------------------- trainer thread
    def param_init(self, values):
        """``old`` := the parameters as the trainer received them at start-up."""
        missing = [v.name for v in self.vars if v.name not in values]
        if missing:
            raise ValueError("GEO-SGD: the start-up snapshot lacks parameters %s" % missing)
        self._old = {v.name: np.array(values[v.name], copy=True) for v in self.vars}

    def takes_send(self, op):
        return id(op) in self._step_ops

    def push(self, op, values, scope):
        """The step's end (the program's ``send`` of the lookups' ids): record the rows the step
        touched; every ``push_nums`` steps, push the deltas."""
        self._raise_if_failed()
        if self._old is None:
            raise CommunicatorError("GEO-SGD: the parameters as received at start-up are unknown: run the trainer "
                                    "startup program (it ends with a send of 'param_init') before training")
        tables = list(op.attr("send_varnames") or [])
        for table, ids in zip(tables, values):
            if table in self._touched and ids is not None:
                self._touched[table].append(np.unique(np.asarray(to_host(ids), dtype=np.int64).reshape(-1)))
        self._apply_answers(scope, block=False)
        self._steps += 1
        if self._steps >= self.push_nums:
            self._push_window(scope)

    def _push_window(self, scope):
        self._apply_answers(scope, block=True)      # at most one push in flight
        self._jobs.put(self._deltas(scope))
        self._inflight = True
        self._steps = 0
        self._touched = {k: [] for k in self._touched}
        self._wakeup.set()

    def _param(self, scope, name):
        value = scope._find_value(name)
        if value is None:
            raise CommunicatorError("GEO-SGD: parameter %r has no value in the trainer's scope" % name)
        return value

    def _deltas(self, scope):
        """The requests of one push: each block's delta, then a get of each block."""
        scale = None
        reqs = []
        for var in self.vars:
            train = self._param(scope, var.name)
            host = to_host(train)
            old = self._old[var.name]
            scale = old.dtype.type(1.0 / self.trainers)
            if var.sparse:
                reqs += self._sparse_deltas(var, host, old, scale)
            else:
                delta = (host - old) * scale
                old += delta
                for name, begin, rows, ep in var.blocks:
                    reqs.append((ep, self._send_kw(delta_name(name), delta[begin:begin + rows])))
        for var in self.vars:
            for name, _, _, ep in var.blocks:
                kw = dict(kind="get", name=name, trainer=self.trainer_id, what="GEO-SGD get %s" % name)
                if var.sparse:
                    kw["table"] = name        # only the rows updated since this trainer's last get
                reqs.append((ep, kw))
        return reqs

    def _sparse_deltas(self, var, host, old, scale):
        touched = self._touched[var.name]
        rows = np.unique(np.concatenate(touched)) if touched else np.zeros(0, dtype=np.int64)
        if len(rows) and (rows[0] < 0 or rows[-1] >= var.rows):
            raise CommunicatorError("GEO-SGD: ids %s are outside table %r of %d rows"
                                    % (rows[(rows < 0) | (rows >= var.rows)][:5].tolist(), var.name, var.rows))
        delta = (host[rows] - old[rows]) * scale
        old[rows] += delta
        reqs = []
        for name, begin, nrows, ep in var.blocks:
            mine = (rows >= begin) & (rows < begin + nrows)
            if mine.any():
                value = SelectedRows(rows[mine] - begin, np.ascontiguousarray(delta[mine]), nrows)
                reqs.append((ep, self._send_kw(delta_name(name), value)))
        return reqs

    def _send_kw(self, name, value):
        return dict(kind="send", name=name, value=value, trainer=self.trainer_id, what="GEO-SGD send %s" % name)

    def _apply_answers(self, scope, block):
        """Apply the answer of the push in flight: ``param += z - old; old = z`` per block."""
        if not self._inflight:
            return
        limit = rpc.wait_limit() * 2
        while True:
            try:
                answer = self._answers.get(timeout=0.1 if block else 0)
                break
            except queue.Empty:
                self._raise_if_failed()
                if not block:
                    return
                limit -= 0.1
                if limit <= 0:
                    raise CommunicatorError("GEO-SGD: a push got no answer from the pservers within the deadline")
        self._inflight = False
        if answer is None:
            return                    # fake_rpc
        at = 0
        for var in self.vars:
            train = self._param(scope, var.name)
            old = self._old[var.name]
            for name, begin, rows, _ in var.blocks:
                z = answer[at]
                at += 1
                if var.sparse:
                    _apply_rows(train, old, z, begin)
                else:
                    z = np.asarray(z)
                    change = z - old[begin:begin + rows]
                    train[begin:begin + rows] += _on_device(train, change)
                    old[begin:begin + rows] = z

    # ---------------------------------------------------------------- background thread
    def _thread_targets(self):
        return [("geo", self._loop)]

    def _wake(self):
        self._wakeup.set()

    def _loop(self):
        while True:
            try:
                reqs = self._jobs.get(timeout=0.05)
            except queue.Empty:
                if self._stopping.is_set():
                    return
                continue
            if self.flags.fake_rpc:
                self._answers.put(None)
                continue
            for ep, kw in reqs:
                kw["step"] = session.step(ep, self.trainer_id)
            replies = rpc.call_all(reqs)
            gets = [r.value for (ep, kw), r in zip(reqs, replies) if kw["kind"] == "get"]
            if any(v is None for v in gets):
                raise rpc.RPCError("GEO-SGD: a pserver sent no value for a parameter block")
            self._answers.put(gets)

    def _before_stop(self):
        """Push the last, partial window, and apply the answer."""
        if self._error is not None or self._old is None:
            return
        if self._steps or any(self._touched.values()):
            self._push_window(self.scope)
        self._apply_answers(self.scope, block=True)


def _on_device(like, value):
    if isinstance(like, np.ndarray):
        return value
    import cupy
    return cupy.asarray(value)


def _apply_rows(train, old, z, begin):
    if not isinstance(z, SelectedRows):
        raise rpc.RPCError("GEO-SGD: the pserver answered a row-sparse parameter's get with a dense value")
    if z.rows is None or not len(z.rows):
        return
    rows = np.asarray(z.rows, dtype=np.int64) + begin
    value = np.asarray(z.value)
    change = value - old[rows]
    train[rows] += _on_device(train, change)
    old[rows] = value


__all__ = ["GeoCommunicator", "snapshot_params", "delta_name", "PARAM_INIT"]


def communicator_send(op, values, scope, executor):
    """A ``send`` without ``epmap`` that no running communicator takes: the
    trainer startup's ``param_init`` (a snapshot), or a GEO-SGD step of a program transpiled with
    ``geo_sgd_mode`` whose script started no communicator: one is started here (Paddle needed
    ``fluid.communicator.Communicator(...).start()``), stopped when ``executor`` closes."""
    from .communicator import active
    names = list(op.attr("send_varnames") or [])
    if names == [PARAM_INIT]:
        snapshot_params(scope, op.input("X"), values)
        return
    config = getattr(op.block.program, "_geo_sgd", None)
    if config is None and not values:
        return                    # nothing to send, and nowhere
    if config is None or active() is not None:
        raise RuntimeError("send op of %s names variables (send_varnames %s) but no endpoints: it hands them to a "
                           "communicator, and none that takes it is running in this process (start one: "
                           "fleet.init_worker(), or fluid.communicator.Communicator(program, mode, ...).start())"
                           % (op.input("X"), names))
    comm = GeoCommunicator(op.block.program, scope, None, **config)
    comm.start()
    if executor is not None:
        executor.on_close(comm.stop)
        session.remember(executor, comm.endpoints, comm.trainer_id)
    comm.push(op, values, scope)
