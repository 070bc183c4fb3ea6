"""The distributed runtime: rpc (ZeroMQ client/server for parameter servers) and collective
(communicators by ring_id: the CPU backend and NCCL through CuPy)."""
