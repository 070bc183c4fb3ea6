"""Model-specific layers of Paddle 1.8's ``layers/nn.py``: mean_iou, fsp_matrix, continuous_value_model,
merge_selected_rows, get_tensor_from_selected_rows, hash, similarity_focus."""
from __future__ import annotations

from ..framework.dtypes import VarType
from ..framework.program import Variable
from ._build import check_var, one_op
from .layer_helper import LayerHelper

__all__ = ["mean_iou", "fsp_matrix", "continuous_value_model", "merge_selected_rows", "get_tensor_from_selected_rows",
           "hash", "similarity_focus"]


def mean_iou(input: Variable, label: Variable, num_classes: int) -> tuple[Variable, Variable, Variable]:
    """Mean intersection-over-union of predicted class ids against labels (image segmentation).

    Args:
        input: int predicted class ids, any shape.
        label: int true class ids, ``input``'s shape.
        num_classes: the number of classes.

    Returns:
        ``(mean_iou, wrong, correct)``: float32 ``[1]``, and int32 ``[num_classes]`` counts of
        wrong and correct predictions per class (no gradient).

    Examples:
        >>> pred = fluid.layers.assign(np.array([0, 1, 1, 2], "int32"))
        >>> label = fluid.layers.assign(np.array([0, 1, 2, 2], "int32"))
        >>> miou, wrong, correct = fluid.layers.mean_iou(pred, label, num_classes=3)
        >>> m, c = fluid.Executor(fluid.CPUPlace()).run(fetch_list=[miou, correct])
        >>> round(float(m[0]), 4), c.tolist()
        (0.6667, [1, 1, 1])
    """
    check_var(input, "mean_iou", "Predictions")
    check_var(label, "mean_iou", "Labels")
    helper = LayerHelper("mean_iou")
    outs = [helper.create_variable_for_type_inference(dt, stop_gradient=True)
            for dt in ("float32", "int32", "int32")]
    helper.append_op("mean_iou", inputs={"Predictions": [input], "Labels": [label]},
                     outputs={"OutMeanIou": [outs[0]], "OutWrong": [outs[1]], "OutCorrect": [outs[2]]},
                     attrs={"num_classes": int(num_classes)})
    return outs[0], outs[1], outs[2]


def fsp_matrix(x: Variable, y: Variable) -> Variable:
    """The FSP ("flow of solution procedure") matrix of two feature maps, used in distillation.

    Per sample, ``x`` and ``y`` flattened to ``[C, H * W]`` give ``x @ y.T / (H * W)``.

    Args:
        x: a feature map ``[N, C_x, H, W]``.
        y: a feature map ``[N, C_y, H, W]``.

    Returns:
        A Variable ``[N, C_x, C_y]``.

    Examples:
        >>> a = fluid.data(name="a", shape=[None, 4, 8, 8], dtype="float32")
        >>> b = fluid.data(name="b", shape=[None, 6, 8, 8], dtype="float32")
        >>> fluid.layers.fsp_matrix(a, b).shape
        (-1, 4, 6)
    """
    check_var(x, "fsp_matrix", "x")
    check_var(y, "fsp_matrix", "y")
    return one_op("fsp", {"X": x, "Y": y}, layer="fsp_matrix")


def continuous_value_model(input: Variable, cvm: Variable, use_cvm: bool = True) -> Variable:
    """The show / click columns of CTR features, transformed or dropped.

    ``input``'s first two columns are show and click counts; with ``use_cvm`` they become
    ``log(show + 1)`` and ``log(click + 1) - log(show + 1)``, else they are dropped. The gradient
    puts ``cvm``'s values in those two columns, as Paddle does.

    Args:
        input: ``[N, 2 + width]`` features (show, click, then the embedding).
        cvm: ``[N, 2]`` show and click values (for the gradient).
        use_cvm: transform the two columns (True) or drop them.

    Returns:
        A Variable ``[N, 2 + width]``, or ``[N, width]`` without ``use_cvm``.

    Examples:
        >>> emb = fluid.data(name="emb", shape=[None, 10], dtype="float32")
        >>> show_click = fluid.data(name="show_click", shape=[None, 2], dtype="float32")
        >>> fluid.layers.continuous_value_model(emb, show_click, use_cvm=False).shape
        (-1, 8)
    """
    check_var(input, "continuous_value_model", "input")
    check_var(cvm, "continuous_value_model", "cvm")
    return one_op("cvm", {"X": input, "CVM": cvm}, {"use_cvm": bool(use_cvm)}, out_slot="Y", layer="cvm")


def merge_selected_rows(x: Variable, name: str | None = None) -> Variable:
    """A row-sparse (SelectedRows) tensor with its repeated rows summed into one.

    Args:
        x: a SelectedRows Variable, e.g. the gradient of a sparse ``embedding``.
        name: the output's name (generated when None).

    Returns:
        A SelectedRows Variable whose rows are unique.

    Examples:
        >>> ids = fluid.data(name="ids", shape=[None, 1], dtype="int64")
        >>> emb = fluid.layers.embedding(ids, size=[100, 8], is_sparse=True)
        >>> grads = fluid.backward.append_backward(fluid.layers.mean(emb))
        >>> merged = fluid.layers.merge_selected_rows(grads[0][1])
    """
    check_var(x, "merge_selected_rows", "x")
    helper = LayerHelper("merge_selected_rows", name=name)
    out = helper.create_variable_for_type_inference(x.dtype, type="SELECTED_ROWS")
    helper.append_op("merge_selected_rows", inputs={"X": [x]}, outputs={"Out": [out]})
    return out


def get_tensor_from_selected_rows(x: Variable, name: str | None = None) -> Variable:
    """The value rows of a row-sparse (SelectedRows) tensor, as a dense tensor.

    Args:
        x: a SelectedRows Variable.
        name: the output's name (generated when None).

    Returns:
        A dense Variable ``[rows, width]`` (one row per stored row of ``x``).

    Examples:
        >>> ids = fluid.data(name="ids", shape=[None, 1], dtype="int64")
        >>> emb = fluid.layers.embedding(ids, size=[100, 8], is_sparse=True)
        >>> grads = fluid.backward.append_backward(fluid.layers.mean(emb))
        >>> dense = fluid.layers.get_tensor_from_selected_rows(grads[0][1])
    """
    check_var(x, "get_tensor_from_selected_rows", "x")
    if x.type != VarType.SELECTED_ROWS:     # Paddle 1.8's check: a dense tensor is refused
        raise TypeError("The type of 'x' in get_tensor_from_selected_rows must be SELECTED_ROWS, got %s (variable %r)"
                        % (x.type, x.name))
    return one_op("get_tensor_from_selected_rows", {"X": x}, name=name)


def hash(input: Variable, hash_size: int, num_hash: int = 1, name: str | None = None) -> Variable:
    """``num_hash`` hashes of each row of int ids, as Paddle computes them (XXH64 of the row's
    bytes with seeds 0, 1, ..., modulo ``hash_size``).

    Args:
        input: int32 or int64 ids ``[N, width]``.
        hash_size: the hashes' range ``[0, hash_size)``.
        num_hash: how many hashes per row.
        name: the output's name (generated when None).

    Returns:
        A Variable ``[N, num_hash, 1]`` of ``input``'s dtype (no gradient).

    Raises:
        TypeError: ids that are not int32 or int64.

    Examples:
        >>> ids = fluid.data(name="ids", shape=[None, 1], dtype="int64")
        >>> buckets = fluid.layers.hash(ids, hash_size=1000, num_hash=2)
        >>> out, = fluid.Executor(fluid.CPUPlace()).run(feed={"ids": np.array([[7], [7]], "int64")},
        ...                                             fetch_list=[buckets])
        >>> out.shape, bool((out[0] == out[1]).all())
        ((2, 2, 1), True)
    """
    check_var(input, "hash", "input")
    return one_op("hash", {"X": input}, {"num_hash": int(num_hash), "mod_by": int(hash_size)}, name=name,
                  stop_gradient=True)


def similarity_focus(input: Variable, axis: int, indexes: list[int], name: str | None = None) -> Variable:
    """A 0/1 focus mask of a 4-D similarity tensor.

    For each of ``indexes`` along ``axis``, the largest entries of that 2-D slice are taken
    greedily, one per row and column; the marks are OR-ed over the indexes and repeated along
    ``axis``.

    Args:
        input: a float tensor ``[N, A, B, C]``.
        axis: 1, 2 or 3.
        indexes: a non-empty list of indexes along ``axis``.
        name: the output's name (generated when None).

    Returns:
        A Variable of ``input``'s shape holding 0 and 1 (no gradient).

    Raises:
        ValueError: another ``axis``, or empty ``indexes``.

    Examples:
        >>> sim = fluid.data(name="sim", shape=[None, 2, 3, 3], dtype="float32")
        >>> mask = fluid.layers.similarity_focus(sim, axis=1, indexes=[0])
    """
    check_var(input, "similarity_focus", "input")
    if axis not in (1, 2, 3):
        raise ValueError("similarity_focus: axis must be 1, 2 or 3, got %r" % (axis,))
    if not isinstance(indexes, list) or not indexes:
        raise ValueError("similarity_focus: indexes must be a non-empty list, got %r" % (indexes,))
    return one_op("similarity_focus", {"X": input}, {"axis": axis, "indexes": [int(i) for i in indexes]}, name=name,
                  stop_gradient=True)
