"""Bytes-per-second references: bare ZeroMQ exchanges of what a trainer moves in one step.

``measure``: the reference the goal is stated against. A DEALER (the "trainer", in the calling
process) sends the gradient blocks of one step as the frames of one multipart message, ``copy=False``;
a ROUTER (the "server", a child process) answers with parameter blocks of the same sizes, also
``copy=False``, from arrays it allocated once. Two processes, no header, no framework, no optimizer:
only what ZeroMQ itself costs to move those bytes there and back. The rate is (bytes sent + bytes
received) / the median round time.

``measure_topology``: the same exchange in the job's shape, for context: ``ntrainer`` client processes
each send every server its blocks at once and wait for all answers, ``nserver`` server processes
answer each request at once (no barrier, no update). It shows what ZeroMQ moves per trainer when the
trainers and servers of the job share this machine's cores.

    python benchmarks/pserver/zmq_reference.py --sizes 1980000,2000000 --rounds 30
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
import zmq

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

import metrics  # noqa: E402
from fluidist.launch.cluster import find_free_ports  # noqa: E402


def serve(port, sizes, requests, deadline_ms=60000):
    """Answer ``requests`` requests of frames of ``sizes`` bytes with frames of the same sizes."""
    ctx = zmq.Context()
    sock = ctx.socket(zmq.ROUTER)
    sock.setsockopt(zmq.LINGER, 5000)
    sock.bind("tcp://127.0.0.1:%d" % port)
    replies = [np.ones(n, np.uint8) for n in sizes]
    try:
        for _ in range(requests):
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


def client_rounds(ports, sizes_per_port, total, deadline_s=60):
    """Round times: each round sends every port its frames, then waits for every answer."""
    ctx = zmq.Context()
    socks = []
    for port in ports:
        s = ctx.socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        s.connect("tcp://127.0.0.1:%d" % port)
        socks.append(s)
    grads = [[np.full(n, 7, np.uint8) for n in sizes] for sizes in sizes_per_port]
    times = []
    try:
        for _ in range(total):
            t0 = time.perf_counter()
            for s, frames in zip(socks, grads):
                s.send_multipart(frames, copy=False)
            for port, s, sizes in zip(ports, socks, sizes_per_port):
                if not s.poll(deadline_s * 1000):
                    raise TimeoutError("zmq reference: no answer from the server on port %d within %g s"
                                       % (port, deadline_s))
                got = [len(f) for f in s.recv_multipart(copy=False)]
                if got != list(sizes):
                    raise ValueError("zmq reference: answer of %s bytes, expected %s" % (got, sizes))
            times.append(time.perf_counter() - t0)
    finally:
        for s in socks:
            s.close()
        ctx.term()
    return times


def _spawn(*args):
    return subprocess.Popen([sys.executable, os.path.abspath(__file__)] + [str(a) for a in args],
                            stdout=subprocess.PIPE, text=True)


def _sizes_arg(sizes):
    return ",".join(str(n) for n in sizes)


def _reap(procs, deadline_s):
    outs = []
    try:
        for p in procs:
            out, _ = p.communicate(timeout=deadline_s)
            if p.returncode != 0:
                raise RuntimeError("zmq reference process %d exited with %d" % (p.pid, p.returncode))
            outs.append(out)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return outs


def measure(sizes, rounds=30, warmup=3, deadline_s=60):
    """One DEALER here, one ROUTER in a child process: the reference record."""
    port, = find_free_ports(1)
    total = warmup + rounds
    server = _spawn("--serve", port, "--sizes", _sizes_arg(sizes), "--requests", total)
    try:
        times = client_rounds([port], [sizes], total, deadline_s)[warmup:]
    finally:
        _reap([server], deadline_s)
    moved = 2 * sum(sizes)
    rt = metrics.summarize(times)
    return {"frames": list(sizes), "bytes_per_round": moved, "rounds": rounds, "round_time": rt,
            "bytes_per_sec": moved / rt["median"], "zmq_version": zmq.zmq_version(), "pyzmq_version": zmq.__version__}


def measure_topology(sizes_per_server, ntrainer, rounds=30, warmup=3, deadline_s=60):
    """``ntrainer`` client processes and ``len(sizes_per_server)`` server processes at once."""
    total = warmup + rounds
    ports = find_free_ports(len(sizes_per_server))
    spec = ";".join(_sizes_arg(s) for s in sizes_per_server)
    servers = [_spawn("--serve", port, "--sizes", _sizes_arg(sizes), "--requests", total * ntrainer)
               for port, sizes in zip(ports, sizes_per_server)]
    clients = [_spawn("--client", ",".join(str(p) for p in ports), "--sizes", spec, "--rounds", total)
               for _ in range(ntrainer)]
    outs = _reap(clients, deadline_s)
    _reap(servers, deadline_s)
    moved = 2 * sum(sum(s) for s in sizes_per_server)
    per_client = []
    for out in outs:
        rt = metrics.summarize(json.loads(out)[warmup:])
        per_client.append({"round_time": rt, "bytes_per_sec": moved / rt["median"]})
    return {"ntrainer": ntrainer, "nserver": len(sizes_per_server), "bytes_per_round": moved, "rounds": rounds,
            "clients": per_client,
            "bytes_per_sec": sum(c["bytes_per_sec"] for c in per_client) / len(per_client)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", required=True, help="comma-separated frame sizes in bytes (';' between servers)")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--serve", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--requests", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--client", default="", help=argparse.SUPPRESS)
    a = ap.parse_args()
    per_server = [[int(s) for s in part.split(",")] for part in a.sizes.split(";")]
    if a.serve:
        serve(a.serve, per_server[0], a.requests)
        return
    if a.client:
        ports = [int(p) for p in a.client.split(",")]
        print(json.dumps(client_rounds(ports, per_server, a.rounds)))
        return
    r = measure([n for s in per_server for n in s], a.rounds)
    print("%d bytes per round: median %.2f ms, p90 %.2f ms, %.1f MB/s"
          % (r["bytes_per_round"], r["round_time"]["median"] * 1e3, r["round_time"]["p90"] * 1e3,
             r["bytes_per_sec"] / 1e6))


if __name__ == "__main__":
    main()
