"""One process of a small parameter-server job with the profiler on, as the launcher starts it
(``--server_num 2 --worker_num 2``): each process writes its Chrome trace under $OUT_DIR."""
import os

import numpy as np

import fluidist as fluid

STEPS = int(os.environ.get("STEPS", "2"))
out = os.path.join(os.environ["OUT_DIR"], "profile")
main, startup = fluid.Program(), fluid.Program()
main.random_seed = startup.random_seed = 1
with fluid.program_guard(main, startup):
    x = fluid.data("x", [None, 16])
    y = fluid.data("y", [None, 1])
    h = fluid.layers.fc(x, 32, act="relu")
    loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(h, 1), y))
    fluid.optimizer.SGD(0.1).minimize(loss)
role = os.environ["TRAINING_ROLE"]
t = fluid.DistributeTranspiler()
t.transpile(int(os.environ.get("PADDLE_TRAINER_ID", "0")), program=main, startup_program=startup,
            pservers=os.environ["PADDLE_PSERVERS_IP_PORT_LIST"], trainers=int(os.environ["PADDLE_TRAINERS_NUM"]))
exe = fluid.Executor(fluid.CPUPlace())
if role == "PSERVER":
    ep = os.environ["PADDLE_CURRENT_ENDPOINT"]
    prog = t.get_pserver_program(ep)
    exe.run(t.get_startup_program(ep, prog))
    with fluid.profiler.profiler("CPU", profile_path=out):
        exe.run(prog)
else:
    prog = t.get_trainer_program()
    exe.run(startup)
    r = np.random.RandomState(int(os.environ["PADDLE_TRAINER_ID"]))
    with fluid.profiler.profiler("CPU", profile_path=out):
        for _ in range(STEPS):
            xb = r.randn(8, 16).astype("float32")
            exe.run(prog, feed={"x": xb, "y": xb.sum(1, keepdims=True)}, fetch_list=[loss])
    exe.close()
