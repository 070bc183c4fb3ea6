"""A trainer stand-in for --max_restarts: each process records its generation and fails while it is
young enough.

Every process writes $OUT_DIR/gen_<rank>_<generation>.json (the restart variables, its endpoint, its pid)
and prints a line; the process of rank --fail_rank exits with --exit_code while its generation
(FLUIDIST_RESTART_COUNT) is below --fail_until; the others sleep --sleep seconds (so they are running when
it fails, and are stopped), except in the generation where nobody fails: then everyone exits 0.

With --peers, every process first connects to every other (as a collective ring does: PADDLE_CURRENT_ENDPOINT,
PADDLE_TRAINER_ENDPOINTS) and, instead of sleeping, waits for a peer's connection to close: a lost peer ends
it with exit code 4, as a real collective's lost rank does, so every node of the job fails and restarts."""
import argparse
import json
import os
import select
import socket
import time

ap = argparse.ArgumentParser()
ap.add_argument("--fail_rank", type=int, default=0)
ap.add_argument("--fail_until", type=int, default=1)
ap.add_argument("--exit_code", type=int, default=3)
ap.add_argument("--sleep", type=float, default=60)
ap.add_argument("--peers", action="store_true")
a = ap.parse_args()

rank = int(os.environ.get("RANK", os.environ.get("PADDLE_TRAINER_ID", "0")))
gen = int(os.environ["FLUIDIST_RESTART_COUNT"])
keys = ["FLUIDIST_RESTART_COUNT", "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS", "PADDLE_CURRENT_ENDPOINT",
        "TRAINING_ROLE", "RANK", "WORLD_SIZE", "GROUP_RANK"]
path = os.path.join(os.environ["OUT_DIR"], "gen_%d_%d.json" % (rank, gen))
with open(path + ".tmp", "w") as f:
    json.dump(dict({k: os.environ.get(k) for k in keys}, pid=os.getpid()), f)
os.replace(path + ".tmp", path)
print("rank %d generation %d" % (rank, gen), flush=True)


def split(ep):
    host, _, port = ep.rpartition(":")
    return host.strip("[]"), int(port)


def mesh():
    """A connection to every lower rank (accepted) and every higher rank (connected)."""
    eps = os.environ["PADDLE_TRAINER_ENDPOINTS"].split(",")
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(split(eps[rank]))
    srv.listen(len(eps))
    conns, deadline = [], time.monotonic() + 60
    for peer in range(rank + 1, len(eps)):
        while True:
            try:
                conns.append(socket.create_connection(split(eps[peer]), timeout=2))
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
    srv.settimeout(60)
    for _ in range(rank):
        conns.append(srv.accept()[0])
    return conns


conns = mesh() if a.peers else []
failing = gen < a.fail_until
if failing and rank == a.fail_rank:
    time.sleep(0.5)
    print("rank %d fails in generation %d" % (rank, gen), flush=True)
    raise SystemExit(a.exit_code)
if failing and conns:
    ready, _, _ = select.select(conns, [], [], a.sleep)
    if ready and not ready[0].recv(1):
        print("rank %d lost a peer in generation %d" % (rank, gen), flush=True)
        raise SystemExit(4)
elif failing:
    time.sleep(a.sleep)
print("rank %d done" % rank, flush=True)
