"""The CPU collective backend: communicators for processes (and threads) without GPUs.

Three transports behind one API (``allreduce``, ``broadcast``, ``allgather``, ``reducescatter``,
``barrier``):

* :class:`ShmCommunicator` -- ranks on one host share a memory segment (a ``/dev/shm`` file that
  rank 0 creates and unlinks as soon as everyone has mapped it, so nothing is left behind even if a
  process is killed). Large all-reduces are a chunked, pipelined reduce-scatter + all-gather: each
  rank reduces its own 1/n of every chunk and the others copy the result, so every rank moves about
  2x the tensor through memory, in cache-sized chunks; small ones are a direct exchange (one
  round). Ranks signal progress through counters in the segment; a waiting rank spins briefly
  (yielding the core), then sleeps in growing steps, so an idle wait costs no CPU.
* :class:`ZmqCommunicator` -- ranks on different hosts (or when ``FLUIDIST_COLLECTIVE_TRANSPORT=zmq``)
  exchange messages over ZeroMQ: a pipelined ring reduce-scatter + all-gather for large tensors, a
  direct exchange for small ones.
* :class:`ThreadCommunicator` -- several places used as threads of one process
  (``c_comm_init_all``): shared Python buffers and a barrier that names the missing threads.

Every wait has a deadline (``FLUIDIST_COLLECTIVE_TIMEOUT``, default 300 s); the error names the
ring, the rank(s) missing and the op, e.g. ``rank 1 of ring 0 did not reach allreduce #12 within
30 s``. A rank that dies is noticed (its pid, on the same host) or timed out; a rank that fails tells
the others, which then fail with its reason instead of waiting out the deadline.

Results are bit-identical on every rank: each element is reduced once, in rank order 0..n-1 on the
shared-memory and thread transports, and then copied to everyone.

This module chooses the transport and sets a ring up; each transport lives in its own module
(``shm.py``, ``zmq_ring.py``, ``threads.py``) over ``base.py`` and ``common.py``.
"""
import logging
import os

import zmq

from .base import (REDUCE_OPS, CollectiveError, OutputPool, SoloCommunicator, check_reduce,  # noqa: F401
                   _CPUCommunicator)
from .common import (bind_random, collective_timeout, host_id, local_ip_towards, new_socket,
                     split_endpoint)
from .. import security
from .rendezvous import RendezvousClient, RendezvousServer
from .shm import (SHM_DIR, SHM_PREFIX, SegmentSpaceError, ShmCommunicator, ShmLayout, create_segment,  # noqa: F401
                  open_segment, shm_chunk_bytes, shm_supported)
from .threads import ThreadCommunicator, ThreadGroup, thread_group  # noqa: F401
from .zmq_ring import ZmqCommunicator  # noqa: F401

logger = logging.getLogger(__name__)
TRANSPORT_ENV = "FLUIDIST_COLLECTIVE_TRANSPORT"  # auto (default) | shm | zmq
logger = logging.getLogger("fluidist.distributed.collective")


def _transport_choice():
    v = os.environ.get(TRANSPORT_ENV, "auto").strip().lower() or "auto"
    if v not in ("auto", "shm", "zmq"):
        raise ValueError("%s must be auto, shm or zmq, got %r" % (TRANSPORT_ENV, v))
    return v


def create_cpu_communicator(comm_id, nranks, rank, endpoint=None, timeout=None):
    """Join ring ``comm_id.ring_id`` as ``rank`` of ``nranks``: rendezvous with rank 0, then shared
    memory when every rank is on this host (and the segment is proven shared), else ZeroMQ."""
    what = "c_comm_init (ring %d, rank %d of %d)" % (comm_id.ring_id, rank, nranks)
    wait = timeout                     # the communicator's own waits (None: heartbeats decide)
    timeout = collective_timeout() if timeout is None else timeout
    if not 0 <= rank < nranks:
        raise ValueError("%s: rank is out of range" % what)
    if nranks == 1:
        comm_id.close()
        return SoloCommunicator(comm_id.ring_id, 0, 1, wait)
    host = split_endpoint(endpoint)[0] if endpoint else local_ip_towards(comm_id.rendezvous)
    pull = new_socket(zmq.PULL, role="server")
    pull.setsockopt(zmq.RCVHWM, 0)
    keep_pull = False
    try:
        addr = bind_random(pull, host)
        me = {"host": host_id(), "pid": os.getpid(), "addr": addr, "shm": shm_supported(),
              "transport": _transport_choice()}
        if rank == 0:
            comm = _rank0_setup(comm_id, nranks, me, pull, what, timeout, wait)
        else:
            comm = _rankk_setup(comm_id, nranks, rank, me, pull, what, timeout, wait)
        keep_pull = comm.transport == "zmq"
        logger.info("ring %d: rank %d of %d connected (%s)", comm_id.ring_id, rank, nranks,
                    "shared memory" if comm.transport == "shm" else "ZeroMQ")
        return comm
    finally:
        if not keep_pull:
            pull.close()


def shm_path(comm_id):
    """The one name ring ``comm_id``'s segment may have: the job's prefix (a hash of the job secret),
    the session token and the ring id. Rank k maps nothing else."""
    return os.path.join(SHM_DIR, "%s%s-%s-r%d" % (SHM_PREFIX, security.secret_tag(), comm_id.token, comm_id.ring_id))


def _rank0_setup(comm_id, nranks, me, pull, what, timeout, wait):
    server = RendezvousServer(comm_id, nranks, what)
    try:
        infos = server.gather("hello", me, timeout)
        table = [infos[j] for j in range(nranks)]
        wishes = {t["transport"] for t in table}
        same_host = all(t["host"] == me["host"] for t in table)
        want_shm = "zmq" not in wishes and same_host and all(t["shm"] for t in table)
        if "shm" in wishes and not want_shm:
            reason = ("%s=shm asks for shared memory, but the ranks are not all on one host with /dev/shm "
                      "(hosts: %s)" % (TRANSPORT_ENV, ", ".join(sorted({t['host'] for t in table}))))
            server.fail(reason)
            raise CollectiveError("%s: %s" % (what, reason))
        pids = [t["pid"] for t in table]
        mm = None
        if want_shm:
            layout = ShmLayout(nranks, shm_chunk_bytes())
            path = shm_path(comm_id)
            try:
                mm = create_segment(path, layout.size, comm_id.token)
            except SegmentSpaceError as e:
                if "shm" in wishes:
                    raise CollectiveError("%s: %s; set %s=zmq" % (what, e.strerror, TRANSPORT_ENV)) from None
                logger.warning("%s: %s; ring %d uses ZeroMQ (TCP) instead", what, e.strerror, comm_id.ring_id)
        if mm is not None:
            try:
                server.reply_all({"transport": "shm", "path": path, "size": layout.size,
                                  "chunk": layout.chunk, "table": table})
                acks = server.gather("attached", {"ok": True}, timeout)
            finally:
                try:
                    os.unlink(path)   # everyone has mapped it (or failed): the name is not needed any more
                except FileNotFoundError:
                    pass
            bad = {j: a.get("error") for j, a in acks.items() if not a.get("ok")}
            if not bad:
                server.reply_all({"go": "shm"})
                return ShmCommunicator(comm_id.ring_id, 0, nranks, mm, layout, pids, wait)
            mm.close()
            if "shm" in wishes:
                reason = "shared memory segment %s could not be mapped by %s" % (
                    path, "; ".join("rank %d: %s" % kv for kv in bad.items()))
                server.fail(reason)
                raise CollectiveError("%s: %s" % (what, reason))
            server.reply_all({"go": "zmq"})
        else:
            server.reply_all({"transport": "zmq", "table": table})
        return ZmqCommunicator(comm_id.ring_id, 0, nranks, pull, [t["addr"] for t in table], pids,
                               [t["host"] == me["host"] for t in table], wait)
    except Exception as e:
        try:
            server.fail(str(e))
        except Exception:
            pass
        raise
    finally:
        server.close()


def _rankk_setup(comm_id, nranks, rank, me, pull, what, timeout, wait):
    client = RendezvousClient(comm_id, rank, what)
    try:
        reply = client.exchange("hello", me, timeout)
        table = reply["table"]
        pids = [t["pid"] for t in table]
        same = [t["host"] == me["host"] for t in table]
        if reply["transport"] == "shm":
            mm, error = None, None
            try:
                if reply.get("path") != shm_path(comm_id):
                    raise CollectiveError("rank 0 names the segment %r, but this job's segment for ring %d is %r"
                                          % (reply.get("path"), comm_id.ring_id, shm_path(comm_id)))
                mm = open_segment(reply["path"], int(reply["size"]), comm_id.token)
            except Exception as e:  # report it to rank 0, which decides
                error = "%s: %s" % (type(e).__name__, e)
            go = client.exchange("attached", {"ok": error is None, "error": error}, timeout)
            if go.get("go") == "shm":
                layout = ShmLayout(nranks, int(reply["chunk"]))
                return ShmCommunicator(comm_id.ring_id, rank, nranks, mm, layout, pids, wait)
            if mm is not None:
                mm.close()
        return ZmqCommunicator(comm_id.ring_id, rank, nranks, pull, [t["addr"] for t in table], pids, same,
                               wait)
    finally:
        client.close()
