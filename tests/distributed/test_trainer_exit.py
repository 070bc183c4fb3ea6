"""A trainer process that ends normally counts as done for its pservers even without
``Executor.close()`` (what most Paddle scripts do): the pservers then end with status 0 at once, as a
job manager expects of a good job. A trainer that dies of an uncaught exception is not done: the
pservers end with an error naming it."""
import time

import pytest

from cluster import Cluster, free_ports
from load_aware import scaled  # noqa: E402  (bounds that follow the machine's load)

pytestmark = pytest.mark.timeout(120)


def _run(tmp_path, trainer_args):
    eps = ",".join("127.0.0.1:%d" % p for p in free_ports(2))
    common = ["--endpoints", eps, "--trainers", 2, "--model", "fc", "--steps", 3, "--batch", 4]
    with Cluster(tmp_path) as c:
        for i, ep in enumerate(eps.split(",")):
            c.start("ps%d" % i, "pserver_model.py", ["--role", "pserver", "--current_endpoint", ep] + common)
        for k in range(2):
            c.start("tr%d" % k, "pserver_model.py", ["--role", "trainer", "--trainer_id", k] + common +
                    trainer_args(k))
        trainers = c.wait(timeout=90, names=["tr0", "tr1"])
        ended = time.monotonic()
        pservers = c.wait(timeout=60, names=["ps0", "ps1"])
        return trainers, pservers, time.monotonic() - ended, c


def test_trainers_ending_without_close_end_the_job_well(tmp_path):
    trainers, pservers, after, c = _run(tmp_path, lambda k: ["--no_close"])
    for name, code in list(trainers.items()) + list(pservers.items()):
        assert code == 0, "%s exited with %s:\n%s" % (name, code, c.log(name))
    assert after < scaled(6.0), "the pservers took %.1f s to end after the trainers" % after


def test_a_trainer_that_crashed_is_not_done(tmp_path):
    trainers, pservers, _, c = _run(tmp_path, lambda k: ["--no_close"] + (["--fail_after", 1] if k == 1 else []))
    assert trainers["tr1"] != 0 and "fails on purpose" in c.log("tr1")
    assert all(code != 0 for code in pservers.values()), pservers
    assert any("trainer 1" in c.log(name) for name in pservers), c.log("ps0")
