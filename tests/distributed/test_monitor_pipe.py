"""A connection monitor nobody reads, or whose owner is garbage-collected, never blocks ZeroMQ.

An idle pooled client whose pserver has gone reconnects again and again, and each attempt is a monitor
event. With a bounded monitor pipe, libzmq's I/O thread blocked once the pipe filled, holding the
socket's monitor lock: every socket of the context stalled, and closing the client at the process's
exit waited forever (the suite hung after its last test). The child process below makes thousands of
such events in a few seconds (a reconnect interval of 1 ms to a port where nothing listens) and then
closes the link and its socket, as a pooled client does."""
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CHILD = textwrap.dedent("""
    import socket, time, zmq
    from fluidist.distributed import liveness
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.linger = 0
    sock.setsockopt(zmq.RECONNECT_IVL, 1)
    link = liveness.Link(sock, 5.0)
    sock.connect("tcp://127.0.0.1:%d" % port)
    time.sleep(3.0)
    other = ctx.socket(zmq.DEALER)          # the context's I/O thread still serves new sockets
    other.linger = 0
    other.connect("tcp://127.0.0.1:%d" % port)
    link.close()
    sock.close(0)
    other.close(0)
    print("closed", flush=True)
""")


@pytest.mark.timeout(60)
def test_unread_monitor_of_a_reconnecting_client_never_blocks():
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    # (a bounded pipe held 1,000 + 1,000 messages, two per event: full after about 1 s here)
    proc = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=40,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "closed\n", proc.stdout


CYCLES_CHILD = textwrap.dedent("""
    import gc, socket, sys, time, zmq
    from fluidist.distributed import liveness
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]   # refused: reconnects
    ctx = zmq.Context()
    for i in range(int(sys.argv[1])):
        sock = ctx.socket(zmq.DEALER)
        sock.linger = 0
        sock.setsockopt(zmq.RECONNECT_IVL, 1)
        link = liveness.Link(sock, 5.0)
        sock.connect("tcp://127.0.0.1:%d" % port)
        time.sleep(0.002)
        left = {"sock": sock, "link": link}
        left["itself"] = left     # a cycle, as the traceback of a constructor that raised makes
        del sock, link, left
        gc.collect()
    a = ctx.socket(zmq.PAIR)
    a.linger = 0
    b = ctx.socket(zmq.PAIR)
    b.linger = 0
    b.connect("tcp://127.0.0.1:%d" % a.bind_to_random_port("tcp://127.0.0.1"))
    b.send(b"still served")
    print(a.recv(zmq.NOBLOCK).decode() if a.poll(5000) else "the context's I/O thread is stuck", flush=True)
    a.close(); b.close(); ctx.term()
""")


@pytest.mark.timeout(60)
def test_monitored_sockets_collected_in_reference_cycles_never_stall_their_context():
    """Collected in a reference cycle, a socket and its monitor's PAIR get their finalizers in any order:
    the PAIR closed first left libzmq's I/O thread blocked for good on the socket's next event (a trainer
    process whose every later connection then never happened: about one run in three of this child with
    100 sockets). The monitor is stopped before either socket can go."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-W", "ignore", "-c", CYCLES_CHILD, "300"], env=env,
                          capture_output=True, text=True, timeout=40, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "still served\n", proc.stdout
