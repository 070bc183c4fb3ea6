"""Variables in Paddle's files: one file per variable named after it (``save`` / ``load`` ops), or
all in one file in sorted name order (``save_combine`` / ``load_combine``).

Reading returns ``(name, value, lod)`` triples and never touches a scope: ``fluidist.io`` checks
them against the program and writes them all, or nothing.
"""
import io
import os

from ..core.tensor import SelectedRows
from ..framework import VarType
from . import tensor_stream as ts
from .tensor_stream import PaddleFormatError


def inside(dirname, path):
    """``path`` resolved, if it lies inside ``dirname`` (symbolic links followed); else an error."""
    root = os.path.realpath(dirname)
    real = os.path.realpath(path)
    if real != root and not real.startswith(root.rstrip(os.sep) + os.sep):
        raise PaddleFormatError("refusing to read %s: it lies outside the model directory %s" % (path, dirname))
    return real


def var_path(dirname, name):
    """Where Paddle keeps variable ``name`` of a directory save, checked to stay inside it."""
    if not name or "\x00" in name or os.path.isabs(name) or any(p in ("", ".", "..") for p in name.split("/")):
        raise PaddleFormatError("variable name %r cannot name a file inside %s" % (name, dirname))
    path = os.path.join(dirname, *name.split("/"))
    inside(dirname, path)
    return path


# ---------------------------------------------------------------- writing
def _value_bytes(name, value, lod, combined):
    what = "variable %r" % name
    if isinstance(value, SelectedRows):
        if combined:
            raise PaddleFormatError("variable %r is a SelectedRows: Paddle's combined files hold only "
                                    "LoDTensors (save it without filename=)" % name)
        return ts.selected_rows_bytes(value.rows, value.value, value.height, what)
    return ts.lod_tensor_bytes(value, lod, what)


def save_files(dirname, values, filename=None, write=None):
    """Write ``values`` (``(name, host array or SelectedRows, lod)``) in Paddle's format: one file
    per variable, or, with ``filename``, one combined file in sorted name order."""
    if filename is not None:
        write(os.path.join(dirname, filename), combined_bytes(values))
        return
    for name, value, lod in values:
        path = var_path(dirname, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        write(path, _value_bytes(name, value, lod, False))


def combined_bytes(values):
    return b"".join(_value_bytes(n, v, lod, True) for n, v, lod in sorted(values, key=lambda t: t[0]))


# ---------------------------------------------------------------- reading
def _read_one(reader, name, decl):
    if decl is not None and decl.type == VarType.SELECTED_ROWS:
        rows, value, height = reader.read_selected_rows(name)
        return SelectedRows(rows, value, height), None
    return reader.read_lod_tensor(name)


def read_dir(dirname, selected):
    """One file per variable, as Paddle's ``load`` op reads them."""
    out = []
    for name, decl in selected:
        path = var_path(dirname, name)
        if not os.path.isfile(path):
            raise FileNotFoundError("cannot load variable %r: file %s does not exist" % (name, path))
        with open(path, "rb") as f:
            reader = ts.StreamReader(f, path)
            value, lod = _read_one(reader, name, decl)
            if not reader.at_end():
                raise PaddleFormatError("%s (variable %r) has %d bytes after its tensor" % (path, name, reader.left))
        out.append((name, value, lod))
    return out


def read_combined(source, where, selected):
    """All of ``selected`` from one combined file (a path, or the bytes of one), in sorted name order."""
    names = sorted(selected, key=lambda t: t[0])
    if isinstance(source, (bytes, bytearray)):
        f = io.BytesIO(bytes(source))
    else:
        if not os.path.isfile(source):
            raise FileNotFoundError("cannot load variables: file %s does not exist" % source)
        f = open(source, "rb")
    out = []
    with f:
        reader = ts.StreamReader(f, where)
        for name, decl in names:
            if reader.at_end():
                raise PaddleFormatError("%s ends before variable %r: it holds fewer than the %d variables asked for"
                                        % (where, name, len(names)))
            if decl is not None and decl.type == VarType.SELECTED_ROWS:
                raise PaddleFormatError("variable %r is a SelectedRows, which Paddle's combined files do not "
                                        "hold" % name)
            value, lod = reader.read_lod_tensor(name)
            out.append((name, value, lod))
        if not reader.at_end():
            raise PaddleFormatError("%s holds more than the %d variables asked for (%d bytes left): load the "
                                    "same variables that were saved into it" % (where, len(names), reader.left))
    return out
