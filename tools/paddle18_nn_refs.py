"""Write Paddle 1.8's own numbers for the layer cases of ``tests/compat/paddle18_nn_cases.py``.

Run with the Python of a throwaway venv holding paddlepaddle 1.8.5 (Python 3.8)::

    python3.8 -m venv /tmp/pd18 && /tmp/pd18/bin/pip install paddlepaddle==1.8.5 protobuf==3.20.3 numpy==1.21.6
    /tmp/pd18/bin/python tools/paddle18_nn_refs.py [case ...]

It updates ``tests/compat/data/paddle18_nn_refs.json`` (all cases, or the ones named), which
``tests/compat/test_paddle18_nn_refs.py`` compares fluidist against.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CASES_DIR = os.path.join(HERE, "..", "tests", "compat")
OUT = os.path.join(CASES_DIR, "data", "paddle18_nn_refs.json")


def main(names):
    import paddle
    import paddle.fluid as fluid
    sys.path.insert(0, CASES_DIR)
    import paddle18_nn_cases as cases

    refs = {}
    if os.path.exists(OUT):
        with open(OUT) as f:
            refs = json.load(f)
    refs["_paddle_version"] = paddle.__version__
    for name in names or sorted(cases.CASES):
        got = cases.run_case(fluid, name)
        refs[name] = {k: {"shape": list(a.shape), "dtype": str(a.dtype), "lod": lod,
                          "data": [float("%.9g" % x) for x in a.reshape(-1).tolist()]}
                      for k, (a, lod) in got.items()}
        print("%-28s %s" % (name, ", ".join("%s%s" % (k, list(a.shape)) for k, (a, _) in got.items())))
    with open(OUT, "w") as f:
        json.dump(refs, f, indent=0, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
