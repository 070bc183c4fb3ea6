"""Data types and variable types, spelled as strings; ``VarType`` keeps Paddle's constant names."""
import numpy as np

_ALIASES = {
    "float32": "float32", "fp32": "float32", "float": "float32",
    "float64": "float64", "fp64": "float64", "double": "float64",
    "float16": "float16", "fp16": "float16",
    "int8": "int8", "uint8": "uint8", "int16": "int16",
    "int32": "int32", "int": "int32",
    "int64": "int64", "long": "int64",
    "bool": "bool",
}


class VarType:
    """Paddle's ``core.VarDesc.VarType`` names; dtypes are plain strings here."""
    FP16 = "float16"
    FP32 = "float32"
    FP64 = "float64"
    INT8 = "int8"
    UINT8 = "uint8"
    INT16 = "int16"
    INT32 = "int32"
    INT64 = "int64"
    BOOL = "bool"
    LOD_TENSOR = "LOD_TENSOR"
    SELECTED_ROWS = "SELECTED_ROWS"
    LOD_TENSOR_ARRAY = "LOD_TENSOR_ARRAY"
    RAW = "RAW"
    FEED_MINIBATCH = "FEED_MINIBATCH"
    FETCH_LIST = "FETCH_LIST"
    STEP_SCOPES = "STEP_SCOPES"
    READER = "READER"
    LOD_RANK_TABLE = "LOD_RANK_TABLE"


VAR_TYPES = (VarType.LOD_TENSOR, VarType.SELECTED_ROWS, VarType.LOD_TENSOR_ARRAY, VarType.RAW,
             VarType.FEED_MINIBATCH, VarType.FETCH_LIST, VarType.STEP_SCOPES, VarType.READER,
             VarType.LOD_RANK_TABLE)


def convert_dtype(dtype):
    """Canonical dtype string for a string, numpy dtype or numpy scalar type."""
    if dtype is None:
        return None
    if isinstance(dtype, str):
        key = dtype.lower()
        if key in _ALIASES:
            return _ALIASES[key]
        raise TypeError("unsupported dtype %r; expected one of %s" % (dtype, sorted(set(_ALIASES.values()))))
    try:
        name = np.dtype(dtype).name
    except TypeError:
        raise TypeError("unsupported dtype %r" % (dtype,))
    if name not in _ALIASES:
        raise TypeError("unsupported dtype %r" % (dtype,))
    return _ALIASES[name]


def is_float_dtype(dtype):
    return convert_dtype(dtype) in ("float16", "float32", "float64")
