"""Makes the Paddle 1.8.5 fixtures in this directory (run once, with the real Paddle):

    ~/.pyenv/versions/3.8.18/bin/python -m venv /tmp/pd18
    /tmp/pd18/bin/pip install paddlepaddle==1.8.5 protobuf==3.20.3 numpy==1.21.6
    /tmp/pd18/bin/python tests/data/paddle18/make_fixtures.py

For each model of paddle18_models.py it trains TRAIN_STEPS steps, then saves with each of Paddle's calls:

    <model>/infer/              save_inference_model (``__model__`` + one file per persistable)
    <model>/infer_combined/     save_inference_model(model_filename="model", params_filename="params")
    <model>/persist/            save_persistables (one LoDTensor file per variable)
    <model>/persist_combined/   save_persistables(filename="persistables")
    <model>/ckpt.pd{params,opt,model}   fluid.save
    mlp/params/                 save_params

and records, as .npy / .npz (never pickles), what Paddle computes from there:

    <model>/expect/infer_out.npy    the loaded inference model's output on models.inputs(model, 100)
    <model>/expect/train_loss.npy   the losses of TRAIN_STEPS more steps (batches 10, 11, ...)
    <model>/expect/params_after.npz the parameters after those steps

misc/ holds single variables of every dtype Paddle saves on CPU (float32, float64, int32, int64, int8: its CPU save kernels), LoD of one and two levels, and a SelectedRows,
saved with save_vars one file per variable (misc/sep/) and combined (misc/combined/all);
misc/expect.npz has their values.
"""
import json
import os
import shutil
import sys

import numpy as np
import paddle.fluid as fluid
from paddle.fluid import core

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import paddle18_models as models  # noqa: E402


def run_model(name, out):
    m = models.BUILDERS[name](fluid)
    place = fluid.CPUPlace()
    exe = fluid.Executor(place)
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(m["startup"])
        for s in range(models.TRAIN_STEPS):
            exe.run(m["main"], feed=models.feed_dict(fluid, place, name, s, True), fetch_list=[m["loss"]])
        d = os.path.join(out, name)
        if os.path.exists(d):
            shutil.rmtree(d)
        os.makedirs(os.path.join(d, "expect"))
        fluid.io.save_inference_model(os.path.join(d, "infer"), m["feeds"], [m["pred"]], exe, m["main"])
        fluid.io.save_inference_model(os.path.join(d, "infer_combined"), m["feeds"], [m["pred"]], exe,
                                      m["main"], model_filename="model", params_filename="params")
        fluid.io.save_persistables(exe, os.path.join(d, "persist"), m["main"])
        fluid.io.save_persistables(exe, os.path.join(d, "persist_combined"), m["main"], filename="persistables")
        fluid.save(m["main"], os.path.join(d, "ckpt"))
        if name == "mlp":
            fluid.io.save_params(exe, os.path.join(d, "params"), m["main"])

        # what serving the saved model gives
        prog, feeds, fetches = fluid.io.load_inference_model(os.path.join(d, "infer"), exe)
        out_infer, = exe.run(prog, feed=models.feed_dict(fluid, place, name, 100, False), fetch_list=fetches)
        np.save(os.path.join(d, "expect", "infer_out.npy"), np.asarray(out_infer))

        # training goes on from the saved state
        losses = []
        for s in range(models.TRAIN_STEPS):
            loss, = exe.run(m["main"], feed=models.feed_dict(fluid, place, name, 10 + s, True),
                            fetch_list=[m["loss"]])
            losses.append(np.asarray(loss).reshape(-1)[0])
        np.save(os.path.join(d, "expect", "train_loss.npy"), np.array(losses, dtype="float32"))
        params = {p.name: np.asarray(scope.find_var(p.name).get_tensor())
                  for p in m["main"].global_block().all_parameters()}
        np.savez(os.path.join(d, "expect", "params_after.npz"), **params)


MISC_LOD = {"seq": [[0, 2, 5]], "nested": [[0, 1, 3], [0, 2, 3, 6]]}


def misc_values():
    r = np.random.RandomState(3)
    return {
        "seq": r.randn(5, 3).astype("float32"),
        "nested": r.randint(-9, 9, size=(6, 1)).astype("int64"),
        "f64": r.randn(2, 2).astype("float64"),
        "i32": r.randint(-5, 5, size=(4,)).astype("int32"),
        "i8": np.array([-3, 7], dtype="int8"),
        "sr.value": r.randn(3, 4).astype("float32"),
    }


def run_misc(out):
    d = os.path.join(out, "misc")
    if os.path.exists(d):
        shutil.rmtree(d)
    os.makedirs(d)
    place = fluid.CPUPlace()
    exe = fluid.Executor(place)
    vals = misc_values()
    scope = fluid.Scope()
    prog = fluid.Program()
    block = prog.global_block()
    tensors = []
    with fluid.scope_guard(scope):
        for n, v in vals.items():
            if n == "sr.value":
                continue
            var = block.create_var(name=n, shape=v.shape, dtype=v.dtype, persistable=True,
                                   lod_level=len(MISC_LOD.get(n, [])))
            t = scope.var(n).get_tensor()
            t.set(v, place)
            if n in MISC_LOD:
                t.set_lod(MISC_LOD[n])
            tensors.append(var)
        sr_var = block.create_var(name="sr", shape=[10, 4], dtype="float32", persistable=True,
                                  type=core.VarDesc.VarType.SELECTED_ROWS)
        sr = scope.var("sr").get_selected_rows()
        sr.set_height(10)
        sr.set_rows([1, 4, 7])
        sr.get_tensor().set(vals["sr.value"], place)
        fluid.io.save_vars(exe, os.path.join(d, "sep"), prog, vars=tensors + [sr_var])
        fluid.io.save_vars(exe, os.path.join(d, "combined"), prog, vars=tensors, filename="all")
    np.savez(os.path.join(d, "expect.npz"), **vals)
    with open(os.path.join(d, "lod.json"), "w") as f:
        json.dump({"lod": MISC_LOD, "sr_rows": [1, 4, 7], "sr_height": 10}, f)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else HERE
    for name in models.NAMES:
        run_model(name, out)
    run_misc(out)


if __name__ == "__main__":
    main()
