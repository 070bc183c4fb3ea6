"""``layers.py_func``: run a Python function as an op of the program."""
from __future__ import annotations

from typing import Callable, Sequence, Union

from ..framework.program import Variable
from ..ops.py_func import register_callable, registered_callable, registered_callable_count
from .layer_helper import LayerHelper

__all__ = ["py_func"]


def _as_list(v, what):
    if v is None:
        return []
    if isinstance(v, Variable):
        return [v]
    if isinstance(v, (list, tuple)) and all(isinstance(e, Variable) for e in v):
        return list(v)
    raise TypeError("py_func: %s must be a Variable or a list/tuple of Variables, got %r" % (what, type(v).__name__))


VarOrVars = Union[Variable, Sequence[Variable], None]


def py_func(func: Callable[..., object], x: VarOrVars, out: VarOrVars,
            backward_func: Callable[..., object] | None = None,
            skip_vars_in_backward_input: VarOrVars = None) -> VarOrVars:
    """Run a Python function as an op of the program.

    ``func(*x)`` gets LoDTensors and returns one array (or None) per variable of ``out``, which
    the caller creates with its shape and dtype (e.g. ``block.create_var``). The function runs in
    the process that runs the program, each time the op runs.

    Args:
        func: the forward function.
        x: the input Variable(s).
        out: the output Variable(s), made by the caller with their shapes set.
        backward_func: gets the inputs, the outputs and the output gradients (less
            ``skip_vars_in_backward_input``) and returns one gradient (or None) per input; None
            for no gradient.
        skip_vars_in_backward_input: inputs or outputs that ``backward_func`` does not get.

    Returns:
        ``out``.

    Raises:
        TypeError: ``x`` / ``out`` not Variables.
        ValueError: an output without a shape, or a skipped variable that is neither an input
            nor an output.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        >>> y = fluid.default_main_program().current_block().create_var(name="y", shape=[-1, 3],
        ...                                                              dtype="float32")
        >>> _ = fluid.layers.py_func(lambda t: np.array(t) * 2, x, y)
        >>> fluid.Executor(fluid.CPUPlace()).run(feed={"x": np.ones((1, 3), "float32")},
        ...                                      fetch_list=[y])[0].tolist()
        [[2.0, 2.0, 2.0]]
    """
    xs = _as_list(x, "x")
    outs = _as_list(out, "out")
    for v in outs:
        if not v.shape:
            raise ValueError("py_func: the shape of output %r must be set by the caller" % v.name)
    fwd_id = register_callable(func)
    bwd_id = register_callable(backward_func) if backward_func is not None else -1
    skip = []
    if backward_func is not None and skip_vars_in_backward_input is not None:
        names = {v.name for v in xs + outs}
        for v in _as_list(skip_vars_in_backward_input, "skip_vars_in_backward_input"):
            if v.name not in names:
                raise ValueError("py_func: variable %r of skip_vars_in_backward_input is not an input or output"
                                 % v.name)
            if v.name not in skip:
                skip.append(v.name)
    helper = LayerHelper("py_func")
    helper.append_op("py_func", inputs={"X": xs}, outputs={"Out": outs},
                     attrs={"forward_callable_id": fwd_id, "backward_callable_id": bwd_id, "backward_skip_vars": skip})
    return out


py_func.registered_func = registered_callable  # type: ignore[attr-defined]
py_func.registered_func_num = registered_callable_count  # type: ignore[attr-defined]
