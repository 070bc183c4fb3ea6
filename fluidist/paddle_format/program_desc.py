"""Paddle's ProgramDesc (``__model__``, ``.pdmodel``) to and from fluidist's Program.

Reading maps every block, variable (type, dtype, shape, LoD level, persistable and
need_check_feed flags) and op (inputs, outputs, attributes of every ``AttrType``, sub-blocks)
onto fluidist's IR; op types fluidist does not implement are reported all at once, by name.
Paddle's ``feed`` / ``fetch`` ops and the ``FEED_MINIBATCH`` / ``FETCH_LIST`` variables that hold
their values are taken out of the program, their targets returned in ``col`` order, as Paddle's
``load_inference_model`` reads them (fluidist's executor feeds and fetches by name without ops).

Writing gives each attribute the type Paddle's op declares (``attr_types.py``), dtype attributes
as Paddle's ``VarType`` codes, so that Paddle's attribute checks accept the program.
"""
from ..framework import Block, Operator, Program, Variable
from ..framework import program_bounds, registry
from ..framework.dtypes import DTYPE_ATTRS as _DTYPE_ATTRS
from . import attr_types
from . import framework_pb2 as pb
from .tensor_stream import PaddleFormatError, dtype_from_pb, dtype_to_pb

# Paddle 1.8.5 stamps its programs with 1 * 10**6 + 8 * 10**3 + 5; 0 is older 1.x.
PROGRAM_VERSION = 1008005
FIRST_UNSUPPORTED_VERSION = 2000000

FEED_OP, FETCH_OP = "feed", "fetch"
FEED_HOLDER, FETCH_HOLDER = "feed", "fetch"

_A = pb.AttrType
_TENSOR_TYPES = {"LOD_TENSOR": "lod_tensor", "SELECTED_ROWS": "selected_rows",
                 "LOD_TENSOR_ARRAY": "tensor_array"}
_INT32 = (-(2 ** 31), 2 ** 31 - 1)

_declared_cache: dict = {}


def declared_attr_types(op_type):
    """``{attr name: AttrType name}`` that Paddle 1.8.5 declares for ``op_type`` (empty if unknown)."""
    d = _declared_cache.get(op_type)
    if d is None:
        d = dict(attr_types.COMMON)
        spec = attr_types.OPS.get(op_type, "")
        for item in spec.split():
            name, _, kind = item.rpartition(":")
            d[name] = kind
        _declared_cache[op_type] = d
    return d


class MissingOpsError(NotImplementedError):
    """A Paddle program uses op types fluidist does not implement (all of them are named)."""

    def __init__(self, where, counts):
        self.op_types = sorted(counts)
        listing = ", ".join("%s (%d op%s)" % (t, counts[t], "" if counts[t] == 1 else "s")
                            for t in self.op_types)
        reasons = "".join("; %s" % registry.unknown_op_error(t) for t in self.op_types if registry.refusal(t))
        super().__init__("%s uses %d op type%s that fluidist does not implement: %s%s"
                         % (where, len(counts), "" if len(counts) == 1 else "s", listing, reasons))


# ---------------------------------------------------------------- reading
def parse_program_desc(blob, where):
    """The ``ProgramDesc`` message in ``blob``; a clear error when it is not one."""
    blob = bytes(blob)
    _check_desc_bounds(blob, where)
    desc = pb.ProgramDesc()
    try:
        desc.ParseFromString(blob)
    except Exception as e:  # DecodeError, or a required field missing
        raise PaddleFormatError("%s is not a Paddle 1.x ProgramDesc (%s: %s)" % (where, type(e).__name__, e))
    if not desc.blocks:
        raise PaddleFormatError("%s is not a Paddle ProgramDesc: it has no blocks" % where)
    version = desc.version.version if desc.HasField("version") else 0
    if version >= FIRST_UNSUPPORTED_VERSION or version < 0:
        raise PaddleFormatError("%s was written by Paddle %s (program version %d); fluidist reads the "
                                "programs of Paddle 1.x" % (where, _version_text(version), version))
    for i, b in enumerate(desc.blocks):
        if b.idx != i or not (b.parent_idx == -1 or 0 <= b.parent_idx < i):
            raise PaddleFormatError("%s: block %d has index %d and parent %d; a block's parent is an earlier block "
                                    "(or -1 for none), so these blocks do not form a program"
                                    % (where, i, b.idx, b.parent_idx))
    return desc


def _varint(buf, pos):
    """The varint at ``buf[pos]`` and the position after it; IndexError past the end."""
    result = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise IndexError("a varint longer than 10 bytes")


def _count_block(buf, pos, end, counts, bounds, where):
    """Add the variables and ops of the BlockDesc in ``buf[pos:end]`` to ``counts``; refuse past ``bounds``."""
    while pos < end:
        key, pos = _varint(buf, pos)
        kind = key & 7
        if kind == 0:
            _, pos = _varint(buf, pos)
        elif kind == 2:
            n, pos = _varint(buf, pos)
            pos += n
            what = {3: "vars", 4: "ops"}.get(key >> 3)
            if what is not None:
                counts[what] += 1
                if counts[what] > bounds[what]:
                    raise program_bounds.too_large(where, what, "more than %d" % bounds[what], bounds[what])
        elif kind in (1, 5):
            pos += 8 if kind == 1 else 4
        else:
            raise IndexError("wire type %d" % kind)


def _check_desc_bounds(blob, where):
    """Count the blocks, variables and ops of a serialized ProgramDesc from its wire format, before it is
    parsed (parsing a 28 MB file of tiny ops took 2 s and 460 MB): past a ``program_bounds`` limit it is
    refused at once. What the count cannot read is left to the parser to report."""
    bounds = {what: program_bounds.limit(what) for what in program_bounds.LIMITS}
    counts = {"blocks": 0, "vars": 0, "ops": 0}
    pos = 0
    try:
        while pos < len(blob):
            key, pos = _varint(blob, pos)
            kind = key & 7
            if kind != 2:
                return              # ProgramDesc's fields are all messages: not one, the parser says so
            n, pos = _varint(blob, pos)
            if key >> 3 == 1:
                counts["blocks"] += 1
                if counts["blocks"] > bounds["blocks"]:
                    raise program_bounds.too_large(where, "blocks", "more than %d" % bounds["blocks"],
                                                   bounds["blocks"])
                _count_block(blob, pos, min(pos + n, len(blob)), counts, bounds, where)
            pos += n
    except IndexError:
        return


def _version_text(v):
    return "%d.%d.%d" % (v // 1000000, v // 1000 % 1000, v % 1000) if v > 0 else str(v)


def _tensor_desc(vd):
    kind = pb.VarType.Type.Name(vd.type.type)
    field = _TENSOR_TYPES.get(kind)
    if field is None or not vd.type.HasField(field):
        return kind, None, None, 0
    sub = getattr(vd.type, field)
    if field == "selected_rows":
        return kind, sub.data_type, list(sub.dims), 0
    return kind, sub.tensor.data_type, list(sub.tensor.dims), sub.lod_level


def _var_from_desc(block, vd, where):
    kind, code, dims, lod_level = _tensor_desc(vd)
    dtype = dtype_from_pb(code, "%s, variable %r" % (where, vd.name)) if code is not None else None
    if dtype == "uint64":
        raise PaddleFormatError("%s: variable %r has Paddle's SIZE_T type, which fluidist cannot hold"
                                % (where, vd.name))
    return Variable(block, name=vd.name, shape=dims if dims is not None else None, dtype=dtype, type=kind,
                    lod_level=lod_level, persistable=vd.persistable, need_check_feed=vd.need_check_feed)


def _attr_from_desc(a, program, where):
    t = a.type
    if t == _A.INT:
        v = a.i
    elif t == _A.FLOAT:
        v = float(a.f)
    elif t == _A.STRING:
        v = a.s
    elif t == _A.INTS:
        v = list(a.ints)
    elif t == _A.FLOATS:
        v = [float(f) for f in a.floats]
    elif t == _A.STRINGS:
        v = list(a.strings)
    elif t == _A.BOOLEAN:
        v = bool(a.b)
    elif t == _A.BOOLEANS:
        v = [bool(b) for b in a.bools]
    elif t == _A.LONG:
        v = a.l
    elif t == _A.LONGS:
        v = list(a.longs)
    elif t == _A.BLOCK:
        v = _block_ref(program, a.block_idx, a.name, where)
    elif t == _A.BLOCKS:
        v = [_block_ref(program, i, a.name, where) for i in a.blocks_idx]
    else:  # cannot happen with proto2 enums, which refuse unknown values while parsing
        raise PaddleFormatError("%s: attribute %r has an unknown type %d" % (where, a.name, t))
    if a.name in _DTYPE_ATTRS and t == _A.INT and v >= 0:
        try:
            v = dtype_from_pb(v, where)
        except PaddleFormatError:
            pass
    return v


def _block_ref(program, idx, name, where):
    if not 0 <= idx < len(program.blocks):
        raise PaddleFormatError("%s: attribute %r refers to block %d of a program of %d blocks"
                                % (where, name, idx, len(program.blocks)))
    return program.blocks[idx]


def program_from_desc(desc, where, check_ops=True):
    """``(program, feed_target_names, fetch_target_names)`` from a parsed ``ProgramDesc``.

    Raises MissingOpsError naming every op type fluidist lacks (``check_ops=False`` skips that,
    for looking at a program fluidist will not run).
    """
    missing = {}
    for bd in desc.blocks:
        for od in bd.ops:
            if od.type in (FEED_OP, FETCH_OP):
                continue
            if registry.lookup(od.type) is None:
                missing[od.type] = missing.get(od.type, 0) + 1
    if missing and check_ops:
        raise MissingOpsError(where, missing)

    program = Program()
    program.blocks = [Block(program, bd.idx, bd.parent_idx) for bd in desc.blocks]
    feeds, fetches = [], []
    for bd, block in zip(desc.blocks, program.blocks):
        block.forward_block_idx = bd.forward_block_idx
        holders = set()
        for vd in bd.vars:
            if vd.type.type in (pb.VarType.FEED_MINIBATCH, pb.VarType.FETCH_LIST):
                holders.add(vd.name)
                continue
            if vd.name in block.vars:
                raise PaddleFormatError("%s: variable %r is declared twice in block %d" % (where, vd.name, bd.idx))
            block.vars[vd.name] = _var_from_desc(block, vd, where)
        for k, od in enumerate(bd.ops):
            what = "%s, block %d, op %d (%s)" % (where, bd.idx, k, od.type)
            if od.type in (FEED_OP, FETCH_OP):
                _take_feed_fetch(od, feeds if od.type == FEED_OP else fetches, what)
                continue
            block.ops.append(_op_from_desc(block, od, program, what))
        for name in holders:  # a holder variable some op other than feed/fetch still uses stays
            if any(name in op.input_arg_names or name in op.output_arg_names for op in block.ops):
                raise PaddleFormatError("%s: variable %r of type feed/fetch list is used by an op other "
                                        "than feed/fetch" % (where, name))
    for names, kind in ((feeds, "feed"), (fetches, "fetch")):
        cols = [c for c, _ in names]
        if sorted(cols) != list(range(len(cols))):
            raise PaddleFormatError("%s: the %s ops' col attributes %s are not 0..%d"
                                    % (where, kind, sorted(cols), len(cols) - 1))
    program._seed = 0
    program.current_block_idx = 0
    program._bump_version()
    return program, [n for _, n in sorted(feeds)], [n for _, n in sorted(fetches)]


def _take_feed_fetch(od, into, what):
    slot_in, slot_out = ("X", "Out")
    args = {v.parameter: list(v.arguments) for v in list(od.inputs) + list(od.outputs)}
    target = args.get(slot_out if od.type == FEED_OP else slot_in) or []
    col = [a.i for a in od.attrs if a.name == "col" and a.type == _A.INT]
    if len(target) != 1 or len(col) != 1:
        raise PaddleFormatError("%s: a %s op needs one target variable and a col attribute" % (what, od.type))
    into.append((col[0], target[0]))


def _op_from_desc(block, od, program, what):
    op = Operator(block, od.type, None, None, None)
    op.inputs = {v.parameter: list(v.arguments) for v in od.inputs if v.arguments}
    op.outputs = {v.parameter: list(v.arguments) for v in od.outputs if v.arguments}
    attrs = {}
    for a in od.attrs:
        attrs[a.name] = _attr_from_desc(a, program, what)
    opdef = registry.lookup(od.type)
    if opdef is not None:
        for k, v in opdef.attrs.items():
            if k not in attrs:
                attrs[k] = v
    op.attrs = attrs
    return op


def read_program(blob, where, check_ops=True):
    """``(program, feed_target_names, fetch_target_names)`` from the bytes of a ProgramDesc."""
    return program_from_desc(parse_program_desc(blob, where), where, check_ops)


# ---------------------------------------------------------------- writing
def _kind_of(value):
    """The AttrType name for a value whose op declares no type for it."""
    if isinstance(value, Block):
        return "BLOCK"
    if isinstance(value, bool):
        return "BOOLEAN"
    if isinstance(value, int):
        return "INT" if _INT32[0] <= value <= _INT32[1] else "LONG"
    if isinstance(value, float):
        return "FLOAT"
    if isinstance(value, str):
        return "STRING"
    if isinstance(value, (list, tuple)):
        if value and all(isinstance(v, Block) for v in value):
            return "BLOCKS"
        if value and all(isinstance(v, bool) for v in value):
            return "BOOLEANS"
        if all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            return "INTS" if all(_INT32[0] <= v <= _INT32[1] for v in value) else "LONGS"
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            return "FLOATS"
        if all(isinstance(v, str) for v in value):
            return "STRINGS"
    return None


def _fill_attr(a, kind, value, what):
    a.type = _A.Value(kind)
    try:
        if kind == "INT":
            a.i = int(value)
        elif kind == "LONG":
            a.l = int(value)
        elif kind == "FLOAT":
            a.f = float(value)
        elif kind == "STRING":
            a.s = str(value)
        elif kind == "BOOLEAN":
            a.b = bool(value)
        elif kind == "INTS":
            a.ints.extend(int(v) for v in value)
        elif kind == "LONGS":
            a.longs.extend(int(v) for v in value)
        elif kind == "FLOATS":
            a.floats.extend(float(v) for v in value)
        elif kind == "STRINGS":
            if isinstance(value, str):
                raise TypeError("a string where a list of strings is declared")
            a.strings.extend(str(v) for v in value)
        elif kind == "BOOLEANS":
            a.bools.extend(bool(v) for v in value)
        elif kind == "BLOCK":
            a.block_idx = value.idx
        elif kind == "BLOCKS":
            a.blocks_idx.extend(b.idx for b in value)
    except (TypeError, ValueError, AttributeError) as e:
        raise PaddleFormatError("%s: attribute %r = %r cannot be written as Paddle's %s (%s)"
                                % (what, a.name, value, kind, e))


def _attr_to_desc(od, op, name, value, what):
    if value is None:
        return
    declared = declared_attr_types(op.type).get(name)
    if name in _DTYPE_ATTRS and isinstance(value, str):
        value = dtype_to_pb(value, "%s, attribute %r" % (what, name))
        declared = declared or "INT"
    inferred = _kind_of(value)
    kind = inferred if inferred in ("BLOCK", "BLOCKS") else declared or inferred
    if kind is None:
        raise PaddleFormatError("%s: attribute %r holds a %s, which a Paddle program cannot hold"
                                % (what, name, type(value).__name__))
    _fill_attr(od.attrs.add(name=name), kind, value, what)


def _var_to_desc(bd, v, what):
    vd = bd.vars.add()
    vd.name = v.name
    kind = v.type if v.type in pb.VarType.Type.keys() else None
    if kind is None:
        raise PaddleFormatError("%s: variable %r has type %r, which Paddle has not" % (what, v.name, v.type))
    vd.type.type = pb.VarType.Type.Value(kind)
    field = _TENSOR_TYPES.get(kind)
    if field is not None:
        dtype = v.dtype or "float32"
        dims = [int(d) for d in v.shape] if v.shape is not None else []
        sub = getattr(vd.type, field)
        tensor = sub if field == "selected_rows" else sub.tensor
        tensor.data_type = dtype_to_pb(dtype, "%s, variable %r" % (what, v.name))
        tensor.dims.extend(dims)
        if field != "selected_rows" and v.lod_level:
            sub.lod_level = int(v.lod_level)
    vd.persistable = bool(v.persistable)
    if v.need_check_feed:
        vd.need_check_feed = True
    return vd


def _op_to_desc(bd, op, what):
    od = bd.ops.add()
    od.type = op.type
    for slot, names in op.inputs.items():
        od.inputs.add(parameter=slot, arguments=list(names))
    for slot, names in op.outputs.items():
        od.outputs.add(parameter=slot, arguments=list(names))
    for name in sorted(op.attrs):
        _attr_to_desc(od, op, name, op.attrs[name], what)
    return od


def program_to_desc(program, where, feed_names=(), fetch_names=()):
    """A ``ProgramDesc`` of ``program``; with feed / fetch names, Paddle's ``feed`` ops (prepended)
    and ``fetch`` ops (appended) and their holder variables, as ``save_inference_model`` writes."""
    desc = pb.ProgramDesc()
    desc.version.version = PROGRAM_VERSION
    for block in program.blocks:
        bd = desc.blocks.add()
        bd.idx, bd.parent_idx = block.idx, block.parent_idx
        bd.forward_block_idx = block.forward_block_idx
        first = block.idx == 0
        if first and fetch_names:
            _holder(bd, FETCH_HOLDER, pb.VarType.FETCH_LIST)
        if first and feed_names:
            _holder(bd, FEED_HOLDER, pb.VarType.FEED_MINIBATCH)
        for v in block.vars.values():
            if first and v.name in (FEED_HOLDER, FETCH_HOLDER) and (feed_names or fetch_names):
                raise PaddleFormatError("%s: a variable is named %r, the name Paddle reserves for its feed "
                                        "and fetch lists" % (where, v.name))
            _var_to_desc(bd, v, where)
        if first:
            for col, name in enumerate(feed_names):
                _feed_fetch(bd, FEED_OP, FEED_HOLDER, name, col, feed=True)
        for k, op in enumerate(block.ops):
            _op_to_desc(bd, op, "%s, block %d, op %d (%s)" % (where, block.idx, k, op.type))
        if first:
            for col, name in enumerate(fetch_names):
                _feed_fetch(bd, FETCH_OP, FETCH_HOLDER, name, col, feed=False)
    return desc


def _holder(bd, name, kind):
    vd = bd.vars.add()
    vd.name = name
    vd.type.type = kind
    vd.persistable = True


def _feed_fetch(bd, op_type, holder, target, col, feed):
    od = bd.ops.add()
    od.type = op_type
    od.inputs.add(parameter="X", arguments=[holder if feed else target])
    od.outputs.add(parameter="Out", arguments=[target if feed else holder])
    _fill_attr(od.attrs.add(name="col"), "INT", col, op_type)
    for name, kind in sorted(attr_types.COMMON.items()):
        value = {"op_role": 0, "op_device": "", "op_namescope": "/"}.get(name, [])
        _fill_attr(od.attrs.add(name=name), kind, value, op_type)


def write_program(program, where, feed_names=(), fetch_names=()):
    """The bytes of ``program``'s ProgramDesc (see ``program_to_desc``)."""
    return program_to_desc(program, where, feed_names, fetch_names).SerializeToString()


def is_program_desc(blob):
    """True when ``blob`` looks like a serialized ProgramDesc with at least one block: its top-level fields
    are well formed and the first is a block (a JSON document, a zip archive or a pickle never is). Cheap:
    nothing is parsed, so a huge file is refused by ``read_program``'s bounds, not parsed here first."""
    blob = bytes(blob)
    if blob[:1] != b"\x0a":      # its first field is its first block (fields are written in number order)
        return False
    pos = 0
    try:      # the fields of the message are well formed, each within the blob (nothing is parsed)
        while pos < len(blob):
            key, pos = _varint(blob, pos)
            kind = key & 7
            if kind == 0:
                _, pos = _varint(blob, pos)
            elif kind == 2:
                n, pos = _varint(blob, pos)
                pos += n
            elif kind in (1, 5):
                pos += 8 if kind == 1 else 4
            else:
                return False
    except IndexError:
        return False
    return pos == len(blob)


__all__ = ["MissingOpsError", "PROGRAM_VERSION", "declared_attr_types", "parse_program_desc",
           "program_from_desc", "read_program", "program_to_desc", "write_program", "is_program_desc"]
