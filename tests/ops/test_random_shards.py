"""Random initialisers of a table's shard (rows row_begin:row_end:row_step of the whole table) are
drawn in chunks of rows: the same values as slicing one draw of the whole table, in less memory."""
import numpy as np
import pytest

import fluidist.ops.tensor as tensor_ops


class _Ctx:
    xp = np


@pytest.mark.parametrize("kind", ["uniform", "normal"])
@pytest.mark.parametrize("full", [(50, 16), (51, 3), (7, 16), (100, 4)])
@pytest.mark.parametrize("rows", [(0, -1, 2), (1, -1, 2), (2, -1, 3), (5, 20, 1), (3, 40, 4), (1, 100, 2), (10, 11, 5)])
def test_chunked_shard_draw_equals_the_slice_of_the_whole(monkeypatch, kind, full, rows):
    monkeypatch.setattr(tensor_ops, "_DRAW_CHUNK_BYTES", 8 * full[1] * 7)     # 7 rows per chunk
    rb, re_, step = rows
    attrs = {"shape": [0], "full_shape": list(full), "row_begin": rb, "row_end": re_, "row_step": step,
             "dtype": "float32"}

    def sampler():
        r = np.random.RandomState(5)
        return (lambda shape: r.uniform(-1, 1, shape)) if kind == "uniform" else (lambda shape: r.normal(0, 1, shape))

    got = tensor_ops._draw(_Ctx(), attrs, sampler())["Out"]
    want = sampler()(full)[rb:re_:step].astype(np.float32)
    np.testing.assert_array_equal(got, want)
