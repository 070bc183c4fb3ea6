"""One process of a parameter-server CTR job, written the Paddle 1.x way: servers serve; workers
read their share of the files through the MultiSlotDataGenerator script (an InMemoryDataset,
optionally shuffled across the workers, trained by train_from_dataset), or through a DataLoader
fed by the same parsing in Python. Workers write their test AUC before and after and their
parameters to --out."""
import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "dataset"))

import fluidist as fluid  # noqa: E402
from ctr_data import GENERATOR, hand_feeds, raw_instances  # noqa: E402
from ctr_model import auc, build  # noqa: E402
from fluidist.incubate.fleet.base import role_maker  # noqa: E402
from fluidist.incubate.fleet.parameter_server.distribute_transpiler import StrategyFactory, fleet  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strategy", choices=["sync", "async"], default="sync")
    ap.add_argument("--source", choices=["dataset", "loader"], default="dataset")
    ap.add_argument("--shuffle", action="store_true", help="global_shuffle the in-memory data across the workers")
    ap.add_argument("--files", required=True)
    ap.add_argument("--test_file", required=True)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=20)
    ap.add_argument("--out", default="")
    a = ap.parse_args()

    fleet.init(role_maker.PaddleCloudRoleMaker())
    strategy = getattr(StrategyFactory, "create_%s_strategy" % a.strategy)()
    main_prog, startup, data_vars, loss, prob = build(fleet.distributed_optimizer(fluid.optimizer.SGD(0.5), strategy))
    if fleet.is_server():
        fleet.init_server()
        fleet.run_server()
        return
    eval_prog = build()[0].clone(for_test=True)
    eval_prob = eval_prog.global_block().var(prob.name)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fleet.startup_program)
    fleet.init_worker()
    test = raw_instances([a.test_file])
    test_feed = next(hand_feeds(test, len(test)))

    def test_auc():
        p, = exe.run(eval_prog, feed=test_feed, fetch_list=[eval_prob])
        return auc(test_feed["label"], p)

    history = {"auc_before": test_auc()}
    files = fleet.split_files(a.files.split(","))
    if a.source == "dataset":
        ds = fluid.DatasetFactory().create_dataset("InMemoryDataset")
        ds.set_use_var(list(data_vars))
        ds.set_pipe_command("%s %s" % (sys.executable, GENERATOR))
        ds.set_batch_size(a.batch)
        ds.set_thread(2)
        ds.set_filelist(files)
        ds.load_into_memory()
        history["local_instances"] = ds.get_memory_data_size()
        if a.shuffle:
            np.random.seed(100 + fleet.worker_index())
            ds.global_shuffle(fleet)
            history["shuffled_instances"] = ds.get_shuffle_data_size()
            history["total_instances"] = ds.get_memory_data_size(fleet)
        for _ in range(a.epochs):
            exe.train_from_dataset(fleet.main_program, ds, thread=1, fetch_list=[loss], fetch_info=["loss"],
                                   print_period=5)
        ds.release_memory()
    else:
        loader = fluid.io.DataLoader.from_generator(feed_list=list(data_vars), capacity=4)
        loader.set_sample_generator(lambda: iter(raw_instances(files)), batch_size=a.batch, drop_last=False,
                                    places=fluid.cpu_places(1))
        for _ in range(a.epochs):
            for data in loader():
                exe.run(fleet.main_program, feed=data, fetch_list=[loss])
    history["auc_after"] = test_auc()
    for p in main_prog.global_block().all_parameters():
        history["param_" + p.name] = np.array(fluid.global_scope().find_var(p.name).get_tensor())
    print("worker %d: auc %.4f -> %.4f" % (fleet.worker_index(), history["auc_before"], history["auc_after"]),
          flush=True)
    fleet.stop_worker()
    if a.out:
        np.savez(a.out, **history)


if __name__ == "__main__":
    main()
