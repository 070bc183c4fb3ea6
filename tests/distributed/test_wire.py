"""The wire format: round trips of every dtype and shape, SelectedRows, and rejection of bad frames."""
import json

import numpy as np
import pytest
import zmq

from fluidist.distributed import wire
from fluidist.distributed.wire import WireError, decode, encode
from fluidist.core.tensor import SelectedRows

pytestmark = pytest.mark.timeout(60)

ALL_DTYPES = sorted(wire.DTYPES)


def _sample(dtype, shape):
    rng = np.random.RandomState(0)
    n = int(np.prod(shape))
    if dtype == "bool":
        return (rng.rand(n) > 0.5).reshape(shape)
    if dtype.startswith("complex"):
        return (rng.randn(n) + 1j * rng.randn(n)).astype(dtype).reshape(shape)
    if dtype.startswith(("int", "uint")):
        return rng.randint(0, 100, size=n).astype(dtype).reshape(shape)
    return rng.randn(n).astype(dtype).reshape(shape)


def _as_bytes(frames):
    return [bytes(memoryview(f)) for f in frames]


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (3, 0, 2), (7,), (4, 5)])
def test_dense_round_trip_every_dtype(dtype, shape):
    x = _sample(dtype, shape)
    m = decode(_as_bytes(encode("send", 5, "w@GRAD", x, trainer=1, step=3)))
    assert (m.kind, m.rid, m.name, m.trainer, m.step) == ("send", 5, "w@GRAD", 1, 3)
    assert m.value.dtype == np.dtype(dtype) and m.value.shape == shape
    np.testing.assert_array_equal(m.value, x)


def test_non_contiguous_and_big_endian_arrays_are_sent_as_their_values():
    x = np.arange(24, dtype=np.float32).reshape(4, 6)[:, ::2]
    m = decode(_as_bytes(encode("send", 1, "a", x)))
    np.testing.assert_array_equal(m.value, x)
    y = np.arange(5, dtype=">i8")
    m = decode(_as_bytes(encode("send", 1, "b", y)))
    assert m.value.dtype == np.int64
    np.testing.assert_array_equal(m.value, y)


def test_encode_does_not_copy_contiguous_payloads():
    x = np.arange(100000, dtype=np.float32).reshape(1000, 100)
    frames = encode("send", 1, "w", x)
    assert len(frames) == 2 and np.shares_memory(frames[1], x)


def test_selected_rows_round_trip_and_empty_selected_rows():
    sr = SelectedRows(np.array([3, 0, 3], dtype=np.int64), np.arange(6, dtype=np.float32).reshape(3, 2), 5)
    m = decode(_as_bytes(encode("send", 2, "emb@GRAD", sr)))
    assert isinstance(m.value, SelectedRows) and m.value.height == 5
    np.testing.assert_array_equal(m.value.rows, [3, 0, 3])
    np.testing.assert_array_equal(m.value.value, sr.value)
    empty = SelectedRows(np.zeros(0, dtype=np.int64), np.zeros((0, 4), dtype=np.float64), 10)
    m = decode(_as_bytes(encode("send", 3, "e", empty)))
    assert m.value.rows.shape == (0,) and m.value.value.shape == (0, 4) and m.value.height == 10


def test_message_without_value_and_extra_fields_and_lod():
    m = decode(_as_bytes(encode("prefetch", 9, "ids", np.array([[1], [2]]), out="rows_out", lod=[[0, 1, 2]])))
    assert m.get("out") == "rows_out" and m.lod == [[0, 1, 2]]
    m = decode(_as_bytes(encode("send_barrier", 4, trainer=2, step=7)))
    assert m.value is None and m.name is None and (m.trainer, m.step) == (2, 7)
    m = decode(_as_bytes(encode("error", 4, msg="boom")))
    assert m.kind == "error" and m.get("msg") == "boom"


def test_zero_copy_receive_over_a_real_socket_gives_writable_arrays():
    ctx = zmq.Context()
    a, b = ctx.socket(zmq.PAIR), ctx.socket(zmq.PAIR)
    try:
        port = a.bind_to_random_port("tcp://127.0.0.1")
        b.connect("tcp://127.0.0.1:%d" % port)
        x = np.random.RandomState(1).randn(300, 400).astype(np.float32)
        sr = SelectedRows(np.array([1, 2], dtype=np.int64), np.ones((2, 3), np.float16), 4)
        a.send_multipart(encode("send", 1, "x", x), copy=False)
        a.send_multipart(encode("send", 2, "sr", sr), copy=False)
        m = decode(b.recv_multipart(copy=False))
        np.testing.assert_array_equal(m.value, x)
        m.value[0, 0] = 7.0   # the received memory belongs to us
        m2 = decode(b.recv_multipart(copy=False))
        np.testing.assert_array_equal(m2.value.value, sr.value)
    finally:
        a.close(0)
        b.close(0)
        ctx.term()


def _header(**over):
    h = {"v": 1, "kind": "send", "id": 1, "name": "x", "trainer": 0, "step": 0,
         "value": {"t": "dense", "dtype": "float32", "shape": [2, 3]}}
    h.update(over)
    return json.dumps(h).encode()


BUF = np.zeros((2, 3), np.float32).tobytes()


@pytest.mark.parametrize("frames,why", [
    ([], "no header"),
    ([b"\xff\xfe not json"], "not valid JSON: not UTF-8"),
    ([b"{not json"], "header is not valid JSON"),
    ([b"[1, 2]"], "must be a JSON object"),
    ([_header(v=2), BUF], "protocol version"),
    ([_header(kind="exec"), BUF], "unknown message kind"),
    ([_header(id="1"), BUF], "'id' must be an integer"),
    ([_header(trainer=True), BUF], "'trainer' must be an integer"),
    ([_header(name=3), BUF], "'name' must be a string"),
    ([_header(pickle="x"), BUF], "unknown header fields"),
    ([_header(value={"t": "dense", "dtype": "object", "shape": [2, 3]}), BUF], "dtype 'object' is not allowed"),
    ([_header(value={"t": "dense", "dtype": "float32", "shape": [2, -3]}), BUF], "non-negative"),
    ([_header(value={"t": "blob", "dtype": "float32", "shape": [2]}), BUF], "unknown value type"),
    ([_header(), BUF[:-4]], "needs 24 bytes but its frame holds 20"),
    ([_header(), BUF + b"\0\0\0\0"], "needs 24 bytes but its frame holds 28"),
    ([_header()], "must be 2 frames, got 1"),
    ([_header(), BUF, BUF], "must be 2 frames, got 3"),
    ([_header(value=None), BUF], "without a value must be 1 frame"),
    ([_header(value={"t": "rows", "dtype": "float32", "shape": [2, 3]}), BUF], "height"),
    ([_header(value={"t": "rows", "dtype": "float32", "shape": [2, 3], "height": 4}),
      np.array([0, 1], np.int64).tobytes(), BUF[:8]], "needs 24 bytes"),
    ([_header(value={"t": "rows", "dtype": "float32", "shape": [2, 3], "height": 4}),
      np.array([0, 4], np.int64).tobytes(), BUF], "row indices must lie in [0, 4)"),
    ([_header(value={"t": "rows", "dtype": "float32", "shape": [2, 3], "height": 4}),
      np.array([0], np.int64).tobytes(), BUF], "(rows): shape [2] of int64 needs 16 bytes"),
    ([_header(lod=[[0, "a"]]), BUF], "LoD level 0 must be a non-empty list of integers"),
    ([_header(msg=5), BUF], "'msg' must be a string"),
    # what once raised TypeError or numpy's ValueError instead of a WireError
    ([_header(kind=["get"]), BUF], "unknown message kind ['get']"),
    ([_header(value={"t": "dense", "dtype": ["float32"], "shape": [2, 3]}), BUF], "dtype ['float32'] is not allowed"),
    ([_header(value={"t": ["dense"], "dtype": "float32", "shape": [2, 3]}), BUF], "unknown value type"),
    ([_header(value={"t": "dense", "dtype": "float32", "shape": [0, 2 ** 62]}), b""], "larger than any array"),
    ([_header(value={"t": "dense", "dtype": "float32", "shape": [0, 2 ** 31, 2 ** 31]}), b""],
     "larger than any array"),
    ([_header(value={"t": "dense", "dtype": "float32", "shape": [2, 3], "height": 2}), BUF], "unknown value fields"),
    ([_header(v=True), BUF], "protocol version"),
    ([_header(id=2 ** 64), BUF], "'id' must lie in"),
    ([_header(trainer=-1), BUF], "'trainer' must lie in"),
    ([_header(step=2 ** 70), BUF], "'step' must lie in"),
    ([_header(name="n" * 5000), BUF], "'name' is 5000 characters long"),
    ([b'{"v": 1, "v": 1, "kind": "get", "id": 1, "trainer": 0, "step": 0}'], "repeats a field: ['v']"),
    ([b'{"v": 1, "kind": "get", "id": 1, "trainer": 0, "step": NaN}'], "NaN, which is not a JSON number"),
    ([b'{"v": 1, "kind": "get", "id": 1.5, "trainer": 0, "step": 0}'], "'id' must be an integer"),
    ([b"[" * 100000], "nests arrays/objects more than 8 deep"),
    ([_header(lod=[[0, 1, 3]]), BUF], "LoD level 0 ends at 3 but the value has rows 2"),
    ([_header(lod=[[0, 2, 1]]), BUF], "never decrease"),
    ([_header(lod=[[1, 2]]), BUF], "offsets from 0"),
    ([_header(lod=[[0, 1], [0, 1, 2]]), BUF], "ends at 1 but the next level has entries for 2"),
    ([_header(value=None, lod=[[0, 1]])], "without a value cannot carry a 'lod'"),
    ([_header(value={"t": "rows", "dtype": "float32", "shape": [2, 3], "height": 4}, lod=[[0, 2]]),
      np.array([0, 1], np.int64).tobytes(), BUF], "only a dense value"),
])
def test_malformed_messages_are_rejected_with_a_clear_wire_error(frames, why):
    with pytest.raises(WireError) as e:
        decode(frames)
    assert why in str(e.value)


def test_lod_that_does_not_fit_the_value_is_refused_at_encode():
    x = np.zeros((3, 2), np.float32)
    assert decode(_as_bytes(encode("send", 1, "x", x, lod=[[0, 1, 3]]))).lod == [[0, 1, 3]]
    with pytest.raises(WireError, match="LoD level 0 ends at 2 but the value has rows 3"):
        encode("send", 1, "x", x, lod=[[0, 2]])
    with pytest.raises(WireError, match="only a dense value"):
        encode("send", 1, "x", None, lod=[[0, 2]])


def test_huge_header_is_rejected():
    with pytest.raises(WireError, match="larger than"):
        decode([b" " * (wire.MAX_HEADER_BYTES + 1)])


def test_values_that_cannot_travel_are_refused_at_encode():
    with pytest.raises(WireError, match="dtype object cannot be sent"):
        encode("send", 1, "x", np.array(["a", None], dtype=object))
    with pytest.raises(WireError, match="a str cannot be sent"):
        encode("send", 1, "x", "/some/dir")
    with pytest.raises(WireError, match="unknown message kind"):
        encode("run_python", 1)
    with pytest.raises(WireError, match="unknown header field"):
        encode("send", 1, code="print(1)")


def test_peek_request_id():
    assert wire.peek_request_id([_header(id=42, kind="bogus")]) == 42
    assert wire.peek_request_id([b"garbage"]) == -1


# ------------------------------------------------------------------------------------------ batches
def _step_batch():
    """A trainer's step to one pserver: a dense block, a row-sparse gradient, the barrier, two gets."""
    w = np.arange(12, dtype=np.float32).reshape(3, 4)
    sr = SelectedRows(np.array([7, 2], dtype=np.int64), np.ones((2, 4), np.float32), 10)
    ids = np.array([[1], [3], [5]], dtype=np.int64)
    parts = [wire.encode_part("send", "w@GRAD.block0.trainer_1", w, step=3),
             wire.encode_part("send", "emb@GRAD.trainer_1.pserver_0", sr, step=3),
             wire.encode_part("prefetch", "ids", ids, step=3, lod=[[0, 2, 3]], out="rows"),
             wire.encode_part("send_barrier", step=3),
             wire.encode_part("get", "w.block0", step=3)]
    return parts, (w, sr, ids)


def test_a_batch_carries_every_part_in_one_message_in_order():
    parts, (w, sr, ids) = _step_batch()
    frames = wire.encode_batch(11, 1, 3, parts)
    assert len(frames) == 1 + 1 + 2 + 1          # the header, then the parts' buffers in order
    m = decode(_as_bytes(frames))
    assert (m.kind, m.rid, m.trainer, m.step, m.value) == ("batch", 11, 1, 3, None)
    assert [(p.kind, p.name, p.rid, p.trainer, p.step) for p in m.parts] == [
        ("send", "w@GRAD.block0.trainer_1", 11, 1, 3), ("send", "emb@GRAD.trainer_1.pserver_0", 11, 1, 3),
        ("prefetch", "ids", 11, 1, 3), ("send_barrier", None, 11, 1, 3), ("get", "w.block0", 11, 1, 3)]
    np.testing.assert_array_equal(m.parts[0].value, w)
    np.testing.assert_array_equal(m.parts[1].value.rows, sr.rows)
    np.testing.assert_array_equal(m.parts[1].value.value, sr.value)
    assert m.parts[1].value.height == 10
    np.testing.assert_array_equal(m.parts[2].value, ids)
    assert m.parts[2].lod == [[0, 2, 3]] and m.parts[2].get("out") == "rows"
    assert m.parts[3].value is None and m.parts[4].value is None
    # a reply batch: ok parts with values, error parts with their text
    reply = decode(_as_bytes(wire.encode_batch(11, 1, 3, [wire.encode_part("ok", "w.block0", w, step=3),
                                                          wire.encode_part("error", "x", step=3, msg="no x")])))
    assert [p.kind for p in reply.parts] == ["ok", "error"] and reply.parts[1].get("msg") == "no x"
    np.testing.assert_array_equal(reply.parts[0].value, w)


def test_a_batch_of_a_thousand_parts_and_its_bounds():
    parts = [wire.encode_part("send", "g%d" % i, np.full(2, i, np.float32), step=1) for i in range(1000)]
    m = decode(_as_bytes(wire.encode_batch(1, 0, 1, parts)))
    assert [int(p.value[0]) for p in m.parts] == list(range(1000))
    with pytest.raises(WireError, match="a batch holds 1 to 4096 parts, got 0"):
        wire.encode_batch(1, 0, 1, [])
    with pytest.raises(WireError, match="requests or replies, not both"):
        wire.encode_batch(1, 0, 1, [wire.encode_part("get", "w"), wire.encode_part("ok", "w")])
    with pytest.raises(WireError, match="unknown message kind 'batch'"):
        wire.encode_part("batch")


def _batch_header(parts, **over):
    h = {"v": 1, "kind": "batch", "id": 5, "trainer": 0, "step": 2, "parts": parts}
    h.update(over)
    return json.dumps(h).encode()


_DENSE = {"kind": "send", "name": "g", "step": 2, "value": {"t": "dense", "dtype": "float32", "shape": [2, 3]}}


@pytest.mark.parametrize("frames,why", [
    ([_batch_header([])], "'parts' must be a list of 1 to 4096 part headers, got 0"),
    ([_batch_header({"kind": "get"})], "'parts' must be a list"),
    ([_batch_header([{"kind": "get", "step": 0}] * 4097)], "got 4097"),
    ([_batch_header([_DENSE, 7]), BUF], "part 1 of the batch must be an object, got 7"),
    ([_batch_header([_DENSE, dict(_DENSE, name="h", value={"t": "dense", "dtype": "object", "shape": [1]})]),
      BUF, BUF], "part 1 (send 'h') of the batch: dtype 'object' is not allowed"),
    ([_batch_header([_DENSE, _DENSE])], "part 0 (send 'g') of the batch: a dense value needs 1 buffer(s) from frame "
                                        "1 on, but the message has 1 frames"),
    ([_batch_header([_DENSE, _DENSE]), BUF], "part 1 (send 'g') of the batch: a dense value needs 1 buffer(s) from "
                                             "frame 2 on"),
    ([_batch_header([_DENSE, _DENSE]), BUF, BUF[:-4]], "part 1 (send 'g') of the batch: value of 'g': shape [2, 3]"),
    ([_batch_header([_DENSE]), BUF, BUF], "a batch whose parts have 1 buffers must be 2 frames, got 3"),
    ([_batch_header([_DENSE, {"kind": "ok", "step": 2}]), BUF], "requests or replies, not both"),
    ([_batch_header([{"kind": "batch", "step": 2, "parts": []}])], "unknown fields ['parts']"),
    ([_batch_header([{"kind": "batch", "step": 2}])], "part 0 (batch None) of the batch: unknown message kind 'batch'"),
    ([_batch_header([dict(_DENSE, trainer=3)]), BUF], "part 0 (send 'g') of the batch: unknown fields ['trainer']"),
    ([_batch_header([dict(_DENSE, id=3)]), BUF], "unknown fields ['id']"),
    ([_batch_header([dict(_DENSE, step=-1)]), BUF], "part 0 (send 'g') of the batch: header field 'step' must lie"),
    ([_batch_header([_DENSE], name="x"), BUF], "a batch carries only parts, not ['name']"),
    ([_batch_header([_DENSE], value={"t": "dense", "dtype": "float32", "shape": [2, 3]}), BUF],
     "a batch carries only parts, not ['value']"),
    ([_header(parts=[_DENSE]), BUF], "only a 'batch' message has 'parts'"),
    ([_batch_header([{"kind": "get", "step": 0, "lod": [[0, 1]]}])], "without a value cannot carry a 'lod'"),
])
def test_malformed_batches_are_rejected_naming_the_part(frames, why):
    with pytest.raises(WireError) as e:
        decode(frames)
    assert why in str(e.value)
