"""Collective communication by ring_id: the CPU backend (shared memory on one host, ZeroMQ
between hosts, threads of one process) and NCCL through CuPy.

    comm = get_communicator(ring_id, place)      # made by c_comm_init / c_comm_init_all
    comm.allreduce(x, "sum"); comm.broadcast(x, root=0); comm.allgather(x); comm.reducescatter(x)
    comm.barrier()

Environment: ``FLUIDIST_COLLECTIVE_TIMEOUT`` (seconds any wait may take, default 300),
``FLUIDIST_COLLECTIVE_TRANSPORT`` (auto | shm | zmq: force the CPU transport).
"""
from .rendezvous import CollectiveTimeout, CommId, collective_timeout  # noqa: F401
from .cpu import CollectiveError, ShmCommunicator, ThreadCommunicator, ZmqCommunicator, thread_group  # noqa: F401
from .registry import (create_communicator, destroy, get_communicator, has_communicator,  # noqa: F401
                       init_comms_from_nccl_id, register, register_group, set_thread_rank, thread_rank)
