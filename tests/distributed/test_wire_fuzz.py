"""Fuzzing the decoder: whatever headers and frames a peer sends, ``decode`` returns a Message or
raises ``WireError`` from one of its own checks (never another exception, and never its last-resort
net, which would mean a check is missing)."""
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, find, given, settings, strategies as st

from fluidist.core.tensor import SelectedRows
from fluidist.distributed import wire
from fluidist.distributed.wire import WireError, decode, encode

pytestmark = pytest.mark.timeout(120)

FIELDS = sorted(wire._KNOWN_FIELDS) + ["value.t", "bogus"]

# JSON values of every type, biased towards the edges the checks care about
scalars = st.one_of(
    st.none(), st.booleans(), st.text(max_size=12), st.sampled_from(sorted(wire.KINDS) + sorted(wire.DTYPES)),
    st.integers(min_value=-3, max_value=12), st.sampled_from([-1, 2 ** 31, 2 ** 62, 2 ** 63, 2 ** 64, -2 ** 63]),
    st.floats(allow_nan=False, allow_infinity=False))
json_values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                            st.dictionaries(st.text(max_size=6), inner, max_size=4)),
                           max_leaves=6)
dims = st.one_of(st.integers(min_value=0, max_value=6), st.sampled_from([2 ** 31, 2 ** 40, 2 ** 62, -1]), scalars)
shapes = st.one_of(st.lists(dims, max_size=4), json_values)
value_meta = st.one_of(
    st.fixed_dictionaries({"t": st.sampled_from(["dense", "rows"]), "dtype": st.sampled_from(sorted(wire.DTYPES)),
                           "shape": shapes},
                          optional={"height": st.one_of(st.integers(-2, 8), scalars)}),
    json_values)
lods = st.one_of(st.lists(st.lists(st.integers(-1, 6), max_size=5), max_size=3), json_values)
# a field of a well-formed header replaced by something drawn for it, or by any JSON value
FIELD_VALUES = {"v": st.one_of(st.just(1), scalars), "kind": st.sampled_from(sorted(wire.KINDS)),
                "id": st.integers(-2, 100), "name": st.text(max_size=8), "trainer": st.integers(-1, 4),
                "step": st.integers(-1, 4), "value": value_meta, "lod": lods}
BASE = {"v": 1, "kind": "send", "id": 1, "name": "w", "trainer": 0, "step": 0,
        "value": {"t": "dense", "dtype": "float32", "shape": [2, 2]}}


@st.composite
def headers(draw):
    h = dict(BASE)
    for key in draw(st.lists(st.sampled_from(sorted(FIELD_VALUES) + ["out", "msg", "bogus"]), min_size=1, max_size=3)):
        how = draw(st.sampled_from(["typed", "any", "drop"]))
        if how == "drop":
            h.pop(key, None)
        else:
            h[key] = draw(FIELD_VALUES.get(key, json_values) if how == "typed" else json_values)
    return h


frames = st.lists(st.one_of(st.binary(max_size=48), st.just(np.zeros(4, np.float32).tobytes())), max_size=3)

SETTINGS = dict(deadline=None, suppress_health_check=list(HealthCheck), database=None)


def _check(frame_list):
    try:
        m = decode(frame_list)
    except WireError as e:
        assert "could not be decoded" not in str(e), "a malformed message slipped past the checks: %s" % e
        return "rejected"
    assert m.kind in wire.KINDS
    for part in m.parts if m.parts is not None else [m]:
        assert part.kind in wire.KINDS and part.kind != "batch"
        if isinstance(part.value, SelectedRows):
            assert part.value.value.shape[0] == part.value.rows.shape[0]
    return "accepted"


@settings(max_examples=1000, **SETTINGS)
@given(header=headers(), payload=frames)
def test_random_headers_and_frames_are_decoded_or_rejected(header, payload):
    _check([json.dumps(header).encode()] + payload)


def _valid_messages():
    sr = SelectedRows(np.array([0, 3, 3], np.int64), np.arange(6, dtype=np.float32).reshape(3, 2), 4)
    return [
        encode("send", 3, "w@GRAD", np.arange(12, dtype=np.float32).reshape(3, 4), trainer=1, step=2),
        encode("send", 4, "emb@GRAD", sr, trainer=0, step=1),
        encode("prefetch", 5, "ids", np.array([[1], [2]], np.int64), out="rows", lod=[[0, 1, 2]]),
        encode("send_barrier", 6, trainer=1, step=3),
        encode("error", 7, msg="boom"),
        wire.encode_batch(8, 1, 2, [wire.encode_part("send", "w@GRAD", np.ones((2, 3), np.float32), step=2),
                                    wire.encode_part("send", "emb@GRAD", sr, step=2),
                                    wire.encode_part("send_barrier", step=2), wire.encode_part("get", "w", step=2)]),
    ]


VALID = [[bytes(memoryview(f)) for f in m] for m in _valid_messages()]


@st.composite
def mutated_messages(draw):
    """One of the valid messages with one mutation: a bit flipped, a frame cut, extended, dropped
    or doubled, or a header field set to any JSON value."""
    msg = list(VALID[draw(st.integers(0, len(VALID) - 1))])
    op = draw(st.sampled_from(["flip", "truncate", "extend", "drop", "dup", "edit"]))
    i = draw(st.integers(0, len(msg) - 1))
    if op == "flip" and msg[i]:
        pos = draw(st.integers(0, len(msg[i]) - 1))
        b = bytearray(msg[i])
        b[pos] ^= 1 << draw(st.integers(0, 7))
        msg[i] = bytes(b)
    elif op == "truncate":
        msg[i] = msg[i][:draw(st.integers(0, max(0, len(msg[i]) - 1)))]
    elif op == "extend":
        msg[i] = msg[i] + draw(st.binary(min_size=1, max_size=16))
    elif op == "drop":
        del msg[i]
    elif op == "dup":
        msg.insert(i, msg[i])
    else:  # change one header field (of the message or of one of a batch's parts) to any JSON value
        header = whole = json.loads(msg[0])
        if header.get("parts") and draw(st.booleans()):
            header = header["parts"][draw(st.integers(0, len(header["parts"]) - 1))]
        key = draw(st.sampled_from(FIELDS))
        if key == "value.t" and isinstance(header.get("value"), dict):
            header["value"]["t"] = draw(json_values)
        else:
            header[key] = draw(json_values)
        msg[0] = json.dumps(whole).encode()
    return msg


@settings(max_examples=1000, **SETTINGS)
@given(msg=mutated_messages())
def test_mutated_valid_messages_are_decoded_or_rejected(msg):
    _check(msg)


@pytest.mark.parametrize("outcome", ["accepted", "rejected"])
def test_the_fuzz_reaches_both_outcomes(outcome):
    """A fuzz that only ever made messages the decoder rejects (or only ones it accepts) would test
    little: each of the two strategies yields messages of both kinds."""
    quick = settings(max_examples=2000, phases=[Phase.generate], **SETTINGS)   # the first one found, unshrunk
    random_messages = st.tuples(headers(), frames).map(lambda hp: [json.dumps(hp[0]).encode()] + hp[1])
    for strategy in (random_messages, mutated_messages()):
        found = find(strategy, lambda msg: _check(msg) == outcome, settings=quick)
        assert _check(found) == outcome
