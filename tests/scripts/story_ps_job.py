"""One process of a small parameter-server job, as the launcher starts it (``--server_num 2 --worker_num 2``):
EPOCHS passes over a reader of BATCHES batches (``fluid.io.batch``), so the logs can be read for the story of
the job (roles up, first step, each pass, shutdown) and for what grows with the steps (nothing at INFO)."""
import os

import numpy as np

import fluidist as fluid

EPOCHS = int(os.environ.get("EPOCHS", "2"))
BATCHES = int(os.environ.get("BATCHES", "3"))
main, startup = fluid.Program(), fluid.Program()
main.random_seed = startup.random_seed = 1
with fluid.program_guard(main, startup):
    x = fluid.data("x", [None, 8])
    y = fluid.data("y", [None, 1])
    loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(x, 1), y))
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
    exe.run(prog)
else:
    prog = t.get_trainer_program()
    exe.run(startup)
    rng = np.random.RandomState(int(os.environ["PADDLE_TRAINER_ID"]))
    samples = [(v, v.sum(keepdims=True)) for v in rng.randn(4 * BATCHES, 8).astype("float32")]
    reader = fluid.io.batch(lambda: iter(samples), 4)
    for _ in range(EPOCHS):
        for b in reader():
            exe.run(prog, feed={"x": np.stack([s[0] for s in b]), "y": np.stack([s[1] for s in b])},
                    fetch_list=[loss])
    exe.close()
