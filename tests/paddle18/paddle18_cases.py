"""Small programs run by both Paddle 1.8 and fluidist on the same data and parameters.

``python paddle18_cases.py OUT.json`` under paddlepaddle 1.8.5 (a Python 3.8 venv) writes Paddle's numbers;
the tests run the same cases under fluidist and compare. Each case is ``case(fluid) -> (main,
startup, feed, fetch names)``; parameters come from fixed NumPy arrays."""
import json
import sys

import numpy as np


def _param(fluid, name, value):
    return fluid.ParamAttr(name=name, initializer=fluid.initializer.NumpyArrayInitializer(value))


def dynamic_rnn(fluid):
    """DynamicRNN with a reordered boot memory, a static input and two outputs."""
    L = fluid.layers
    rng = np.random.RandomState(0)
    xv = rng.uniform(-1, 1, (6, 2)).astype("float32")
    wx, wh = rng.uniform(-1, 1, (2, 3)).astype("float32"), rng.uniform(-1, 1, (3, 3)).astype("float32")
    bb, boot = rng.uniform(-1, 1, (3,)).astype("float32"), rng.uniform(-1, 1, (3, 3)).astype("float32")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 2], "float32", lod_level=1)
        x.stop_gradient = False
        b0 = fluid.data("boot", [None, 3], "float32")
        b0.stop_gradient = False
        drnn = L.DynamicRNN()
        with drnn.block():
            word = drnn.step_input(x)
            prev = drnn.memory(init=b0, need_reorder=True)
            st = drnn.static_input(b0)
            h = L.fc([word, prev], 3, act="tanh", param_attr=[_param(fluid, "wx", wx), _param(fluid, "wh", wh)],
                     bias_attr=_param(fluid, "b", bb))
            drnn.update_memory(prev, h)
            drnn.output(h, L.elementwise_mul(h, st))
        out, out2 = drnn()
        loss = L.mean(L.sequence_pool(out, "sum") * L.sequence_pool(out2, "max"))
        fluid.backward.append_backward(loss)
    feed = {"x": fluid.create_lod_tensor(xv, [[2, 3, 1]], fluid.CPUPlace()), "boot": boot}
    return main, startup, feed, [out.name, loss.name, "x@GRAD", "wx@GRAD", "wh@GRAD", "b@GRAD", "boot@GRAD"]


def static_rnn(fluid):
    """StaticRNN with a boot memory, a batch_ref memory and two step outputs."""
    L = fluid.layers
    rng = np.random.RandomState(1)
    xv = rng.uniform(-1, 1, (4, 3, 2)).astype("float32")
    h0 = rng.uniform(-1, 1, (3, 3)).astype("float32")
    wx, wh = rng.uniform(-1, 1, (2, 3)).astype("float32"), rng.uniform(-1, 1, (3, 3)).astype("float32")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [4, 3, 2], "float32")
        x.stop_gradient = False
        boot = fluid.data("h0", [3, 3], "float32")
        boot.stop_gradient = False
        rnn = L.StaticRNN()
        with rnn.step():
            word = rnn.step_input(x)
            prev = rnn.memory(init=boot)
            prev2 = rnn.memory(shape=[-1, 2], batch_ref=word, init_value=0.5)
            h = L.fc([word, prev], 3, act="tanh", param_attr=[_param(fluid, "wx", wx), _param(fluid, "wh", wh)],
                     bias_attr=False)
            h2 = L.elementwise_add(L.elementwise_mul(prev2, word), word)
            rnn.update_memory(prev, h)
            rnn.update_memory(prev2, h2)
            rnn.step_output(h)
            rnn.step_output(h2)
        out, out2 = rnn()
        loss = L.reduce_sum(L.elementwise_mul(out, out)) + L.reduce_sum(out2)
        fluid.backward.append_backward(loss)
    return main, startup, {"x": xv, "h0": h0}, [out.name, out2.name, loss.name, "x@GRAD", "h0@GRAD", "wx@GRAD",
                                               "wh@GRAD"]


def cond_branches(fluid):
    """cond on a runtime predicate, twice (once each way), with a parameter in both branches."""
    L = fluid.layers
    w = np.array([0.5, -1.5, 2.0], "float32")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        wp = L.create_parameter([3], "float32", attr=_param(fluid, "w", w))
        zero = L.fill_constant([1], "float32", 0.0)
        outs = []
        for name in ("x1", "x2"):
            xi = fluid.data(name, [3], "float32")
            xi.stop_gradient = False
            pred = L.greater_than(L.reduce_sum(xi), zero)
            outs.append(L.cond(pred, lambda: L.elementwise_mul(xi, wp), lambda: L.exp(L.elementwise_mul(xi, wp))))
        loss = L.reduce_sum(L.elementwise_mul(outs[0], outs[1]))
        fluid.backward.append_backward(loss)
    feed = {"x1": np.array([1.0, 2.0, -0.5], "float32"), "x2": np.array([-1.0, 0.2, -0.3], "float32")}
    return main, startup, feed, [outs[0].name, outs[1].name, loss.name, "x1@GRAD", "x2@GRAD", "w@GRAD"]


def _lod_data(fluid, name, width, dtype="float32"):
    x = fluid.data(name, [None, width], dtype, lod_level=1)
    x.stop_gradient = False
    return x


def _lod_feed(fluid, value, lengths):
    return fluid.create_lod_tensor(value, [lengths], fluid.CPUPlace())


def sequence_ops(fluid):
    """Every sequence op of layers/sequence_lod.py (and lod_reset, im2sequence) with its gradient."""
    L = fluid.layers
    rng = np.random.RandomState(2)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = _lod_data(fluid, "x", 4)
        x2 = _lod_data(fluid, "x2", 4)
        y = fluid.data("y", [3, 4], "float32")
        y.stop_gradient = False
        z = fluid.data("z", [None, 1], "float32", lod_level=1)
        img = fluid.data("img", [2, 2, 5, 5], "float32")
        img.stop_gradient = False
        base = fluid.data("base", [3, 6], "float32")
        base.stop_gradient = False
        ids = fluid.data("ids", [None, 1], "int64", lod_level=1)
        upd = _lod_data(fluid, "upd", 1)
        lens = fluid.data("lens", [4], "int64")
        w3, b3 = rng.uniform(-1, 1, (12, 3)).astype("float32"), rng.uniform(-1, 1, (3,)).astype("float32")
        w1, w2 = rng.uniform(-1, 1, (12, 1)).astype("float32"), rng.uniform(-1, 1, (16, 2)).astype("float32")
        outs = [
            L.sequence_conv(x, 3, filter_size=3, act="tanh", param_attr=_param(fluid, "w3", w3),
                            bias_attr=_param(fluid, "b3", b3)),
            L.sequence_conv(x, 2, filter_size=4, padding_start=-1, param_attr=_param(fluid, "w2", w2),
                            bias_attr=False),
        ]
        score = L.sequence_conv(x, 1, filter_size=3, param_attr=_param(fluid, "w1", w1), bias_attr=False)
        pad_value = L.fill_constant([1], "float32", 0.5)
        padded, length = L.sequence_pad(x, pad_value)
        offset = L.assign(np.array([[0], [0], [1]], "int64"))
        size = L.assign(np.array([[2], [1], [1]], "int64"))
        outs += [
            L.sequence_softmax(score),
            L.sequence_concat([x, x2]),
            L.sequence_slice(x, offset, size),
            L.sequence_expand(y, x),
            L.sequence_expand(x2, z, ref_level=0),
            L.sequence_expand_as(y, x),
            padded,
            L.sequence_unpad(padded, length),
            L.sequence_reshape(x, 2),
            L.sequence_reverse(x),
            L.lod_reset(x, target_lod=[0, 2, 6]),
            L.im2sequence(img, filter_size=[2, 3], stride=[1, 2], padding=1),
            L.sequence_scatter(base, ids, upd),
        ]
        enum = L.sequence_enumerate(ids, win_size=3, pad_value=7)
        mask = L.sequence_mask(lens, maxlen=5)
        loss = L.sums([L.reduce_sum(L.elementwise_mul(o, o)) for o in outs])
        fluid.backward.append_backward(loss)
    feed = {"x": _lod_feed(fluid, rng.uniform(-1, 1, (6, 4)).astype("float32"), [3, 1, 2]),
            "x2": _lod_feed(fluid, rng.uniform(-1, 1, (5, 4)).astype("float32"), [1, 2, 2]),
            "y": rng.uniform(-1, 1, (3, 4)).astype("float32"),
            "z": _lod_feed(fluid, np.zeros((5, 1), "float32"), [2, 1, 2]),
            "img": rng.uniform(-1, 1, (2, 2, 5, 5)).astype("float32"),
            "base": rng.uniform(-1, 1, (3, 6)).astype("float32"),
            "ids": _lod_feed(fluid, np.array([[1], [5], [0], [2], [2]], "int64"), [2, 1, 2]),
            "upd": _lod_feed(fluid, rng.uniform(-1, 1, (5, 1)).astype("float32"), [2, 1, 2]),
            "lens": np.array([0, 3, 5, 1], "int64")}
    fetch = [o.name for o in outs] + [length.name, enum.name, mask.name, loss.name] + \
        [n + "@GRAD" for n in ("x", "x2", "y", "img", "base", "upd", "w3", "b3", "w2", "w1")]
    return main, startup, feed, fetch


def rnn_units(fluid):
    """dynamic_lstm / dynamic_lstmp / dynamic_gru over LoD sequences, gru_unit, lstm_unit; values and
    gradients."""
    L = fluid.layers
    rng = np.random.RandomState(4)
    d, p = 2, 3
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x4 = _lod_data(fluid, "x4", 4 * d)
        x3 = _lod_data(fluid, "x3", 3 * d)
        h0 = fluid.data("h0", [None, d], "float32")
        c0 = fluid.data("c0", [None, d], "float32")
        r0 = fluid.data("r0", [None, p], "float32")
        xs = fluid.data("xs", [None, 3 * d], "float32")
        xl = fluid.data("xl", [None, 3], "float32")
        for v in (h0, c0, r0, xs, xl):
            v.stop_gradient = False
        h, c = L.dynamic_lstm(x4, 4 * d, h_0=h0, c_0=c0, is_reverse=True)
        h2, _ = L.dynamic_lstm(x4, 4 * d, use_peepholes=False)
        # (Paddle 1.8's lstmp gradient crashes with h_0 / c_0 given: tests/ops checks those by finite differences)
        pr, pc = L.dynamic_lstmp(x4, 4 * d, p, cell_clip=0.5, proj_clip=0.6)
        g1 = L.dynamic_gru(x3, d, h_0=h0)
        g2 = L.dynamic_gru(x3, d, is_reverse=True, origin_mode=True)
        u, rh, gate = L.gru_unit(xs, h0, 3 * d)
        lh, lc = L.lstm_unit(xl, h0, c0, forget_bias=0.5)
        outs = [h, c, h2, pr, pc, g1, g2, u, rh, gate, lh, lc]
        # Paddle 1.8's lstm / lstmp gradients drop what flows into their Cell output (fluidist
        # differentiates it: tests/ops checks by finite differences), so the loss leaves c and pc out
        loss = L.sums([L.reduce_sum(L.elementwise_mul(o, o)) for o in outs if o.name not in (c.name, pc.name)])
        fluid.backward.append_backward(loss)
    params = {}
    for prm in main.global_block().all_parameters():
        params[prm.name] = rng.uniform(-1, 1, prm.shape).astype("float32")
    feed = {"x4": _lod_feed(fluid, rng.uniform(-1, 1, (6, 4 * d)).astype("float32"), [3, 1, 2]),
            "x3": _lod_feed(fluid, rng.uniform(-1, 1, (6, 3 * d)).astype("float32"), [3, 1, 2]),
            "h0": rng.uniform(-1, 1, (3, d)).astype("float32"), "c0": rng.uniform(-1, 1, (3, d)).astype("float32"),
            "r0": rng.uniform(-1, 1, (3, p)).astype("float32"), "xs": rng.uniform(-1, 1, (3, 3 * d)).astype("float32"),
            "xl": rng.uniform(-1, 1, (3, 3)).astype("float32")}
    fetch = [o.name for o in outs] + [loss.name] + [n + "@GRAD" for n in ("x4", "x3", "h0", "c0", "xs", "xl")] + \
        sorted(n + "@GRAD" for n in params)
    return main, startup, feed, fetch, params


def beam_search_translate(fluid):
    """The machine-translation book chapter's decoder: a While over tensor arrays with embedding,
    fc, topk, beam_search, is_empty, then beam_search_decode (2 sources, beam 3, 6 steps at most)."""
    L = fluid.layers
    rng = np.random.RandomState(6)
    dict_size, word_dim, hidden, beam, end_id = 12, 4, 5, 3, 1
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        context = fluid.data("context", [None, hidden], "float32")
        init_ids = fluid.data("init_ids", [None, 1], "int64", lod_level=2)
        init_scores = fluid.data("init_scores", [None, 1], "float32", lod_level=2)
        array_len = L.fill_constant([1], "int64", 6)
        counter = L.zeros([1], "int64", force_cpu=True)
        state_array = L.create_array("float32")
        L.array_write(context, array=state_array, i=counter)
        ids_array = L.create_array("int64")
        scores_array = L.create_array("float32")
        L.array_write(init_ids, array=ids_array, i=counter)
        L.array_write(init_scores, array=scores_array, i=counter)
        cond = L.less_than(counter, array_len)
        loop = L.While(cond)
        with loop.block():
            pre_ids = L.array_read(ids_array, counter)
            pre_state = L.array_read(state_array, counter)
            pre_score = L.array_read(scores_array, counter)
            pre_state_expanded = L.sequence_expand(pre_state, pre_score)
            pre_ids_emb = L.embedding(pre_ids, [dict_size, word_dim], param_attr=_param(
                fluid, "emb", rng.uniform(-1, 1, (dict_size, word_dim)).astype("float32")))
            state = L.fc([pre_state_expanded, pre_ids_emb], hidden, act="tanh", param_attr=[
                _param(fluid, "ws", rng.uniform(-1, 1, (hidden, hidden)).astype("float32")),
                _param(fluid, "we", rng.uniform(-1, 1, (word_dim, hidden)).astype("float32"))], bias_attr=False)
            state_lod = L.lod_reset(state, pre_score)
            score = L.fc(state_lod, dict_size, act="softmax", bias_attr=False, param_attr=_param(
                fluid, "wo", rng.uniform(-2, 2, (hidden, dict_size)).astype("float32")))
            topk_scores, topk_indices = L.topk(score, k=beam)
            accu = L.elementwise_add(L.log(topk_scores), L.reshape(pre_score, shape=[-1]), axis=0)
            sel_ids, sel_scores = L.beam_search(pre_ids, pre_score, topk_indices, accu, beam, end_id=end_id)
            L.increment(counter, value=1, in_place=True)
            L.array_write(state, array=state_array, i=counter)
            L.array_write(sel_ids, array=ids_array, i=counter)
            L.array_write(sel_scores, array=scores_array, i=counter)
            length_cond = L.less_than(counter, array_len)
            finish_cond = L.logical_not(L.is_empty(sel_ids))
            L.logical_and(length_cond, finish_cond, out=cond)
        ids, scores = L.beam_search_decode(ids_array, scores_array, beam, end_id)
    lod = [[0, 1, 2], [0, 1, 2]]
    init_ids_t = fluid.LoDTensor()
    init_ids_t.set(np.array([[0], [0]], "int64"), fluid.CPUPlace())
    init_ids_t.set_lod(lod)
    init_scores_t = fluid.LoDTensor()
    init_scores_t.set(np.array([[1.0], [1.0]], "float32"), fluid.CPUPlace())
    init_scores_t.set_lod(lod)
    feed = {"context": rng.uniform(-1, 1, (2, hidden)).astype("float32"), "init_ids": init_ids_t,
            "init_scores": init_scores_t}
    return main, startup, feed, [ids.name, scores.name]


def rnn_cells(fluid):
    """layers.rnn over a GRUCell (batch-major, sequence lengths) and an LSTMCell (time-major,
    reversed); outputs, final states and gradients."""
    L = fluid.layers
    rng = np.random.RandomState(7)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [3, 4, 2], "float32")        # [batch, time, width]
        x.stop_gradient = False
        lens = fluid.data("lens", [3], "int64")
        gru = L.GRUCell(3)
        out_g, state_g = L.rnn(gru, x, sequence_length=lens)
        lstm = L.LSTMCell(2, forget_bias=0.5)
        xt = fluid.data("xt", [4, 3, 2], "float32")      # [time, batch, width]
        xt.stop_gradient = False
        out_l, (h_l, c_l) = L.rnn(lstm, xt, time_major=True, is_reverse=True)
        outs = [out_g, state_g, out_l, h_l, c_l]
        loss = L.sums([L.reduce_sum(L.elementwise_mul(o, o)) for o in outs])
        fluid.backward.append_backward(loss)
    params = {p.name: rng.uniform(-1, 1, p.shape).astype("float32") for p in main.global_block().all_parameters()}
    feed = {"x": rng.uniform(-1, 1, (3, 4, 2)).astype("float32"), "lens": np.array([4, 2, 3], "int64"),
            "xt": rng.uniform(-1, 1, (4, 3, 2)).astype("float32")}
    fetch = [o.name for o in outs] + [loss.name, "x@GRAD", "xt@GRAD"] + sorted(n + "@GRAD" for n in params)
    return main, startup, feed, fetch, params


def decoders(fluid):
    """dynamic_decode with a BeamSearchDecoder (beam 3) and with a BasicDecoder + GreedyEmbeddingHelper,
    over an LSTMCell, from an encoder state; predicted ids and final states."""
    L = fluid.layers
    rng = np.random.RandomState(8)
    vocab, hidden, emb_dim = 7, 4, 3
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        enc = fluid.data("enc", [None, hidden], "float32")
        emb = lambda ids: fluid.embedding(ids, [vocab, emb_dim], param_attr=fluid.ParamAttr(name="emb"))  # noqa: E731
        out_fc = lambda h: L.fc(h, vocab, num_flatten_dims=len(h.shape) - 1,  # noqa: E731
                                param_attr=fluid.ParamAttr(name="out_w"), bias_attr=fluid.ParamAttr(name="out_b"))
        cell = L.LSTMCell(hidden)
        decoder = L.BeamSearchDecoder(cell, start_token=0, end_token=1, beam_size=3, embedding_fn=emb, output_fn=out_fc)
        tiled = L.BeamSearchDecoder.tile_beam_merge_with_batch(enc, 3)
        beam_out, beam_states = L.dynamic_decode(decoder, inits=[enc, L.scale(enc, 0.5)], max_step_num=5)
        start = L.fill_constant_batch_size_like(enc, [-1], "int64", 0)
        helper = L.GreedyEmbeddingHelper(emb, start, end_token=1)
        basic = L.BasicDecoder(cell, helper, output_fn=out_fc)
        greedy_out, greedy_states = L.dynamic_decode(basic, inits=[enc, L.scale(enc, 0.5)], max_step_num=5)
    params = {p.name: rng.uniform(-1, 1, p.shape).astype("float32") for p in main.global_block().all_parameters()}
    feed = {"enc": rng.uniform(-1, 1, (2, hidden)).astype("float32")}
    fetch = [beam_out.name, beam_states.log_probs.name, beam_states.lengths.name, greedy_out.sample_ids.name,
             greedy_out.cell_outputs.name, greedy_states[0].name, tiled.name]
    return main, startup, feed, fetch, params


def training_decoder(fluid):
    """Teacher-forced training through dynamic_decode: BasicDecoder + TrainingHelper over a GRUCell;
    the loss's gradients run back through the While's steps and tensor arrays."""
    L = fluid.layers
    rng = np.random.RandomState(9)
    vocab, hidden, emb_dim = 6, 3, 2
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        trg = fluid.data("trg", [None, 4], "int64")
        trg_len = fluid.data("trg_len", [None], "int64")
        enc = fluid.data("enc", [None, hidden], "float32")
        enc.stop_gradient = False
        trg_emb = fluid.embedding(trg, [vocab, emb_dim], param_attr=fluid.ParamAttr(name="emb"))
        cell = L.GRUCell(hidden)
        helper = L.TrainingHelper(trg_emb, trg_len)
        decoder = L.BasicDecoder(cell, helper, output_fn=lambda h: L.fc(
            h, vocab, num_flatten_dims=len(h.shape) - 1, param_attr=fluid.ParamAttr(name="out_w"), bias_attr=False))
        outputs, states, lengths = L.dynamic_decode(decoder, inits=enc, return_length=True)
        logits = outputs.cell_outputs
        loss = L.reduce_sum(L.elementwise_mul(logits, logits)) + L.reduce_sum(L.elementwise_mul(states, states))
        fluid.backward.append_backward(loss)
    params = {p.name: rng.uniform(-1, 1, p.shape).astype("float32") for p in main.global_block().all_parameters()}
    feed = {"trg": rng.randint(0, vocab, (2, 4)).astype("int64"), "trg_len": np.array([4, 2], "int64"),
            "enc": rng.uniform(-1, 1, (2, hidden)).astype("float32")}
    fetch = [logits.name, outputs.sample_ids.name, states.name, lengths.name, loss.name, "enc@GRAD"] + \
        sorted(n + "@GRAD" for n in params)
    return main, startup, feed, fetch, params


CASES = {"beam_search_translate": beam_search_translate, "training_decoder": training_decoder, "rnn_cells": rnn_cells, "decoders": decoders, "dynamic_rnn": dynamic_rnn, "static_rnn": static_rnn, "cond_branches": cond_branches,
         "sequence_ops": sequence_ops, "rnn_units": rnn_units}


def run(fluid, name):
    """Run case ``name``; returns {"values": [...], "lods": [...]} of its fetch list. A case may
    return a fifth item: {parameter name: value} set after the startup program."""
    main, startup, feed, fetch, *params = CASES[name](fluid)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        for pname, value in (params[0] if params else {}).items():
            scope.find_var(pname).get_tensor().set(value, fluid.CPUPlace())
        got = exe.run(main, feed=feed, fetch_list=fetch, return_numpy=False)
    return {"values": [np.array(t).tolist() for t in got], "lods": [t.lod() for t in got],
            "grads": [n.endswith("@GRAD") for n in fetch]}


if __name__ == "__main__":
    import paddle.fluid as paddle_fluid
    json.dump({name: run(paddle_fluid, name) for name in CASES}, open(sys.argv[1], "w"))
