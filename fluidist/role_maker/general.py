"""GeneralRoleMaker: roles from the launcher's variables, and barriers, gathers and reductions
through a directory every process can reach (a local disk for one machine, NFS for several), the
way Paddle 1.8 used a file system (HDFS) as Gloo's store.

Layout under ``<path>/<SYS_JOB_ID>/``: one folder per group (``trainer``, ``pserver``, ``all``);
each holds ``init/<rank>`` and ``ack/<rank>`` from the handshake below and ``<session>/<round>/<rank>``
files, one per rank and collective call.

The handshake: every rank writes a fresh random nonce to ``init/<rank>``; when all ranks' nonces
are there, each derives the session name from all of them and writes it to ``ack/<rank>``; a rank
goes on once every ack names its own session (a rank that read a nonce left by an earlier job with
the same id sees a differing ack, reads the nonces again and corrects itself). So files of an
earlier run never mix with this run's rounds, which live under the new session's folder.

Every wait has a deadline: ``init_timeout_seconds`` for the handshake, ``run_timeout_seconds`` for
each later call; the error names the group, the call, the ranks (and endpoints) that never came and
the directory. Liveness does not wait for those deadlines: after the handshake each rank bumps a
counter in ``<session>/alive/<rank>`` every second from a thread, and a rank waiting for another whose
counter has not moved for ``FLUIDIST_PEER_TIMEOUT`` seconds (8; more on a slow shared file system)
stops with an error naming it; a rank that is merely slow to come keeps its counter moving and is
waited for.
"""
import base64
import hashlib
import json
import os
import secrets
import threading
import time

import numpy as np

from .. import bounded_json
from ..distributed import liveness

from .base import MockBarrier, Role, LazyRoleGetters, RoleMakerBase
from .env import EnvReader
from .paddle_cloud import PaddleCloudRoleMaker

_POLL = 0.02


class RendezvousTimeout(TimeoutError):
    """Some ranks of a GeneralRoleMaker group did not arrive in time."""


def _encode(obj):
    if isinstance(obj, np.ndarray):
        arr = np.array(obj, order="C", copy=True)   # (ascontiguousarray would make a 0-d array 1-d)
        if arr.dtype.hasobject:
            raise TypeError("cannot send an array of dtype object")
        return {"__ndarray__": base64.b64encode(arr.tobytes()).decode("ascii"), "dtype": arr.dtype.str,
                "shape": list(arr.shape)}
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, (list, tuple)):
        return [_encode(o) for o in obj]
    if isinstance(obj, dict):
        if not all(isinstance(k, str) for k in obj):
            raise TypeError("dict keys must be strings to be gathered, got %r" % list(obj))
        return {k: _encode(v) for k, v in obj.items()}
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    raise TypeError("cannot gather a value of type %s (use numbers, strings, lists, dicts or NumPy arrays)"
                    % type(obj).__name__)


def _decode(obj):
    if isinstance(obj, dict):
        if "__ndarray__" in obj:
            arr = np.frombuffer(base64.b64decode(obj["__ndarray__"]), dtype=np.dtype(obj["dtype"]))
            return arr.reshape(tuple(obj["shape"])).copy()
        return {k: _decode(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_decode(o) for o in obj]
    return obj


def _write_atomic(path, text):
    tmp = "%s.tmp.%d.%s" % (path, os.getpid(), secrets.token_hex(4))
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return None


class RankLost(RuntimeError):
    """A rank of a GeneralRoleMaker group stopped beating (killed, stopped, or cut off)."""


class _Heartbeat(threading.Thread):
    """Bumps a counter in ``path`` every ``interval`` seconds until stopped (a daemon thread)."""

    def __init__(self, path, interval=1.0):
        super().__init__(name="fluidist-fs-heartbeat", daemon=True)
        self.path = path
        self.interval = interval
        self.stop_event = threading.Event()

    def run(self):
        n = 0
        while True:
            n += 1
            try:
                _write_atomic(self.path, "%d %d" % (os.getpid(), n))
            except OSError:
                pass    # the directory went away (the job is being cleaned up); try again next time
            if self.stop_event.wait(self.interval):
                return


class FsGroup:
    """``size`` processes, this one ``rank``, meeting in directory ``root``.

    ``members`` (endpoints, for error messages) name the ranks."""

    def __init__(self, root, name, rank, size, members=None, init_timeout=3600.0, run_timeout=9999999.0):
        if not 0 <= rank < size:
            raise ValueError("group %r: rank %d is outside [0, %d)" % (name, rank, size))
        self.root = root
        self.name = name
        self.rank = rank
        self.size = size
        self.members = list(members) if members else None
        self.init_timeout = float(init_timeout)
        self.run_timeout = float(run_timeout)
        self.session = None
        self.round = 0
        self.peer_timeout = liveness.peer_timeout()
        self._silence = liveness.SilenceWatch(self.peer_timeout) if self.peer_timeout is not None else None
        self._heartbeat = None
        self._beats = {}       # rank -> (last counter seen, when it last changed)

    def _who(self, ranks):
        if self.members:
            return ", ".join("%d (%s)" % (r, self.members[r]) for r in ranks)
        return ", ".join(str(r) for r in ranks)

    def _timeout(self, what, timeout, missing, extra=""):
        return RendezvousTimeout(
            "GeneralRoleMaker: %s of group %r (%d ranks, this is rank %d) timed out after %g s in %s: "
            "rank%s %s never arrived%s" % (what, self.name, self.size, self.rank, timeout, self.root,
                                           "s" if len(missing) > 1 else "", self._who(missing), extra))

    def init(self):
        """The nonce/ack handshake (see the module docstring); returns the session name."""
        init_dir = os.path.join(self.root, "init")
        ack_dir = os.path.join(self.root, "ack")
        os.makedirs(init_dir, exist_ok=True)
        os.makedirs(ack_dir, exist_ok=True)
        nonce = secrets.token_hex(16)
        _write_atomic(os.path.join(init_dir, str(self.rank)), nonce)
        deadline = time.monotonic() + self.init_timeout
        session = None
        while True:
            nonces = [nonce if r == self.rank else _read(os.path.join(init_dir, str(r))) for r in range(self.size)]
            missing = [r for r, n in enumerate(nonces) if n is None]
            disagree = []
            if not missing:
                s = hashlib.sha1(",".join(nonces).encode()).hexdigest()[:20]
                if s != session:
                    session = s
                    _write_atomic(os.path.join(ack_dir, str(self.rank)), session)
                acks = [_read(os.path.join(ack_dir, str(r))) for r in range(self.size)]
                disagree = [r for r, a in enumerate(acks) if a != session]
                if not disagree:
                    break
            if time.monotonic() > deadline:
                if missing:
                    raise self._timeout("the start-up rendezvous", self.init_timeout, missing)
                raise self._timeout("the start-up rendezvous", self.init_timeout, disagree,
                                    " with this run's session (files of an earlier job with the same SYS_JOB_ID "
                                    "in this directory? use a fresh job id or clear it)")
            time.sleep(_POLL)
        self.session = session
        os.makedirs(os.path.join(self.root, session, "alive"), exist_ok=True)
        if self.peer_timeout is not None:
            self._heartbeat = _Heartbeat(os.path.join(self.root, session, "alive", str(self.rank)))
            self._heartbeat.start()
        return session

    def close(self):
        if self._heartbeat is not None:
            self._heartbeat.stop_event.set()
            self._heartbeat = None

    def _check_alive(self, missing, what):
        """Raise RankLost naming a missing rank whose heartbeat counter stopped moving."""
        if self.peer_timeout is None:
            return
        now = time.monotonic()
        for r in missing:
            beat = _read(os.path.join(self.root, self.session, "alive", str(r)))
            last = self._beats.get(r)
            if last is None or last[0] != beat:
                self._beats[r] = (beat, now)
            elif self._silence.check(r, now - last[1], lambda: "GeneralRoleMaker: rank %s of group %r (its heartbeat "
                                     "counter)" % (self._who([r]), self.name)):
                raise RankLost("GeneralRoleMaker: rank %s of group %r stopped beating %.1f s ago (killed, stopped, or "
                               "cut off from %s; %s), so %s cannot finish"
                               % (self._who([r]), self.name, now - last[1], self.root,
                                  liveness.describe_timeout(self.peer_timeout), what))

    def exchange(self, value, what):
        """Every rank's ``value`` (JSON-able after ``_encode``), in rank order."""
        if self.session is None:
            raise RuntimeError("group %r: init() must run before %s" % (self.name, what))
        self.round += 1
        base = os.path.join(self.root, self.session)
        here = os.path.join(base, str(self.round))
        os.makedirs(here, exist_ok=True)
        _write_atomic(os.path.join(here, str(self.rank)), json.dumps({"v": _encode(value)}))
        if self.round > 2:
            # everyone finished reading round r-2 before writing round r-1, which we have read
            old = os.path.join(base, str(self.round - 2))
            try:
                os.remove(os.path.join(old, str(self.rank)))
                os.rmdir(old)           # the last rank to leave removes the folder
            except OSError:
                pass
        deadline = time.monotonic() + self.run_timeout
        next_check = time.monotonic() + 1.0
        got = [None] * self.size
        while True:
            for r in range(self.size):
                if got[r] is None:
                    text = _read(os.path.join(here, str(r)))
                    if text is not None:
                        got[r] = bounded_json.loads(text, "rank %d's value in %s" % (r, here), len(text), 64)
            missing = [r for r in range(self.size) if got[r] is None]
            if not missing:
                return [_decode(g["v"]) for g in got]
            if time.monotonic() > deadline:
                raise self._timeout("%s (call %d)" % (what, self.round), self.run_timeout, missing)
            if time.monotonic() >= next_check:
                next_check = time.monotonic() + 1.0
                self._check_alive(missing, "%s (call %d)" % (what, self.round))
            time.sleep(_POLL)

    def barrier(self):
        self.exchange(None, "barrier")

    def all_gather(self, obj):
        return self.exchange(obj, "all_gather")

    def all_reduce(self, arr, mode="sum"):
        reducers = {"sum": np.sum, "max": np.max, "min": np.min}
        if mode not in reducers:
            raise ValueError("unknown mode: %s (use sum, max or min)" % (mode,))
        src = np.asarray(arr)
        parts = self.exchange(src, "all_reduce(%s)" % mode)
        shapes = {tuple(np.shape(p)) for p in parts}
        if len(shapes) != 1:
            raise ValueError("all_reduce of group %r: the ranks passed arrays of different shapes %s"
                             % (self.name, sorted(shapes)))
        # the same reduction in the same rank order everywhere: every rank gets identical bits
        return reducers[mode](np.stack([np.asarray(p) for p in parts]), axis=0).astype(src.dtype, copy=False)


class GeneralRoleMaker(LazyRoleGetters, RoleMakerBase):
    """Roles from ``PADDLE_PSERVERS_IP_PORT_LIST`` (may be empty: no servers), ``TRAINING_ROLE``,
    ``PADDLE_TRAINER_ENDPOINTS``, ``PADDLE_TRAINER_ID`` (trainers), ``PADDLE_PSERVER_ID`` or
    ``POD_IP:PADDLE_PORT`` (servers), ``PADDLE_IS_BARRIER_ALL_ROLE`` (default 1) and ``SYS_JOB_ID``.

    kwargs: ``path`` (the shared directory, required), ``init_timeout_seconds`` (3600),
    ``run_timeout_seconds`` (9999999). ``hdfs_name``/``hdfs_ugi`` and ``http_ip_port`` (Paddle's
    HDFS and HTTP stores) are not supported and raise; other kwargs are ignored, as in Paddle.
    """

    def __init__(self, **kwargs):
        super().__init__()
        for key in ("hdfs_name", "hdfs_ugi", "http_ip_port"):
            if kwargs.get(key):
                raise NotImplementedError(
                    "GeneralRoleMaker(%s=...): Paddle's HDFS and HTTP rendezvous stores are not supported by "
                    "fluidist; give path= a directory every process can reach (a local disk or NFS)" % key)
        self._path = str(kwargs.get("path", "") or "").rstrip("/")
        self._init_timeout_seconds = float(kwargs.get("init_timeout_seconds", 3600))
        self._run_timeout_seconds = float(kwargs.get("run_timeout_seconds", 9999999))
        if self._init_timeout_seconds <= 0 or self._run_timeout_seconds <= 0:
            raise ValueError("GeneralRoleMaker: init_timeout_seconds and run_timeout_seconds must be > 0")
        self._worker_comm = None
        self._server_comm = None
        self._all_comm = None
        self._node_type_comm = None
        self._trainers_num = 0
        self._current_endpoint = None

    def generate_role(self, environ=None):
        if self._role_is_generated:
            return
        if not self._path:
            raise ValueError("GeneralRoleMaker needs path=<a directory every process of the job can reach>, "
                             "where the processes meet (got path=%r)" % (self._path,))
        env = EnvReader(type(self).__name__, environ)
        servers = env.endpoints("PADDLE_PSERVERS_IP_PORT_LIST", allow_empty=True)
        role = env.choice("TRAINING_ROLE", ("TRAINER", "PSERVER"))
        workers = env.endpoints("PADDLE_TRAINER_ENDPOINTS")
        barrier_all = env.integer("PADDLE_IS_BARRIER_ALL_ROLE", default=1) != 0     # any non-zero int, as Paddle
        job_id = (env.raw("SYS_JOB_ID") or "").strip()
        root = os.path.join(self._path, job_id) if job_id else self._path
        kw = dict(init_timeout=self._init_timeout_seconds, run_timeout=self._run_timeout_seconds)
        if role == "TRAINER":
            current = env.integer("PADDLE_TRAINER_ID", low=0, high=len(workers) - 1,
                                  expected="an integer in [0, %d] (an index into PADDLE_TRAINER_ENDPOINTS)"
                                  % (len(workers) - 1))
            self._role = Role.WORKER
            self._current_endpoint = workers[current]
            all_rank = current
            self._worker_comm = FsGroup(os.path.join(root, "trainer"), "trainer", current, len(workers),
                                        workers, **kw)
            self._node_type_comm = self._worker_comm
        else:
            if not servers:
                raise env.error("PADDLE_PSERVERS_IP_PORT_LIST", "the servers' ip:port list (a PSERVER needs one)")
            current = PaddleCloudRoleMaker._server_id(env, servers, prefer_id=True)
            self._role = Role.SERVER
            self._current_endpoint = servers[current]
            all_rank = len(workers) + current
            self._server_comm = FsGroup(os.path.join(root, "pserver"), "pserver", current, len(servers),
                                        servers, **kw)
            self._node_type_comm = self._server_comm
        self._worker_endpoints = workers
        self._server_endpoints = servers
        self._trainers_num = len(workers)
        self._current_id = current
        self._node_type_comm.init()
        if barrier_all:
            self._all_comm = FsGroup(os.path.join(root, "all"), "all", all_rank, len(workers) + len(servers),
                                     workers + servers, **kw)
            self._all_comm.init()
        else:
            self._all_comm = MockBarrier()
        self._role_is_generated = True


    # ---------------------------------------------------------------- communication
    def barrier_worker(self):
        """All workers wait for each other (servers return at once)."""
        if self.is_worker():
            self._worker_comm.barrier()

    def barrier_all(self):
        """Every process of the job, workers and servers, waits for the others."""
        self._generated()._all_comm.barrier()

    def all_gather(self, input):
        """Every process's ``input`` (workers first, then servers), on every process."""
        return self._generated()._all_comm.all_gather(input)

    def all_reduce_worker(self, input, output=None, mode="sum"):
        """Element-wise ``sum``, ``min`` or ``max`` of ``input`` over the workers, identical on every
        worker; written into ``output`` when given, and returned (None on a server)."""
        if mode not in ("sum", "min", "max"):
            raise ValueError("unknown mode: %s (use sum, max or min)" % (mode,))
        if not self.is_worker():
            return None
        out = self._worker_comm.all_reduce(input, mode)
        if output is not None:
            output = np.asarray(output)
            if output.size != out.size:
                raise ValueError("all_reduce_worker: output has %d elements but input has %d"
                                 % (output.size, out.size))
            output[...] = np.reshape(out, output.shape)
        return out
