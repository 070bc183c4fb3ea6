"""The RNN cell / decoder API beyond the cases checked against Paddle 1.8's numbers
(tests/paddle18): initial states, the parameters a cell makes, sampling decoding, time-major training."""
import numpy as np
import pytest

import fluidist as fluid

L = fluid.layers


def test_initial_states_and_cell_parameters():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 5, 3], "float32")
        cell = L.LSTMCell(4)
        h, c = cell.get_initial_states(batch_ref=x, init_value=0.5)
        out, (last_h, last_c) = L.rnn(cell, x)
    assert h.shape == (-1, 4) and c.shape == (-1, 4)
    names = sorted(p.name for p in main.global_block().all_parameters())
    assert names == ["LSTMCell/BasicLSTMUnit_0.b_0", "LSTMCell/BasicLSTMUnit_0.w_0"]
    assert main.global_block().var(names[1]).shape == (7, 16)
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    got = exe.run(main, feed={"x": np.ones((2, 5, 3), "float32")}, fetch_list=[h, out, last_h], scope=scope)
    np.testing.assert_array_equal(got[0], np.full((2, 4), 0.5))
    assert got[1].shape == (2, 5, 4)
    np.testing.assert_allclose(got[1][:, -1], got[2])


def test_sample_embedding_helper_draws_ids_in_the_vocabulary():
    vocab = 6
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    with fluid.program_guard(main, startup):
        enc = fluid.data("enc", [None, 4], "float32")
        emb = lambda ids: fluid.embedding(ids, [vocab, 3], param_attr=fluid.ParamAttr(name="emb"))  # noqa: E731
        start = L.fill_constant_batch_size_like(enc, [-1], "int64", 0)
        helper = L.SampleEmbeddingHelper(emb, start, end_token=1, softmax_temperature=0.7, seed=5)
        decoder = L.BasicDecoder(L.GRUCell(4), helper, output_fn=lambda h: L.fc(h, vocab))
        out, _, lengths = L.dynamic_decode(decoder, inits=enc, max_step_num=6, return_length=True)
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    feed = {"enc": np.random.RandomState(0).uniform(-1, 1, (3, 4)).astype("float32")}
    ids, logits = exe.run(main, feed=feed, fetch_list=[out.sample_ids, out.cell_outputs], scope=scope)
    assert ids.shape[0] == 3 and logits.shape[:2] == ids.shape and logits.shape[2] == vocab
    assert ids.min() >= 0 and ids.max() < vocab
    again = exe.run(main, feed=feed, fetch_list=[out.sample_ids], scope=scope)[0]
    np.testing.assert_array_equal(ids, again)        # a fixed seed draws the same ids


def test_training_helper_time_major():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        trg = fluid.data("trg", [4, None, 2], "float32")      # [time, batch, width]
        lens = fluid.data("lens", [None], "int64")
        enc = fluid.data("enc", [None, 3], "float32")
        decoder = L.BasicDecoder(L.GRUCell(3), L.TrainingHelper(trg, lens, time_major=True))
        out, state = L.dynamic_decode(decoder, inits=enc, output_time_major=True)
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    rng = np.random.RandomState(1)
    got = exe.run(main, feed={"trg": rng.uniform(-1, 1, (4, 2, 2)).astype("float32"),
                              "lens": np.array([4, 2], "int64"), "enc": rng.uniform(-1, 1, (2, 3)).astype("float32")},
                  fetch_list=[out.cell_outputs], scope=scope)[0]
    assert got.shape == (4, 2, 3)


def test_cell_without_call_or_state_shape_says_so():
    with pytest.raises(NotImplementedError, match="call"):
        L.RNNCell()(None, None)
    with pytest.raises(NotImplementedError, match="state_shape"):
        L.RNNCell().state_shape
