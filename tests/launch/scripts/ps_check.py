"""A parameter-server job stand-in that checks the launcher's environment over real sockets.

A server (TRAINING_ROLE=PSERVER) listens on POD_IP:PADDLE_PORT, answers each worker's hello with
its server id, and exits once all PADDLE_TRAINERS_NUM workers said goodbye (or, with --hang, never).
A worker connects to every server of PADDLE_PSERVERS_IP_PORT_LIST and records which server id
answered at which endpoint. Both write what they saw to $OUT_DIR/<role>_<id>.json."""
import argparse
import json
import os
import socket
import sys
import time

KEYS = ["TRAINING_ROLE", "PADDLE_PSERVERS_IP_PORT_LIST", "PADDLE_TRAINER_ENDPOINTS", "PADDLE_PORT",
        "PADDLE_PSERVER_ID", "PADDLE_TRAINER_ID", "PADDLE_TRAINERS_NUM", "POD_IP", "PADDLE_CURRENT_ENDPOINT",
        "PADDLE_GLOO_HTTP_ENDPOINT"]
DEADLINE = time.monotonic() + float(os.environ.get("CHECK_TIMEOUT", "60"))

ap = argparse.ArgumentParser()
ap.add_argument("--hang", action="store_true")
ap.add_argument("--fail_worker", type=int, default=-1)
ap.add_argument("--exit_code", type=int, default=1)
a = ap.parse_args()


def dump(name, extra):
    out = {k: os.environ.get(k) for k in KEYS}
    out.update(extra, pid=os.getpid(), argv=sys.argv[1:])
    path = os.path.join(os.environ["OUT_DIR"], name + ".json")
    with open(path + ".tmp", "w") as f:
        json.dump(out, f)
    os.replace(path + ".tmp", path)


role = os.environ["TRAINING_ROLE"]
if role == "PSERVER":
    sid = int(os.environ["PADDLE_PSERVER_ID"])
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((os.environ["POD_IP"], int(os.environ["PADDLE_PORT"])))
    srv.listen(16)
    workers = int(os.environ["PADDLE_TRAINERS_NUM"])
    seen = []
    dump("server_%d" % sid, {"seen": seen})
    print("server %d listening" % sid, flush=True)
    while a.hang or len(seen) < workers:
        srv.settimeout(max(0.1, DEADLINE - time.monotonic()) if not a.hang else None)
        try:
            conn, _ = srv.accept()
        except socket.timeout:
            sys.exit("server %d: only workers %s came" % (sid, seen))
        with conn:
            conn.settimeout(10)
            seen.append(json.loads(conn.makefile("r").readline())["worker"])
            conn.sendall((json.dumps({"server": sid}) + "\n").encode())
        dump("server_%d" % sid, {"seen": sorted(seen)})
else:
    wid = int(os.environ["PADDLE_TRAINER_ID"])
    print("worker %d of %s starting" % (wid, os.environ["PADDLE_TRAINERS_NUM"]), flush=True)
    if wid == a.fail_worker:
        time.sleep(0.3)
        print("worker %d is failing on purpose" % wid, flush=True)
        sys.exit(a.exit_code)
    answers = {}
    for ep in os.environ["PADDLE_PSERVERS_IP_PORT_LIST"].split(","):
        host, _, port = ep.rpartition(":")
        while True:
            try:
                c = socket.create_connection((host, int(port)), timeout=5)
                break
            except OSError:
                if time.monotonic() > DEADLINE:
                    sys.exit("worker %d could not reach server %s" % (wid, ep))
                time.sleep(0.1)
        with c:
            c.sendall((json.dumps({"worker": wid}) + "\n").encode())
            answers[ep] = json.loads(c.makefile("r").readline())["server"]
    dump("worker_%d" % wid, {"answers": answers})
    print("worker %d done" % wid, flush=True)
