"""``FLAGS_check_nan_inf``: with it on, every op's floating outputs are checked after the op runs,
and the first nan or inf raises ``core.EnforceNotMet`` naming the op and the variable, as Paddle 1.8
does. The flag is read from the environment (``fluid.set_flags`` writes it there) when a program is
planned; a plan made under other settings is made again.

Paddle's environment variables leave ops out of the check: ``PADDLE_INF_NAN_SKIP_OP`` (op types,
comma separated), ``PADDLE_INF_NAN_SKIP_ROLE`` (op roles: ``backward``, ``optimize``, ``rpc``,
``dist``, ``lrsched``, ``loss``; an op is left out when its ``op_role`` has one of their bits) and
``PADDLE_INF_NAN_SKIP_VAR`` (``<op type>:<part of a variable name>`` entries: that op's outputs
whose names contain the part).
"""
import os

from ..core.enforce import EnforceNotMet
from ..framework.op_role import OP_ROLE_ATTR

FLAG = "FLAGS_check_nan_inf"
_ROLES = {"forward": 0x0000, "backward": 0x0001, "optimize": 0x0002, "rpc": 0x0004, "dist": 0x0008,
          "lrsched": 0x0010, "loss": 0x0100}
_ENV = (FLAG, "PADDLE_INF_NAN_SKIP_OP", "PADDLE_INF_NAN_SKIP_ROLE", "PADDLE_INF_NAN_SKIP_VAR")


# Every run asks for the settings (a plan made under others is made again), and ``os.environ.get``
# costs a microsecond (it encodes the key and decodes the value). On CPython's POSIX environ the
# variables live in a dict of bytes (``os.environ._data``, which every write through ``os.environ``,
# ``monkeypatch.setenv`` and ``set_flags`` updates): the flag's raw value is one lookup there, and
# whether that value means "on" is remembered. Elsewhere (no ``_data``) the plain read.
_RAW = getattr(os.environ, "_data", None)
try:
    _RAW_KEY = os.environ.encodekey(FLAG) if _RAW is not None else None     # type: ignore[attr-defined]
except AttributeError:
    _RAW = _RAW_KEY = None
_MEANS_ON: dict = {}    # the flag's raw value -> whether it turns the check on


def _is_on(value):
    if isinstance(value, bytes):
        value = os.fsdecode(value)
    return value.strip().lower() in ("1", "true", "on", "yes")


def settings():
    """The check's settings now (a hashable tuple), or None when the flag is off."""
    raw = _RAW.get(_RAW_KEY) if _RAW is not None else os.environ.get(FLAG)
    if raw is None:
        return None
    on = _MEANS_ON.get(raw)
    if on is None:
        on = _MEANS_ON[raw] = _is_on(raw)
    if not on:
        return None
    return tuple(os.environ.get(k, "") for k in _ENV[1:])


def _parse(settings):
    skip_op, skip_role, skip_var = settings
    ops = {t.strip() for t in skip_op.split(",") if t.strip()}
    roles = 0
    for r in skip_role.split(","):
        r = r.strip()
        if r:
            if r not in _ROLES:
                raise ValueError("PADDLE_INF_NAN_SKIP_ROLE: unknown role %r (known: %s)" % (r, ", ".join(_ROLES)))
            roles |= _ROLES[r]
    var_parts = {}
    for entry in skip_var.split(","):
        if entry.strip():
            op_type, _, part = entry.strip().partition(":")
            var_parts.setdefault(op_type, []).append(part)
    return ops, roles, var_parts


def _arrays(value):
    """The floating arrays a value holds (a tensor, a SelectedRows' rows, a tensor array's items)."""
    if isinstance(value, (list, tuple)):
        for v in value:
            yield from _arrays(v)
        return
    value = getattr(value, "value", value)           # SelectedRows
    if hasattr(value, "dtype") and hasattr(value, "shape") and getattr(value.dtype, "kind", "") == "f":
        yield value


def _finite(xp, arr):
    return bool(xp.isfinite(arr).all()) if arr.size else True


def checking(kernel, op, ctx, settings):
    """``kernel`` that checks its outputs for nan and inf (``settings`` from :func:`settings`)."""
    ops, roles, var_parts = _parse(settings)
    if op.type in ops or int(op.attrs.get(OP_ROLE_ATTR) or 0) & roles:
        return kernel
    parts = var_parts.get(op.type, ())
    checked = {slot: [n for n in names if not any(p in n for p in parts)] for slot, names in op.outputs.items()}

    def checked_kernel(c, ins, attrs):
        outs = kernel(c, ins, attrs)
        for slot, value in (outs or {}).items():
            names = checked.get(slot) or []
            values = value if isinstance(value, list) and len(op.outputs.get(slot) or []) > 1 else [value]
            for name, v in zip(op.outputs.get(slot) or [], values):
                if name in names and not all(_finite(ctx.xp, a) for a in _arrays(v)):
                    raise EnforceNotMet("find nan or inf in %r, an output of op %r (%s is on)" % (name, op.type, FLAG))
        return outs
    return checked_kernel

