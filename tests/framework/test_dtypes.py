"""``core.VarDesc.VarType``: Paddle's enum values, each both fluidist's dtype string and Paddle's proto
code, and op dtype attrs given as those codes (as Paddle's programs and tests give them)."""
import pickle

import numpy as np
import pytest

import fluidist as fluid
from fluidist import core
from fluidist.framework import convert_np_dtype_to_dtype_
from fluidist.paddle_format import framework_pb2

VT = core.VarDesc.VarType

# int(core.VarDesc.VarType.X) in Paddle 1.8.5 (paddle/fluid/framework/framework.proto)
PADDLE18_CODES = {"BOOL": 0, "INT16": 1, "INT32": 2, "INT64": 3, "FP16": 4, "FP32": 5, "FP64": 6,
                  "LOD_TENSOR": 7, "SELECTED_ROWS": 8, "FEED_MINIBATCH": 9, "FETCH_LIST": 10, "STEP_SCOPES": 11,
                  "LOD_RANK_TABLE": 12, "LOD_TENSOR_ARRAY": 13, "PLACE_LIST": 14, "READER": 15, "RAW": 17,
                  "UINT8": 20, "INT8": 21}


def test_every_value_has_paddles_code_and_name():
    assert {name: int(v) for name, v in VT.__members__.items()} == PADDLE18_CODES
    for name, code in PADDLE18_CODES.items():
        value = getattr(VT, name)
        assert framework_pb2.VarType.Type.Value(name) == code          # the proto the formats use agrees
        assert value == code and code == value and value.__index__() == code
        assert VT(code) is value
        assert repr(value) == str(value) == "%s" % value == "VarType." + name   # as Paddle prints them
    with pytest.raises(ValueError):
        VT(18)


def test_values_are_fluidists_dtype_strings():
    assert VT.FP32 == "float32" and VT.INT64 == "int64" and VT.LOD_TENSOR == "LOD_TENSOR"
    assert VT.FP32 != VT.FP64 and VT.FP32 != 6 and not (VT.FP32 == 5.0)
    assert np.dtype(VT.FP16) == np.float16 and np.zeros(2, dtype=VT.INT8).dtype == np.int8
    assert {"float32": 1}[VT.FP32] == 1 and VT.FP64 in ("float32", "float64")
    assert pickle.loads(pickle.dumps(VT.FP32)) is VT.FP32
    assert convert_np_dtype_to_dtype_(np.float32) is VT.FP32 and convert_np_dtype_to_dtype_("uint8") is VT.UINT8


def test_variables_compare_with_values_and_keep_plain_strings():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data(name="x", shape=[2], dtype=VT.FP64)
        arr = main.global_block().create_var(name="arr", type=VT.LOD_TENSOR_ARRAY, dtype="float32")
    # a Variable's dtype stays fluidist's string: it equals the VarType value (not a bare int code)
    assert x.dtype == VT.FP64 and VT.FP64 == x.dtype and x.dtype != VT.FP32 and type(x.dtype) is str
    assert arr.type == VT.LOD_TENSOR_ARRAY and type(arr.type) is str
    assert "LOD_TENSOR_ARRAY" in arr.to_string()
    with pytest.raises(TypeError):      # Paddle's layers refuse an int code as a dtype too
        fluid.data(name="y", shape=[2], dtype=5)


def _run_op(op_type, inputs, attrs, out_dtype, feed=None):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        block = main.global_block()
        ins = {slot: block.create_var(name=n, shape=a.shape, dtype=a.dtype.name) for slot, (n, a) in inputs.items()}
        out = block.create_var(name="out", dtype=out_dtype)
        op = block.append_op(type=op_type, inputs=ins, outputs={"Out": out}, attrs=attrs)
    got, = fluid.Executor(fluid.CPUPlace()).run(main, feed={n: a for n, a in inputs.values()}, fetch_list=[out],
                                                scope=fluid.Scope())
    return op, got


def test_cast_takes_paddles_int_codes():
    x = np.array([[1.5, -2.25]], "float32")
    op, got = _run_op("cast", {"X": ("x", x)}, {"in_dtype": int(VT.FP32), "out_dtype": int(VT.FP64)}, "float64")
    assert got.dtype == np.float64 and np.array_equal(got, x.astype("float64"))
    assert op.attrs["out_dtype"] == "float64"                    # kept as fluidist's string ...
    assert op.attr("out_dtype") == VT.FP64 and op.attr("out_dtype") == 6   # ... and read as Paddle's value
    op, got = _run_op("cast", {"X": ("x", x)}, {"in_dtype": VT.FP32, "out_dtype": VT.INT32}, "int32")
    assert got.dtype == np.int32 and np.array_equal(got, [[1, -2]])


def test_one_hot_and_fill_any_like_take_int_codes():
    ids = np.array([[1], [3]], "int64")
    _, got = _run_op("one_hot", {"X": ("ids", ids)}, {"depth": 4, "dtype": int(VT.FP64)}, "float64")
    assert got.dtype == np.float64 and np.array_equal(got, np.eye(4)[[1, 3]])
    x = np.ones((2, 3), "float32")
    _, got = _run_op("fill_any_like", {"X": ("x", x)}, {"value": 2.0, "dtype": -1}, "float32")   # -1: X's dtype
    assert got.dtype == np.float32 and np.all(got == 2.0)


def test_fill_op_converts_its_float32_values():
    values = np.array([0.1, 2.5, -3.0, 7.0], "float64")
    _, got = _run_op("fill", {}, {"value": values.tolist(), "shape": [2, 2], "dtype": int(VT.FP64)}, "float64")
    # Paddle's fill keeps its values as FLOATS (float32) attrs: 0.1 comes back as float32's 0.1
    assert got.dtype == np.float64 and np.array_equal(got, values.astype("float32").astype("float64").reshape(2, 2))
    with pytest.raises(ValueError, match="do not fill"):
        _run_op("fill", {}, {"value": [1.0], "shape": [2, 2], "dtype": int(VT.FP32)}, "float32")


def test_paddle_format_writes_the_codes_back(tmp_path):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data(name="x", shape=[2], dtype="float32")
        fluid.layers.cast(x, VT.INT64)
    desc = framework_pb2.ProgramDesc.FromString(main.desc.serialize_to_string())
    cast = [od for od in desc.blocks[0].ops if od.type == "cast"][0]
    attrs = {a.name: a.i for a in cast.attrs if a.name.endswith("dtype")}
    assert attrs == {"in_dtype": 5, "out_dtype": 3}
    back = fluid.Program.parse_from_string(desc.SerializeToString())
    assert back.global_block().ops[-1].attr("out_dtype") == VT.INT64
