"""Paddle's ``axis`` broadcasting of elementwise ops: the shape Y is viewed with against X, and a
gradient summed back down to its input's shape (the elementwise ops of ``math``, and the fused,
matmul, conditional and double-gradient ops that broadcast as they do); ``linear_grad_call``, the
bound gradient of ``elementwise_add`` / ``_sub``."""
import numpy as np


def _y_view_shape(xshape, yshape, axis):
    """The shape Y is viewed with to broadcast against X, per Paddle's ``axis`` rule: Y's dims
    (trailing 1s dropped) line up with X's starting at ``axis`` (default rank(X) - rank(Y))."""
    rx, ry = len(xshape), len(yshape)
    if xshape == yshape or ry > rx:
        return yshape
    if axis is None or axis == -1:
        axis = rx - ry
    if ry == 1 and axis == rx - 1:
        return (1,) * (rx - 1) + tuple(yshape)
    ys = list(yshape)
    while len(ys) > 1 and ys[-1] == 1:
        ys.pop()
    if axis < 0 or axis + len(ys) > rx:
        raise ValueError("elementwise: Y of shape %s cannot be aligned with X of shape %s at axis %d"
                         % (list(yshape), list(xshape), axis))
    return (1,) * axis + tuple(ys) + (1,) * (rx - axis - len(ys))


def _view_shape(xshape, yshape, axis):
    """``_y_view_shape`` of two arrays' shapes, remembered (a step meets the same shapes each time)."""
    key = (xshape, yshape, axis)
    vs = _VIEW_SHAPES.get(key)
    if vs is None:
        vs = _y_view_shape(xshape, yshape, axis)
        if len(_VIEW_SHAPES) >= 4096:      # (shapes change with the batch size: keep it bounded)
            _VIEW_SHAPES.clear()
        _VIEW_SHAPES[key] = vs
    return vs


_VIEW_SHAPES: dict = {}


def _bcast(x, y, axis):
    ys = _view_shape(x.shape, y.shape, axis)
    return y if ys == y.shape else y.reshape(ys)


def _reduce_grad(xp, g, target_shape, view_shape):
    """Sum ``g`` down to ``view_shape`` (the broadcast view) and reshape to ``target_shape``."""
    gshape = g.shape
    if gshape == target_shape:
        return g
    gshape = tuple(gshape)
    if gshape == tuple(target_shape):
        return g
    axes = summed_axes(gshape, view_shape)
    if axes:
        g = sum_over_axes(xp, g, axes)
    return g.reshape(target_shape)


def summed_axes(gshape, view_shape):
    """The axes of a gradient of shape ``gshape`` (a tuple) that ``_reduce_grad`` sums to reach
    ``view_shape``, remembered."""
    key = (gshape, tuple(view_shape))
    axes = _SUMMED_AXES.get(key)
    if axes is None:
        nd = len(gshape)
        vs = (1,) * (nd - len(view_shape)) + tuple(view_shape)
        axes = tuple(i for i in range(nd) if vs[i] == 1 and gshape[i] != 1)
        if len(_SUMMED_AXES) >= 4096:      # (shapes change with the batch size: keep it bounded)
            _SUMMED_AXES.clear()
        _SUMMED_AXES[key] = axes
    return axes


_SUMMED_AXES: dict = {}     # (gradient shape, view shape) -> the axes _reduce_grad sums
_GEMV_MIN_STRIDED, _GEMV_MIN_ROWS = 8192, 131072


def sum_over_axes(xp, g, axes):
    """``g.sum(axis=axes, keepdims=True)``. A floating ``g`` whose summed axes are a leading and / or a
    trailing run (a bias gradient: (N, C, H, W) summed to C) is summed by matrix-vector products with
    ones: NumPy's sum over strided axes is several times slower than BLAS there."""
    if g.size < _GEMV_MIN_STRIDED:     # (the smaller of the two sizes below)
        if xp is np:        # what ndarray.sum calls, without its Python-level wrapper
            return np.add.reduce(g, axis=tuple(axes), keepdims=True)
        return g.sum(axis=tuple(axes), keepdims=True)
    nd, axes = g.ndim, sorted(axes)
    lead = 0
    while lead < len(axes) and axes[lead] == lead:
        lead += 1
    trail = axes[lead:]
    first_trail = nd - len(trail)
    # (a product's fixed cost is about 5 us: below these sizes NumPy's sum is the faster)
    big = g.size >= (_GEMV_MIN_STRIDED if trail else _GEMV_MIN_ROWS)
    if not big or trail != list(range(first_trail, nd)) or lead == first_trail or g.dtype.kind != "f" \
            or g.dtype.itemsize < 4:
        return g.sum(axis=tuple(axes), keepdims=True)
    shape = g.shape
    n_lead, n_trail = int(np.prod(shape[:lead])), int(np.prod(shape[first_trail:]))
    r = g.reshape(n_lead, -1, n_trail)
    r = r @ xp.ones(n_trail, dtype=g.dtype) if n_trail > 1 else r[:, :, 0]
    r = xp.ones(n_lead, dtype=g.dtype) @ r if n_lead > 1 else r[0]
    return r.reshape(tuple(1 if i in axes else d for i, d in enumerate(shape)))


def linear_grad_call(xp, axis, want_x, want_y, negate_y, general):
    """The bound gradient of ``elementwise_add`` / ``_sub`` (dX = dOut, dY = dOut or -dOut, each summed
    down to its input's shape): the general path's NumPy calls, with Y's summed axes worked out once
    for the shapes last seen (a step meets the same shapes each time). Other cases (dX summed too, a
    gradient big enough for ``sum_over_axes``'s products) take the general path."""
    # X's, Y's and dOut's shapes last seen and what _linear_axes said of them, as one tuple: read and
    # replaced whole, so that threads running the same plan never mix two calls' shapes
    seen = (None, None, None, False, True)
    on_host = xp is np

    def call(x, y, d):
        nonlocal seen
        xs, ys, ds = x.shape, y.shape, d.shape
        memo = seen
        if ds != memo[2] or xs != memo[0] or ys != memo[1]:
            memo = seen = (xs, ys, ds) + _linear_axes(axis, xs, ys, ds)
        axes, keep = memo[3], memo[4]
        if axes is False:
            return general(x, y, d)
        if not want_y:
            return d
        g = -d if negate_y else d
        if axes is not None:
            # _reduce_grad: summed over its axes, if any (as sum_over_axes), then shaped as Y; where Y's
            # shape is the sum's without the summed axes, the sum without keepdims is that already
            if axes:
                g = np.add.reduce(g, axis=axes, keepdims=keep) if on_host else g.sum(axis=axes, keepdims=keep)
            if keep:
                g = g.reshape(ys)
        return (d, g) if want_x else g
    return call


def _linear_axes(axis, xs, ys, ds):
    """(Y's summed axes, whether the sum keeps them) for ``linear_grad_call``: axes None where dOut has Y's
    shape, False for the general path."""
    if ds != xs:
        return False, True
    vs = ys if xs == ys else _view_shape(xs, ys, axis)    # (raises for shapes that do not align, as the kernel)
    if ds == ys:
        return None, True
    size = 1
    for n in ds:
        size *= n
    if size >= _GEMV_MIN_STRIDED:
        return False, True
    axes = summed_axes(ds, vs)
    # (a sum over every axis without keepdims would be a NumPy scalar, not the 0-d array)
    return axes, not axes or not ys or tuple(n for i, n in enumerate(ds) if i not in axes) != ys
