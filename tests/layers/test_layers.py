"""Embedding, sequence, loss, metric and tensor layers: the ops and shapes they build, what they compute,
and an end-to-end LoD model trained with sparse and dense embeddings."""
import numpy as np
import pytest

import fluidist as fluid
from fluidist import layers

rng = np.random.RandomState(11)


def build(fn):
    """Run ``fn`` under fresh programs; returns (main, startup, fn's result)."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        res = fn()
    return main, startup, res


def run(main, startup, feed, fetch, return_numpy=True):
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    return exe.run(main, feed=feed, fetch_list=fetch, scope=scope, return_numpy=return_numpy)


def op_types(prog):
    return [op.type for op in prog.global_block().ops]


# ------------------------------------------------------------------ embedding
def test_embedding_builds_lookup_table():
    def net():
        ids = layers.data(name="ids", shape=[1], dtype="int64")
        return layers.embedding(ids, size=[100, 16], is_sparse=True, padding_idx=-1)
    main, startup, emb = build(net)
    op = main.global_block().ops[-1]
    assert op.type == "lookup_table"
    assert op.attr("is_sparse") is True and op.attr("is_distributed") is False
    assert op.attr("padding_idx") == 99  # negative counts from the end
    assert op.attr("remote_prefetch") is False
    w = main.global_block().var(op.input("W")[0])
    assert isinstance(w, fluid.Parameter) and w.shape == (100, 16)
    assert emb.shape == (-1, 16) and emb.dtype == "float32"
    assert op_types(startup) == ["uniform_random"]  # Xavier
    _, _, emb2 = build(lambda: layers.embedding(layers.data(name="i", shape=[1], dtype="int64"), size=[5, 2]))
    assert emb2.block.program.global_block().ops[-1].attr("padding_idx") == -1


def test_embedding_checks_its_arguments():
    with pytest.raises(ValueError, match="padding_idx 7 is out of range"):
        build(lambda: layers.embedding(layers.data(name="i", shape=[1], dtype="int64"), size=[5, 2], padding_idx=7))
    with pytest.raises(TypeError, match=r"embedding: argument 'input' takes dtype int64"):
        build(lambda: layers.embedding(layers.data(name="i", shape=[1], dtype="float32"), size=[5, 2]))
    with pytest.raises(ValueError, match="size must be"):
        build(lambda: layers.embedding(layers.data(name="i", shape=[1], dtype="int64"), size=[5]))


def test_embedding_padding_row_reads_zero():
    def net():
        ids = layers.data(name="ids", shape=[1], dtype="int64")
        return layers.embedding(ids, size=[4, 3], padding_idx=0,
                                param_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(2.0)))
    main, startup, emb = build(net)
    out = run(main, startup, {"ids": np.array([[0], [3]], np.int64)}, [emb])[0]
    np.testing.assert_array_equal(out, [[0, 0, 0], [2, 2, 2]])


# ------------------------------------------------------------------ sequence_pool
@pytest.mark.parametrize("pool_type", ["average", "sum", "sqrt", "max", "last", "first"])
def test_sequence_pool_layer(pool_type):
    def net():
        x = layers.data(name="x", shape=[3], dtype="float32", lod_level=1)
        return layers.sequence_pool(x, pool_type)
    main, startup, out = build(net)
    op = main.global_block().ops[-1]
    assert op.type == "sequence_pool" and op.attr("pooltype") == pool_type.upper()
    assert main.global_block().var(op.output("MaxIndex")[0]).stop_gradient
    assert out.shape == (-1, 3) and out.lod_level == 0
    x = rng.uniform(size=(5, 3)).astype(np.float32)
    got = run(main, startup, {"x": fluid.create_lod_tensor(x, [[2, 3]], fluid.CPUPlace())}, [out])[0]
    ref = {"average": np.mean, "sum": np.sum, "max": np.max, "sqrt": lambda a, axis: a.sum(axis) / np.sqrt(len(a)),
           "first": lambda a, axis: a[0], "last": lambda a, axis: a[-1]}[pool_type]
    np.testing.assert_allclose(got, [ref(x[:2], axis=0), ref(x[2:], axis=0)], rtol=1e-6)


def test_sequence_first_last_step_and_bad_pool_type():
    def net():
        x = layers.data(name="x", shape=[2], dtype="float32", lod_level=1)
        return layers.sequence_first_step(x), layers.sequence_last_step(x)
    main, startup, _ = build(net)
    assert [op.attr("pooltype") for op in main.global_block().ops] == ["FIRST", "LAST"]
    with pytest.raises(ValueError, match="pool_type 'median'"):
        build(lambda: layers.sequence_pool(layers.data(name="x", shape=[2], dtype="float32", lod_level=1), "median"))


# ------------------------------------------------------------------ losses
def test_cross_entropy_layer_ops():
    def net():
        p = layers.data(name="p", shape=[4], dtype="float32")
        hard = layers.data(name="hard", shape=[1], dtype="int64")
        soft = layers.data(name="soft", shape=[4], dtype="float32")
        return layers.cross_entropy(p, hard, ignore_index=2), layers.cross_entropy(p, soft, soft_label=True)
    main, startup, (y_hard, y_soft) = build(net)
    ops = main.global_block().ops
    assert [op.type for op in ops] == ["cross_entropy2", "cross_entropy"]
    assert ops[0].attr("ignore_index") == 2 and ops[1].attr("soft_label") is True
    assert y_hard.shape == (-1, 1) and y_soft.shape == (-1, 1)
    p = rng.uniform(0.1, 1, (3, 4)).astype(np.float32)
    soft = np.full((3, 4), 0.25, np.float32)
    hard = np.array([[0], [2], [3]], np.int64)
    a, b = run(main, startup, {"p": p, "hard": hard, "soft": soft}, [y_hard, y_soft])
    np.testing.assert_allclose(a[:, 0], [-np.log(p[0, 0]), 0, -np.log(p[2, 3])], rtol=1e-6)
    np.testing.assert_allclose(b[:, 0], -(soft * np.log(p)).sum(1), rtol=1e-6)


def test_softmax_with_cross_entropy_layer():
    def net():
        z = layers.data(name="z", shape=[5], dtype="float32")
        y = layers.data(name="y", shape=[1], dtype="int64")
        return layers.softmax_with_cross_entropy(z, y, return_softmax=True)
    main, startup, (loss, sm) = build(net)
    op = main.global_block().ops[-1]
    assert op.type == "softmax_with_cross_entropy" and op.attr("axis") == -1
    assert op.attr("numeric_stable_mode") is True and op.attr("ignore_index") == -100
    assert loss.shape == (-1, 1) and sm.shape == (-1, 5)


def test_sigmoid_and_log_loss_layers():
    def net():
        x = layers.data(name="x", shape=[3], dtype="float32")
        y = layers.data(name="y", shape=[3], dtype="float32")
        return (layers.sigmoid_cross_entropy_with_logits(x, y, normalize=True),
                layers.log_loss(layers.sigmoid(x), y, epsilon=1e-3))
    main, startup, (a, b) = build(net)
    assert op_types(main) == ["sigmoid_cross_entropy_with_logits", "sigmoid", "log_loss"]
    assert main.global_block().ops[0].attr("normalize") is True
    assert a.shape == (-1, 3) and b.shape == (-1, 3)
    x = rng.uniform(-2, 2, (2, 3)).astype(np.float32)
    y = rng.randint(0, 2, (2, 3)).astype(np.float32)
    ga, gb = run(main, startup, {"x": x, "y": y}, [a, b])
    p = 1 / (1 + np.exp(-x))
    np.testing.assert_allclose(ga, (-y * np.log(p) - (1 - y) * np.log(1 - p)) / 6, rtol=1e-5)
    np.testing.assert_allclose(gb, -y * np.log(p + 1e-3) - (1 - y) * np.log(1 - p + 1e-3), rtol=1e-5)


# ------------------------------------------------------------------ metrics
def test_accuracy_layer():
    def net():
        scores = layers.data(name="s", shape=[4], dtype="float32")
        label = layers.data(name="l", shape=[1], dtype="int64")
        correct = layers.create_tensor("int32")
        total = layers.create_tensor("int32")
        return layers.accuracy(scores, label, k=2, correct=correct, total=total), correct, total
    main, startup, (acc, correct, total) = build(net)
    assert op_types(main) == ["top_k", "accuracy"]
    assert main.global_block().ops[0].attr("k") == 2
    assert acc.shape == (1,) and acc.dtype == "float32"
    s = np.array([[0.1, 0.5, 0.3, 0.2], [0.9, 0.0, 0.05, 0.05], [0.2, 0.2, 0.5, 0.1]], np.float32)
    l = np.array([[2], [3], [0]], np.int64)
    a, c, t = run(main, startup, {"s": s, "l": l}, [acc, correct, total])
    assert c.tolist() == [2] and t.tolist() == [3]
    np.testing.assert_allclose(a, [2 / 3.0], rtol=1e-6)


def test_topk_and_argmax_layers():
    def net():
        x = layers.data(name="x", shape=[4], dtype="float32")
        return layers.topk(x, k=3), layers.argmax(x, axis=1), layers.argmin(x, axis=-1)
    main, startup, ((v, i), amax, amin) = build(net)
    assert op_types(main) == ["top_k", "arg_max", "arg_min"]
    assert v.shape == (-1, 3) and i.dtype == "int64" and amax.shape == (-1,) and amax.dtype == "int64"
    x = rng.uniform(size=(3, 4)).astype(np.float32)
    gv, gi, gmax, gmin = run(main, startup, {"x": x}, [v, i, amax, amin])
    np.testing.assert_array_equal(gi, np.argsort(-x, 1)[:, :3])
    np.testing.assert_array_equal(gv, -np.sort(-x, 1)[:, :3])
    np.testing.assert_array_equal(gmax, x.argmax(1))
    np.testing.assert_array_equal(gmin, x.argmin(1))


# ------------------------------------------------------------------ tensor layers
def test_fill_constant_zeros_ones_and_batch_size_like():
    def net():
        x = layers.data(name="x", shape=[3], dtype="float32")
        out = layers.create_tensor("int64")
        return (layers.fill_constant([2, 3], "int64", 2 ** 60 + 1), layers.zeros([2], "float32"),
                layers.ones([1, 2], "int32"), layers.fill_constant([1], "float32", 3.5, out=None),
                layers.fill_constant([2], "int64", 7, out=out),
                layers.fill_constant_batch_size_like(x, [-1, 5], "float32", 1.5))
    main, startup, outs = build(net)
    assert op_types(main) == ["fill_constant"] * 5 + ["fill_constant_batch_size_like"]
    assert all(o.stop_gradient for o in outs)
    assert outs[0].shape == (2, 3) and outs[5].shape == (-1, 5)
    got = run(main, startup, {"x": np.zeros((4, 3), np.float32)}, list(outs))
    assert got[0].dtype == np.int64 and (got[0] == 2 ** 60 + 1).all()
    np.testing.assert_array_equal(got[1], [0, 0])
    assert got[2].dtype == np.int32 and got[2].tolist() == [[1, 1]]
    np.testing.assert_array_equal(got[3], [3.5])
    np.testing.assert_array_equal(got[4], [7, 7])
    np.testing.assert_array_equal(got[5], np.full((4, 5), 1.5))


def test_cast_assign_and_sums():
    arr = np.arange(6, dtype=np.float32).reshape(2, 3)

    def net():
        x = layers.data(name="x", shape=[3], dtype="float32")
        c = layers.cast(x, "int32")
        a = layers.assign(x)
        target = layers.create_tensor("float32")
        layers.assign(c, output=target)
        v = layers.assign(arr)
        vi = layers.assign(np.array([[1, 2]], np.int64))
        s = layers.sums([x, a, v])
        return c, a, v, vi, s
    main, startup, outs = build(net)
    assert op_types(main) == ["cast", "assign", "assign", "assign_value", "assign_value", "sum"]
    cast_op = main.global_block().ops[0]
    assert cast_op.attr("in_dtype") == "float32" and cast_op.attr("out_dtype") == "int32"
    assert outs[1].shape == (-1, 3) and outs[2].shape == (2, 3)
    x = rng.uniform(-3, 3, (2, 3)).astype(np.float32)
    c, a, v, vi, s = run(main, startup, {"x": x}, list(outs))
    assert c.dtype == np.int32 and (c == x.astype(np.int32)).all()
    np.testing.assert_array_equal(a, x)
    np.testing.assert_array_equal(v, arr)
    assert vi.dtype == np.int64 and vi.tolist() == [[1, 2]]
    np.testing.assert_allclose(s, 2 * x + arr)
    with pytest.raises(TypeError, match="float32, int32, int64 or bool"):
        build(lambda: layers.assign(np.zeros(2, np.float16)))


def test_concat_split_reshape_transpose_shapes_and_values():
    def net():
        x = layers.data(name="x", shape=[6, 4], dtype="float32")
        y = layers.data(name="y", shape=[2, 4], dtype="float32")
        cat = layers.concat([x, y], axis=1)
        a, b, c, d = layers.split(cat, 4, dim=1)
        p, q = layers.split(cat, [3, -1], dim=-1)
        r = layers.reshape(x, [0, -1])
        t = layers.transpose(x, perm=[0, 2, 1])
        return cat, a, b, c, d, p, q, r, t
    main, startup, outs = build(net)
    assert op_types(main) == ["concat", "split", "split", "reshape2", "transpose2"]
    cat, a, b, c, d, p, q, r, t = outs
    assert cat.shape == (-1, 8, 4) and a.shape == (-1, 2, 4) and d.shape == (-1, 2, 4)
    assert p.shape == (-1, 8, 3) and q.shape == (-1, 8, 1)
    assert r.shape == (-1, 24) and t.shape == (-1, 4, 6)
    x = rng.uniform(size=(2, 6, 4)).astype(np.float32)
    y = rng.uniform(size=(2, 2, 4)).astype(np.float32)
    got = run(main, startup, {"x": x, "y": y}, list(outs))
    full = np.concatenate([x, y], 1)
    np.testing.assert_array_equal(got[0], full)
    for part, ref in zip(got[1:5], np.split(full, 4, axis=1)):
        np.testing.assert_array_equal(part, ref)
    np.testing.assert_array_equal(got[5], full[..., :3])
    np.testing.assert_array_equal(got[6], full[..., 3:])
    np.testing.assert_array_equal(got[7], x.reshape(2, 24))
    np.testing.assert_array_equal(got[8], x.transpose(0, 2, 1))


def test_reshape_with_actual_shape_and_argument_errors():
    def net():
        x = layers.data(name="x", shape=[6], dtype="float32")
        shape = layers.assign(np.array([3, 4], np.int32))
        return layers.reshape(x, [-1, 6], actual_shape=shape, act="relu")
    main, startup, out = build(net)
    assert op_types(main) == ["assign_value", "reshape2", "relu"]
    x = rng.uniform(-1, 1, (2, 6)).astype(np.float32)
    np.testing.assert_array_equal(run(main, startup, {"x": x}, [out])[0], np.maximum(x, 0).reshape(3, 4))
    x6 = lambda: layers.data(name="x", shape=[6], dtype="float32")  # noqa: E731
    with pytest.raises(ValueError, match="only one dimension"):
        build(lambda: layers.reshape(x6(), [-1, -1]))
    with pytest.raises(ValueError, match="not a permutation"):
        build(lambda: layers.transpose(x6(), [0, 0]))
    with pytest.raises(ValueError, match="not divisible into 4 parts"):
        build(lambda: layers.split(x6(), 4, dim=1))
    with pytest.raises(ValueError, match="do not fit"):
        build(lambda: layers.split(x6(), [2, 2], dim=1))


def test_split_and_concat_gradients_flow():
    def net():
        x = layers.data(name="x", shape=[4], dtype="float32", stop_gradient=False)
        a, b = layers.split(x, [1, 3], dim=1)
        y = layers.concat([layers.scale(a, 2.0), b], axis=1)
        t = layers.transpose(layers.reshape(y, [-1, 2, 2]), [0, 2, 1])
        loss = layers.reduce_sum(t)
        return x, loss, fluid.gradients(loss, x)
    main, startup, (x, loss, gx) = build(net)
    g = run(main, startup, {"x": np.ones((3, 4), np.float32)}, [gx])[0]
    np.testing.assert_array_equal(g, np.tile([2, 1, 1, 1], (3, 1)))


def test_global_var_tensor_parameter_and_zeros_like():
    def net():
        gv = layers.create_global_var([2], 4.0, "float32", persistable=True, name="gv")
        p = layers.create_parameter([3, 2], "float32", name="p0",
                                    default_initializer=fluid.initializer.Constant(0.5))
        z = layers.zeros_like(p)
        return gv, p, z
    main, startup, (gv, p, z) = build(net)
    assert gv.persistable and gv.stop_gradient and gv.name == "gv"
    assert isinstance(p, fluid.Parameter) and p.name == "p0" and p.shape == (3, 2)
    assert [op.type for op in startup.global_block().ops] == ["fill_constant", "fill_constant"]
    assert op_types(main) == ["fill_zeros_like"] and z.stop_gradient
    a, b, c = run(main, startup, {}, [gv, p, z])
    np.testing.assert_array_equal(a, [4, 4])
    np.testing.assert_array_equal(b, np.full((3, 2), 0.5))
    np.testing.assert_array_equal(c, np.zeros((3, 2)))


# ------------------------------------------------------------------ end to end
def _bow_model(is_sparse):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 9
    with fluid.program_guard(main, startup):
        words = layers.data(name="words", shape=[1], dtype="int64", lod_level=1)
        label = layers.data(name="label", shape=[1], dtype="int64")
        emb = layers.embedding(words, size=[30, 8], is_sparse=is_sparse, param_attr=fluid.ParamAttr(name="emb"))
        pooled = layers.sequence_pool(emb, "sum")
        logits = layers.fc(pooled, 3, param_attr=fluid.ParamAttr(name="fc_w"), bias_attr=fluid.ParamAttr(name="fc_b"))
        loss = layers.mean(layers.softmax_with_cross_entropy(logits, label))
        acc = layers.accuracy(logits, label)
        fluid.optimizer.SGD(0.3).minimize(loss)
    return main, startup, loss, acc


def _batches(steps=12):
    """Class c sentences use words of c's vocabulary slice; sentence lengths vary (one is empty)."""
    data = np.random.RandomState(2)
    out = []
    for _ in range(steps):
        labels = data.randint(0, 3, 6)
        lengths = data.randint(1, 5, 6)
        lengths[data.randint(0, 6)] = 0
        words = np.concatenate([data.randint(10 * c, 10 * c + 10, n) for c, n in zip(labels, lengths)])
        t = fluid.create_lod_tensor(words.reshape(-1, 1).astype(np.int64), [list(lengths)], fluid.CPUPlace())
        out.append({"words": t, "label": labels.reshape(-1, 1).astype(np.int64)})
    return out


def _train(is_sparse):
    main, startup, loss, acc = _bow_model(is_sparse)
    main.lint()
    grad = main.global_block().var("emb@GRAD")
    assert grad.type == ("SELECTED_ROWS" if is_sparse else "LOD_TENSOR")
    assert op_types(main)[:7] == ["lookup_table", "sequence_pool", "mul", "elementwise_add",
                                  "softmax_with_cross_entropy", "mean", "top_k"]
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    losses = []
    batches = _batches()
    for _ in range(3):
        for feed in batches:
            losses.append(float(exe.run(main, feed=feed, fetch_list=[loss], scope=scope)[0][0]))
    params = {n: np.array(scope.find_var(n).get_tensor()) for n in ("emb", "fc_w", "fc_b")}
    return losses, params


def test_lod_bag_of_words_trains_and_sparse_equals_dense():
    sparse_losses, sparse = _train(True)
    dense_losses, dense = _train(False)
    first, last = np.mean(sparse_losses[:12]), np.mean(sparse_losses[-12:])
    assert last < 0.5 * first, (first, last)
    np.testing.assert_allclose(sparse_losses, dense_losses, rtol=1e-5)
    for n in dense:
        np.testing.assert_allclose(sparse[n], dense[n], rtol=1e-5, atol=1e-6, err_msg=n)


def test_fc_of_several_inputs_makes_one_weight_per_input_as_paddle18():
    """Paddle 1.8 copies the ParamAttr for every input: fc_0.w_0 and fc_0.w_1, even when the shapes agree."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        a = fluid.data(name="a", shape=[None, 4], dtype="float32")
        b = fluid.data(name="b", shape=[None, 4], dtype="float32")
        c = fluid.data(name="c", shape=[None, 3], dtype="float32")
        fluid.layers.fc(input=[a, b], size=2)
        attr = fluid.ParamAttr(learning_rate=0.5)
        fluid.layers.fc(input=[a, c], size=2, param_attr=attr)
        fluid.layers.fc(input=a, size=2, param_attr=attr)
    params = {p.name: list(p.shape) for p in main.global_block().all_parameters()}
    assert params == {"fc_0.w_0": [4, 2], "fc_0.w_1": [4, 2], "fc_0.b_0": [2], "fc_1.w_0": [4, 2],
                      "fc_1.w_1": [3, 2], "fc_1.b_0": [2], "fc_2.w_0": [4, 2], "fc_2.b_0": [2]}
    assert attr.name is None            # the caller's attr is never named
    assert main.global_block().var("fc_1.w_1").optimize_attr["learning_rate"] == 0.5
