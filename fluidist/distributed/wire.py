"""The message format between trainers and parameter servers: data, never code.

A message is a list of ZeroMQ frames::

    [header, *buffers]

``header`` is a small JSON object (UTF-8)::

    {"v": 1, "kind": "send", "id": 7, "name": "fc_w@GRAD.block1.trainer_0",
     "trainer": 0, "step": 3,
     "value": {"t": "dense", "dtype": "float32", "shape": [500, 1000]}}

and the buffers are the raw bytes of the value, little-endian, C order: one buffer for a dense
array, two (``rows`` as int64, then the values) for a row-sparse ``SelectedRows``, whose header
also carries ``height``. The buffers travel without copies: ``encode`` hands ZeroMQ views of the
arrays (``send_multipart(..., copy=False)``) and ``decode`` builds arrays on the received frames'
memory (``np.frombuffer``), so an array payload is copied only by the kernel's socket I/O.

Nothing here ever unpickles or evaluates anything: ``decode`` checks every field (protocol version,
kind, types and ranges, dtype against an allow-list, dims that are non-negative and whose product
fits in memory, shape against the buffer length, the number of frames, row indices against the
height, LoD offsets against the value's first dim) and raises ``WireError`` saying what is wrong;
whatever a sender puts in a message, decoding it raises nothing else.

A **batch** carries several requests (or their replies) to one peer as one multi-part message: a
trainer's whole step to a pserver (its gradient blocks, the barrier, the gets of the new parameters)
costs one message and one reply instead of one of each per variable. Its header names no value
itself; ``parts`` lists the part headers in order (each as a message's header without ``v``, ``id``
and ``trainer``, which the batch gives them all), and the parts' buffers follow the header in the same
order::

    {"v": 1, "kind": "batch", "id": 8, "trainer": 0, "step": 3,
     "parts": [{"kind": "send", "name": "fc_w@GRAD.block1.trainer_0", "step": 3,
                "value": {"t": "dense", "dtype": "float32", "shape": [500, 1000]}},
               {"kind": "send_barrier", "step": 3}]}

Every part is checked as a message is (a part's error names its index, kind and variable); a batch
holds at most ``MAX_PARTS`` parts, all requests or all replies, and never another batch.
"""
import json

import numpy as np

from .. import bounded_json
from ..device.places import to_host
from ..core.tensor import SelectedRows

PROTOCOL_VERSION = 1

# Requests (trainer -> pserver) and replies (pserver -> trainer).
KINDS = frozenset(["send", "get", "send_barrier", "fetch_barrier", "complete", "prefetch", "checkpoint",
                   "ok", "error", "batch"])
REPLY_KINDS = frozenset(["ok", "error"])

DTYPES = frozenset(["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
                    "float16", "float32", "float64", "complex64", "complex128"])
_WIRE_DTYPE = {n: np.dtype(n).newbyteorder("<") for n in DTYPES}

# Optional string fields of the header: prefetch output var, checkpoint dir and table, error text.
_STR_FIELDS = ("out", "dir", "table", "msg")
_KNOWN_FIELDS = frozenset(["v", "kind", "id", "name", "trainer", "step", "value", "lod", "parts"]) | frozenset(
    _STR_FIELDS)
_PART_FIELDS = frozenset(["kind", "name", "step", "value", "lod"]) | frozenset(_STR_FIELDS)

MAX_HEADER_BYTES = 1 << 20
MAX_HEADER_DEPTH = 8             # the header nests 3 deep (value.shape, lod levels)
MAX_RANK = 32
MAX_NAME_CHARS = 4096            # a variable name (or 'out' / 'table') longer than this is not one
MAX_TRAINER_ID = (1 << 20) - 1
MAX_STEP = (1 << 62)
MAX_ELEMENT_BYTES = 1 << 62      # the product of the non-zero dims times the item size (numpy's limit)
MAX_LOD_LEVELS = 16
MAX_PARTS = 4096                 # parts of one batch: a step's blocks, barrier and gets to one pserver


class WireError(ValueError):
    """A message that cannot be encoded, or a received one that is malformed."""


class Message:
    """A decoded message. ``value`` is None, a numpy array or a SelectedRows of numpy arrays; a
    batch has its parts, each a ``Message`` of its own (with the batch's id and trainer), in ``parts``."""

    __slots__ = ("kind", "rid", "name", "trainer", "step", "value", "lod", "extra", "parts")

    def __init__(self, kind, rid=0, name=None, trainer=0, step=0, value=None, lod=None, extra=None, parts=None):
        self.kind = kind
        self.rid = rid
        self.name = name
        self.trainer = trainer
        self.step = step
        self.value = value
        self.lod = lod
        self.extra = extra or {}
        self.parts = parts

    def get(self, field, default=None):
        return self.extra.get(field, default)

    def __repr__(self):
        if self.parts is not None:
            return "Message(batch id=%d trainer=%d step=%d, %d parts)" % (self.rid, self.trainer, self.step,
                                                                         len(self.parts))
        return "Message(%s id=%d name=%r trainer=%d step=%d value=%s)" % (
            self.kind, self.rid, self.name, self.trainer, self.step, _describe(self.value))


def _describe(value):
    if value is None:
        return "None"
    if isinstance(value, SelectedRows):
        return "SelectedRows(%d rows of %s, height %d)" % (len(value.rows), value.value.shape[1:], value.height)
    return "%s%s" % (value.dtype, list(value.shape))


# ------------------------------------------------------------------------------------------ encode
def _wire_array(arr, what):
    """``arr`` on the host, C-contiguous and little-endian (no copy when it already is)."""
    arr = to_host(arr)
    if not isinstance(arr, np.ndarray):
        arr = np.asarray(arr)
    name = arr.dtype.name
    if name not in DTYPES:
        raise WireError("%s: dtype %s cannot be sent (allowed: %s)" % (what, arr.dtype, ", ".join(sorted(DTYPES))))
    if arr.dtype.byteorder == ">":
        arr = arr.astype(_WIRE_DTYPE[name])
    if not arr.flags.c_contiguous:
        arr = np.ascontiguousarray(arr).reshape(arr.shape)
    return arr


def _buffer(arr):
    # a flat uint8 view: any dtype (bool, float16, 0-d) is then a plain byte buffer for ZeroMQ
    return arr.reshape(-1).view(np.uint8)


def encode_part(kind, name=None, value=None, step=0, lod=None, **fields):
    """``(header fields, buffers)`` of one request or reply: the header without ``v``, ``id`` and
    ``trainer`` (a batch's part as it is), the buffers as views of the value's arrays.

    ``fields`` are the optional strings ``out``, ``dir``, ``table`` and ``msg``."""
    if kind not in KINDS or kind == "batch":
        raise WireError("unknown message kind %r" % (kind,))
    header = {"kind": kind, "name": name, "step": int(step)}
    for k, v in fields.items():
        if k not in _STR_FIELDS:
            raise WireError("unknown header field %r" % k)
        if v is not None:
            header[k] = str(v)
    what = "value of %r" % name
    frames = []
    if value is not None:
        header["value"], frames = _encode_value(value, what)
    if lod:
        meta = header.get("value")
        if meta is None or meta["t"] != "dense" or not meta["shape"]:
            raise WireError("%s: only a dense value of rank >= 1 can carry a LoD" % what)
        header["lod"] = check_lod([[int(x) for x in level] for level in lod], meta["shape"][0], what)
    return header, frames


def _encode_value(value, what):
    """(the header's ``value`` field, the buffers) of an array or a SelectedRows."""
    if isinstance(value, SelectedRows):
        if value.rows is None or value.value is None:
            raise WireError("%s: a SelectedRows without rows or values cannot be sent" % what)
        rows = _wire_array(value.rows, what + " (rows)")
        if rows.dtype != np.int64:
            rows = rows.astype(np.int64)
        vals = _wire_array(value.value, what)
        if rows.ndim != 1 or vals.ndim < 1 or vals.shape[0] != rows.shape[0]:
            raise WireError("%s: SelectedRows with %s rows but values of shape %s"
                            % (what, list(rows.shape), list(vals.shape)))
        return ({"t": "rows", "dtype": vals.dtype.name, "shape": list(vals.shape), "height": int(value.height)},
                [_buffer(rows), _buffer(vals)])
    if isinstance(value, (np.ndarray, np.generic)) or hasattr(value, "__cuda_array_interface__"):
        arr = _wire_array(value, what)
        return {"t": "dense", "dtype": arr.dtype.name, "shape": list(arr.shape)}, [_buffer(arr)]
    raise WireError("%s: a %s cannot be sent (only arrays and SelectedRows travel)" % (what, type(value).__name__))


def encode(kind, rid=0, name=None, value=None, trainer=0, step=0, lod=None, **fields):
    """The frames of one message: ``[header bytes, *array buffers]`` (buffers are views, not copies).

    ``fields`` are the optional strings ``out``, ``dir``, ``table`` and ``msg``."""
    part, frames = encode_part(kind, name, value, step, lod, **fields)
    header = {"v": PROTOCOL_VERSION, "kind": kind, "id": int(rid), "name": name, "trainer": int(trainer),
              "step": part["step"]}
    header.update(part)
    return [json.dumps(header, separators=(",", ":")).encode()] + frames


def encode_batch(rid, trainer, step, parts):
    """The frames of a batch: ``parts`` are ``encode_part`` results, all requests or all replies, sent
    as one message ``[header bytes, *the parts' buffers in order]``."""
    if not 1 <= len(parts) <= MAX_PARTS:
        raise WireError("a batch holds 1 to %d parts, got %d" % (MAX_PARTS, len(parts)))
    if len({p["kind"] in REPLY_KINDS for p, _ in parts}) != 1:
        raise WireError("a batch holds requests or replies, not both")
    header = {"v": PROTOCOL_VERSION, "kind": "batch", "id": int(rid), "trainer": int(trainer), "step": int(step),
              "parts": [p for p, _ in parts]}
    frames = [json.dumps(header, separators=(",", ":")).encode()]
    for _, buffers in parts:
        frames.extend(buffers)
    return frames


# ------------------------------------------------------------------------------------------ decode
def _int(header, key, lo, hi):
    v = header.get(key)
    if type(v) is not int:
        raise WireError("header field %r must be an integer, got %s" % (key, _show(v)))
    if not lo <= v <= hi:
        raise WireError("header field %r must lie in [%d, %d], got %d" % (key, lo, hi, v))
    return v


def _show(v, limit=80):
    """A short repr of a received value for an error message (never the whole of a huge one)."""
    text = repr(v)
    return text if len(text) <= limit else text[:limit] + "..."


def _str(v, key, limit=MAX_NAME_CHARS):
    if not isinstance(v, str):
        raise WireError("header field %r must be a string, got %s" % (key, _show(v)))
    if len(v) > limit:
        raise WireError("header field %r is %d characters long (at most %d)" % (key, len(v), limit))
    return v


def _view(frame):
    buf = getattr(frame, "buffer", None)
    return buf if buf is not None else memoryview(frame)


def _array(frame, dtype_name, shape, what):
    dt = _WIRE_DTYPE[dtype_name]
    count = 1
    for d in shape:
        count *= d
    buf = _view(frame)
    if buf.nbytes != count * dt.itemsize:
        raise WireError("%s: shape %s of %s needs %d bytes but its frame holds %d"
                        % (what, shape, dtype_name, count * dt.itemsize, buf.nbytes))
    return np.frombuffer(buf, dtype=dt, count=count).reshape(shape)


def check_shape(shape, dtype_name, what="value"):
    """``shape`` as a list of dims numpy can make an array of (``WireError`` otherwise): at most
    ``MAX_RANK`` non-negative integers whose non-zero product times the item size stays below
    ``MAX_ELEMENT_BYTES`` (so a zero dim cannot smuggle in an impossible one)."""
    if not isinstance(shape, list) or len(shape) > MAX_RANK:
        raise WireError("%s: shape must be a list of at most %d dims, got %s" % (what, MAX_RANK, _show(shape)))
    size = _WIRE_DTYPE[dtype_name].itemsize
    for d in shape:
        if type(d) is not int or d < 0:
            raise WireError("%s: shape dims must be non-negative integers, got %s" % (what, _show(shape)))
        if d:
            size *= d
            if size >= MAX_ELEMENT_BYTES:
                raise WireError("%s: shape %s of %s is larger than any array can be" % (what, _show(shape),
                                                                                     dtype_name))
    return shape


def _value_meta(meta):
    if not isinstance(meta, dict):
        raise WireError("header field 'value' must be an object, got %s" % _show(meta))
    t = meta.get("t")
    if t not in ("dense", "rows") or type(t) is not str:
        raise WireError("unknown value type %s (expected 'dense' or 'rows')" % _show(t))
    dtype = meta.get("dtype")
    if type(dtype) is not str or dtype not in DTYPES:
        raise WireError("dtype %s is not allowed (allowed: %s)" % (_show(dtype), ", ".join(sorted(DTYPES))))
    extra = set(meta) - ({"t", "dtype", "shape", "height"} if t == "rows" else {"t", "dtype", "shape"})
    if extra:
        raise WireError("unknown value fields %s" % sorted(extra))
    shape = check_shape(meta.get("shape"), dtype)
    if t == "rows":
        h = meta.get("height")
        if type(h) is not int or not 0 <= h < MAX_STEP:
            raise WireError("a row-sparse value needs a non-negative integer 'height', got %s" % _show(h))
        if not shape:
            raise WireError("a row-sparse value needs a shape of rank >= 1")
    return t, dtype, shape


def check_lod(lod, rows, what="value"):
    """``lod`` as offset levels that fit a value of ``rows`` rows (``WireError`` otherwise): each level
    starts at 0 and never decreases, each level ends at the number of entries of the next, and the
    last ends at ``rows``."""
    if not isinstance(lod, list) or len(lod) > MAX_LOD_LEVELS:
        raise WireError("%s: 'lod' must be a list of at most %d levels" % (what, MAX_LOD_LEVELS))
    for i, level in enumerate(lod):
        if not isinstance(level, list) or not level or any(type(x) is not int for x in level):
            raise WireError("%s: LoD level %d must be a non-empty list of integers" % (what, i))
        if level[0] != 0 or any(b < a for a, b in zip(level, level[1:])):
            raise WireError("%s: LoD level %d must be offsets from 0 that never decrease, got %s"
                            % (what, i, _show(level)))
        end = len(lod[i + 1]) - 1 if i + 1 < len(lod) else rows
        if level[-1] != end:
            raise WireError("%s: LoD level %d ends at %d but %s %d" % (
                what, i, level[-1], "the next level has entries for" if i + 1 < len(lod) else "the value has rows",
                end))
    return lod


def decode(frames):
    """A ``Message`` from received frames (``zmq.Frame``, bytes or memoryviews); never trusts them.

    Whatever the frames hold, the only exception this raises is ``WireError``."""
    try:
        return _decode(frames)
    except WireError:
        raise
    except Exception as e:  # a check this module lacks: still the sender's fault, never the receiver's
        raise WireError("message could not be decoded (%s: %s)" % (type(e).__name__, _show(str(e), 200))) from None


def _no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise WireError("header repeats a field: %s" % sorted({k for k in keys if keys.count(k) > 1}))
    return dict(pairs)


def _reject_constant(name):
    raise WireError("header holds %s, which is not a JSON number" % name)


def _decode(frames):
    if not frames:
        raise WireError("empty message: no header frame")
    raw = frames[0]
    head = raw.bytes if hasattr(raw, "bytes") else bytes(raw)
    if len(head) > MAX_HEADER_BYTES:
        raise WireError("header of %d bytes is larger than the %d allowed" % (len(head), MAX_HEADER_BYTES))
    try:
        header = bounded_json.loads(head, "header", MAX_HEADER_BYTES, MAX_HEADER_DEPTH,
                                    object_pairs_hook=_no_duplicates, parse_constant=_reject_constant)
    except bounded_json.JSONBoundsError as e:
        raise WireError(_show(str(e), 200)) from None
    if not isinstance(header, dict):
        raise WireError("header must be a JSON object, got %s" % type(header).__name__)
    v = header.get("v")
    if type(v) is not int or v != PROTOCOL_VERSION:
        raise WireError("protocol version %s is not supported (this side speaks %d)" % (_show(v), PROTOCOL_VERSION))
    unknown = set(header) - _KNOWN_FIELDS
    if unknown:
        raise WireError("unknown header fields %s" % _show(sorted(unknown), 200))
    rid = _int(header, "id", -1, (1 << 63) - 1)
    trainer = _int(header, "trainer", 0, MAX_TRAINER_ID)
    if header.get("kind") == "batch":
        return _decode_batch(header, frames, rid, trainer)
    if "parts" in header:
        raise WireError("only a 'batch' message has 'parts'")
    msg, used = _decode_one(header, frames, 1, rid, trainer, alone=True)
    if used != len(frames):
        kind, t = msg.kind, header["value"]["t"] if msg.value is not None else None
        if t is None:
            raise WireError("a %r message without a value must be 1 frame, got %d" % (kind, len(frames)))
        raise WireError("a %r message with a %s value must be %d frames, got %d" % (kind, t, used, len(frames)))
    return msg


def _decode_one(header, frames, at, rid, trainer, alone=False):
    """The ``Message`` of one message or part header whose buffers start at ``frames[at]``, and the
    index after its last buffer."""
    kind = header.get("kind")
    if type(kind) is not str or kind not in KINDS or kind == "batch":
        raise WireError("unknown message kind %s (known: %s)" % (_show(kind), ", ".join(sorted(KINDS - {"batch"}))))
    step = _int(header, "step", 0, MAX_STEP)
    name = header.get("name")
    if name is not None:
        _str(name, "name")
    extra = {}
    for k in _STR_FIELDS:
        if k in header:
            extra[k] = _str(header[k], k, MAX_HEADER_BYTES if k == "msg" else MAX_NAME_CHARS)
    meta = header.get("value")
    lod = header.get("lod")
    what = "value of %s" % _show(name)
    if meta is None:
        if lod is not None:
            raise WireError("a %r message without a value cannot carry a 'lod'" % kind)
        return Message(kind, rid, name, trainer, step, None, None, extra), at
    t, dtype, shape = _value_meta(meta)
    want = 1 if t == "dense" else 2
    if len(frames) < at + want and alone:
        raise WireError("a %r message with a %s value must be %d frames, got %d" % (kind, t, at + want, len(frames)))
    if len(frames) < at + want:
        raise WireError("a %s value needs %d buffer(s) from frame %d on, but the message has %d frames"
                        % (t, want, at, len(frames)))
    if lod is not None:
        if t != "dense" or not shape:
            raise WireError("%s: only a dense value of rank >= 1 can carry a 'lod'" % what)
        lod = check_lod(lod, shape[0], what) or None
    if t == "dense":
        value = _array(frames[at], dtype, shape, what)
    else:
        rows = _array(frames[at], "int64", [shape[0]], what + " (rows)")
        vals = _array(frames[at + 1], dtype, shape, what)
        height = meta["height"]
        if len(rows) and (int(rows.min()) < 0 or int(rows.max()) >= height):
            raise WireError("%s: row indices must lie in [0, %d), got [%d, %d]"
                            % (what, height, int(rows.min()), int(rows.max())))
        value = SelectedRows(rows, vals, height)
    return Message(kind, rid, name, trainer, step, value, lod, extra), at + want


def _decode_batch(header, frames, rid, trainer):
    """A batch: its parts decoded in order, each from its own buffers (errors name the part)."""
    extra = set(header) - {"v", "kind", "id", "trainer", "step", "parts"}
    if extra:
        raise WireError("a batch carries only parts, not %s" % sorted(extra))
    step = _int(header, "step", 0, MAX_STEP)
    parts = header.get("parts")
    if not isinstance(parts, list) or not 1 <= len(parts) <= MAX_PARTS:
        raise WireError("a batch's 'parts' must be a list of 1 to %d part headers, got %s"
                        % (MAX_PARTS, _show(parts) if not isinstance(parts, list) else "%d" % len(parts)))
    out, at = [], 1
    for i, part in enumerate(parts):
        if not isinstance(part, dict):
            raise WireError("part %d of the batch must be an object, got %s" % (i, _show(part)))
        try:
            unknown = set(part) - _PART_FIELDS
            if unknown:
                raise WireError("unknown fields %s" % _show(sorted(unknown), 200))
            msg, at = _decode_one(part, frames, at, rid, trainer)
        except WireError as e:
            kind = part.get("kind")
            raise WireError("part %d (%s %s) of the batch: %s" % (i, kind if type(kind) is str and kind in KINDS
                                                                  else _show(kind, 20),
                                                                  _show(part.get("name"), 80), e)) from None
        out.append(msg)
    if at != len(frames):
        raise WireError("a batch whose parts have %d buffers must be %d frames, got %d" % (at - 1, at, len(frames)))
    if len({m.kind in REPLY_KINDS for m in out}) != 1:
        raise WireError("a batch holds requests or replies, not both")
    return Message("batch", rid, None, trainer, step, parts=out)


def peek_request_id(frames):
    """The request id of a (possibly malformed) message, or -1: lets an error reply name the request."""
    try:
        raw = frames[0]
        header = bounded_json.loads((raw.bytes if hasattr(raw, "bytes") else bytes(raw)), "header",
                                    MAX_HEADER_BYTES, MAX_HEADER_DEPTH)
        rid = header.get("id") if isinstance(header, dict) else None
        return rid if type(rid) is int and -1 <= rid < (1 << 63) else -1
    except Exception:
        return -1
