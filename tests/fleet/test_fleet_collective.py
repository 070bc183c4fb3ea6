"""The collective fleet over real processes: two workers on 127.0.0.1 end every step with the
parameters one process gets training on the concatenated batch."""
import numpy as np
import pytest

from fleet_cluster import Procs, endpoints
from fleet_models import PARAMS, equal_bound, local_history, rel_err

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]


def run_workers(tmp_path, n, args):
    eps = endpoints(n)
    outs = []
    with Procs(tmp_path) as procs:
        for rank in range(n):
            out = str(tmp_path / ("w%d.npz" % rank))
            outs.append(out)
            procs.start("w%d" % rank, "fleet_collective_child.py", list(args) + ["--out", out],
                        {"PADDLE_TRAINER_ENDPOINTS": ",".join(eps), "PADDLE_TRAINER_ID": rank,
                         "PADDLE_CURRENT_ENDPOINT": eps[rank], "PADDLE_TRAINERS_NUM": n})
        procs.check(timeout=180)
    return [dict(np.load(o)) for o in outs]


@pytest.mark.parametrize("mode,optimizer", [("grad_allreduce", "sgd"), ("grad_allreduce", "adam"),
                                            ("nccl2", "momentum"), ("local_sgd", "sgd")])
def test_two_workers_equal_one_process_on_the_whole_batch(tmp_path, mode, optimizer):
    steps, batch = 3, 8
    results = run_workers(tmp_path, 2, ["--mode", mode, "--optimizer", optimizer, "--steps", steps,
                                        "--batch", batch])
    ref = local_history(optimizer, steps, batch)
    for step in range(steps):
        for name in PARAMS:
            key = "%s_%d" % (name, step)
            for rank, r in enumerate(results):
                err = rel_err(r[key], ref[key])
                assert err < equal_bound(optimizer), "%s %s: worker %d step %d param %s: relative error %g" % (
                    mode, optimizer, rank, step, name, err)


def local_sgd_reference(steps, k, batch, n=2):
    """n workers simulated in one process: local SGD steps on their shares, parameters averaged
    after every k-th step."""
    import fluidist as fluid
    from fleet_models import base_optimizer, batch_for, build
    main, startup, loss = build(lambda l: base_optimizer("sgd").minimize(l))
    exe = fluid.Executor(fluid.CPUPlace())
    scopes = [fluid.Scope() for _ in range(n)]
    for sc in scopes:
        exe.run(startup, scope=sc)
    hist = [{} for _ in range(n)]
    for step in range(steps):
        for i, sc in enumerate(scopes):
            exe.run(main, feed=batch_for(step, batch, i, n), scope=sc)
        if (step + 1) % k == 0:
            for p in PARAMS:
                avg = sum(np.array(sc.find_var(p).get_tensor()) for sc in scopes) / n
                for sc in scopes:
                    sc.var(p).set_value(avg.astype("float32"))
        for i, sc in enumerate(scopes):
            for p in PARAMS:
                hist[i]["%s_%d" % (p, step)] = np.array(sc.find_var(p).get_tensor())
    return hist


def test_local_sgd_every_two_steps(tmp_path):
    """local_sgd_steps=2: each worker trains alone and the parameters are averaged after every
    second step, exactly as a simulation of the two workers in one process."""
    steps, batch = 4, 8
    results = run_workers(tmp_path, 2, ["--mode", "local_sgd", "--local_sgd_steps", 2, "--steps", steps,
                                        "--batch", batch])
    ref = local_sgd_reference(steps, 2, batch)
    for step in range(steps):
        for rank in range(2):
            for p in PARAMS:
                key = "%s_%d" % (p, step)
                assert rel_err(results[rank][key], ref[rank][key]) < 1e-5, (rank, key)
        same = all(rel_err(results[0]["%s_%d" % (p, step)], results[1]["%s_%d" % (p, step)]) < 1e-6
                   for p in PARAMS)
        assert same == (step % 2 == 1), "step %d" % step
