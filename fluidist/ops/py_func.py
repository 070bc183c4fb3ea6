"""``py_func``: an op that calls a Python function registered in this process.

Functions are kept in a process-wide list; the op holds their positions (``forward_callable_id``,
``backward_callable_id``), as Paddle's does, so a program with py_func ops runs only in the process
that built it. The function gets LoDTensors (``numpy.array(t)`` reads one) and returns arrays,
LoDTensors or None (that output is left unset), one per output. The gradient op is another
``py_func`` calling the backward function with the forward inputs, the forward outputs and the
output gradients (less ``backward_skip_vars``); it returns one gradient (or None) per input.
"""
import numpy as np

from ..core.tensor import LoDTensor
from ..framework.registry import register_op

_HOST = 'calls Python functions with host values'

_CALLABLES: list = []


def register_callable(func):
    """Keep ``func`` for py_func ops; returns its id."""
    if func is None or not callable(func):
        raise TypeError("py_func: the function must be a Python callable, got %r" % (func,))
    _CALLABLES.append(func)
    return len(_CALLABLES) - 1


def registered_callable(idx):
    return _CALLABLES[idx]


def registered_callable_count():
    return len(_CALLABLES)


def _grad_maker(op):
    bwd = int(op.attrs.get("backward_callable_id", -1))
    if bwd < 0:
        return []
    skip = set(op.attrs.get("backward_skip_vars") or [])
    xs, outs = list(op.inputs.get("X", [])), list(op.outputs.get("Out", []))
    inputs = [n for n in xs if n not in skip] + [n for n in outs if n not in skip] + [n + "@GRAD" for n in outs]
    return [{"type": "py_func", "inputs": {"X": inputs}, "outputs": {"Out": [n + "@GRAD" for n in xs]},
             "attrs": {"forward_callable_id": bwd, "backward_callable_id": -1, "backward_skip_vars": []}}]


@register_op("py_func", host=_HOST, inputs=["X*?"], outputs=["Out*?"],
             attrs={"forward_callable_id": -1, "backward_callable_id": -1, "backward_skip_vars": []},
             grad=_grad_maker, side_effect=True)
def py_func(ctx, ins, attrs):
    idx = int(attrs["forward_callable_id"])
    if not 0 <= idx < len(_CALLABLES):
        raise ValueError("op 'py_func': no Python function with id %d in this process (py_func programs run only "
                         "where they were built)" % idx)
    args = []
    for i, v in enumerate(ins.get("X") or []):
        t = LoDTensor(np.asarray(v))
        lod = ctx.lod("X", i)
        if lod:
            t.set_lod(lod)
        args.append(t)
    ret = _CALLABLES[idx](*args)
    if not isinstance(ret, (list, tuple)):
        ret = (ret,)
    names = ctx.op.outputs.get("Out") or []
    if len(ret) != len(names) and not (len(names) == 0 and ret == (None,)):
        raise ValueError("op 'py_func': the function returned %d values for %d outputs %s"
                         % (len(ret), len(names), names))
    out = []
    for i, (name, r) in enumerate(zip(names, ret)):
        if r is None:
            out.append(None)
            continue
        if isinstance(r, LoDTensor):
            if r.lod():
                ctx.set_lod("Out", r.lod(), i)
            r = np.asarray(r)
        out.append(ctx.xp.asarray(np.asarray(r)))
    return {"Out": out} if names else {}
