"""Loads, with the real Paddle 1.8.5, the files fluidist wrote in Paddle's formats and records what
Paddle computes from them (run by tests/test_paddle_format.py under FLUIDIST_PADDLE18_PYTHON):

    python paddle_check.py OUT MODEL

OUT/MODEL holds, written by fluidist with format="paddle": infer/ and infer_combined/
(save_inference_model, the second with model_filename="model", params_filename="params"),
persist/ and persist_combined/ (save_persistables), ckpt.pd* (fluid.save). Written here, under
OUT/MODEL/paddle/: infer_out.npy, infer_combined_out.npy, predictor_out.npy (Paddle Inference's
AnalysisPredictor on infer_combined), and for each of persist, persist_combined, ckpt the losses of
TRAIN_STEPS steps that continue from the loaded state (<how>_loss.npy).
"""
import os
import sys

import numpy as np
import paddle.fluid as fluid
from paddle.fluid.core import AnalysisConfig, PaddleTensor, create_paddle_predictor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddle18_models as models  # noqa: E402


def main(out, name):
    d = os.path.join(out, name)
    res = os.path.join(d, "paddle")
    os.makedirs(res, exist_ok=True)
    place = fluid.CPUPlace()
    exe = fluid.Executor(place)
    for sub, kw in (("infer", {}), ("infer_combined", dict(model_filename="model", params_filename="params"))):
        scope = fluid.Scope()
        with fluid.scope_guard(scope):
            prog, feeds, fetches = fluid.io.load_inference_model(os.path.join(d, sub), exe, **kw)
            got, = exe.run(prog, feed=models.feed_dict(fluid, place, name, 100, False), fetch_list=fetches)
        np.save(os.path.join(res, sub + "_out.npy"), np.asarray(got))

    config = AnalysisConfig(os.path.join(d, "infer_combined", "model"), os.path.join(d, "infer_combined", "params"))
    config.disable_gpu()
    predictor = create_paddle_predictor(config)
    arrays, lods, _ = models.inputs(name, 100)
    tensors = []
    for k in models.BUILDERS[name](fluid)["feeds"]:
        t = PaddleTensor(arrays[k])
        t.name = k
        if k in lods:
            t.lod = [[int(o) for o in level] for level in lods[k]]
        tensors.append(t)
    outs = predictor.run(tensors)
    np.save(os.path.join(res, "predictor_out.npy"), outs[0].as_ndarray())

    for how in ("persist", "persist_combined", "ckpt"):
        m = models.BUILDERS[name](fluid)
        scope = fluid.Scope()
        with fluid.scope_guard(scope):
            exe.run(m["startup"])
            if how == "persist":
                fluid.io.load_persistables(exe, os.path.join(d, how), m["main"])
            elif how == "persist_combined":
                fluid.io.load_persistables(exe, os.path.join(d, how), m["main"], filename="persistables")
            else:
                fluid.load(m["main"], os.path.join(d, "ckpt"), exe)
            losses = []
            for s in range(models.TRAIN_STEPS):
                loss, = exe.run(m["main"], feed=models.feed_dict(fluid, place, name, 10 + s, True),
                                fetch_list=[m["loss"]])
                losses.append(np.asarray(loss).reshape(-1)[0])
        np.save(os.path.join(res, how + "_loss.npy"), np.array(losses, dtype="float32"))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
