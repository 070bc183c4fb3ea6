"""Communicators by ring_id, per process: filled by the set-up ops (``c_comm_init``,
``c_comm_init_all``, :func:`init_comms_from_nccl_id`), used by every ``c_*`` op.

A ring made by ``c_comm_init_all`` (single process, several places used as threads) holds one
communicator per place; a thread finds its own through :func:`thread_rank` (CPU places, which
are all alike) or through its place's device id (CUDA places).
"""
import atexit
import contextlib
import threading

_lock = threading.RLock()
_rings: dict = {}      # ring_id -> this process's communicator
_groups: dict = {}     # ring_id -> (communicators, device ids or None): single-process multi-thread rings
_tls = threading.local()


def register(ring_id, comm):
    """Make ``comm`` the communicator of ``ring_id`` (closing one registered before)."""
    ring_id = int(ring_id)
    with _lock:
        old = _rings.get(ring_id)
        old_group = _groups.pop(ring_id, None)
        _rings[ring_id] = comm
    if old is not None and old is not comm:
        old.close()
    if old_group is not None:
        for c in old_group[0]:
            c.close()


def register_group(ring_id, comms, devices=None):
    """Make ``comms`` (rank i for thread/place i) the single-process ring ``ring_id``."""
    ring_id = int(ring_id)
    with _lock:
        old = _rings.pop(ring_id, None)
        old_group = _groups.get(ring_id)
        _groups[ring_id] = (list(comms), list(devices) if devices is not None else None)
    if old is not None:
        old.close()
    if old_group is not None:
        for c in old_group[0]:
            c.close()


@contextlib.contextmanager
def thread_rank(rank):
    """Within this block, the calling thread is rank ``rank`` of every single-process ring."""
    old = getattr(_tls, "rank", None)
    _tls.rank = int(rank)
    try:
        yield
    finally:
        _tls.rank = old


def set_thread_rank(rank):
    """Bind the calling thread to rank ``rank`` of the single-process rings (None unbinds)."""
    _tls.rank = None if rank is None else int(rank)


def get_communicator(ring_id=0, place=None):
    """The communicator the calling thread uses for ``ring_id``."""
    ring_id = int(ring_id)
    group = _groups.get(ring_id)
    if group is not None:
        comms, devices = group
        rank = getattr(_tls, "rank", None)
        if rank is None and devices is not None and hasattr(place, "device_id"):
            if place.device_id not in devices:
                raise RuntimeError("ring %d spans GPUs %s; %r is not one of them" % (ring_id, devices, place))
            rank = devices.index(place.device_id)
        if rank is None:
            raise RuntimeError("ring %d is a single-process ring of %d places: call it from a thread bound with "
                               "fluidist.distributed.collective.thread_rank(i)" % (ring_id, len(comms)))
        if not 0 <= rank < len(comms):
            raise RuntimeError("thread rank %d is out of range for ring %d of %d places" % (rank, ring_id, len(comms)))
        return comms[rank]
    comm = _rings.get(ring_id)
    if comm is None:
        known = sorted(set(_rings) | set(_groups))
        raise RuntimeError("no communicator for ring_id %d in this process (rings: %s): run the startup program "
                           "(c_gen_nccl_id + c_comm_init, or gen_nccl_id and CompiledProgram) first"
                           % (ring_id, known or "none"))
    return comm


def group_communicators(ring_id):
    """The communicators of single-process ring ``ring_id`` (empty when it is not one)."""
    group = _groups.get(int(ring_id))
    return list(group[0]) if group is not None else []


def has_communicator(ring_id):
    return int(ring_id) in _rings or int(ring_id) in _groups


def destroy(ring_id=None):
    """Close and forget ring ``ring_id`` (every ring when None)."""
    with _lock:
        ids = list(set(_rings) | set(_groups)) if ring_id is None else [int(ring_id)]
        closing = []
        for r in ids:
            c = _rings.pop(r, None)
            if c is not None:
                closing.append(c)
            g = _groups.pop(r, None)
            if g is not None:
                closing.extend(g[0])
    for c in closing:
        try:
            c.close()
        except Exception:
            pass


atexit.register(destroy)


def _is_cuda(place):
    from ...device.places import CUDAPlace
    return isinstance(place, CUDAPlace)


def backend_for(place):
    """'nccl' for a CUDAPlace, 'cpu' otherwise."""
    return "nccl" if _is_cuda(place) else "cpu"


def create_communicator(comm_id, nranks, rank, place, device_id=-1, timeout=None):
    """A communicator for ring ``comm_id.ring_id`` (not registered): NCCL on a CUDAPlace, else CPU."""
    backend = backend_for(place)
    if comm_id.backend != backend:
        raise RuntimeError("ring %d: the id was made for the %s backend but this executor runs on %r; run "
                           "c_gen_nccl_id/gen_nccl_id and c_comm_init on the same kind of place"
                           % (comm_id.ring_id, comm_id.backend, place))
    if backend == "nccl":
        from .nccl import create_nccl_communicator
        dev = int(device_id) if device_id is not None and int(device_id) >= 0 else place.device_id
        comm = create_nccl_communicator(comm_id, nranks, rank, dev, timeout)
    else:
        from .cpu import create_cpu_communicator
        comm = create_cpu_communicator(comm_id, nranks, rank, comm_id.endpoint, timeout)
    comm.source_token = comm_id.token   # lets init_comms_from_nccl_id reuse rings made from the same ids
    return comm


def init_comms_from_nccl_id(scope, place, nranks, rank, nccl_comm_num=1):
    """nccl2 mode: create and register rings 0..nccl_comm_num-1 from the ids ``gen_nccl_id`` left in
    ``scope`` (``NCCLID``, ``NCCLID_1``, ...); returns the communicators, ring 0 first."""
    from .rendezvous import CommId
    comms = []
    for i in range(int(nccl_comm_num)):
        name = "NCCLID" if i == 0 else "NCCLID_%d" % i
        cid = scope._find_value(name) if hasattr(scope, "_find_value") else scope.find_var(name).value()
        if cid is None:
            raise RuntimeError("variable %r holds no NCCL id: run the startup program (its gen_nccl_id op) before "
                               "CompiledProgram with num_trainers > 1" % name)
        if not isinstance(cid, CommId):
            raise TypeError("variable %r should hold the id written by gen_nccl_id, got %s"
                            % (name, type(cid).__name__))
        if cid.ring_id != i:
            cid.ring_id = i
        existing = _rings.get(i)
        if existing is not None and getattr(existing, "source_token", None) == cid.token:
            comms.append(existing)   # a second CompiledProgram over the same ids shares the rings
            continue
        comm = create_communicator(cid, nranks, rank, place)
        register(i, comm)
        comms.append(comm)
    return comms
