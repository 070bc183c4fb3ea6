"""Losses over large label sets with Paddle 1.8 signatures: nce, hsigmoid,
sampled_softmax_with_cross_entropy."""
import numpy as np

from ..initializer import NumpyArrayInitializer
from ..param_attr import ParamAttr
from .layer_helper import LayerHelper, check_variable

__all__ = ["nce", "hsigmoid", "sampled_softmax_with_cross_entropy"]

_SAMPLERS = {"uniform": 0, "log_uniform": 1, "custom_dist": 2}


_check = check_variable


def alias_table(probs):
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


def nce(input, label, num_total_classes, sample_weight=None, param_attr=None, bias_attr=None, num_neg_samples=None,
        name=None, sampler="uniform", custom_dist=None, seed=0, is_sparse=False):
    """Noise-contrastive estimation: per sample, its true classes against ``num_neg_samples`` (10)
    sampled classes (``uniform``, ``log_uniform`` or ``custom_dist``); returns the cost divided by
    ``num_neg_samples + 1``, [N, 1]. Weight [num_total_classes, D], Bias [num_total_classes, 1]."""
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


def hsigmoid(input, label, num_classes, param_attr=None, bias_attr=None, name=None, path_table=None, path_code=None,
             is_custom=False, is_sparse=False):
    """Hierarchical sigmoid loss ([N, 1]) over the default complete binary tree of ``num_classes``
    classes (W [num_classes - 1, D]), or over a custom tree given per sample by ``path_table`` (node
    ids, -1 padded) and ``path_code`` (W [num_classes, D])."""
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


def sampled_softmax_with_cross_entropy(logits, label, num_samples, num_true=1, remove_accidental_hits=True,
                                       use_customized_samples=False, customized_samples=None,
                                       customized_probabilities=None, seed=0):
    """Softmax cross entropy over the true classes and ``num_samples`` log-uniformly sampled ones
    (``sample_logits``, ``one_hot``, ``softmax_with_cross_entropy``), divided by ``num_true``."""
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
    if use_customized_samples:
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
