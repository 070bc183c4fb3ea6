"""Role makers over MPI (mpi4py): the ranks of ``mpirun`` are the processes of the job.

``MPIRoleMaker``: every rank is a worker (fluidist; in Paddle it was only the base of the next
class). Worker endpoints are ``ip:port`` with a free port picked by each rank and gathered, so a
collective fleet can run under ``mpirun`` with it.

``MPISymetricRoleMaker``: two processes per node, as in Paddle 1.x: even world ranks are servers,
odd ranks are workers; ``worker_num() == server_num() == size // 2`` and
``worker_index() == server_index() == rank // 2``. fluidist fixes two 1.x quirks: indices and
counts are ints (1.x divided with ``/``), and each server's port is a free port it picked and
published with an allgather (1.x drew one random port in [60001, 64000] for all servers, seeded
by their count, which could be taken).

MPI is initialised when the role maker is created (``mpi4py`` imports ``MPI`` then); that needs an
MPI library (OpenMPI: ``apt-get install openmpi-bin libopenmpi-dev`` then ``pip install mpi4py``).
"""
import json
import os
import socket

import numpy as np

from .. import bounded_json

from .base import Role, RoleMakerBase


def _import_mpi():
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise ImportError("MPI role makers need mpi4py and an MPI library: apt-get install openmpi-bin "
                          "libopenmpi-dev && pip install mpi4py (or pip install fluidist[mpi]); "
                          "import failed: %s" % e) from e
    return MPI


def allgather_json(comm, obj):
    """``comm.allgather`` without pickle: each rank's value travels as JSON bytes through the
    buffer-based ``Allgather``/``Allgatherv``. Values must be JSON-serialisable."""
    try:
        data = np.frombuffer(json.dumps(obj).encode(), dtype=np.uint8)
    except TypeError as e:
        raise TypeError("MPI role makers gather JSON-serialisable values only (no pickle): %s" % e) from None
    sizes = np.empty(comm.Get_size(), dtype=np.int64)
    comm.Allgather(np.array([data.size], dtype=np.int64), sizes)
    out = np.empty(int(sizes.sum()), dtype=np.uint8)
    comm.Allgatherv(data, [out, sizes])
    values, off = [], 0
    for n in sizes:
        values.append(bounded_json.loads(out[off:off + int(n)].tobytes(), "an MPI rank's value", int(n), 64))
        off += int(n)
    return values


def local_ip():
    """This node's IP: ``POD_IP`` when set, else what the host name resolves to."""
    ip = os.environ.get("POD_IP")
    if ip:
        return ip
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


def free_port(ip):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((ip, 0))
        except OSError:
            s.bind(("", 0))
        return s.getsockname()[1]


class MPIRoleMaker(RoleMakerBase):
    """Every rank of ``mpirun`` is a worker: ``worker_index()`` is the MPI rank, ``worker_num()`` the
    world size, and each worker's endpoint is its node's IP with a free port it picked, gathered over
    MPI (so a collective fleet runs under ``mpirun`` with it). MPI starts when the role maker is made."""

    def __init__(self):
        super().__init__()
        MPI = _import_mpi()
        self.MPI = MPI
        self._comm = MPI.COMM_WORLD
        # kept, so that the getters still answer after _finalize (fleet.stop_worker) has run
        self._rank = self._comm.Get_rank()
        self._size = self._comm.Get_size()
        self._node_type_comm = None
        self._ips = None
        self._endpoints = None

    # ---------------------------------------------------------------- MPI helpers (Paddle's names)
    def _get_rank(self):
        return self._rank

    def _get_size(self):
        return self._size

    def _barrier_all(self):
        self._comm.barrier()

    def _all_gather(self, obj):
        self._barrier_all()
        return allgather_json(self._comm, obj)

    def _worker_gather(self, obj):
        self._check_role_generation()
        if not self.is_worker():
            return None
        self._node_type_comm.barrier()
        return allgather_json(self._node_type_comm, obj)

    def _get_ips(self):
        if self._ips is None:
            self._ips = allgather_json(self._comm, local_ip())
        return self._ips

    def _gather_endpoints(self, pick_port=True):
        """``ip:port`` of every rank, in rank order (each rank picks a free port of its own)."""
        if self._endpoints is None:
            ip = local_ip()
            self._endpoints = allgather_json(self._comm, "%s:%d" % (ip, free_port(ip)) if pick_port else ip)
        return self._endpoints

    def _finalize(self):
        if not self.MPI.Is_finalized():
            self.MPI.Finalize()

    def _check_role_generation(self):
        if not self._role_is_generated:
            raise NameError("generate_role() should be called first")
        return True

    # ---------------------------------------------------------------- roles: every rank a worker
    def generate_role(self):
        if self._role_is_generated:
            raise Exception("You should check role generation first")
        self._worker_endpoints = list(self._gather_endpoints())
        self._server_endpoints = []
        self._current_id = self._get_rank()
        self._role = Role.WORKER
        self._node_type_comm = self._comm
        self._role_is_generated = True

    def is_worker(self):
        self._check_role_generation()
        return self._role == Role.WORKER

    def is_server(self):
        self._check_role_generation()
        return self._role == Role.SERVER

    def is_first_worker(self):
        return self.is_worker() and self.worker_index() == 0

    def worker_num(self):
        self._check_role_generation()
        return self._get_size()

    def worker_index(self):
        self._check_role_generation()
        return self._get_rank()

    def server_index(self):
        self._check_role_generation()
        return self._get_rank()

    def server_num(self):
        self._check_role_generation()
        return len(self._server_endpoints)

    def get_trainer_endpoints(self):
        self._check_role_generation()
        return self._worker_endpoints

    def get_pserver_endpoints(self):
        self._check_role_generation()
        return self._server_endpoints

    def get_local_endpoint(self):
        self._check_role_generation()
        return self._endpoints[self._get_rank()]

    # ---------------------------------------------------------------- communication
    def barrier_worker(self):
        if self.is_worker():
            self._node_type_comm.barrier()

    def barrier_all(self):
        self._check_role_generation()
        self._barrier_all()

    def all_gather(self, input):
        self._check_role_generation()
        return self._all_gather(input)

    def all_reduce_worker(self, input, output=None, mode="sum"):
        """Element-wise ``sum``, ``max`` or ``min`` of ``input`` over the workers. The result is
        written into ``output`` (a NumPy array of the same size) when given, and returned."""
        ops = {"sum": self.MPI.SUM, "max": self.MPI.MAX, "min": self.MPI.MIN}
        if mode not in ops:
            raise ValueError("unknown mode: %s (use sum, max or min)" % (mode,))
        if not self.is_worker():
            return None
        src = np.array(input, order="C", copy=True)
        out = np.empty_like(src)
        self._node_type_comm.Allreduce(src, out, op=ops[mode])
        if output is not None:
            output = np.asarray(output)
            if output.size != out.size:
                raise ValueError("all_reduce_worker: output has %d elements but input has %d"
                                 % (output.size, out.size))
            output[...] = out.reshape(output.shape)
        return out


class MPISymetricRoleMaker(MPIRoleMaker):
    """Two MPI processes per node, as Paddle 1.x laid out a parameter-server job under ``mpirun``:
    even ranks are pservers, odd ranks workers, ``worker_num() == server_num() == size // 2`` and
    both indices ``rank // 2``. An odd number of processes is an error saying so."""

    def __init__(self):
        super().__init__()
        self._proc_per_node = 2
        self._pserver_rand_port = 0

    def _is_first_worker(self):
        return self.is_first_worker()

    def generate_role(self):
        if self._role_is_generated:
            raise Exception("You should check role generation first")
        size, rank = self._get_size(), self._get_rank()
        if size % self._proc_per_node:
            raise ValueError("MPISymetricRoleMaker runs one server and one worker per node: it needs an even "
                             "number of MPI processes, got %d (mpirun -np %d)" % (size, size))
        eps = self._gather_endpoints()
        self._server_endpoints = eps[0::2]
        self._worker_endpoints = eps[1::2]
        self._node_type = 0 if rank % 2 == 0 else 1
        self._role = Role.SERVER if self._node_type == 0 else Role.WORKER
        self._current_id = rank // 2
        self._node_type_comm = self._comm.Split(self._node_type)
        self._role_is_generated = True

    def is_worker(self):
        self._check_role_generation()
        return self._node_type == 1

    def is_server(self):
        self._check_role_generation()
        return self._node_type == 0

    def worker_num(self):
        self._check_role_generation()
        return self._get_size() // self._proc_per_node

    def _server_num(self):
        return self.server_num()

    def server_num(self):
        self._check_role_generation()
        return self._get_size() // self._proc_per_node

    def worker_index(self):
        self._check_role_generation()
        return self._get_rank() // self._proc_per_node

    def server_index(self):
        self._check_role_generation()
        return self._get_rank() // self._proc_per_node

    def _barrier_worker(self):
        self.barrier_worker()

    def _barrier_server(self):
        if self.is_server():
            self._node_type_comm.barrier()
