"""Fused device kernels (fluidist/ops/device_fused.py): each gives, in one launch, the numbers of the
array-module calls it replaces, bit for bit, computed here by NumPy on the host. On the stand-in the
NumPy body runs; on a GPU (the ``gpu`` mark) the same cases check the CUDA body."""
import numpy as np
import pytest

import fluidist as fluid
from fluidist.device import places, standin
from fluidist.device.fused_kernels import FusedKernel
from fluidist.device.standin import StandinPlace, count_transfers
from fluidist.ops import device_fused

pytestmark = pytest.mark.timeout(120)
DEVICES = ["standin", pytest.param("cuda", marks=pytest.mark.gpu)]


def _module(device):
    if device == "standin":
        return standin.xp
    cupy, why = places.cupy_status()
    if cupy is None:
        pytest.skip(why)
    return cupy


def _one_launch(device, xp, kernel, *args):
    """``kernel(xp, *args)`` with the arrays of ``args`` copied to the device first: one launch and no
    synchronisation on the stand-in. Its result, on the host."""
    args = [xp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    if device != "standin":
        return kernel(xp, *args).get()
    with count_transfers() as log:
        out = kernel(xp, *args)
    assert log.launches == 1 and not log.syncs and not log.h2d, str(log)
    return out.get()


def _bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.dtype("u%d" % a.dtype.itemsize))


def _ids(id_dtype, height):
    """Ids of ``id_dtype`` for a table of ``height`` rows, some out of range (the extremes of the
    dtype among them), and the mask of those."""
    info = np.iinfo(id_dtype)
    bad = [height, int(info.max), 2 ** 63] if info.min == 0 else [-1, height, int(info.max), int(info.min)]
    values = [0, height - 1] + bad[:1] + [2, 3, 2] + bad[1:]
    return np.array(values, dtype=id_dtype), np.array([not 0 <= v < height for v in values])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("id_dtype", ["int64", "int32", "uint64"])
@pytest.mark.parametrize("pad", [None, 2])
def test_lookup_rows_are_the_tables_rows_nan_for_bad_ids_and_zero_for_padding(device, dtype, id_dtype, pad):
    xp = _module(device)
    table = np.random.RandomState(0).randn(5, 3).astype(dtype)
    table[1, 0], table[3, 1], table[4, 2] = -0.0, np.inf, -np.inf      # (copied as they are)
    ids, bad = _ids(id_dtype, 5)
    expected = table[np.where(bad, 0, ids).astype(np.int64)]
    if pad is not None:
        expected[ids == pad] = 0
    expected[bad] = np.nan
    got = _one_launch(device, xp, device_fused.lookup_rows, table, ids, pad)
    assert got.dtype == table.dtype and got.shape == (ids.size, 3)
    np.testing.assert_array_equal(_bits(got), _bits(expected))      # NaN too: NumPy's positive quiet NaN


@pytest.mark.parametrize("device", DEVICES)
def test_lookup_rows_leave_other_dtypes_and_the_host_to_the_callers_code(device):
    xp = _module(device)
    ids = np.array([0, 1])
    assert device_fused.lookup_rows(xp, xp.asarray(np.ones((2, 3), np.float16)), xp.asarray(ids), None) is None
    assert device_fused.lookup_rows(xp, xp.asarray(np.ones((0, 3), np.float32)), xp.asarray(ids), None) is None
    assert device_fused.lookup_rows(np, np.ones((2, 3), np.float32), ids, None) is None


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_square_grad_and_the_negated_product_are_numpys_numbers(device, dtype):
    xp = _module(device)
    rng = np.random.RandomState(1)
    d, x = (rng.randn(4, 3) * 1e3).astype(dtype), rng.randn(4, 3).astype(dtype)
    lr = np.asarray(0.1, dtype=dtype)
    got = _one_launch(device, xp, device_fused.square_grad, d, x)
    np.testing.assert_array_equal(_bits(got), _bits(d * 2 * x))
    got = _one_launch(device, xp, device_fused.negated_product, x, lr)
    np.testing.assert_array_equal(_bits(got), _bits(x * -lr))


def test_other_dtypes_take_the_array_modules_calls_with_the_same_numbers():
    """float16, or two dtypes, are left to the chain of calls (NumPy's promotion): two launches."""
    xp = standin.xp
    d, x = np.full((2, 2), 3, np.float16), np.full((2, 2), 0.5, np.float32)
    for a, b in ((d, d), (d, x)):
        with count_transfers() as log:
            got = device_fused.square_grad(xp, xp.asarray(a), xp.asarray(b))
        assert log.launches == 2
        np.testing.assert_array_equal(got.get(), a * 2 * b)
        assert got.dtype == (a * 2 * b).dtype


def test_the_standin_refuses_arguments_cupy_refuses():
    """CuPy's ElementwiseKernel (``cupy/_core/_kernel.pyx``): TypeError for a wrong number of
    arguments, a type placeholder bound to two dtypes (``Type is mismatched``), an array of another
    dtype than its typed parameter's; the stand-in's xp refuses host arrays, as CuPy's kernels do."""
    kernel = FusedKernel("k", "T a, T b, int64 n", "T out", "out = a * b + n", lambda a, b, n: a * b + n)
    xp = standin.xp
    f32, f64 = xp.asarray(np.ones(3, np.float32)), xp.asarray(np.ones(3, np.float64))
    with pytest.raises(TypeError, match="Wrong number of arguments"):
        kernel(xp, f32, f32)
    with pytest.raises(TypeError, match="Type is mismatched"):
        kernel(xp, f32, f64, 1)
    with pytest.raises(TypeError, match="Type is mismatched"):
        kernel(xp, f32, f32, xp.asarray(np.ones(3, np.int32)))
    with pytest.raises(TypeError):
        kernel(xp, f32, np.ones(3, np.float32), 1)
    assert kernel(xp, f32, f32, 2).tolist() == [3.0] * 3


def _lookup_program(v2, padding_idx):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        ids = fluid.data("ids", [None] if v2 else [None, 1], "int64")
        emb = fluid.embedding if v2 else fluid.layers.embedding
        out = emb(ids, [6, 4], padding_idx=padding_idx,
                  param_attr=fluid.ParamAttr(initializer=fluid.initializer.Uniform(seed=3)))
    return main, startup, out


@pytest.mark.parametrize("v2", [False, True], ids=["lookup_table", "lookup_table_v2"])
def test_the_lookup_op_on_a_device_gives_the_cpus_rows_in_one_launch_and_nan_for_a_bad_id(v2):
    main, startup, out = _lookup_program(v2, padding_idx=4)
    ids = np.array([3, 4, 0, 5, 4], "int64")
    ids = ids if v2 else ids.reshape(-1, 1)
    results = []
    for place in (places.CPUPlace(), StandinPlace()):
        exe, scope = fluid.Executor(place), fluid.Scope()
        exe.run(startup, scope=scope)
        exe.run(main, feed={"ids": ids}, fetch_list=[out], scope=scope)      # (the plan's first step)
        with count_transfers() as log:
            results.append(exe.run(main, feed={"ids": ids}, fetch_list=[out], scope=scope)[0])
    assert log.launches == 1, str(log)
    np.testing.assert_array_equal(_bits(results[1]), _bits(results[0]))
    assert (results[0][[1, 4]] == 0).all() and (results[0][[0, 2, 3]] != 0).all()
    bad = ids.copy()
    bad.reshape(-1)[2] = 6
    got = exe.run(main, feed={"ids": bad}, fetch_list=[out], scope=scope)[0]
    assert np.isnan(got[2]).all() and not np.isnan(np.delete(got, 2, axis=0)).any()
