"""The normalisation, convolution, resize, loss and utility layers of fluid 1.8: the ops and
parameters they build, their errors, and small models that train with them."""
import numpy as np
import pytest

import fluidist as fluid
from fluidist.framework.program import Parameter


def _ops(prog):
    return [op.type for op in prog.global_block().ops]


def _build(fn):
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start):
        out = fn()
    return main, start, out


def _run(main, start, feed, fetch):
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(start)
    return exe.run(main, feed=feed, fetch_list=fetch)


# ------------------------------------------------------------------ normalisation layers
def test_layer_norm_parameters_and_errors():
    def net():
        x = fluid.layers.data("x", [3, 4])
        return fluid.layers.layer_norm(x, begin_norm_axis=1, act="relu")
    main, start, out = _build(net)
    assert _ops(main) == ["layer_norm", "relu"]
    op = main.global_block().ops[0]
    scale = main.global_block().var(op.input("Scale")[0])
    assert isinstance(scale, Parameter) and scale.shape == (12,) and scale.name == "layer_norm_0.w_0"
    init = {o.output("Out")[0]: o for o in start.global_block().ops}
    assert init[scale.name].attr("value") == 1.0 and init[op.input("Bias")[0]].attr("value") == 0.0
    assert out.shape == (-1, 3, 4)
    main.lint()
    with pytest.raises(ValueError, match="begin_norm_axis"):
        _build(lambda: fluid.layers.layer_norm(fluid.layers.data("x", [3]), begin_norm_axis=2))


def test_group_norm_without_affine_and_instance_norm():
    def net():
        x = fluid.layers.data("x", [4, 2, 2])
        a = fluid.layers.group_norm(x, groups=2, param_attr=False, bias_attr=False)
        b = fluid.layers.instance_norm(x)
        return a, b
    main, start, (a, b) = _build(net)
    gn, inorm = main.global_block().ops
    assert not gn.input("Scale") and not gn.input("Bias") and gn.attr("groups") == 2
    assert inorm.type == "instance_norm" and len(main.global_block().all_parameters()) == 2
    with pytest.raises(ValueError, match="groups=3 must divide the 4 channels"):
        _build(lambda: fluid.layers.group_norm(fluid.layers.data("x", [4, 2, 2]), groups=3))



def test_group_norm_has_scale_and_bias_only_when_their_attrs_are_given():
    # Paddle 1.8 tests the arguments themselves: by default (None) group_norm has no parameters and
    # runs without a startup program; NHWC groups the last axis
    x = np.random.RandomState(0).random_sample((2, 3, 3, 4))
    main, start, out = _build(lambda: fluid.layers.group_norm(fluid.data("x", [None, 3, 3, 4], "float64"), groups=2,
                                                              data_layout="NHWC"))
    assert not main.global_block().all_parameters()
    got, = fluid.Executor(fluid.CPUPlace()).run(main, feed={"x": x}, fetch_list=[out])
    g = x.reshape(2, 9, 2, 2)
    want = (g - g.mean(axis=(1, 3), keepdims=True)) / np.sqrt(g.var(axis=(1, 3), keepdims=True) + 1e-5)
    np.testing.assert_allclose(got, want.reshape(x.shape), rtol=1e-10)
    main, _, _ = _build(lambda: fluid.layers.group_norm(fluid.layers.data("x", [4, 2, 2]), groups=2,
                                                        param_attr=fluid.ParamAttr(name="gs"), bias_attr=True))
    assert sorted(p.name for p in main.global_block().all_parameters()) == ["group_norm_1.b_0", "gs"]

def test_data_norm_parameters_and_sync_stats():
    main, start, out = _build(lambda: fluid.layers.data_norm(fluid.layers.data("x", [3])))
    names = sorted(p.name for p in main.global_block().all_parameters())
    assert names == ["dn.batch_size", "dn.batch_square_sum", "dn.batch_sum"]
    y, = _run(main, start, {"x": np.ones((2, 3), np.float32)}, [out])
    np.testing.assert_allclose(y, np.ones((2, 3)))  # mean 0, scale sqrt(1e4 / 1e4)
    with pytest.raises(ValueError, match="sync_stats"):
        _build(lambda: fluid.layers.data_norm(fluid.layers.data("x", [3]), sync_stats=True))


def test_spectral_norm_vectors_do_not_train():
    def net():
        w = fluid.layers.create_parameter([4, 3], "float32")
        return fluid.layers.spectral_norm(w, dim=0, power_iters=2)
    main, start, out = _build(net)
    op = main.global_block().ops[0]
    u, v = (main.global_block().var(op.input(s)[0]) for s in ("U", "V"))
    assert u.shape == (4,) and v.shape == (3,) and u.stop_gradient and v.stop_gradient
    with pytest.raises(TypeError, match="eps"):
        _build(lambda: fluid.layers.spectral_norm(fluid.layers.create_parameter([4, 3], "float32"), eps=1))


# ------------------------------------------------------------------ convolution and resize layers
def test_conv2d_transpose_layer():
    def net():
        x = fluid.layers.data("x", [4, 5, 5])
        a = fluid.layers.conv2d_transpose(x, num_filters=6, filter_size=3, stride=2, padding=1, groups=2)
        b = fluid.layers.conv2d_transpose(x, num_filters=4, output_size=[10, 11], stride=2, bias_attr=False)
        c = fluid.layers.conv2d_transpose(x, num_filters=4, filter_size=2, groups=4, use_cudnn=False)
        return a, b, c
    main, start, (a, b, c) = _build(net)
    ops = main.global_block().ops
    assert [o.type for o in ops] == ["conv2d_transpose", "elementwise_add", "conv2d_transpose",
                                     "depthwise_conv2d_transpose", "elementwise_add"]
    assert main.global_block().var(ops[0].input("Filter")[0]).shape == (4, 3, 3, 3)
    assert a.shape == (-1, 6, 9, 9) and b.shape == (-1, 4, 10, 11) and c.shape == (-1, 4, 6, 6)
    assert main.global_block().var(ops[2].input("Filter")[0]).shape == (4, 4, 2, 3)
    main.lint()
    with pytest.raises(ValueError, match="output_size must be set"):
        _build(lambda: fluid.layers.conv2d_transpose(fluid.layers.data("x", [4, 5, 5]), 2))


def test_conv3d_pool3d_layers():
    def net():
        x = fluid.layers.data("x", [2, 6, 6, 6])
        y = fluid.layers.conv3d(x, 4, 3, padding=1, act="relu")
        z = fluid.layers.pool3d(y, pool_size=2, pool_stride=2)
        t = fluid.layers.conv3d_transpose(z, 2, filter_size=2, stride=2)
        return y, z, t, fluid.layers.adaptive_pool3d(y, [1, 2, 3], pool_type="avg")
    main, start, (y, z, t, a) = _build(net)
    assert _ops(main) == ["conv3d", "elementwise_add", "relu", "pool3d", "conv3d_transpose", "elementwise_add",
                          "pool3d"]
    assert y.shape == (-1, 4, 6, 6, 6) and z.shape == (-1, 4, 3, 3, 3) and t.shape == (-1, 2, 6, 6, 6)
    assert a.shape == (-1, 4, 1, 2, 3)
    assert main.global_block().ops[4].attr("data_format") == "NCHW"  # conv3d_transpose's attr, as in Paddle
    vals = _run(main, start, {"x": np.random.RandomState(0).rand(1, 2, 6, 6, 6).astype(np.float32)}, [t, a])
    assert vals[0].shape == (1, 2, 6, 6, 6) and vals[1].shape == (1, 4, 1, 2, 3)


def test_image_resize_size_inputs():
    def net():
        x = fluid.layers.data("x", [2, 4, 6])
        h = fluid.layers.fill_constant([1], "int32", 3)
        size = fluid.layers.assign(np.array([5, 2], np.int32))
        scale = fluid.layers.fill_constant([1], "float32", 0.5)
        return (fluid.layers.resize_bilinear(x, out_shape=[h, 4]), fluid.layers.resize_nearest(x, out_shape=size),
                fluid.layers.resize_bilinear(x, scale=scale), fluid.layers.image_resize_short(x, 2),
                fluid.layers.resize_nearest(x, out_shape=[8, 8], actual_shape=size))
    main, start, outs = _build(net)
    ops = [o for o in main.global_block().ops if o.type.endswith("_interp")]
    assert len(ops[0].input("SizeTensor")) == 2 and ops[0].attr("out_h") == -1 and ops[0].attr("out_w") == 4
    assert ops[1].input("OutSize") and ops[2].input("Scale")
    main.lint()
    vals = _run(main, start, {"x": np.ones((1, 2, 4, 6), np.float32)}, list(outs))
    assert [v.shape for v in vals] == [(1, 2, 3, 4), (1, 2, 5, 2), (1, 2, 2, 3), (1, 2, 2, 3), (1, 2, 5, 2)]
    x4 = fluid.layers.data("x4", [2, 4, 6])
    with pytest.raises(ValueError, match="TRILINEAR needs a 5-D input"):
        fluid.layers.image_resize(x4, [2, 2], resample="TRILINEAR")
    with pytest.raises(ValueError, match="one of out_shape and scale"):
        fluid.layers.resize_bilinear(x4)


# ------------------------------------------------------------------ losses
def test_crf_tagger_trains_and_decodes():
    """A one-layer tagger with a CRF cost learns to tag 5-step sequences; chunk_eval scores it."""
    rng = np.random.RandomState(0)
    seq, tags = 5, 3

    def net():
        words = fluid.layers.data("w", [4], lod_level=1)
        label = fluid.layers.data("l", [1], dtype="int64", lod_level=1)
        emission = fluid.layers.fc(words, tags)
        cost = fluid.layers.linear_chain_crf(emission, label, param_attr=fluid.ParamAttr(name="crfw"))
        path = fluid.layers.crf_decoding(emission, param_attr=fluid.ParamAttr(name="crfw"))
        f1 = fluid.layers.chunk_eval(path, label, chunk_scheme="IOB", num_chunk_types=1)[2]
        loss = fluid.layers.mean(cost)
        fluid.optimizer.Adam(0.1).minimize(loss)
        return loss, f1
    main, start, (loss, f1) = _build(net)
    main.lint()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(start)
    lab = rng.randint(0, tags, (4 * seq, 1)).astype(np.int64)
    feats = np.eye(4, dtype=np.float32)[lab[:, 0]] + 0.1 * rng.rand(4 * seq, 4).astype(np.float32)
    feed = {"w": fluid.create_lod_tensor(feats, [[seq] * 4], fluid.CPUPlace()),
            "l": fluid.create_lod_tensor(lab, [[seq] * 4], fluid.CPUPlace())}
    first = last = None
    for _ in range(30):
        last, f = exe.run(main, feed=feed, fetch_list=[loss, f1])
        first = last if first is None else first
    assert float(last[0]) < 0.2 * float(first[0]) and float(f[0]) == 1.0
    with pytest.raises(ValueError, match="no parameter named 'nope'"):
        with fluid.program_guard(main, start):
            fluid.layers.crf_decoding(main.global_block().var("w"), param_attr=fluid.ParamAttr(name="nope"))


def test_nce_and_sampled_softmax_layers_train():
    rng = np.random.RandomState(1)

    def net():
        x = fluid.layers.data("x", [6])
        y = fluid.layers.data("y", [1], dtype="int64")
        h = fluid.layers.fc(x, 8)
        nce = fluid.layers.mean(fluid.layers.nce(h, y, num_total_classes=20, num_neg_samples=5, seed=3))
        logits = fluid.layers.fc(h, 20)
        ssm = fluid.layers.mean(fluid.layers.sampled_softmax_with_cross_entropy(logits, y, num_samples=6, seed=4))
        hs = fluid.layers.mean(fluid.layers.hsigmoid(h, y, num_classes=20))
        loss = nce + ssm + hs
        fluid.optimizer.SGD(0.5).minimize(loss)
        return loss
    main, start, loss = _build(net)
    types = _ops(main)
    assert types[types.index("nce") + 1] == "scale"
    i = types.index("sample_logits")
    assert types[i:i + 4] == ["sample_logits", "one_hot", "softmax_with_cross_entropy", "scale"]
    main.lint()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(start)
    y = rng.randint(0, 20, (32, 1)).astype(np.int64)
    x = np.eye(20, 6, dtype=np.float32)[y[:, 0] % 6] + y.astype(np.float32) / 20
    losses = [float(exe.run(main, feed={"x": x, "y": y}, fetch_list=[loss])[0][0]) for _ in range(40)]
    assert np.isfinite(losses).all() and np.mean(losses[-5:]) < 0.8 * np.mean(losses[:5])


def test_loss_layers_build_paddles_ops():
    def net():
        x = fluid.layers.data("x", [4])
        y = fluid.layers.data("y", [4])
        lab = fluid.layers.data("lab", [1], dtype="int64")
        hyp = fluid.layers.data("hyp", [1], dtype="int64", lod_level=1)
        fluid.layers.smooth_l1(x, y)
        fluid.layers.mse_loss(x, y)
        fluid.layers.center_loss(x, lab, num_classes=3, alpha=0.1, param_attr=fluid.ParamAttr(name="ctr"))
        fluid.layers.edit_distance(hyp, hyp, ignored_tokens=[0])
        fluid.layers.dice_loss(fluid.layers.softmax(x), lab)
    main, start, _ = _build(net)
    assert _ops(main)[:9] == ["smooth_l1_loss", "elementwise_sub", "square", "reduce_mean", "center_loss",
                              "sequence_erase", "sequence_erase", "edit_distance", "softmax"]
    centre = main.global_block().ops[4]
    assert centre.output("CentersOut") == ["ctr"] and centre.input("CenterUpdateRate") == ["centerloss_alpha"]
    main.lint()


# ------------------------------------------------------------------ py_func, error clip, initializers
def test_py_func_forward_backward_and_errors():
    calls = []

    def double(x):
        calls.append(np.array(x).shape)
        return 2 * np.array(x)

    def double_grad(dy):
        return 2 * np.array(dy)

    def net():
        x = fluid.layers.data("x", [3])
        x.stop_gradient = False
        out = fluid.default_main_program().current_block().create_var(name="o", shape=[-1, 3], dtype="float32")
        fluid.layers.py_func(double, x, out, backward_func=double_grad, skip_vars_in_backward_input=[x, out])
        loss = fluid.layers.reduce_sum(out)
        fluid.backward.append_backward(loss)
        return out
    main, start, out = _build(net)
    grad_op = [o for o in main.global_block().ops if o.type == "py_func"][1]
    assert grad_op.input("X") == ["o@GRAD"] and grad_op.attr("backward_callable_id") == -1
    o, g = _run(main, start, {"x": np.ones((2, 3), np.float32)}, [out, "x@GRAD"])
    np.testing.assert_allclose(o, 2 * np.ones((2, 3)))
    np.testing.assert_allclose(g, 2 * np.ones((2, 3)))
    assert calls == [(2, 3)]
    assert fluid.layers.py_func.registered_func(grad_op.attr("forward_callable_id")) is double_grad

    def bad_net():
        x = fluid.layers.data("x", [3])
        a = fluid.default_main_program().current_block().create_var(name="a", shape=[-1, 3], dtype="float32")
        b = fluid.default_main_program().current_block().create_var(name="b", shape=[-1, 3], dtype="float32")
        fluid.layers.py_func(lambda v: np.array(v), x, [a, b])
        return a
    main, start, a = _build(bad_net)
    with pytest.raises(ValueError, match="returned 1 values for 2 outputs"):
        _run(main, start, {"x": np.ones((1, 3), np.float32)}, [a])
    with pytest.raises(ValueError, match="not an input or output"):
        _build(lambda: fluid.layers.py_func(double, fluid.layers.data("x", [3]), None, backward_func=double_grad,
                                            skip_vars_in_backward_input=fluid.layers.data("z", [3])))


def test_error_clip_clips_a_gradient_where_it_is_produced():
    def net():
        x = fluid.layers.data("x", [2])
        h = fluid.layers.fc(x, 2, param_attr=fluid.initializer.Constant(1.0), bias_attr=False)
        h._set_error_clip(fluid.clip.ErrorClipByValue(0.1))
        loss = fluid.layers.reduce_sum(fluid.layers.square(fluid.layers.scale(h, 10.0)))
        fluid.optimizer.SGD(0.01).minimize(loss)
        return h
    main, start, h = _build(net)
    types = _ops(main)
    i = types.index("mul_grad")
    assert types[i - 1] == "clip"
    clip = main.global_block().ops[i - 1]
    assert clip.input("X") == clip.output("Out") == [h.name + "@GRAD"] and clip.attr("min") == -0.1
    g, = _run(main, start, {"x": np.ones((1, 2), np.float32)}, [h.name + "@GRAD"])
    np.testing.assert_allclose(g, [[0.1, 0.1]])


def test_init_on_cpu_and_bilinear_initializer():
    main, start, _ = _build(lambda: None)
    with fluid.program_guard(main, start):
        assert not fluid.initializer.force_init_on_cpu()
        with fluid.initializer.init_on_cpu():
            assert fluid.initializer.force_init_on_cpu()
            fluid.layers.create_global_var([1], 1.0, "float32", persistable=True, name="lr")
        assert not fluid.initializer.force_init_on_cpu()
        fluid.layers.create_global_var([1], 1.0, "float32", persistable=True, name="other")
        with pytest.raises(ValueError, match="square kernel"):
            fluid.layers.create_parameter([1, 1, 3, 2], "float32", default_initializer=fluid.initializer.Bilinear())
    force = {o.output("Out")[0]: o.attr("force_cpu") for o in start.global_block().ops}
    assert force == {"lr": True, "other": False}


def test_conv_and_pool_layers_take_only_a_bool_use_cudnn():
    # Paddle 1.8: conv layers refuse another use_cudnn with ValueError, pool layers with TypeError
    img, vol = ("x", [2, 5, 5, 5]), ("v", [2, 3, 4, 4, 4])
    cases = [(ValueError, lambda: fluid.layers.conv2d(fluid.data(*img), 3, 3, use_cudnn=[0])),
             (ValueError, lambda: fluid.layers.conv3d(fluid.data(*vol), 3, 3, use_cudnn=1)),
             (ValueError, lambda: fluid.layers.conv2d_transpose(fluid.data(*img), 3, filter_size=3, use_cudnn="yes")),
             (TypeError, lambda: fluid.layers.pool2d(fluid.data(*img), 2, use_cudnn=[0])),
             (TypeError, lambda: fluid.layers.pool3d(fluid.data(*vol), 2, use_cudnn=None))]
    for error, build in cases:
        with pytest.raises(error, match="use_cudnn"):
            _build(build)
    _build(lambda: fluid.layers.conv2d(fluid.data(*img), 3, 3, use_cudnn=False))


@pytest.mark.parametrize("shape,offsets,error", [
    ([2, -2, "dim", 3], None, ValueError), ([2, 0, "dim", 3], None, ValueError), ([2, -2, 3, 3], None, ValueError),
    ([2, 2, 3, 3], [0, -1, "dim", 0], ValueError), ([2, 2.0, "dim", 3], None, TypeError)])
def test_crop_tensor_checks_its_int_entries(shape, offsets, error):
    # Paddle 1.8: shape entries positive or -1, offsets >= 0, also beside Variables in the list
    def net():
        x = fluid.data("x", [2, 3, 6, 6], "float32")
        dim = fluid.data("dim", [1], "int32")
        pick = lambda vals: None if vals is None else [dim if v == "dim" else v for v in vals]  # noqa: E731
        return fluid.layers.crop_tensor(x, shape=pick(shape), offsets=pick(offsets))
    with pytest.raises(error):
        _build(net)
