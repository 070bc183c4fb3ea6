"""Data types and variable types. fluidist spells them as strings (``"float32"``, ``"LOD_TENSOR"``);
``VarType`` holds Paddle's ``core.VarDesc.VarType`` values, each of which is that string and also
Paddle's proto code (``int(VarType.FP32) == 5``), so either spelling works wherever a dtype or a
variable type is asked for, and an int code works in an op's dtype attrs (``cast``'s ``out_dtype``)."""
import numpy as np

# "int" and "float" name NumPy's defaults (int64, float64), as Paddle reads a dtype string through np.dtype
_ALIASES = {
    "float32": "float32", "fp32": "float32",
    "float64": "float64", "fp64": "float64", "double": "float64", "float": "float64",
    "float16": "float16", "fp16": "float16",
    "int8": "int8", "uint8": "uint8", "int16": "int16",
    "int32": "int32", "int": "int64",
    "int64": "int64", "long": "int64",
    "bool": "bool",
}

# the op attrs that hold a data type (an int code in Paddle's programs, a dtype string in fluidist's)
DTYPE_ATTRS = frozenset(["dtype", "in_dtype", "out_dtype"])


class VarTypeValue(str):
    """One of Paddle's ``VarType`` values: the string fluidist uses (``"float32"``) that is also
    Paddle's code (``int()``, ``==`` an int) and prints as Paddle prints it (``VarType.FP32``)."""

    def __new__(cls, spelling, code, name):
        value = str.__new__(cls, spelling)
        value._code = code
        value._name = name
        return value

    def __int__(self):
        return self._code

    __index__ = __int__

    def __eq__(self, other):
        if isinstance(other, int) and not isinstance(other, bool):
            return self._code == other
        if isinstance(other, np.dtype) or (isinstance(other, type) and issubclass(other, np.generic)):
            return str.__eq__(self, np.dtype(other).name)      # as a NumPy dtype equals its name
        return str.__eq__(self, other)

    def __ne__(self, other):
        return not self == other

    __hash__ = str.__hash__

    def __repr__(self):
        return "VarType." + self._name

    __str__ = __repr__

    def __reduce__(self):
        return VarType, (self._code,)


class _VarTypeMeta(type):
    def __iter__(cls):
        return iter(cls.__members__.values())


class VarType(metaclass=_VarTypeMeta):
    """Paddle's ``core.VarDesc.VarType``: ``VarType.FP32`` is ``"float32"`` and 5, ``VarType(5)``
    is ``VarType.FP32``. The codes are Paddle's ``VarType.Type`` (framework.proto)."""
    BOOL = VarTypeValue("bool", 0, "BOOL")
    INT16 = VarTypeValue("int16", 1, "INT16")
    INT32 = VarTypeValue("int32", 2, "INT32")
    INT64 = VarTypeValue("int64", 3, "INT64")
    FP16 = VarTypeValue("float16", 4, "FP16")
    FP32 = VarTypeValue("float32", 5, "FP32")
    FP64 = VarTypeValue("float64", 6, "FP64")
    UINT8 = VarTypeValue("uint8", 20, "UINT8")
    INT8 = VarTypeValue("int8", 21, "INT8")
    LOD_TENSOR = VarTypeValue("LOD_TENSOR", 7, "LOD_TENSOR")
    SELECTED_ROWS = VarTypeValue("SELECTED_ROWS", 8, "SELECTED_ROWS")
    FEED_MINIBATCH = VarTypeValue("FEED_MINIBATCH", 9, "FEED_MINIBATCH")
    FETCH_LIST = VarTypeValue("FETCH_LIST", 10, "FETCH_LIST")
    STEP_SCOPES = VarTypeValue("STEP_SCOPES", 11, "STEP_SCOPES")
    LOD_RANK_TABLE = VarTypeValue("LOD_RANK_TABLE", 12, "LOD_RANK_TABLE")
    LOD_TENSOR_ARRAY = VarTypeValue("LOD_TENSOR_ARRAY", 13, "LOD_TENSOR_ARRAY")
    PLACE_LIST = VarTypeValue("PLACE_LIST", 14, "PLACE_LIST")
    READER = VarTypeValue("READER", 15, "READER")
    RAW = VarTypeValue("RAW", 17, "RAW")
    __members__: dict = {}

    def __new__(cls, code):
        for value in cls.__members__.values():
            if value._code == int(code):
                return value
        raise ValueError("%r is not a VarType code" % (code,))


VarType.__members__ = {k: v for k, v in vars(VarType).items() if isinstance(v, VarTypeValue)}
_BY_CODE = {v._code: v for v in VarType.__members__.values()}
# dtype string -> Paddle's code, for the data types (paddle_format reads and writes these)
DTYPE_CODES = {str.__str__(v): v._code for v in VarType.__members__.values() if str.__str__(v) in _ALIASES}

VAR_TYPES = (VarType.LOD_TENSOR, VarType.SELECTED_ROWS, VarType.LOD_TENSOR_ARRAY, VarType.RAW,
             VarType.FEED_MINIBATCH, VarType.FETCH_LIST, VarType.STEP_SCOPES, VarType.READER,
             VarType.LOD_RANK_TABLE, VarType.PLACE_LIST)


def plain(value):
    """A ``VarType`` value as fluidist's plain string (other values unchanged)."""
    return str.__str__(value) if isinstance(value, VarTypeValue) else value


def var_type_value(spelling):
    """The ``VarType`` value of a dtype or variable-type string (``"float32"`` -> ``VarType.FP32``)."""
    for value in VarType.__members__.values():
        if str.__eq__(value, spelling):
            return value
    raise ValueError("%r is neither a data type nor a variable type of Paddle's" % (spelling,))


def dtype_attr(value):
    """An op's dtype attr as fluidist keeps it: Paddle's int code of a data type (``5``) or a
    ``VarType`` value becomes the dtype string (``"float32"``); anything else (-1 for "the input's
    dtype", a string) is kept as it is, for the op to judge."""
    if isinstance(value, VarTypeValue):
        return plain(value)
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        found = _BY_CODE.get(int(value))
        if found is not None and plain(found) in DTYPE_CODES:
            return plain(found)
        return int(value)
    return value


def paddle_attr_value(name, value):
    """An op attr as Paddle reads it: a data type as its ``VarType`` value (the dtype string that
    is also Paddle's code), anything else as it is."""
    if name in DTYPE_ATTRS and isinstance(value, str) and value in DTYPE_CODES:
        return var_type_value(value)
    return value


class UnsupportedDtypeError(TypeError, ValueError):
    """A data type Paddle has no tensors of. Both a TypeError and a ValueError: Paddle 1.8 raises
    ValueError where a layer checks the dtype first (its ``convert_dtype``: ``cast``,
    ``fill_constant``, ``create_parameter``, ...) and NumPy's TypeError where a variable is made
    first (``data``, ``create_var``, ``uniform_random``), and code written against either catches
    this one."""


def convert_dtype(dtype):
    """Canonical dtype string for a string, a ``VarType`` value, a numpy dtype or numpy scalar type."""
    if dtype is None:
        return None
    if isinstance(dtype, str):
        found = _ALIASES.get(dtype)     # (most are spelt as the table spells them)
        if found is not None:
            return found
        key = dtype.lower()
        if key in _ALIASES:
            return _ALIASES[key]
        raise UnsupportedDtypeError("unsupported dtype %r; expected one of %s"
                                    % (dtype, sorted(set(_ALIASES.values()))))
    try:
        name = np.dtype(dtype).name
    except TypeError:
        raise UnsupportedDtypeError("unsupported dtype %r" % (dtype,)) from None
    if name not in _ALIASES:
        raise UnsupportedDtypeError("unsupported dtype %r" % (dtype,))
    return _ALIASES[name]


def is_float_dtype(dtype):
    return convert_dtype(dtype) in ("float16", "float32", "float64")
