"""The bytes-per-second reference: a bare ZeroMQ exchange of one trainer's step between two processes.

A DEALER (the "trainer", in the calling process) sends the gradient blocks of one step as the frames
of one multipart message, ``copy=False``; a ROUTER (the "server", a child process) answers with
parameter blocks of the same sizes, also ``copy=False``, from arrays it allocated once. No headers, no
framework, no optimizer: only what ZeroMQ itself costs to move those bytes there and back. The rate is
(bytes sent + bytes received) / the median round time.

    python benchmarks/pserver/zmq_reference.py --sizes 1980000,2000000 --rounds 30
"""
import argparse
import os
import socket
import subprocess
import sys
import time

import numpy as np
import zmq

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import metrics  # noqa: E402


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def serve(port, sizes, rounds, deadline_ms=60000):
    ctx = zmq.Context()
    sock = ctx.socket(zmq.ROUTER)
    sock.setsockopt(zmq.LINGER, 5000)
    sock.bind("tcp://127.0.0.1:%d" % port)
    replies = [np.ones(n, np.uint8) for n in sizes]
    try:
        for _ in range(rounds):
            if not sock.poll(deadline_ms):
                raise TimeoutError("zmq reference server on port %d: no request within %d ms" % (port, deadline_ms))
            frames = sock.recv_multipart(copy=False)
            if [len(f) for f in frames[1:]] != list(sizes):
                raise ValueError("zmq reference server: got frames of %s bytes, expected %s"
                                 % ([len(f) for f in frames[1:]], list(sizes)))
            sock.send_multipart([frames[0]] + replies, copy=False)
    finally:
        sock.close()
        ctx.term()


def measure(sizes, rounds=30, warmup=3, deadline_s=60):
    """Run the exchange ``warmup + rounds`` times; the reference record."""
    port = _free_port()
    total = warmup + rounds
    child = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--serve", str(port),
                              "--sizes", ",".join(str(n) for n in sizes), "--rounds", str(total)])
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect("tcp://127.0.0.1:%d" % port)
    grads = [np.full(n, 7, np.uint8) for n in sizes]
    times = []
    try:
        for i in range(total):
            t0 = time.perf_counter()
            sock.send_multipart(grads, copy=False)
            if not sock.poll(deadline_s * 1000):
                raise TimeoutError("zmq reference: no answer from the server process (pid %d, port %d) within %g s"
                                   % (child.pid, port, deadline_s))
            frames = sock.recv_multipart(copy=False)
            dt = time.perf_counter() - t0
            if [len(f) for f in frames] != list(sizes):
                raise ValueError("zmq reference: answer of %s bytes, expected %s" % ([len(f) for f in frames], sizes))
            if i >= warmup:
                times.append(dt)
        child.wait(timeout=deadline_s)
    finally:
        sock.close()
        ctx.term()
        if child.poll() is None:
            child.kill()
            child.wait()
    moved = 2 * sum(sizes)
    rt = metrics.summarize(times)
    return {"frames": list(sizes), "bytes_per_round": moved, "rounds": rounds, "round_time": rt,
            "bytes_per_sec": moved / rt["median"], "zmq_version": zmq.zmq_version(), "pyzmq_version": zmq.__version__}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", required=True, help="comma-separated frame sizes in bytes")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--serve", type=int, default=0, help=argparse.SUPPRESS)
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    if a.serve:
        serve(a.serve, sizes, a.rounds)
        return
    r = measure(sizes, a.rounds)
    print("%d bytes per round: median %.2f ms, p90 %.2f ms, %.1f MB/s"
          % (r["bytes_per_round"], r["round_time"]["median"] * 1e3, r["round_time"]["p90"] * 1e3,
             r["bytes_per_sec"] / 1e6))


if __name__ == "__main__":
    main()
