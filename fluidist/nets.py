"""``fluid.nets``: the composite networks of Paddle 1.x, built from layers exactly as Paddle 1.8
builds them (the same ops in the same order, so programs and parameter names match)."""
from . import layers

__all__ = ["simple_img_conv_pool", "sequence_conv_pool", "glu", "scaled_dot_product_attention", "img_conv_group"]


def simple_img_conv_pool(input, num_filters, filter_size, pool_size, pool_stride, pool_padding=0, pool_type="max",
                         global_pooling=False, conv_stride=1, conv_padding=0, conv_dilation=1, conv_groups=1,
                         param_attr=None, bias_attr=None, act=None, use_cudnn=True):
    """``conv2d`` (with ``act``) then ``pool2d``: the convolution block of the classic digits model."""
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


def img_conv_group(input, conv_num_filter, pool_size, conv_padding=1, conv_filter_size=3, conv_act=None,
                   param_attr=None, conv_with_batchnorm=False, conv_batchnorm_drop_rate=0.0, pool_stride=1,
                   pool_type="max", use_cudnn=True):
    """A VGG block: for each entry of ``conv_num_filter`` a ``conv2d`` (then ``batch_norm`` with the
    activation and ``dropout`` when ``conv_with_batchnorm``), and one ``pool2d`` at the end. Per-conv
    arguments take one value or a list."""
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


def sequence_conv_pool(input, num_filters, filter_size, param_attr=None, act="sigmoid", pool_type="max",
                       bias_attr=None):
    """``sequence_conv`` over a LoD ``input`` then ``sequence_pool``: the text-classification block."""
    conv_out = layers.sequence_conv(input=input, num_filters=num_filters, filter_size=filter_size,
                                    param_attr=param_attr, bias_attr=bias_attr, act=act)
    return layers.sequence_pool(input=conv_out, pool_type=pool_type)


def glu(input, dim=-1):
    """Gated linear unit: ``input`` split in two halves ``a, b`` along ``dim``, ``a * sigmoid(b)``."""
    a, b = layers.split(input, num_or_sections=2, dim=dim)
    return layers.elementwise_mul(x=a, y=layers.sigmoid(x=b))


def scaled_dot_product_attention(queries, keys, values, num_heads=1, dropout_rate=0.0):
    """Multi-head attention ``softmax(Q K^T / sqrt(d)) V`` over 3-D [batch, length, width] inputs; with
    ``num_heads > 1`` Q, K and V are first projected (an ``fc`` each) and split into heads."""
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
