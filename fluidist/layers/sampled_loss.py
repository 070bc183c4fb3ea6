"""Losses over large label sets with Paddle 1.8 signatures: nce, hsigmoid,
sampled_softmax_with_cross_entropy."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..framework.program import Variable
from .hints import ParamAttrLike

from ..initializer import NumpyArrayInitializer
from ..param_attr import ParamAttr
from .layer_helper import LayerHelper, check_variable

__all__ = ["nce", "hsigmoid", "sampled_softmax_with_cross_entropy"]

_SAMPLERS = {"uniform": 0, "log_uniform": 1, "custom_dist": 2}


_check = check_variable


def alias_table(probs: Sequence[float]) -> tuple[list[int], list[float]]:
    """Walker's alias table of a distribution over n classes: (alias, accept probability) per class
    (alias -1 where a class keeps its whole column)."""
    n = len(probs)
    scaled = [float(p) * n for p in probs]
    alias, accept = [-1] * n, [1.0] * n
    small = [i for i, v in enumerate(scaled) if v < 1.0]
    large = [i for i, v in enumerate(scaled) if v > 1.0]
    while small and large:
        s, g = small.pop(), large.pop()
        alias[s], accept[s] = g, scaled[s]
        scaled[g] -= 1.0 - scaled[s]
        if scaled[g] < 1.0:
            small.append(g)
        elif scaled[g] > 1.0:
            large.append(g)
    return alias, accept


def nce(input: Variable, label: Variable, num_total_classes: int, sample_weight: Variable | None = None,
        param_attr: ParamAttrLike = None, bias_attr: ParamAttrLike = None, num_neg_samples: int | None = None,
        name: str | None = None, sampler: str = "uniform", custom_dist: Sequence[float] | None = None,
        seed: int = 0, is_sparse: bool = False) -> Variable:
    """Noise-contrastive estimation: a loss over many classes that scores each sample's true
    classes against a few sampled ones instead of all.

    Creates the weight ``[num_total_classes, D]`` and the bias ``[num_total_classes, 1]``.

    Args:
        input: features ``[N, D]``.
        label: int64 true classes ``[N, num_true]``.
        num_total_classes: the number of classes.
        sample_weight: ``[N, 1]`` weights of the samples' costs; 1 when None.
        param_attr: the weight's attribute.
        bias_attr: the bias's attribute; ``False`` for none.
        num_neg_samples: how many negative classes to sample per sample (10 when None).
        name: the prefix of the parameters' names (generated when None).
        sampler: ``"uniform"``, ``"log_uniform"`` or ``"custom_dist"``.
        custom_dist: with ``"custom_dist"``, one probability per class.
        seed: the sampler's seed (0: fresh samples each run).
        is_sparse: a row-sparse weight gradient (only the sampled rows).

    Returns:
        A Variable ``[N, 1]``: each sample's cost divided by ``num_neg_samples + 1``.

    Raises:
        ValueError: an unknown ``sampler``, or a ``custom_dist`` without one value per class.

    Examples:
        >>> feat = fluid.data(name="feat", shape=[None, 16], dtype="float32")
        >>> word = fluid.data(name="word", shape=[None, 1], dtype="int64")
        >>> cost = fluid.layers.nce(feat, word, num_total_classes=1000, num_neg_samples=5)
        >>> loss = fluid.layers.mean(cost)
    """
    _check(input, "nce", "input")
    _check(label, "nce", "label")
    if sampler not in _SAMPLERS:
        raise ValueError("nce: sampler must be 'uniform', 'log_uniform' or 'custom_dist', got %r" % (sampler,))
    helper = LayerHelper("nce", input=input, param_attr=param_attr, bias_attr=bias_attr, name=name)
    dim = input.shape[1]
    w = helper.create_parameter(attr=helper.param_attr, shape=[num_total_classes, dim], dtype=input.dtype)
    inputs = {"Input": [input], "Label": [label], "Weight": [w]}
    if helper.bias_attr:
        inputs["Bias"] = [helper.create_parameter(attr=helper.bias_attr, shape=[num_total_classes, 1], is_bias=True,
                                                  dtype=input.dtype)]
    if sample_weight is not None:
        inputs["SampleWeight"] = [sample_weight]
    if sampler == "custom_dist":
        if custom_dist is None or len(custom_dist) != num_total_classes:
            raise ValueError("nce: custom_dist must give a probability for each of the %d classes" % num_total_classes)
        alias, accept = alias_table(custom_dist)

        def constant(value, dtype):
            arr = np.asarray(value, dtype=dtype)
            p = helper.create_parameter(attr=ParamAttr(), shape=arr.shape, dtype=dtype,
                                        default_initializer=NumpyArrayInitializer(arr))
            p.stop_gradient = True
            return [p]

        inputs["CustomDistProbs"] = constant(custom_dist, "float32")
        inputs["CustomDistAlias"] = constant(alias, "int32")
        inputs["CustomDistAliasProbs"] = constant(accept, "float32")
    num_neg_samples = 10 if num_neg_samples is None else int(num_neg_samples)
    cost = helper.create_variable_for_type_inference(input.dtype)
    sample_logits = helper.create_variable_for_type_inference(input.dtype)
    sample_labels = helper.create_variable_for_type_inference(label.dtype)
    helper.append_op("nce", inputs=inputs,
                     outputs={"Cost": [cost], "SampleLogits": [sample_logits], "SampleLabels": [sample_labels]},
                     attrs={"num_total_classes": int(num_total_classes), "num_neg_samples": num_neg_samples,
                            "seed": int(seed), "sampler": _SAMPLERS[sampler], "is_sparse": bool(is_sparse),
                            "remote_prefetch": bool(is_sparse)})
    return cost / (num_neg_samples + 1)


def hsigmoid(input: Variable, label: Variable, num_classes: int, param_attr: ParamAttrLike = None,
             bias_attr: ParamAttrLike = None, name: str | None = None, path_table: Variable | None = None,
             path_code: Variable | None = None, is_custom: bool = False, is_sparse: bool = False) -> Variable:
    """The hierarchical sigmoid loss: a class is a path in a binary tree, scored by one sigmoid per
    node on the path.

    With the default tree (a complete binary tree of ``num_classes`` leaves) the weight is
    ``[num_classes - 1, D]``; a custom tree is given per sample by ``path_table`` and
    ``path_code`` and its weight is ``[num_classes, D]``.

    Args:
        input: features ``[N, D]``.
        label: int64 classes ``[N, 1]``.
        num_classes: the number of classes (default tree, >= 2) or of non-leaf nodes (custom tree).
        param_attr: the weight's attribute.
        bias_attr: the bias's attribute; ``False`` for none.
        name: the prefix of the parameters' names (generated when None).
        path_table: int64 ``[N, depth]``, each sample's node ids from the root (-1 padded).
        path_code: int64 ``[N, depth]``, the branch (0 / 1) taken at each node.
        is_custom: use ``path_table`` / ``path_code``.
        is_sparse: a row-sparse weight gradient (custom tree only, as in Paddle).

    Returns:
        A Variable ``[N, 1]``, each sample's loss.

    Raises:
        ValueError: a default tree of fewer than 2 classes or with path arguments, or a custom
            tree without them.

    Examples:
        >>> feat = fluid.data(name="feat", shape=[None, 16], dtype="float32")
        >>> label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        >>> loss = fluid.layers.hsigmoid(feat, label, num_classes=6)
        >>> loss.shape
        (-1, 1)
    """
    _check(input, "hsigmoid", "input")
    _check(label, "hsigmoid", "label")
    if not is_custom and (num_classes is None or num_classes < 2):
        raise ValueError("hsigmoid: num_classes must be at least 2 with the default tree")
    if not is_custom and (path_table is not None or path_code is not None):
        raise ValueError("hsigmoid: path_table and path_code are for a custom tree; set is_custom=True")
    if is_custom and (path_table is None or path_code is None or num_classes is None):
        raise ValueError("hsigmoid: a custom tree needs path_table, path_code and num_classes")
    if not is_custom:
        is_sparse = False  # a row-sparse gradient needs a custom tree, as in Paddle
    helper = LayerHelper("hierarchical_sigmoid", input=input, param_attr=param_attr, bias_attr=bias_attr, name=name)
    dtype = helper.input_dtype()
    rows = num_classes if is_custom else num_classes - 1
    w = helper.create_parameter(attr=helper.param_attr, shape=[rows, input.shape[1]], dtype=input.dtype)
    inputs = {"X": [input], "W": [w], "Label": [label]}
    if is_custom:
        inputs["PathTable"] = [path_table]
        inputs["PathCode"] = [path_code]
    if helper.bias_attr:
        inputs["Bias"] = [helper.create_parameter(attr=helper.bias_attr, shape=[rows, 1], is_bias=True,
                                                  dtype=input.dtype)]
    out = helper.create_variable_for_type_inference(dtype)
    pre_out = helper.create_variable_for_type_inference(dtype)
    helper.append_op("hierarchical_sigmoid", inputs=inputs, outputs={"Out": [out], "PreOut": [pre_out], "W_Out": [w]},
                     attrs={"num_classes": int(num_classes), "is_sparse": bool(is_sparse),
                            "remote_prefetch": bool(is_sparse)})
    return out


def sampled_softmax_with_cross_entropy(logits: Variable, label: Variable, num_samples: int, num_true: int = 1,
                                       remove_accidental_hits: bool = True, use_customized_samples: bool = False,
                                       customized_samples: Variable | None = None,
                                       customized_probabilities: Variable | None = None,
                                       seed: int = 0) -> Variable:
    """Softmax cross entropy over the true classes and ``num_samples`` sampled ones, instead of
    all classes (``sample_logits``, ``one_hot``, ``softmax_with_cross_entropy``).

    Args:
        logits: ``[N, classes]``.
        label: int64 true classes ``[N, num_true]``.
        num_samples: how many classes to sample (log-uniformly) per batch.
        num_true: the number of true classes per sample; the loss is divided by it.
        remove_accidental_hits: mask sampled classes that are a sample's true class.
        use_customized_samples: use ``customized_samples`` instead of sampling.
        customized_samples: int64 ``[N, num_true + num_samples]`` class ids.
        customized_probabilities: their probabilities, same shape.
        seed: the sampler's seed (0: fresh samples each run).

    Returns:
        A Variable ``[N, 1]``, each sample's loss.

    Raises:
        ValueError: ``use_customized_samples`` without the samples and probabilities.

    Examples:
        >>> logits = fluid.data(name="logits", shape=[None, 1000], dtype="float32")
        >>> label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        >>> loss = fluid.layers.sampled_softmax_with_cross_entropy(logits, label, num_samples=25)
    """
    _check(logits, "sampled_softmax_with_cross_entropy", "logits")
    _check(label, "sampled_softmax_with_cross_entropy", "label")
    if use_customized_samples and (customized_samples is None or customized_probabilities is None):
        raise ValueError("sampled_softmax_with_cross_entropy: use_customized_samples needs customized_samples and "
                         "customized_probabilities")
    helper = LayerHelper("sample_logits")
    samples = customized_samples if use_customized_samples else helper.create_variable_for_type_inference("int64")
    probabilities = customized_probabilities if use_customized_samples else \
        helper.create_variable_for_type_inference(logits.dtype)
    sampled_logits = helper.create_variable_for_type_inference(logits.dtype)
    sampled_label = helper.create_variable_for_type_inference("int64")
    sampled_softlabel = helper.create_variable_for_type_inference(logits.dtype)
    logits_dim = helper.create_variable_for_type_inference("int64")
    labels_dim = helper.create_variable_for_type_inference("int64")
    inputs = {"Logits": [logits], "Labels": [label]}
    if customized_samples is not None and customized_probabilities is not None and use_customized_samples:
        inputs["CustomizedSamples"] = [customized_samples]
        inputs["CustomizedProbabilities"] = [customized_probabilities]
    helper.append_op("sample_logits", inputs=inputs,
                     outputs={"Samples": [samples], "Probabilities": [probabilities], "SampledLabels": [sampled_label],
                              "SampledLogits": [sampled_logits], "LogitsDim": [logits_dim], "LabelsDim": [labels_dim]},
                     attrs={"use_customized_samples": bool(use_customized_samples), "uniq": True,
                            "remove_accidental_hits": bool(remove_accidental_hits), "num_samples": int(num_samples),
                            "seed": int(seed)})
    loss = helper.create_variable_for_type_inference(logits.dtype)
    softmax = helper.create_variable_for_type_inference(logits.dtype)
    helper.append_op("one_hot", inputs={"X": [sampled_label]}, outputs={"Out": [sampled_softlabel]},
                     attrs={"depth": int(num_samples) + 1})
    helper.append_op("softmax_with_cross_entropy", inputs={"Logits": [sampled_logits], "Label": [sampled_softlabel]},
                     outputs={"Softmax": [softmax], "Loss": [loss]},
                     attrs={"soft_label": True, "ignore_index": 0, "numeric_stable_mode": False})
    return loss / num_true
