"""One role of a pserver-mode run (pserver or trainer), started as its own process by the tests.

Every trainer writes the parameters it holds after each step to ``--out`` (an .npz), so the test can
compare each step with a local run on the concatenated batches. With ``--cases``, one process trains
several cases one after the other, each on its own endpoints (``--endpoints`` per case, ``;`` between
them), in a scope of its own, writing ``<--out>/<case index>.npz``: one job instead of one per case."""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fluidist as fluid  # noqa: E402
from dist_models import build, batch_for  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--role", choices=["pserver", "trainer"], required=True)
    ap.add_argument("--endpoints", required=True)
    ap.add_argument("--current_endpoint", default=None, help="a pserver's own; trainers pass None, as Paddle's "
                                                                 "test harness does")
    ap.add_argument("--trainer_id", type=int, default=0)
    ap.add_argument("--trainers", type=int, default=2)
    ap.add_argument("--cases", default="", help="MODEL:OPTIMIZER:LR_DECAY(0/1) for each case, ';' between them")
    ap.add_argument("--pserver_index", type=int, default=-1, help="with --cases: this pserver's place in each case")
    ap.add_argument("--model", default="fc")
    ap.add_argument("--optimizer", default="sgd")
    ap.add_argument("--lr_decay", action="store_true")
    ap.add_argument("--async_mode", action="store_true")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--out", default="")
    ap.add_argument("--step_delay", type=float, default=0.0, help="seconds a trainer sleeps after each step")
    ap.add_argument("--pause", default="", help="STEP:SECONDS: a trainer sleeps this long after that step")
    ap.add_argument("--slow_trainer", default="", help="K:SECONDS: trainer K sleeps this long before each step "
                                                       "(the others' step messages reach the pservers first)")
    ap.add_argument("--no_close", action="store_true", help="end without Executor.close(), as most scripts do")
    ap.add_argument("--fail_after", type=int, default=-1, help="raise (uncaught) after this step")
    ap.add_argument("--geo", type=int, default=0, help="GEO-SGD, pushing every this many steps")
    ap.add_argument("--communicator", choices=["", "async", "half_async"], default="",
                    help="(with --async_mode) start fluid.communicator.Communicator in this mode")
    ap.add_argument("--pull_dir", default="", help="GEO: after training, wait for the other trainers' marks here, "
                                                   "then receive the pservers' parameters into --out (pulled_<p>)")
    ap.add_argument("--save_dir", default="", help="trainer 0 calls fluid.io.save_persistables here after --save_after")
    ap.add_argument("--save_after", type=int, default=-1)
    ap.add_argument("--load_dir", default="", help="a pserver calls fluid.io.load_persistables from here first")
    ap.add_argument("--first_step", type=int, default=0, help="a trainer starts at this step (of the same batches)")
    ap.add_argument("--loader", choices=["", "iterable", "reader", "decoy", "outside"], default="",
                    help="feed the trainer through a DataLoader: iterable, non-iterable (a read op), or iterable "
                         "with a decoy batch between two steps (skipped by the loop, seen by the look-ahead), "
                         "of other ids of the table (decoy) or of ids outside it (outside)")
    a = ap.parse_args()
    if not a.cases:
        return run(a, a.model, a.optimizer, a.lr_decay, a.endpoints, a.current_endpoint, a.out)
    for i, (case, endpoints) in enumerate(zip(a.cases.split(";"), a.endpoints.split(";"))):
        model, optimizer, lr_decay = case.split(":")
        current = endpoints.split(",")[a.pserver_index] if a.role == "pserver" else None
        with fluid.scope_guard(fluid.Scope()):
            run(a, model, optimizer, lr_decay == "1", endpoints, current,
                os.path.join(a.out, "%d.npz" % i) if a.out else "")


def run(a, model, optimizer, lr_decay, endpoints, current_endpoint, out_path):
    """One case: serve it (pserver) or train it and write its history to ``out_path`` (trainer)."""
    built = build(model, optimizer, lr_decay, reader=a.loader == "reader")
    main_prog, startup, loss, params = built[:4]
    config = fluid.DistributeTranspilerConfig()
    if a.geo:
        config.geo_sgd_mode = True
        config.geo_sgd_need_push_nums = a.geo
    if a.communicator:
        config.sync_mode = False
        config.runtime_split_send_recv = True
        config.half_async = a.communicator == "half_async"
    t = fluid.DistributeTranspiler(config)
    t.transpile(a.trainer_id, program=main_prog, pservers=endpoints, trainers=a.trainers,
                sync_mode=not a.async_mode, startup_program=startup, current_endpoint=current_endpoint)
    exe = fluid.Executor(fluid.CPUPlace())
    if a.role == "pserver":
        prog = t.get_pserver_program(current_endpoint)
        exe.run(t.get_startup_program(current_endpoint, prog))
        if a.load_dir:
            fluid.io.load_persistables(exe, a.load_dir, prog)
        exe.run(prog)
        return
    trainer = t.get_trainer_program(wait_port=True)
    exe.run(startup)
    if a.pull_dir:   # every trainer starts from the parameters as initialised
        wait_for_all(a, "ready")
    comm = None
    if a.communicator:
        from fluidist.communicator import Communicator
        from fluidist.transpiler import DistributedMode
        mode = DistributedMode.HALF_ASYNC if a.communicator == "half_async" else DistributedMode.ASYNC
        comm = Communicator(trainer, mode, envs={"communicator_send_queue_size": 4})
        comm.start()
    history = {}
    grads = [p + "@GRAD" for p in params] if a.communicator == "async" and a.pull_dir else []
    fetched = params + grads
    if model == "all_opt":  # FTRL's parameters are checked against its update of this job's own gradients
        ftrl = [p for p in params if p.startswith("ftrl_")]
        history.update({"%s_init" % p: np.array(fluid.global_scope().find_var(p).get_tensor()) for p in ftrl})
        grads = [p + "@GRAD" for p in ftrl]   # a whole parameter's is renamed for this trainer (<grad>.trainer_<id>)
        fetched = params + grads
        grads = [g if g in trainer.global_block().vars else "%s.trainer_%d" % (g, a.trainer_id) for g in grads]
    pause_step, pause_s = (int(a.pause.split(":")[0]), float(a.pause.split(":")[1])) if a.pause else (-1, 0.0)
    feeds = LoaderFeeds(a, model, trainer, built[4] if len(built) > 4 else None) if a.loader else None
    slow_id, slow_s = (int(a.slow_trainer.split(":")[0]), float(a.slow_trainer.split(":")[1])) \
        if a.slow_trainer else (-1, 0.0)
    for step in range(a.first_step, a.steps):
        if a.trainer_id == slow_id:
            time.sleep(slow_s)
        feed = feeds.next() if feeds else batch_for(model, step, a.batch * a.trainers, a.trainer_id, a.trainers)
        out = exe.run(trainer, feed=feed, fetch_list=[loss] + params + grads)
        if feeds:
            feeds.after_step(step)
        history["loss_%d" % step] = out[0]
        for name, v in zip(fetched, out[1:]):
            history["%s_%d" % (name, step)] = v
        print("step %d done" % step, flush=True)
        if step == a.save_after and a.trainer_id == 0:
            fluid.io.save_persistables(exe, a.save_dir, trainer)
        if step == a.fail_after:
            raise RuntimeError("trainer %d fails on purpose after step %d" % (a.trainer_id, step))
        if step == pause_step:
            time.sleep(pause_s)
        elif a.step_delay:
            time.sleep(a.step_delay)
    if a.pull_dir:
        history.update(pull_after_all(a, t, exe))
    elif comm is not None:
        comm.stop()
    if not a.no_close:
        exe.close()
    if feeds:
        from fluidist.distributed import prefetch_ahead
        history.update({"ahead_" + k: np.array(v) for k, v in prefetch_ahead.counters().items()})
    if out_path:
        np.savez(out_path, **history)


class LoaderFeeds:
    """The trainer's batches through a DataLoader (``--loader``). Before each step it waits until the
    loader's thread has queued the batch after the step's (the look-ahead never waits: the test makes
    what it sees certain)."""

    def __init__(self, a, model, trainer, reader_loader):
        self.batches = [batch_for(model, step, a.batch * a.trainers, a.trainer_id, a.trainers)
                        for step in range(a.first_step, a.steps)]
        self.decoy = {"decoy": 2046, "outside": 4096}.get(a.loader)
        self.first_step = a.first_step
        self.reader = reader_loader
        names = sorted(self.batches[0])
        if reader_loader is not None:
            names = [v.name for v in reader_loader._feed_list]
            reader_loader.set_batch_generator(self.generator(names))
            reader_loader.start()
            self.queue, self.it = reader_loader.queue, None
            return
        loader = fluid.io.DataLoader.from_generator(feed_list=[trainer.global_block().var(n) for n in names],
                                                    capacity=8)
        loader.set_batch_generator(self.generator(names), places=fluid.cpu_places(1))
        self.queue, self.it = loader.queue, iter(loader())

    def generator(self, names):
        def batches():
            for i, b in enumerate(self.batches):
                yield [b[n] for n in names]
                if self.decoy and i + 1 < len(self.batches):   # ids no step trains on: one per pserver
                    ids = np.array([[self.decoy], [self.decoy + 1]] * (len(b["ids"]) // 2), "int64")
                    yield [ids if n == "ids" else b[n] for n in names]
        return batches

    def next(self):
        if self.reader is not None:       # the read op pops this step's batch: the next one queued too
            self._wait(2)
            return None
        feed = next(self.it)
        self._wait(1)
        return feed

    def after_step(self, step):
        if self.decoy and step - self.first_step + 1 < len(self.batches):
            next(self.it)

    def _wait(self, batches):
        deadline = time.time() + 30
        while self.queue.size() < batches and not self.queue.is_closed() and time.time() < deadline:
            time.sleep(0.001)


def wait_for_all(a, mark):
    open(os.path.join(a.pull_dir, "%s_%d" % (mark, a.trainer_id)), "w").close()
    deadline = time.time() + 60
    while not all(os.path.exists(os.path.join(a.pull_dir, "%s_%d" % (mark, k))) for k in range(a.trainers)):
        if time.time() > deadline:
            raise RuntimeError("the other trainers did not reach %r" % mark)
        time.sleep(0.05)


def pull_after_all(a, t, exe):
    """Stop this trainer's communicator (what it holds goes out), mark it done, wait until every
    trainer did, then receive what the pservers hold (``pulled_<param>``)."""
    from fluidist.distributed import communicator
    communicator.active().stop()
    wait_for_all(a, "done")
    prog = fluid.Program()
    block = prog.global_block()
    plan = t._plan
    for name in plan.params:
        blocks = plan.param_blocks[name]
        block.create_var(name="pulled_" + name, dtype="float32")
        block.append_op("recv", inputs={"X": []}, outputs={"Out": ["pulled_" + name]},
                        attrs={"epmap": [b.endpoint for b in blocks], "recv_varnames": [b.name for b in blocks],
                               "trainer_id": a.trainer_id, "sync_mode": False})
    names = ["pulled_" + n for n in plan.params]
    return dict(zip(names, exe.run(prog, fetch_list=names, scope=fluid.Scope())))


if __name__ == "__main__":
    main()
