"""A process serving one ``listen_and_serv`` on port 0 (any free port), for the port-file and signal
tests: ``--mode transpiled`` serves a DistributeTranspiler pserver program (``--async_mode``: async),
``--mode layers`` a server built with ``fluid.layers.io.ListenAndServ`` whose block scales ``X`` by 10;
``--mode client --port P`` is that server's client: it sends X (2.3 everywhere), receives the scaled
result and prints it as ``result <sum> <shape>``."""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fluidist as fluid  # noqa: E402
from fluidist.layers.io import ListenAndServ, Recv, Send  # noqa: E402


def transpiled(async_mode):
    x = fluid.layers.data(name="x", shape=[1], dtype="float32")
    y = fluid.layers.data(name="y", shape=[1], dtype="float32")
    cost = fluid.layers.square_error_cost(input=fluid.layers.fc(input=x, size=1), label=y)
    fluid.optimizer.SGD(learning_rate=0.001).minimize(fluid.layers.mean(cost))
    config = fluid.DistributeTranspilerConfig()
    config.sync_mode = not async_mode
    t = fluid.DistributeTranspiler(config=config)
    t.transpile(0, pservers="127.0.0.1:0", trainers=1)
    prog = t.get_pserver_program("127.0.0.1:0")
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(t.get_startup_program("127.0.0.1:0", prog))
    exe.run(prog)


def layers_server():
    main = fluid.Program()
    with fluid.program_guard(main):
        serv = ListenAndServ("127.0.0.1:0", ["X"], optimizer_mode=False)
        with serv.do():
            out = main.global_block().create_var(name="scaled", dtype="float32", shape=[4, 3])
            x = fluid.layers.data(shape=[4, 3], dtype="float32", name="X", append_batch_size=False)
            fluid.initializer.Constant(value=1.0)(x, main.global_block())
            fluid.layers.ops._scale(x=x, scale=10.0, out=out)
    fluid.Executor(fluid.CPUPlace()).run(main)


def client(port):
    main = fluid.Program()
    ep = "127.0.0.1:%d" % port
    with fluid.program_guard(main):
        x = fluid.layers.data(shape=[4, 3], dtype="float32", name="X", append_batch_size=False)
        x.persistable = True
        fluid.initializer.Constant(value=2.3)(x, main.global_block())
        got = main.global_block().create_var(name="scaled", dtype="float32", shape=[4, 3])
        Send(ep, [x])
        out = Recv(ep, [got])
    exe = fluid.Executor(fluid.CPUPlace())
    value = exe.run(main, fetch_list=out)[0]
    exe.close()
    print("result %r %s" % (float(value.sum()), list(value.shape)), flush=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["transpiled", "layers", "client"], required=True)
    ap.add_argument("--async_mode", action="store_true")
    ap.add_argument("--port", type=int, default=0)
    a = ap.parse_args()
    {"transpiled": lambda: transpiled(a.async_mode), "layers": layers_server, "client": lambda: client(a.port)}[a.mode]()
