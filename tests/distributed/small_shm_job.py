"""A 2x2 pserver job of the 32 MiB "big" model, all four processes started here and waited for; run by
test_small_shm.py inside a mount namespace whose /dev/shm is a small tmpfs. Exits 0 when every process did."""
import os
import sys

sys.path[:0] = [os.path.dirname(os.path.abspath(__file__)), os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]

from cluster import Cluster, free_ports  # noqa: E402


def main(tmp, steps):
    eps = ["127.0.0.1:%d" % p for p in free_ports(2)]
    common = ["--endpoints", ",".join(eps), "--trainers", 2, "--model", "big", "--steps", steps, "--batch", 2]
    with Cluster(tmp) as c:
        for i, ep in enumerate(eps):
            c.start("ps%d" % i, "pserver_model.py", ["--role", "pserver", "--current_endpoint", ep] + common)
        for k in range(2):
            c.start("tr%d" % k, "pserver_model.py", ["--role", "trainer", "--trainer_id", k,
                                                     "--out", os.path.join(tmp, "trainer%d.npz" % k)] + common)
        codes = c.wait(timeout=150)
    print("exit codes: %s" % codes, flush=True)
    return 0 if all(code == 0 for code in codes.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2])))
