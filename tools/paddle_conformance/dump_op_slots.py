"""Writes ``paddle18_op_slots.json``: the input and output slots Paddle 1.8.5 declares for each op type
(name, duplicable, dispensable), read from its OpProtos. Facts about Paddle's ops, used by
``op_test.py`` to pass an op the slots Paddle's OpTest passes (those the op declares), as Paddle's
harness does. Run with the Python that has paddlepaddle 1.8.5:

    /tmp/pd18/bin/python tools/paddle_conformance/dump_op_slots.py
"""
import json
import os

from paddle.fluid.framework import OpProtoHolder


def slots(vars_):
    return [[v.name, bool(v.duplicable), bool(v.dispensable)] for v in vars_]


def main():
    holder = OpProtoHolder.instance()
    out = {}
    for op_type in sorted(holder.op_proto_map):
        proto = holder.op_proto_map[op_type]
        out[op_type] = {"inputs": slots(proto.inputs), "outputs": slots(proto.outputs)}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "paddle18_op_slots.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=0, sort_keys=True)
        f.write("\n")
    print("%d op types -> %s" % (len(out), path))


if __name__ == "__main__":
    main()
