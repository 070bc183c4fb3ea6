"""A collective trainer stand-in: checks the launcher's environment and meets every other rank.

Binds its own PADDLE_CURRENT_ENDPOINT, connects to every other endpoint of PADDLE_TRAINER_ENDPOINTS
and exchanges ranks (so the endpoints really are reachable and each belongs to the rank at that
position), then writes what it saw to $OUT_DIR/trainer_<rank>.json and prints a hello line."""
import json
import os
import socket
import sys
import threading
import time

DEADLINE = time.monotonic() + float(os.environ.get("CHECK_TIMEOUT", "60"))

KEYS = ["FLAGS_selected_gpus", "PADDLE_TRAINER_ID", "PADDLE_CURRENT_ENDPOINT", "PADDLE_TRAINERS_NUM",
        "PADDLE_TRAINER_ENDPOINTS", "POD_IP", "PADDLE_RANK_IN_NODE", "PADDLE_DISTRI_BACKEND",
        "CUDA_VISIBLE_DEVICES", "TRAINING_ROLE", "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE",
        "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT", "FLUIDIST_LOG_LEVEL"]


def split(ep):
    host, _, port = ep.rpartition(":")
    return host.strip("[]"), int(port)


def serve(sock, expected, seen, me):
    while len(seen) < expected and time.monotonic() < DEADLINE:
        sock.settimeout(max(0.1, DEADLINE - time.monotonic()))
        try:
            conn, _ = sock.accept()
        except socket.timeout:
            break
        with conn:
            conn.settimeout(10)
            data = conn.makefile("r").readline()
            seen.append(json.loads(data)["rank"])
            conn.sendall((json.dumps({"rank": me}) + "\n").encode())


def main():
    rank = int(os.environ["PADDLE_TRAINER_ID"])
    eps = os.environ["PADDLE_TRAINER_ENDPOINTS"].split(",")
    me = os.environ["PADDLE_CURRENT_ENDPOINT"]
    assert eps[rank] == me, "endpoint %s is not position %d of %s" % (me, rank, eps)
    srv = socket.socket(socket.AF_INET6 if ":" in split(me)[0] else socket.AF_INET)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(split(me))
    srv.listen(len(eps))
    seen = []
    t = threading.Thread(target=serve, args=(srv, len(eps) - 1, seen, rank), daemon=True)
    t.start()
    answers = {}
    for j, ep in enumerate(eps):
        if j == rank:
            continue
        while True:
            try:
                c = socket.create_connection(split(ep), timeout=5)
                break
            except OSError:
                if time.monotonic() > DEADLINE:
                    sys.exit("rank %d could not reach rank %d at %s" % (rank, j, ep))
                time.sleep(0.1)
        with c:
            c.sendall((json.dumps({"rank": rank}) + "\n").encode())
            answers[ep] = json.loads(c.makefile("r").readline())["rank"]
    t.join(max(0.1, DEADLINE - time.monotonic()))
    srv.close()
    out = {k: os.environ.get(k) for k in KEYS}
    out.update({"argv": sys.argv[1:], "answers": answers, "seen": sorted(seen), "pid": os.getpid(),
                "hostname_ip": split(me)[0]})
    path = os.path.join(os.environ["OUT_DIR"], "trainer_%d.json" % rank)
    with open(path + ".tmp", "w") as f:
        json.dump(out, f)
    os.replace(path + ".tmp", path)
    print("rank %d of %s says hello" % (rank, os.environ["PADDLE_TRAINERS_NUM"]), flush=True)


if __name__ == "__main__":
    main()
