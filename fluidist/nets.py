"""``fluid.nets``: the composite networks of Paddle 1.x, built from layers exactly as Paddle 1.8
builds them (the same ops in the same order, so programs and parameter names match)."""
from __future__ import annotations

from typing import Sequence, Union

import fluidist.layers as layers
from .framework.program import Variable
from .layers.hints import ParamAttrLike

IntOrPair = Union[int, Sequence[int]]

__all__ = ["simple_img_conv_pool", "sequence_conv_pool", "glu", "scaled_dot_product_attention", "img_conv_group"]


def simple_img_conv_pool(input: Variable, num_filters: int, filter_size: IntOrPair, pool_size: IntOrPair,
                         pool_stride: IntOrPair, pool_padding: IntOrPair = 0, pool_type: str = "max",
                         global_pooling: bool = False, conv_stride: IntOrPair = 1, conv_padding: IntOrPair = 0,
                         conv_dilation: IntOrPair = 1, conv_groups: int = 1, param_attr: ParamAttrLike = None,
                         bias_attr: ParamAttrLike = None, act: str | None = None, use_cudnn: bool = True) -> Variable:
    """``conv2d`` (with ``act``) then ``pool2d``: the convolution block of the classic digits model.

    Args:
        input: images ``[N, C, H, W]``.
        num_filters: the convolution's output channels.
        filter_size: its filter size.
        pool_size: the pooling window.
        pool_stride: the pooling stride.
        pool_padding: the pooling padding.
        pool_type: ``"max"`` or ``"avg"``.
        global_pooling: pool the whole feature map.
        conv_stride: the convolution's stride.
        conv_padding: its padding.
        conv_dilation: its dilation.
        conv_groups: its groups.
        param_attr: the filter's attribute.
        bias_attr: the bias's attribute.
        act: the convolution's activation.
        use_cudnn: accepted for Paddle's signature.

    Returns:
        The pooled Variable.

    Examples:
        >>> img = fluid.data(name="img", shape=[None, 1, 28, 28], dtype="float32")
        >>> fluid.nets.simple_img_conv_pool(img, num_filters=20, filter_size=5, pool_size=2, pool_stride=2,
        ...                                 act="relu").shape
        (-1, 20, 12, 12)
    """
    conv_out = layers.conv2d(input=input, num_filters=num_filters, filter_size=filter_size, stride=conv_stride,
                             padding=conv_padding, dilation=conv_dilation, groups=conv_groups,
                             param_attr=param_attr, bias_attr=bias_attr, act=act, use_cudnn=use_cudnn)
    return layers.pool2d(input=conv_out, pool_size=pool_size, pool_type=pool_type, pool_stride=pool_stride,
                         pool_padding=pool_padding, global_pooling=global_pooling, use_cudnn=use_cudnn)


def _per_conv(value, n, what):
    """A per-convolution argument: one value for all ``n`` convolutions, or a list of ``n``."""
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError("img_conv_group: %s has %d entries for %d convolutions" % (what, len(value), n))
        return list(value)
    return [value] * n


def img_conv_group(input: Variable, conv_num_filter: Sequence[int], pool_size: IntOrPair,
                   conv_padding: IntOrPair | list = 1, conv_filter_size: IntOrPair | list = 3,
                   conv_act: str | None = None, param_attr: ParamAttrLike | list = None,
                   conv_with_batchnorm: bool | list = False, conv_batchnorm_drop_rate: float | list = 0.0,
                   pool_stride: IntOrPair = 1, pool_type: str = "max", use_cudnn: bool = True) -> Variable:
    """A VGG block: for each entry of ``conv_num_filter`` a ``conv2d`` (then ``batch_norm`` with the
    activation and ``dropout`` when ``conv_with_batchnorm``), and one ``pool2d`` at the end.

    Args:
        input: images ``[N, C, H, W]``.
        conv_num_filter: the output channels of each convolution.
        pool_size: the pooling window.
        conv_padding: the convolutions' padding (one value, or a list with one per convolution,
            as for the other per-convolution arguments).
        conv_filter_size: their filter sizes.
        conv_act: their activation (after the batch norm when there is one).
        param_attr: their filters' attributes.
        conv_with_batchnorm: a batch norm after each convolution.
        conv_batchnorm_drop_rate: the dropout after each batch norm.
        pool_stride: the pooling stride.
        pool_type: ``"max"`` or ``"avg"``.
        use_cudnn: accepted for Paddle's signature.

    Returns:
        The pooled Variable.

    Raises:
        TypeError: ``conv_num_filter`` is not a list.
        ValueError: a per-convolution list of another length.

    Examples:
        >>> img = fluid.data(name="img", shape=[None, 3, 32, 32], dtype="float32")
        >>> block = fluid.nets.img_conv_group(img, conv_num_filter=[16, 16], pool_size=2, pool_stride=2,
        ...                                   conv_act="relu", conv_with_batchnorm=True,
        ...                                   conv_batchnorm_drop_rate=[0.3, 0.0])
        >>> block.shape
        (-1, 16, 16, 16)
    """
    if not isinstance(conv_num_filter, (list, tuple)):
        raise TypeError("img_conv_group: conv_num_filter must be a list of filter counts")
    n = len(conv_num_filter)
    padding = _per_conv(conv_padding, n, "conv_padding")
    fsize = _per_conv(conv_filter_size, n, "conv_filter_size")
    pattr = _per_conv(param_attr, n, "param_attr")
    with_bn = _per_conv(conv_with_batchnorm, n, "conv_with_batchnorm")
    drop = _per_conv(conv_batchnorm_drop_rate, n, "conv_batchnorm_drop_rate")
    tmp = input
    for i in range(n):
        tmp = layers.conv2d(input=tmp, num_filters=conv_num_filter[i], filter_size=fsize[i], padding=padding[i],
                            param_attr=pattr[i], act=None if with_bn[i] else conv_act, use_cudnn=use_cudnn)
        if with_bn[i]:
            tmp = layers.batch_norm(input=tmp, act=conv_act)
            if abs(drop[i]) > 1e-5:
                tmp = layers.dropout(x=tmp, dropout_prob=drop[i])
    return layers.pool2d(input=tmp, pool_size=pool_size, pool_type=pool_type, pool_stride=pool_stride,
                         use_cudnn=use_cudnn)


def sequence_conv_pool(input: Variable, num_filters: int, filter_size: int, param_attr: ParamAttrLike = None,
                       act: str | None = "sigmoid", pool_type: str = "max", bias_attr: ParamAttrLike = None) -> Variable:
    """``sequence_conv`` over a LoD ``input`` then ``sequence_pool``: the text-classification block.

    Args:
        input: a LoD tensor ``[rows, width]`` (word embeddings).
        num_filters: the convolution's output features.
        filter_size: how many rows each output row sees.
        param_attr: the filter's attribute.
        act: the convolution's activation.
        pool_type: ``"max"``, ``"average"``, ``"sum"``, ``"sqrt"``, ``"last"`` or ``"first"``.
        bias_attr: the bias's attribute.

    Returns:
        A Variable ``[sequences, num_filters]``.

    Examples:
        >>> words = fluid.data(name="words", shape=[None, 16], dtype="float32", lod_level=1)
        >>> fluid.nets.sequence_conv_pool(words, num_filters=8, filter_size=3, act="tanh").shape
        (-1, 8)
    """
    conv_out = layers.sequence_conv(input=input, num_filters=num_filters, filter_size=filter_size,
                                    param_attr=param_attr, bias_attr=bias_attr, act=act)
    return layers.sequence_pool(input=conv_out, pool_type=pool_type)


def glu(input: Variable, dim: int = -1) -> Variable:
    """Gated linear unit: ``input`` split in two halves ``a, b`` along ``dim``, ``a * sigmoid(b)``.

    Args:
        input: a tensor whose ``dim`` is even.
        dim: the axis to split.

    Returns:
        A Variable with half of ``input``'s ``dim``.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 6], dtype="float32")
        >>> fluid.nets.glu(x).shape
        (-1, 3)
    """
    a, b = layers.split(input, num_or_sections=2, dim=dim)
    return layers.elementwise_mul(x=a, y=layers.sigmoid(x=b))


def scaled_dot_product_attention(queries: Variable, keys: Variable, values: Variable, num_heads: int = 1,
                                 dropout_rate: float = 0.0) -> Variable:
    """Multi-head attention ``softmax(Q K^T / sqrt(d)) V`` over 3-D ``[batch, length, width]``
    inputs; with ``num_heads > 1`` Q, K and V are first projected (an ``fc`` each) and split.

    Args:
        queries: ``[batch, length_q, width]``.
        keys: ``[batch, length_k, width]``.
        values: ``[batch, length_k, width_v]``.
        num_heads: the number of heads (dividing the widths).
        dropout_rate: dropout on the attention weights.

    Returns:
        A Variable ``[batch, length_q, width_v]``.

    Raises:
        ValueError: inputs that are not 3-D or whose sizes do not fit.

    Examples:
        >>> q = fluid.data(name="q", shape=[2, 5, 8], dtype="float32")
        >>> fluid.nets.scaled_dot_product_attention(q, q, q, num_heads=2).shape
        (2, 5, 8)
    """
    for v, what in ((queries, "queries"), (keys, "keys"), (values, "values")):
        if len(v.shape) != 3:
            raise ValueError("scaled_dot_product_attention: %s must be 3-D [batch, length, width], got shape %s"
                             % (what, list(v.shape)))
    if queries.shape[-1] != keys.shape[-1]:
        raise ValueError("scaled_dot_product_attention: queries and keys must have the same width, got %d and %d"
                         % (queries.shape[-1], keys.shape[-1]))
    if keys.shape[-2] != values.shape[-2]:
        raise ValueError("scaled_dot_product_attention: keys and values must have the same length, got %d and %d"
                         % (keys.shape[-2], values.shape[-2]))
    if keys.shape[-1] % num_heads or values.shape[-1] % num_heads:
        raise ValueError("scaled_dot_product_attention: widths %d (keys) and %d (values) must be divisible by "
                         "num_heads %d" % (keys.shape[-1], values.shape[-1], num_heads))

    def project(x):
        if num_heads == 1:
            return x
        return layers.fc(input=x, size=x.shape[-1], num_flatten_dims=2)

    def split_heads(x):
        if num_heads == 1:
            return x
        width = x.shape[-1]
        x = layers.reshape(x=x, shape=[x.shape[0], x.shape[1], num_heads, width // num_heads])
        return layers.transpose(x=x, perm=[0, 2, 1, 3])

    def combine_heads(x):
        if num_heads == 1:
            return x
        x = layers.transpose(x, perm=[0, 2, 1, 3])
        return layers.reshape(x=x, shape=[x.shape[0], x.shape[1], x.shape[2] * x.shape[3]])

    q, k, v = project(queries), project(keys), project(values)
    q, k, v = split_heads(q), split_heads(k), split_heads(v)
    scaled_q = layers.scale(x=q, scale=(keys.shape[-1] // num_heads) ** -0.5)
    product = layers.matmul(x=scaled_q, y=k, transpose_y=True)
    weights = layers.reshape(x=layers.softmax(layers.reshape(x=product, shape=[-1, product.shape[-1]])),
                             shape=list(product.shape))
    if dropout_rate:
        weights = layers.dropout(weights, dropout_prob=dropout_rate, is_test=False)
    return combine_heads(layers.matmul(weights, v))
