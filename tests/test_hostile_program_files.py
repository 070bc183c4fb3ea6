"""Hostile program files (``__model__`` in either form), read by ``fluid.io.load_inference_model`` in a
process of its own: blocks that name each other or themselves as parents (a walk up the parents never
ended), and files of hundreds of thousands of tiny ops (a 27 MB file took seconds and gigabytes). Each
is refused in under a second with under 100 MB, naming what is wrong and, for the counts, how to
raise the limit."""
import hashlib
import json
import os
import subprocess
import sys

import pytest

import fluidist as fluid
from fluidist.paddle_format import framework_pb2 as pb
from load_aware import scaled  # (bounds that follow the machine's load)

pytestmark = pytest.mark.timeout(120)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

READER = """
import sys, time

def peak_rss_kib():
    with open("/proc/self/status") as f:
        return int([l for l in f if l.startswith("VmHWM:")][0].split()[1])

import fluidist as fluid
exe = fluid.Executor(fluid.CPUPlace())
before = peak_rss_kib()
t0, c0 = time.monotonic(), time.process_time()
try:
    program, feeds, fetches = fluid.io.load_inference_model(sys.argv[1], exe)
    print("READ", len(program.global_block().ops))
except ValueError as e:
    print("REFUSED", type(e).__name__, e)
print("GREW_KIB", peak_rss_kib() - before, "SECONDS", round(time.monotonic() - t0, 3),
      "CPU_SECONDS", round(time.process_time() - c0, 3))
"""


def _read_in_child(folder, env=None, timeout=None):
    timeout = scaled(30) if timeout is None else timeout
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), **(env or {}))
    try:
        run = subprocess.run([sys.executable, "-c", READER, folder], capture_output=True, text=True, env=env,
                             timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail("loading %s still ran after %.0f s" % (folder, timeout))
    assert run.returncode == 0, run.stderr[-3000:]
    grew = int(run.stdout.split("GREW_KIB")[1].split()[0])
    wall = float(run.stdout.split(" SECONDS")[1].split()[0])
    cpu = float(run.stdout.split("CPU_SECONDS")[1].split()[0])
    assert wall < scaled(20), run.stdout        # (the bound that matters is the CPU time)
    return run.stdout, grew, cpu


def _saved_model(folder, fmt):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        y = fluid.layers.fc(fluid.layers.relu(x), 2)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    fluid.io.save_inference_model(str(folder), ["x"], [y], exe, main, format=fmt)
    return str(folder)


def _rewrite_json_model(folder, change):
    """Change the JSON ``__model__`` and record its new checksum in the index (as whoever made the file would)."""
    path = os.path.join(folder, "__model__")
    with open(path) as f:
        d = json.load(f)
    blob = change(d) or json.dumps(d).encode("utf-8")
    with open(path, "wb") as f:
        f.write(blob)
    index_path = os.path.join(folder, "__index__.json")
    with open(index_path) as f:
        index = json.load(f)
    index["files"]["__model__"] = hashlib.sha256(blob).hexdigest()
    with open(index_path, "w") as f:
        json.dump(index, f)


def _rewrite_desc_model(folder, change):
    path = os.path.join(folder, "__model__")
    desc = pb.ProgramDesc()
    with open(path, "rb") as f:
        desc.ParseFromString(f.read())
    change(desc)
    with open(path, "wb") as f:
        f.write(desc.SerializeToString())


def _json_parent_cycle(d):
    d["blocks"][0]["parent_idx"] = 1
    d["blocks"].append({"idx": 1, "parent_idx": 0, "forward_block_idx": -1, "vars": [], "ops": []})
    d["fetch_target_names"].append("not_declared")     # its look-up walks the parents


def _desc_parent_cycle(desc):
    desc.blocks[0].parent_idx = 1
    block = desc.blocks.add()
    block.idx, block.parent_idx = 1, 0
    fetch = [op for op in desc.blocks[0].ops if op.type == "fetch"][0]
    extra = desc.blocks[0].ops.add()
    extra.CopyFrom(fetch)
    extra.inputs[0].arguments[0] = "not_declared"
    [a for a in extra.attrs if a.name == "col"][0].i = 1


def _desc_self_parent(desc):
    block = desc.blocks.add()
    block.idx, block.parent_idx = 1, 1


@pytest.mark.parametrize("fmt,rewrite,change", [
    ("fluidist", _rewrite_json_model, _json_parent_cycle),
    ("paddle", _rewrite_desc_model, _desc_parent_cycle),
    ("paddle", _rewrite_desc_model, _desc_self_parent),
], ids=["json-cycle", "desc-cycle", "desc-self-parent"])
def test_blocks_whose_parents_are_not_earlier_blocks_are_refused_at_once(tmp_path, fmt, rewrite, change):
    folder = _saved_model(tmp_path / "model", fmt)
    rewrite(folder, change)
    out, grew, seconds = _read_in_child(folder)
    assert "REFUSED" in out and "parent" in out and "earlier block" in out, out
    assert seconds < 1.0 and grew < 100 * 1024, out


def _varint(n):
    out = b""
    while True:
        low, n = n & 0x7F, n >> 7
        if not n:
            return out + bytes([low])
        out += bytes([low | 0x80])


def _tiny_ops_desc(n_ops):
    """A ProgramDesc of one block of ``n_ops`` ``scale`` ops (25 bytes each), written field by field."""
    op = pb.OpDesc(type="scale")
    op.inputs.add(parameter="X", arguments=["x"])
    op.outputs.add(parameter="Out", arguments=["x"])
    one = op.SerializeToString()
    body = b"\x08\x00\x10" + _varint((1 << 64) - 1) + (b"\x22" + _varint(len(one)) + one) * n_ops
    return b"\x0a" + _varint(len(body)) + body


def test_a_27_mb_desc_of_a_million_tiny_ops_is_refused_naming_the_limit(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    blob = _tiny_ops_desc(1000000)
    assert len(blob) > 25 * 1000000
    (folder / "__model__").write_bytes(blob)
    out, grew, seconds = _read_in_child(str(folder))
    assert "REFUSED ProgramTooLarge" in out and "FLUIDIST_MAX_PROGRAM_OPS" in out, out
    assert seconds < 1.0 and grew < 100 * 1024, out


def test_a_json_model_of_300000_ops_is_refused_before_it_is_parsed(tmp_path):
    folder = _saved_model(tmp_path / "model", "fluidist")

    def many_ops(d):
        op = d["blocks"][0]["ops"][0]
        d["blocks"][0]["ops"] = [op] * 300000
    _rewrite_json_model(folder, many_ops)
    assert os.path.getsize(os.path.join(folder, "__model__")) > 10 * 1000000
    out, grew, seconds = _read_in_child(folder)
    assert "REFUSED ProgramTooLarge" in out and "FLUIDIST_MAX_PROGRAM_OPS" in out, out
    assert seconds < 1.0 and grew < 100 * 1024, out


@pytest.mark.parametrize("fmt", ["fluidist", "paddle"])
def test_the_limits_are_raised_by_their_variables(tmp_path, fmt):
    folder = _saved_model(tmp_path / "model", fmt)
    out, _, _ = _read_in_child(folder, env={"FLUIDIST_MAX_PROGRAM_OPS": "1"})
    assert "REFUSED ProgramTooLarge" in out and "more than 1 ops" in out, out
    out, _, _ = _read_in_child(folder, env={"FLUIDIST_MAX_PROGRAM_VARS": "2"})
    assert "REFUSED ProgramTooLarge" in out and "FLUIDIST_MAX_PROGRAM_VARS" in out, out
    out, _, _ = _read_in_child(folder, env={"FLUIDIST_MAX_PROGRAM_OPS": "10", "FLUIDIST_MAX_PROGRAM_VARS": "50"})
    assert "READ 4" in out, out       # relu, mul, elementwise_add, and the scale Paddle puts on a target
