"""Paddle 1.x's formats: fixtures written by the real Paddle 1.8.5 (tests/data/paddle18, made by
make_fixtures.py there) load into fluidist and give Paddle's numbers; fluidist writes the same
formats; bad files and hostile pickles are refused by name. The round trip through Paddle itself
runs where FLUIDIST_PADDLE18_PYTHON names a Python with paddlepaddle 1.8.5."""
import importlib.util
import json
import os
import pickle
import shutil
import subprocess

import numpy as np
import pytest

import fluidist as fluid
from fluidist.device.places import to_host
from fluidist.paddle_format import MissingOpsError, PaddleFormatError
from fluidist.paddle_format import framework_pb2 as pb
from fluidist.paddle_format import program_desc, safe_pickle

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "paddle18")


def _load_models():
    spec = importlib.util.spec_from_file_location("paddle18_models", os.path.join(DATA, "paddle18_models.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


models = _load_models()

PLACE = fluid.CPUPlace()


def exe():
    return fluid.Executor(PLACE)


def infer(name, prog, feeds, fetches, scope, seed=100):
    got, = exe().run(prog, feed=models.feed_dict(fluid, PLACE, name, seed, False), fetch_list=fetches, scope=scope)
    return np.asarray(got)


def continue_training(name, load):
    """Build ``name`` in fluidist, ``load(main, exe)`` its state, train TRAIN_STEPS more steps:
    the losses and the parameters after them."""
    m = models.BUILDERS[name](fluid)
    scope = fluid.Scope()
    e = exe()
    with fluid.scope_guard(scope):
        e.run(m["startup"])
        load(m["main"], e)
        losses = []
        for s in range(models.TRAIN_STEPS):
            loss, = e.run(m["main"], feed=models.feed_dict(fluid, PLACE, name, 10 + s, True), fetch_list=[m["loss"]])
            losses.append(float(np.asarray(loss).reshape(-1)[0]))
    return np.array(losses), scope, m


def expect(name, what):
    return np.load(os.path.join(DATA, name, "expect", what))


# ---------------------------------------------------------------- Paddle's files into fluidist
@pytest.mark.parametrize("name", models.NAMES)
@pytest.mark.parametrize("sub,kw", [("infer", {}),
                                    ("infer_combined", {"model_filename": "model", "params_filename": "params"})])
def test_paddle_inference_model_gives_paddles_output(name, sub, kw):
    scope = fluid.Scope()
    prog, feeds, fetches = fluid.io.load_inference_model(os.path.join(DATA, name, sub), exe(), scope=scope, **kw)
    assert feeds == models.BUILDERS[name](fluid)["feeds"]
    assert [v.name for v in fetches] == [f.name for f in fetches] and len(fetches) == 1
    types = {op.type for b in prog.blocks for op in b.ops}
    assert not {"feed", "fetch"} & types, "feed/fetch ops are taken out, as Paddle's executor would"
    assert "feed" not in prog.global_block().vars and "fetch" not in prog.global_block().vars
    np.testing.assert_allclose(infer(name, prog, feeds, fetches, scope), expect(name, "infer_out.npy"),
                               rtol=1e-5, atol=1e-6)


def test_inference_model_from_memory():
    d = os.path.join(DATA, "mlp", "infer_combined")
    with open(os.path.join(d, "model"), "rb") as f:
        model = f.read()
    with open(os.path.join(d, "params"), "rb") as f:
        params = f.read()
    scope = fluid.Scope()
    prog, feeds, fetches = fluid.io.load_inference_model(None, exe(), model, params, scope=scope)
    np.testing.assert_allclose(infer("mlp", prog, feeds, fetches, scope), expect("mlp", "infer_out.npy"),
                               rtol=1e-5, atol=1e-6)


def _load_persist(name):
    return lambda main, e: fluid.io.load_persistables(e, os.path.join(DATA, name, "persist"), main)


def _load_persist_combined(name):
    return lambda main, e: fluid.io.load_persistables(e, os.path.join(DATA, name, "persist_combined"), main,
                                                      filename="persistables")


def _load_ckpt(name):
    return lambda main, e: fluid.load(main, os.path.join(DATA, name, "ckpt"), e)


def _load_state(name):
    def load(main, e):
        fluid.set_program_state(main, fluid.load_program_state(os.path.join(DATA, name, "ckpt")))
    return load


@pytest.mark.parametrize("name", models.NAMES)
@pytest.mark.parametrize("how", [_load_persist, _load_persist_combined, _load_ckpt, _load_state])
def test_training_continues_from_paddles_state(name, how):
    """Paddle's saved persistables (parameters, optimizer moments, learning rate, BN statistics)
    load into the same model built with fluidist, and training goes on exactly as in Paddle."""
    losses, scope, m = continue_training(name, how(name))
    np.testing.assert_allclose(losses, expect(name, "train_loss.npy"), rtol=2e-5, atol=1e-6)
    after = expect(name, "params_after.npz")
    for k in after.files:
        np.testing.assert_allclose(np.array(scope.find_var(k).get_tensor()), after[k], rtol=1e-4, atol=1e-6,
                                   err_msg=k)


def test_params_dir_and_program_state_of_a_directory():
    m = models.mlp(fluid)
    scope = fluid.Scope()
    fluid.io.load_params(exe(), os.path.join(DATA, "mlp", "params"), m["main"], scope=scope)
    state = fluid.load_program_state(os.path.join(DATA, "mlp", "params"))
    assert sorted(state) == sorted(p.name for p in m["main"].all_parameters())
    for k, v in state.items():
        np.testing.assert_array_equal(np.array(scope.find_var(k).get_tensor()), v)
    # fluid.load without .pdparams reads a directory of variable files, as Paddle does
    s2 = fluid.Scope()
    with fluid.scope_guard(s2):
        exe().run(m["startup"])
        fluid.load(m["main"], os.path.join(DATA, "mlp", "params"), exe())
        for k, v in state.items():
            np.testing.assert_array_equal(np.array(s2.find_var(k).get_tensor()), v)
    # one combined file needs var_list
    combined = os.path.join(DATA, "mlp", "persist_combined", "persistables")
    with pytest.raises(ValueError, match="var_list"):
        fluid.load_program_state(combined)
    persist = [v for v in m["main"].list_vars() if fluid.io.is_persistable(v)]
    state = fluid.load_program_state(combined, var_list=persist)
    np.testing.assert_array_equal(state["fc_0.w_0"], fluid.load_program_state(
        os.path.join(DATA, "mlp", "ckpt"))["fc_0.w_0"])


def test_dtypes_lod_and_selected_rows():
    d = os.path.join(DATA, "misc")
    want = np.load(os.path.join(d, "expect.npz"))
    with open(os.path.join(d, "lod.json")) as f:
        meta = json.load(f)
    prog = fluid.Program()
    block = prog.global_block()
    tensors = []
    for n in want.files:
        if n != "sr.value":
            tensors.append(block.create_var(name=n, shape=want[n].shape, dtype=want[n].dtype.name, persistable=True))
    sr = block.create_var(name="sr", shape=[10, 4], dtype="float32", persistable=True,
                          type=fluid.VarType.SELECTED_ROWS)
    for sub, kw, vs in (("sep", {}, tensors + [sr]), ("combined", {"filename": "all"}, tensors)):
        scope = fluid.Scope()
        fluid.io.load_vars(exe(), os.path.join(d, sub), prog, vars=vs, scope=scope, **kw)
        for v in tensors:
            t = scope.find_var(v.name).get_tensor()
            got = np.array(t)
            assert got.dtype == want[v.name].dtype
            np.testing.assert_array_equal(got, want[v.name])
            assert t.lod() == meta["lod"].get(v.name, [])
    scope = fluid.Scope()
    fluid.io.load_vars(exe(), os.path.join(d, "sep"), prog, vars=[sr], scope=scope)
    got = scope.find_var("sr").get_selected_rows()      # Paddle's handle: rows(), height(), get_tensor()
    assert got.rows() == meta["sr_rows"] and got.height() == meta["sr_height"]
    np.testing.assert_array_equal(to_host(got.value), want["sr.value"])     # on the executor's place
    np.testing.assert_array_equal(np.array(got.get_tensor()), want["sr.value"])


# ---------------------------------------------------------------- fluidist writes Paddle's formats
def trained(name):
    m = models.BUILDERS[name](fluid)
    scope = fluid.Scope()
    e = exe()
    with fluid.scope_guard(scope):
        e.run(m["startup"])
        for s in range(models.TRAIN_STEPS):
            e.run(m["main"], feed=models.feed_dict(fluid, PLACE, name, s, True), fetch_list=[m["loss"]])
    return m, scope


def write_paddle_files(name, d):
    """Train ``name`` in fluidist and save it with each call in Paddle's format; returns what
    fluidist computes from there (inference output, losses of training on)."""
    m, scope = trained(name)
    e = exe()
    with fluid.scope_guard(scope):
        fluid.io.save_inference_model(os.path.join(d, "infer"), m["feeds"], [m["pred"]], e, m["main"],
                                      format="paddle")
        fluid.io.save_inference_model(os.path.join(d, "infer_combined"), m["feeds"], [m["pred"]], e, m["main"],
                                      model_filename="model", params_filename="params", format="paddle")
        fluid.io.save_persistables(e, os.path.join(d, "persist"), m["main"], format="paddle")
        fluid.io.save_persistables(e, os.path.join(d, "persist_combined"), m["main"], filename="persistables",
                                   format="paddle")
        fluid.save(m["main"], os.path.join(d, "ckpt"), format="paddle")
        want, = e.run(m["main"].clone(for_test=True), feed=models.feed_dict(fluid, PLACE, name, 100, True),
                      fetch_list=[m["pred"]])
        losses = []
        for s in range(models.TRAIN_STEPS):
            loss, = e.run(m["main"], feed=models.feed_dict(fluid, PLACE, name, 10 + s, True), fetch_list=[m["loss"]])
            losses.append(float(np.asarray(loss).reshape(-1)[0]))
    return np.asarray(want), np.array(losses)


@pytest.mark.parametrize("name", models.NAMES)
def test_paddle_format_written_by_fluidist_reads_back(name, tmp_path):
    d = str(tmp_path)
    want, losses = write_paddle_files(name, d)
    with open(os.path.join(d, "infer", "__model__"), "rb") as f:
        desc = pb.ProgramDesc.FromString(f.read())
    ops = [op.type for op in desc.blocks[0].ops]
    assert ops[0] == "feed" and ops[-1] == "fetch" and desc.version.version == program_desc.PROGRAM_VERSION
    assert not any(f.endswith(".npy") or f == "__index__.json" for f in os.listdir(os.path.join(d, "infer")))
    with open(os.path.join(d, "ckpt.pdparams"), "rb") as f:
        assert f.read(2) == b"\x80\x02"
    for sub, kw in (("infer", {}), ("infer_combined", {"model_filename": "model", "params_filename": "params"})):
        scope = fluid.Scope()
        prog, feeds, fetches = fluid.io.load_inference_model(os.path.join(d, sub), exe(), scope=scope, **kw)
        np.testing.assert_allclose(infer(name, prog, feeds, fetches, scope), want, rtol=1e-6, atol=1e-7)
    for how in (lambda main, e: fluid.io.load_persistables(e, os.path.join(d, "persist"), main),
                lambda main, e: fluid.io.load_persistables(e, os.path.join(d, "persist_combined"), main,
                                                           filename="persistables"),
                lambda main, e: fluid.load(main, os.path.join(d, "ckpt"), e)):
        got, _, _ = continue_training(name, how)
        np.testing.assert_allclose(got, losses, rtol=1e-6, atol=1e-7)


def test_format_from_environment(tmp_path, monkeypatch):
    m, scope = trained("mlp")
    monkeypatch.setenv("FLUIDIST_SAVE_FORMAT", "paddle")
    with fluid.scope_guard(scope):
        fluid.io.save_inference_model(str(tmp_path), ["x"], [m["pred"]], exe(), m["main"])
    with open(str(tmp_path / "__model__"), "rb") as f:
        assert program_desc.is_program_desc(f.read())
    monkeypatch.setenv("FLUIDIST_SAVE_FORMAT", "onnx")
    with pytest.raises(ValueError, match="FLUIDIST_SAVE_FORMAT"):
        fluid.io.save_persistables(exe(), str(tmp_path / "p"), m["main"], scope=scope)


def paddle18_python():
    py = os.environ.get("FLUIDIST_PADDLE18_PYTHON")
    if not py:
        return None, "FLUIDIST_PADDLE18_PYTHON is not set (a Python 3.8 with paddlepaddle==1.8.5, see " \
                     "tests/data/paddle18/make_fixtures.py)"
    try:
        r = subprocess.run([py, "-c", "import paddle; print(paddle.__version__)"], capture_output=True, text=True,
                           timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, "FLUIDIST_PADDLE18_PYTHON=%s cannot run: %s" % (py, e)
    if r.returncode or not r.stdout.strip().startswith("1.8"):
        return None, "FLUIDIST_PADDLE18_PYTHON=%s has no paddlepaddle 1.8 (%s)" % (py, (r.stdout + r.stderr)[-200:])
    return py, None


@pytest.mark.parametrize("name", models.NAMES)
def test_paddle_18_loads_what_fluidist_wrote(name, tmp_path):
    """Paddle 1.8.5 itself (and Paddle Inference's AnalysisPredictor) loads fluidist's files and
    computes what fluidist computes; skipped where no such Paddle is at hand."""
    py, why = paddle18_python()
    if py is None:
        pytest.skip(why)
    d = tmp_path / name
    want, losses = write_paddle_files(name, str(d))
    r = subprocess.run([py, os.path.join(DATA, "paddle_check.py"), str(tmp_path), name], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-4000:]
    res = d / "paddle"
    for f in ("infer_out", "infer_combined_out", "predictor_out"):
        np.testing.assert_allclose(np.load(str(res / (f + ".npy"))), want, rtol=1e-5, atol=1e-6, err_msg=f)
    for how in ("persist", "persist_combined", "ckpt"):
        np.testing.assert_allclose(np.load(str(res / (how + "_loss.npy"))), losses, rtol=2e-5, atol=1e-6,
                                   err_msg=how)


# ---------------------------------------------------------------- the ProgramDesc mapping
def mlp_desc():
    with open(os.path.join(DATA, "mlp", "infer", "__model__"), "rb") as f:
        return pb.ProgramDesc.FromString(f.read())


def test_missing_op_types_are_reported_together():
    desc = mlp_desc()
    ops = desc.blocks[0].ops
    ops[1].type = "another_custom_op"
    ops[2].type = "my_custom_op"
    ops[4].type = "my_custom_op"
    with pytest.raises(MissingOpsError) as e:
        program_desc.read_program(desc.SerializeToString(), "model.bin")
    msg = str(e.value)
    assert "model.bin" in msg and "my_custom_op (2 ops)" in msg and "another_custom_op (1 op)" in msg
    assert e.value.op_types == ["another_custom_op", "my_custom_op"]


def test_every_attribute_kind_round_trips():
    """All twelve AttrTypes, sub-blocks included, read into fluidist and written back unchanged."""
    desc = pb.ProgramDesc()
    for i, parent in enumerate((-1, 0, 0)):
        b = desc.blocks.add()
        b.idx, b.parent_idx = i, parent
    op = desc.blocks[0].ops.add()
    op.type = "conditional_block"
    values = {"i": ("INT", "i", -7), "f": ("FLOAT", "f", 0.5), "s": ("STRING", "s", "text"),
              "ints": ("INTS", "ints", [1, -2]), "floats": ("FLOATS", "floats", [0.25, 2.0]),
              "strings": ("STRINGS", "strings", ["a", "b"]), "b": ("BOOLEAN", "b", True),
              "bools": ("BOOLEANS", "bools", [True, False]), "l": ("LONG", "l", 2 ** 40),
              "longs": ("LONGS", "longs", [2 ** 40, -1])}
    for name, (kind, field, v) in values.items():
        a = op.attrs.add(name=name, type=pb.AttrType.Value(kind))
        if isinstance(v, list):
            getattr(a, field).extend(v)
        else:
            setattr(a, field, v)
    op.attrs.add(name="sub_block", type=pb.BLOCK, block_idx=1)
    a = op.attrs.add(name="blocks", type=pb.BLOCKS)
    a.blocks_idx.extend([1, 2])
    op.attrs.add(name="dtype", type=pb.INT, i=pb.VarType.INT64)
    prog, _, _ = program_desc.read_program(desc.SerializeToString(), "attrs")
    got = prog.global_block().ops[0].attrs
    for name, (_, _, v) in values.items():
        assert got[name] == v, name
    assert got["sub_block"] is prog.blocks[1] and [b.idx for b in got["blocks"]] == [1, 2]
    assert got["dtype"] == "int64"
    back = pb.ProgramDesc.FromString(program_desc.write_program(prog, "attrs"))
    kinds = {a.name: pb.AttrType.Name(a.type) for a in back.blocks[0].ops[0].attrs}
    for name, (kind, _, _) in values.items():
        assert kinds[name] == kind, name
    assert kinds["sub_block"] == "BLOCK" and kinds["blocks"] == "BLOCKS" and kinds["dtype"] == "INT"
    again = program_desc.read_program(back.SerializeToString(), "attrs")[0].global_block().ops[0].attrs
    assert {k: v for k, v in again.items() if k not in ("sub_block", "blocks")} == \
        {k: v for k, v in got.items() if k not in ("sub_block", "blocks")}
    assert again["sub_block"].idx == 1 and [b.idx for b in again["blocks"]] == [1, 2]


def test_declared_attribute_types_win_over_python_types():
    """Paddle declares fill_constant's shape as LONGS and value as FLOAT: fluidist writes them so."""
    prog = fluid.Program()
    with fluid.program_guard(prog, fluid.Program()):
        fluid.layers.fill_constant(shape=[2, 3], dtype="int64", value=1)
    desc = pb.ProgramDesc.FromString(program_desc.write_program(prog, "p"))
    attrs = {a.name: a for a in desc.blocks[0].ops[0].attrs}
    assert attrs["shape"].type == pb.LONGS and list(attrs["shape"].longs) == [2, 3]
    assert attrs["value"].type == pb.FLOAT and attrs["dtype"].i == pb.VarType.INT64


def test_feed_and_fetch_follow_their_col():
    desc = mlp_desc()
    ops = desc.blocks[0].ops
    for a in ops[0].attrs:
        if a.name == "col":
            a.i = 1
    with pytest.raises(PaddleFormatError, match="feed ops' col"):
        program_desc.read_program(desc.SerializeToString(), "m")


def test_versions_and_garbage_are_refused(tmp_path):
    desc = mlp_desc()
    desc.version.version = 2001000
    with pytest.raises(PaddleFormatError, match=r"m was written by Paddle 2\.1\.0"):
        program_desc.read_program(desc.SerializeToString(), "m")
    (tmp_path / "__model__").write_bytes(b"\x8b\x00garbage\xff" * 10)
    with pytest.raises(ValueError, match="neither a fluidist inference model"):
        fluid.io.load_inference_model(str(tmp_path), exe())


# ---------------------------------------------------------------- bad tensor files
def copy_fixture(tmp_path, *parts):
    src = os.path.join(DATA, *parts)
    dst = str(tmp_path.joinpath(*parts))
    shutil.copytree(src, dst)
    return dst


def scope_untouched(scope, names):
    return all(scope.find_var(n) is None or not scope.find_var(n).is_initialized() for n in names)


def test_truncated_file_names_it_and_loads_nothing(tmp_path):
    d = copy_fixture(tmp_path, "mlp", "persist")
    path = os.path.join(d, "fc_1.w_0")
    with open(path, "rb") as f:
        blob = f.read()
    with open(path, "wb") as f:
        f.write(blob[:-10])
    m = models.mlp(fluid)
    scope = fluid.Scope()
    with pytest.raises(PaddleFormatError, match=r"fc_1\.w_0.*truncated"):
        fluid.io.load_persistables(exe(), d, m["main"], scope=scope)
    assert scope_untouched(scope, [v.name for v in m["main"].list_vars()])


def test_wrong_tensor_version_is_refused(tmp_path):
    d = copy_fixture(tmp_path, "mlp", "params")
    path = os.path.join(d, "fc_0.b_0")
    with open(path, "r+b") as f:
        f.write(b"\x01")
    m = models.mlp(fluid)
    with pytest.raises(PaddleFormatError, match=r"fc_0\.b_0.*unsupported LoDTensor version 1"):
        fluid.io.load_params(exe(), d, m["main"], scope=fluid.Scope())


def test_wrong_shape_and_dtype_against_the_program(tmp_path):
    d = os.path.join(DATA, "mlp", "params")
    prog = fluid.Program()
    b = prog.global_block()
    w = b.create_var(name="fc_0.w_0", shape=[13, 17], dtype="float32", persistable=True)
    scope = fluid.Scope()
    with pytest.raises(ValueError, match=r"shape mismatch for variable 'fc_0\.w_0'.*\[13, 17\]"):
        fluid.io.load_vars(exe(), d, prog, vars=[w], scope=scope)
    w.shape, w.dtype = (13, 16), "float64"
    with pytest.raises(ValueError, match=r"'fc_0\.w_0'.*dtype float32 but the program declares float64"):
        fluid.io.load_vars(exe(), d, prog, vars=[w], scope=scope)
    assert scope_untouched(scope, ["fc_0.w_0"])


def test_combined_file_must_hold_exactly_the_variables(tmp_path):
    m = models.mlp(fluid)
    combined = os.path.join(DATA, "mlp", "persist_combined")
    params = m["main"].all_parameters()
    with pytest.raises(PaddleFormatError, match="holds more than the 6 variables asked for"):
        fluid.io.load_vars(exe(), combined, m["main"], vars=params, filename="persistables", scope=fluid.Scope())


def test_a_program_cannot_make_loading_leave_its_directory(tmp_path):
    (tmp_path / "secret").write_bytes(b"x" * 64)
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    prog = fluid.Program()
    v = prog.global_block().create_var(name="../secret", shape=[1], dtype="float32", persistable=True)
    with pytest.raises(PaddleFormatError, match="cannot name a file inside"):
        fluid.io.load_vars(exe(), str(model_dir), prog, vars=[v], scope=fluid.Scope())


# ---------------------------------------------------------------- pickles
class _Boom:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (os.system, ("touch %s" % self.path,))


def test_a_pickled_object_is_refused_and_nothing_runs(tmp_path):
    marker = tmp_path / "ran"
    m = models.mlp(fluid)
    state = {p.name: np.zeros(p.shape, "float32") for p in m["main"].all_parameters()}
    state["fc_0.w_0"] = _Boom(str(marker))
    prefix = tmp_path / "ckpt"
    (tmp_path / "ckpt.pdparams").write_bytes(pickle.dumps(state, protocol=2))
    with pytest.raises(PaddleFormatError, match=r"refused to load (posix|os|nt)\.system"):
        fluid.load_program_state(str(prefix))
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        with pytest.raises(PaddleFormatError, match="ckpt.pdparams"):
            fluid.load(m["main"], str(prefix), exe())
    assert not marker.exists()


@pytest.mark.parametrize("payload,match", [
    ({"a": np.array([object()], dtype=object)}, "refused"),
    ({"a": fluid.Program}, r"refused to load fluidist"),
    ([np.zeros(2)], "not a dict"),
])
def test_other_pickles_are_refused(payload, match):
    with pytest.raises(PaddleFormatError, match=match):
        safe_pickle.loads_state(pickle.dumps(payload, protocol=2), "x.pdparams")


def test_state_writer_matches_numpy_pickles():
    state = {"w": np.arange(6, dtype="float32").reshape(2, 3), "n": np.array([2 ** 40, -1], "int64"),
             "f": np.array([0.5], "float64"), "e": np.zeros((0, 4), "float32"), "b": np.array([True]),
             "i8": np.array([-3], "int8"), "h": np.ones(3, "float16"), "s": np.ones((), "float32")}
    blob = safe_pickle.dumps_state(state)
    for got in (safe_pickle.loads_state(blob), pickle.loads(blob, encoding="latin1")):
        assert sorted(got) == sorted(state)
        for k, v in state.items():
            assert got[k].dtype == v.dtype and got[k].shape == v.shape
            np.testing.assert_array_equal(got[k], v)
    for proto in (2, 4, 5):  # what Paddle (protocol 2) or other tools write
        got = safe_pickle.loads_state(pickle.dumps(state, protocol=proto))
        for k, v in state.items():
            np.testing.assert_array_equal(got[k], v)


def test_program_parse_from_string():
    with open(os.path.join(DATA, "cnn", "ckpt.pdmodel"), "rb") as f:
        prog = fluid.Program.parse_from_string(f.read())
    types = [op.type for op in prog.global_block().ops]
    assert "conv2d" in types and "conv2d_grad" in types and "momentum" in types
    assert prog.global_block().var("conv2d_0.w_0").persistable
    assert prog.global_block().var("img").need_check_feed
