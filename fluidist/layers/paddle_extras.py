"""Names Paddle 1.8's layer modules have beyond their ``__all__`` that scripts import from them
(``from paddle.fluid.layers.control_flow import split_lod_tensor``): the small layers over ops
fluidist has, and refusals for Paddle's internal builders. :data:`EXTRAS` says which module of
Paddle's name each goes into (``paddle_modules.place_names`` puts them there)."""
from ..compat import refused, refused_class
from .layer_helper import LayerHelper
from .loss import cross_entropy

_BLOCKS = ("an internal builder of Paddle's control flow; use While(cond).block(), Switch().case(...), "
           "IfElse, layers.cond or StaticRNN.step()")
_PSERVER = "build parameter-server programs with fluid.DistributeTranspiler (it writes listen_and_serv, send, recv)"


def split_lod_tensor(input, mask, level=0):
    """The rows (or level-``level`` sequences) of ``input`` whose ``mask`` is true, and the others."""
    helper = LayerHelper("split_lod_tensor")
    out_true = helper.create_variable_for_type_inference(dtype=input.dtype)
    out_false = helper.create_variable_for_type_inference(dtype=input.dtype)
    helper.append_op("split_lod_tensor", inputs={"X": [input], "Mask": [mask]},
                     outputs={"OutTrue": [out_true], "OutFalse": [out_false]}, attrs={"level": int(level)})
    return out_true, out_false


def merge_lod_tensor(in_true, in_false, x, mask, level=0):
    """``split_lod_tensor`` undone: rows of ``in_true`` where ``mask`` is true, of ``in_false`` elsewhere
    (``x`` gives the LoD)."""
    helper = LayerHelper("merge_lod_tensor")
    out = helper.create_variable_for_type_inference(dtype=in_true.dtype)
    helper.append_op("merge_lod_tensor", inputs={"X": [x], "Mask": [mask], "InTrue": [in_true],
                                                 "InFalse": [in_false]},
                     outputs={"Out": [out]}, attrs={"level": int(level)})
    return out


def select_output(input, outputs, mask):
    """Copy ``input`` into ``outputs[mask]`` (``mask`` an int32 ``[1]``); returns ``outputs``."""
    helper = LayerHelper("select_output")
    helper.append_op("select_output", inputs={"X": [input], "Mask": [mask]}, outputs={"Out": list(outputs)})
    return outputs


def cross_entropy2(input, label, ignore_index=-100):
    """Paddle's hard-label cross entropy (the op ``cross_entropy`` uses for hard labels)."""
    return cross_entropy(input, label, soft_label=False, ignore_index=ignore_index)


def save(x, file_path, overwrite=True):
    """Write ``x`` to ``file_path`` when the program runs (a ``save`` op; ``layers.load`` reads it)."""
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
        "ListenAndServ": refused_class("fluid.layers.io.ListenAndServ", _PSERVER),
        "BlockGuardServ": refused_class("fluid.layers.io.BlockGuardServ", _PSERVER),
        "Send": refused("fluid.layers.io.Send", _PSERVER),
        "Recv": refused("fluid.layers.io.Recv", _PSERVER),
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
