"""One worker of an nccl2-mode job whose program all-reduces its gradients itself (Paddle's "reduce
layer": ``fluid.layers.collective._allreduce`` of each gradient between ``optimizer.backward`` and
``apply_gradients``), run by ``CompiledProgram.with_data_parallel(num_trainers=2)``; or, with
``--local``, the same model on the whole batch in one process. Writes each step's loss and the final
parameters to ``--out`` (.npz)."""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fluidist as fluid  # noqa: E402


def build(local):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 16], dtype="float32")
        y = fluid.data("y", [None, 1], dtype="float32")
        h = fluid.layers.fc(x, 32, act="tanh", param_attr=fluid.ParamAttr(name="w1"), bias_attr=fluid.ParamAttr(name="b1"))
        pred = fluid.layers.fc(h, 1, param_attr=fluid.ParamAttr(name="w2"), bias_attr=fluid.ParamAttr(name="b2"))
        loss = fluid.layers.mean(fluid.layers.square_error_cost(pred, y))
        opt = fluid.optimizer.Momentum(learning_rate=0.1, momentum=0.9)
        if local:
            opt.minimize(loss)
        else:
            params_grads = opt.backward(loss)
            opt.apply_gradients([(p, fluid.layers.collective._allreduce(g)) for p, g in params_grads])
    return main, startup, loss


def batch(step, n=8):
    rng = np.random.RandomState(100 + step)
    x = rng.uniform(-1, 1, (n, 16)).astype("float32")
    return {"x": x, "y": np.sin(x.sum(1, keepdims=True)).astype("float32")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--endpoints", default="")
    ap.add_argument("--trainer_id", type=int, default=0)
    ap.add_argument("--local", action="store_true")
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    prog, startup, loss = build(a.local)
    place = fluid.CPUPlace()
    exe = fluid.Executor(place)
    program = prog
    if not a.local:
        config = fluid.DistributeTranspilerConfig()
        config.mode = "nccl2"
        eps = a.endpoints.split(",")
        fluid.DistributeTranspiler(config=config).transpile(a.trainer_id, program=prog, startup_program=startup,
                                                            trainers=a.endpoints, current_endpoint=eps[a.trainer_id])
        strategy = fluid.BuildStrategy()
        strategy.num_trainers, strategy.trainer_id = len(eps), a.trainer_id
        program = fluid.CompiledProgram(prog).with_data_parallel(loss_name=loss.name, build_strategy=strategy,
                                                                 places=[place])
    exe.run(startup)
    out = {}
    for step in range(a.steps):
        feed = batch(step)
        if not a.local:
            feed = {k: v[a.trainer_id * 4:(a.trainer_id + 1) * 4] for k, v in feed.items()}
        out["loss_%d" % step] = np.array(exe.run(program, feed=feed, fetch_list=[loss])[0]).mean()
    for name in ("w1", "b1", "w2", "b2"):
        out[name] = np.array(fluid.global_scope().find_var(name).get_tensor())
    np.savez(a.out, **out)


if __name__ == "__main__":
    main()
