"""Paddle 1.8.5's numbers for tests/test_optimizer_extras.py: ``python make_paddle18_optimizers.py OUT.json``
under paddlepaddle 1.8.5. The test builds the same cases with ``build(fluid, kind)`` in fluidist."""
import json
import sys

import numpy as np

rng = np.random.RandomState(0)
W = rng.randn(4, 3).astype("float32") * 0.5
B = rng.randn(3).astype("float32") * 0.1
XS = [rng.randn(5, 4).astype("float32") for _ in range(6)]
YS = [rng.randn(5, 3).astype("float32") for _ in range(6)]

def build(fluid, kind):
    """The model and optimizer of case ``kind`` in ``fluid`` (Paddle 1.8's or fluidist's):
    (main, startup, loss, extra), extra the ModelAverage/EMA object where the case has one."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 4], "float32")
        y = fluid.data("y", [None, 3], "float32")
        pred = fluid.layers.fc(x, 3, param_attr=fluid.ParamAttr(name="w"), bias_attr=fluid.ParamAttr(name="b"))
        loss = fluid.layers.mean(fluid.layers.square(pred - y))
        extra = None
        if kind == "adadelta":
            fluid.optimizer.Adadelta(learning_rate=0.5, epsilon=1e-6, rho=0.9).minimize(loss)
        elif kind == "dpsgd":
            fluid.optimizer.Dpsgd(learning_rate=0.1, clip=0.5, batch_size=5.0, sigma=0.0).minimize(loss)
        elif kind == "lookahead":
            fluid.optimizer.LookaheadOptimizer(fluid.optimizer.SGD(0.3), alpha=0.4, k=2).minimize(loss)
        elif kind == "model_average":
            fluid.optimizer.Momentum(0.2, 0.5).minimize(loss)
            extra = fluid.optimizer.ModelAverage(0.5, min_average_window=2, max_average_window=4)
        elif kind == "ema":
            fluid.optimizer.SGD(0.3).minimize(loss)
            extra = fluid.optimizer.ExponentialMovingAverage(0.8)
            extra.update()
    return main, startup, loss, extra


def run(fluid, kind):
    main, startup, loss, extra = build(fluid, kind)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        scope.find_var("w").get_tensor().set(W, fluid.CPUPlace())
        scope.find_var("b").get_tensor().set(B, fluid.CPUPlace())
        if kind == "lookahead":     # the slow copies start from the same values
            scope.find_var("w@SLOW").get_tensor().set(W, fluid.CPUPlace())
            scope.find_var("b@SLOW").get_tensor().set(B, fluid.CPUPlace())
        out = {"loss": []}
        for x, y in zip(XS, YS):
            out["loss"].append(float(exe.run(main, feed={"x": x, "y": y}, fetch_list=[loss])[0][0]))
        out["w"] = np.array(scope.find_var("w").get_tensor()).tolist()
        out["b"] = np.array(scope.find_var("b").get_tensor()).tolist()
        if extra is not None:
            with extra.apply(exe):
                out["w_applied"] = np.array(scope.find_var("w").get_tensor()).tolist()
                out["b_applied"] = np.array(scope.find_var("b").get_tensor()).tolist()
            out["w_restored"] = np.array(scope.find_var("w").get_tensor()).tolist()
    return out

def main(out_path):
    import paddle.fluid as fluid
    res = {"inputs": {"W": W.tolist(), "B": B.tolist(), "XS": [x.tolist() for x in XS], "YS": [y.tolist() for y in YS]}}
    for k in ["adadelta", "dpsgd", "lookahead", "model_average", "ema"]:
        res[k] = run(fluid, k)
    json.dump(res, open(out_path, "w"), indent=1)
    print("ok")


if __name__ == "__main__":
    main(sys.argv[1])
