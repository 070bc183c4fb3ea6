"""A Fleet CTR job over real processes on 127.0.0.1 (2 servers x 2 workers): Criteo-like files through
a MultiSlotDataGenerator script into an InMemoryDataset, shuffled across the workers, trained by
train_from_dataset, sync and async: the test AUC rises. Without the shuffle, the same files read
through a DataLoader give exactly the same sync result as the dataset."""
import os
import sys

import numpy as np
import pytest

from fleet_cluster import Procs, endpoints

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "dataset"))
from ctr_data import write_files  # noqa: E402

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]


def run_job(tmp_path, args, tag, workers=2, servers=2):
    data = tmp_path / "data"
    if not data.exists():
        data.mkdir()
        write_files(str(data), files=5, lines=100, seed=0)
    files = sorted(str(p) for p in data.iterdir())
    train, test = files[:4], files[4]
    eps, worker_eps = endpoints(servers), endpoints(workers)
    common = {"PADDLE_PSERVERS_IP_PORT_LIST": ",".join(eps), "PADDLE_TRAINERS_NUM": workers,
              "PADDLE_TRAINER_ENDPOINTS": ",".join(worker_eps)}
    args = list(args) + ["--files", ",".join(train), "--test_file", test]
    outs = []
    with Procs(tmp_path) as procs:
        for i, ep in enumerate(eps):
            ip, port = ep.split(":")
            procs.start("%s_ps%d" % (tag, i), "fleet_ctr_child.py", args,
                        dict(common, TRAINING_ROLE="PSERVER", POD_IP=ip, PADDLE_PORT=port))
        for k in range(workers):
            out = str(tmp_path / ("%s_worker%d.npz" % (tag, k)))
            outs.append(out)
            procs.start("%s_w%d" % (tag, k), "fleet_ctr_child.py", args + ["--out", out],
                        dict(common, TRAINING_ROLE="TRAINER", PADDLE_TRAINER_ID=k))
        procs.check(timeout=240)
        logs = [procs.log("%s_w%d" % (tag, k)) for k in range(workers)]
    return [dict(np.load(o)) for o in outs], logs


def params_of(result):
    return {k: v for k, v in result.items() if k.startswith("param_")}


@pytest.mark.parametrize("strategy", ["sync", "async"])
def test_ctr_job_with_global_shuffle_learns(tmp_path, strategy):
    results, logs = run_job(tmp_path, ["--strategy", strategy, "--shuffle", "--epochs", "3"], strategy)
    total = sum(int(r["local_instances"]) for r in results)
    assert total == 400
    for r in results:
        assert int(r["total_instances"]) == 400
        assert r["auc_after"] > r["auc_before"] + 0.15 and r["auc_after"] > 0.75, (r["auc_before"], r["auc_after"])
    # the shuffle moved instances between the workers: their shares are no longer the files' 200 + 200
    assert sum(int(r["shuffled_instances"]) for r in results) == 400
    assert [int(r["shuffled_instances"]) for r in results] != [200, 200]
    assert all("loss: [" in log for log in logs)


def test_dataset_and_data_loader_give_the_same_sync_result(tmp_path):
    by_dataset, _ = run_job(tmp_path, ["--strategy", "sync", "--source", "dataset"], "ds")
    by_loader, _ = run_job(tmp_path, ["--strategy", "sync", "--source", "loader"], "dl")
    for k, v in params_of(by_dataset[0]).items():      # sync: both workers hold the same parameters
        np.testing.assert_allclose(by_dataset[1][k], v, rtol=1e-6, atol=1e-7)
    for a, b in zip(by_dataset, by_loader):
        assert a["auc_after"] > a["auc_before"]
        pa, pb = params_of(a), params_of(b)
        assert sorted(pa) == sorted(pb) and pa
        for k in pa:
            np.testing.assert_allclose(pa[k], pb[k], rtol=1e-5, atol=1e-6)
