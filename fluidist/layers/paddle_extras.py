"""Names Paddle 1.8's layer modules have beyond their ``__all__`` that scripts import from them
(``from paddle.fluid.layers.control_flow import split_lod_tensor``): the small layers over ops
fluidist has, and refusals for Paddle's internal builders. :data:`EXTRAS` says which module of
Paddle's name each goes into (``paddle_modules.place_names`` puts them there)."""
from __future__ import annotations

from typing import Sequence

from ..compat import refused, refused_class
from ..framework.program import Variable
from .layer_helper import LayerHelper, check_variable
from .loss import cross_entropy
from . import rpc_layers

_BLOCKS = ("an internal builder of Paddle's control flow; use While(cond).block(), Switch().case(...), "
           "IfElse, layers.cond or StaticRNN.step()")


def split_lod_tensor(input: Variable, mask: Variable, level: int = 0) -> tuple[Variable, Variable]:
    """The rows (or level-``level`` sequences) of ``input`` whose ``mask`` is true, and the others
    (what ``IfElse.input`` builds).

    Args:
        input: a tensor, with or without LoD.
        mask: a bool ``[rows, 1]`` (or one per sequence).
        level: the LoD level whose sequences are split.

    Returns:
        ``(out_true, out_false)``.

    Examples:
        >>> from fluidist.layers.control_flow import merge_lod_tensor, split_lod_tensor
        >>> x = fluid.layers.assign(np.array([[1.0], [2.0], [3.0]], "float32"))
        >>> mask = fluid.layers.assign(np.array([[True], [False], [True]]))
        >>> yes, no = split_lod_tensor(x, mask)
        >>> back = merge_lod_tensor(yes, no, x, mask)
        >>> [v.ravel().tolist() for v in fluid.Executor(fluid.CPUPlace()).run(fetch_list=[yes, no, back])]
        [[1.0, 3.0], [2.0], [1.0, 2.0, 3.0]]
    """
    helper = LayerHelper("split_lod_tensor")
    out_true = helper.create_variable_for_type_inference(dtype=input.dtype)
    out_false = helper.create_variable_for_type_inference(dtype=input.dtype)
    helper.append_op("split_lod_tensor", inputs={"X": [input], "Mask": [mask]},
                     outputs={"OutTrue": [out_true], "OutFalse": [out_false]}, attrs={"level": int(level)})
    return out_true, out_false


def merge_lod_tensor(in_true: Variable, in_false: Variable, x: Variable, mask: Variable,
                     level: int = 0) -> Variable:
    """``split_lod_tensor`` undone: rows of ``in_true`` where ``mask`` is true, of ``in_false``
    elsewhere, in the original order.

    Args:
        in_true: the rows of the true side.
        in_false: the rows of the false side.
        x: the tensor that was split (it gives the LoD).
        mask: the mask of the split.
        level: the LoD level of the split.

    Returns:
        A Variable with ``x``'s rows.

    Examples:
        >>> from fluidist.layers.control_flow import merge_lod_tensor, split_lod_tensor
        >>> x = fluid.data(name="x", shape=[None, 1], dtype="float32")
        >>> mask = fluid.data(name="mask", shape=[None, 1], dtype="bool")
        >>> yes, no = split_lod_tensor(x, mask)
        >>> merged = merge_lod_tensor(fluid.layers.scale(yes, 2.0), no, x, mask)
    """
    helper = LayerHelper("merge_lod_tensor")
    out = helper.create_variable_for_type_inference(dtype=in_true.dtype)
    helper.append_op("merge_lod_tensor", inputs={"X": [x], "Mask": [mask], "InTrue": [in_true],
                                                 "InFalse": [in_false]},
                     outputs={"Out": [out]}, attrs={"level": int(level)})
    return out


def select_output(input: Variable, outputs: Variable | Sequence[Variable],
                  mask: Variable) -> Variable | Sequence[Variable]:
    """Copy ``input`` into one of ``outputs``, chosen when the program runs (the counterpart of
    ``select_input``).

    Args:
        input: the tensor to copy.
        outputs: the candidates (a list, or one Variable: the only one).
        mask: an int32 ``[1]`` Variable, the index of the output to write.

    Returns:
        ``outputs``.

    Examples:
        >>> from fluidist.layers.control_flow import select_output
        >>> x = fluid.layers.fill_constant(shape=[1], dtype="float32", value=7.0)
        >>> block = fluid.default_main_program().current_block()
        >>> outs = [block.create_var(name="out%d" % i, shape=[1], dtype="float32") for i in range(2)]
        >>> which = fluid.layers.fill_constant(shape=[1], dtype="int32", value=1)
        >>> _ = select_output(x, outs, which)
        >>> fluid.Executor(fluid.CPUPlace()).run(fetch_list=[outs[1]])[0].tolist()
        [7.0]
    """
    check_variable(input, "select_output", "input")
    if not isinstance(outputs, (list, tuple)):
        raise TypeError("select_output: argument 'outputs' takes a list or a tuple, got %s"
                        % type(outputs).__name__)
    check_variable(mask, "select_output", "mask")
    helper = LayerHelper("select_output")
    targets = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]   # one Variable: one output
    helper.append_op("select_output", inputs={"X": [input], "Mask": [mask]}, outputs={"Out": targets})
    return outputs


def cross_entropy2(input: Variable, label: Variable, ignore_index: int = -100) -> Variable:
    """Paddle's hard-label cross entropy (what ``cross_entropy`` builds for hard labels).

    Args:
        input: probabilities ``[N, classes]``.
        label: int64 classes ``[N, 1]``.
        ignore_index: a label whose rows give 0.

    Returns:
        A Variable ``[N, 1]``.

    Examples:
        >>> from fluidist.layers.loss import cross_entropy2
        >>> probs = fluid.layers.assign(np.array([[0.5, 0.5]], "float32"))
        >>> label = fluid.layers.assign(np.array([[0]], "int64"))
        >>> out, = fluid.Executor(fluid.CPUPlace()).run(fetch_list=[cross_entropy2(probs, label)])
        >>> round(float(out[0, 0]), 4)
        0.6931
    """
    return cross_entropy(input, label, soft_label=False, ignore_index=ignore_index)


def save(x: Variable, file_path: str, overwrite: bool = True) -> None:
    """Write ``x`` to ``file_path`` when the program runs (a ``save`` op; ``layers.load`` reads it).

    Paddle 1.8 difference: the file is a NumPy ``.npy`` file under exactly that name (Paddle's
    ``save`` op writes its own tensor format).

    Args:
        x: the tensor to write.
        file_path: the file.
        overwrite: replace an existing file (else the op fails).

    Examples:
        >>> import os, tempfile
        >>> from fluidist.layers.tensor import save
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path = os.path.join(folder, "x.bin")
        ...     save(fluid.layers.fill_constant(shape=[2], dtype="float32", value=1.0), path)
        ...     _ = fluid.Executor(fluid.CPUPlace()).run()
        ...     print(os.path.exists(path))
        True
    """
    LayerHelper("save").append_op("save", inputs={"X": [x]}, outputs={},
                                  attrs={"file_path": str(file_path), "overwrite": bool(overwrite)})


EXTRAS = {
    "control_flow": {
        "split_lod_tensor": split_lod_tensor, "merge_lod_tensor": merge_lod_tensor, "select_output": select_output,
        "BlockGuard": refused_class("fluid.layers.control_flow.BlockGuard", _BLOCKS),
        "BlockGuardWithCompletion": refused_class("fluid.layers.control_flow.BlockGuardWithCompletion", _BLOCKS),
        "ConditionalBlockGuard": refused_class("fluid.layers.control_flow.ConditionalBlockGuard",
                                               "use ConditionalBlock(inputs).block() or layers.cond"),
        "IfElseBlockGuard": refused_class("fluid.layers.control_flow.IfElseBlockGuard",
                                          "use IfElse(cond).true_block() / false_block()"),
        "StaticRNNMemoryLink": refused_class("fluid.layers.control_flow.StaticRNNMemoryLink",
                                             "use StaticRNN.memory() and update_memory()"),
        "WhileGuard": refused_class("fluid.layers.control_flow.WhileGuard", "use While(cond).block()"),
        "copy_var_to_parent_block": refused("fluid.layers.control_flow.copy_var_to_parent_block",
                                            "return the value from the block (layers.cond / while_loop outputs)"),
    },
    "io": {
        "ListenAndServ": rpc_layers.ListenAndServ, "BlockGuardServ": rpc_layers.BlockGuardServ,
        "Send": rpc_layers.Send, "Recv": rpc_layers.Recv,
        "monkey_patch_reader_methods": refused("fluid.layers.io.monkey_patch_reader_methods",
                                               "readers from layers.py_reader / fluid.io.DataLoader have their methods"),
    },
    "loss": {"cross_entropy2": cross_entropy2},
    "nn": {"PyFuncRegistry": refused_class("fluid.layers.nn.PyFuncRegistry",
                                           "register Python functions through layers.py_func(func=..., backward_func=...)")},
    "tensor": {
        "save": save,
        "save_combine": refused("fluid.layers.tensor.save_combine",
                                "save each variable with layers.save, or use fluid.io.save_vars(filename=...)"),
        "load_combine": refused("fluid.layers.tensor.load_combine",
                                "load each variable with layers.load, or use fluid.io.load_vars(filename=...)"),
    },
}
