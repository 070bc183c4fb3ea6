"""Write ``tests/compat/fluid18_names.txt``: the public names (``__all__``) of the Paddle 1.8 fluid
modules that fluidist answers for, one ``module name`` per line.

Run it with a Python that has ``paddlepaddle==1.8.5`` installed (a throwaway Python 3.8 venv):

    /tmp/pd18/bin/python tools/fluid18_inventory.py > tests/compat/fluid18_names.txt

The names are facts about Paddle's API; nothing else of Paddle is read or kept. dygraph, contrib,
detection and distributions are outside the inventory.
"""
import importlib
import sys

MODULES = ["framework", "executor", "compiler", "parallel_executor", "io", "reader", "initializer",
           "regularizer", "clip", "optimizer", "nets", "metrics", "profiler",
           "layers.nn", "layers.tensor", "layers.control_flow", "layers.io", "layers.loss",
           "layers.sequence_lod", "layers.learning_rate_scheduler", "layers.metric_op", "layers.rnn",
           "layers.ops", "transpiler", "install_check"]


def main(out=sys.stdout):
    import paddle
    out.write("# Paddle %s fluid: module name (from each module's __all__); see tools/fluid18_inventory.py\n"
              % paddle.__version__)
    seen = set()
    for m in MODULES:
        mod = importlib.import_module("paddle.fluid." + m)
        for name in mod.__all__:
            if (m, name) not in seen:
                seen.add((m, name))
                out.write("%s %s\n" % (m, name))


if __name__ == "__main__":
    main()
