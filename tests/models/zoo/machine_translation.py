"""Sequence to sequence translation as Paddle 1.x's book test writes it: an LSTM encoder, a
``DynamicRNN`` decoder for training, and a ``While`` loop of ``beam_search`` steps (arrays,
``sequence_expand``, ``lod_reset``, ``topk``) ending in ``beam_search_decode`` for inference.
Trained on a synthetic task; small sizes."""
import numpy as np

import fluidist as fluid

DICT_SIZE = 40
WORD_DIM = 8
HIDDEN_DIM = 12       # the encoder LSTM's hidden size; no multiple of 8 (see understand_sentiment.py)
DECODER_SIZE = HIDDEN_DIM
MAX_LENGTH = 4
BEAM_SIZE = 2
END_ID = 1
IS_SPARSE = True


def encoder(is_sparse):
    src_word_id = fluid.layers.data(name="src_word_id", shape=[1], dtype="int64", lod_level=1)
    src_embedding = fluid.layers.embedding(input=src_word_id, size=[DICT_SIZE, WORD_DIM], dtype="float32",
                                           is_sparse=is_sparse, param_attr=fluid.ParamAttr(name="vemb"))
    fc1 = fluid.layers.fc(input=src_embedding, size=HIDDEN_DIM * 4, act="tanh")
    lstm_hidden0, lstm_0 = fluid.layers.dynamic_lstm(input=fc1, size=HIDDEN_DIM * 4)
    return fluid.layers.sequence_last_step(input=lstm_hidden0)


def decoder_train(context, is_sparse):
    trg_language_word = fluid.layers.data(name="target_language_word", shape=[1], dtype="int64", lod_level=1)
    trg_embedding = fluid.layers.embedding(input=trg_language_word, size=[DICT_SIZE, WORD_DIM], dtype="float32",
                                           is_sparse=is_sparse, param_attr=fluid.ParamAttr(name="vemb"))
    rnn = fluid.layers.DynamicRNN()
    with rnn.block():
        current_word = rnn.step_input(trg_embedding)
        pre_state = rnn.memory(init=context)
        current_state = fluid.layers.fc(input=[current_word, pre_state], size=DECODER_SIZE, act="tanh",
                                        param_attr=["state_w_word", "state_w_state"],
                                        bias_attr=fluid.ParamAttr(name="state_b"))
        current_score = fluid.layers.fc(input=current_state, size=DICT_SIZE, act="softmax",
                                        param_attr=fluid.ParamAttr(name="score_w"),
                                        bias_attr=fluid.ParamAttr(name="score_b"))
        rnn.update_memory(pre_state, current_state)
        rnn.output(current_score)
    return rnn()


def decoder_decode(context, is_sparse):
    init_state = context
    array_len = fluid.layers.fill_constant(shape=[1], dtype="int64", value=MAX_LENGTH)
    counter = fluid.layers.zeros(shape=[1], dtype="int64", force_cpu=True)

    state_array = fluid.layers.create_array("float32")
    fluid.layers.array_write(init_state, array=state_array, i=counter)
    ids_array = fluid.layers.create_array("int64")
    scores_array = fluid.layers.create_array("float32")
    init_ids = fluid.layers.data(name="init_ids", shape=[1], dtype="int64", lod_level=2)
    init_scores = fluid.layers.data(name="init_scores", shape=[1], dtype="float32", lod_level=2)
    fluid.layers.array_write(init_ids, array=ids_array, i=counter)
    fluid.layers.array_write(init_scores, array=scores_array, i=counter)

    cond = fluid.layers.less_than(x=counter, y=array_len)
    while_op = fluid.layers.While(cond=cond)
    with while_op.block():
        pre_ids = fluid.layers.array_read(array=ids_array, i=counter)
        pre_state = fluid.layers.array_read(array=state_array, i=counter)
        pre_score = fluid.layers.array_read(array=scores_array, i=counter)
        pre_state_expanded = fluid.layers.sequence_expand(pre_state, pre_score)
        pre_ids_emb = fluid.layers.embedding(input=pre_ids, size=[DICT_SIZE, WORD_DIM], dtype="float32",
                                             is_sparse=is_sparse, param_attr=fluid.ParamAttr(name="vemb"))
        current_state = fluid.layers.fc(input=[pre_state_expanded, pre_ids_emb], size=DECODER_SIZE, act="tanh",
                                        param_attr=["state_w_state", "state_w_word"],
                                        bias_attr=fluid.ParamAttr(name="state_b"))
        current_state_with_lod = fluid.layers.lod_reset(x=current_state, y=pre_score)
        current_score = fluid.layers.fc(input=current_state_with_lod, size=DICT_SIZE, act="softmax",
                                        param_attr=fluid.ParamAttr(name="score_w"),
                                        bias_attr=fluid.ParamAttr(name="score_b"))
        topk_scores, topk_indices = fluid.layers.topk(current_score, k=BEAM_SIZE)
        accu_scores = fluid.layers.elementwise_add(x=fluid.layers.log(topk_scores),
                                                   y=fluid.layers.reshape(pre_score, shape=[-1]), axis=0)
        selected_ids, selected_scores = fluid.layers.beam_search(pre_ids, pre_score, topk_indices, accu_scores,
                                                                 BEAM_SIZE, end_id=END_ID, level=0)
        fluid.layers.increment(x=counter, value=1, in_place=True)
        fluid.layers.array_write(current_state, array=state_array, i=counter)
        fluid.layers.array_write(selected_ids, array=ids_array, i=counter)
        fluid.layers.array_write(selected_scores, array=scores_array, i=counter)
        length_cond = fluid.layers.less_than(x=counter, y=array_len)
        finish_cond = fluid.layers.logical_not(fluid.layers.is_empty(x=selected_ids))
        fluid.layers.logical_and(x=length_cond, y=finish_cond, out=cond)
    translation_ids, translation_scores = fluid.layers.beam_search_decode(
        ids=ids_array, scores=scores_array, beam_size=BEAM_SIZE, end_id=END_ID)
    return translation_ids, translation_scores


def build():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 1
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        context = encoder(IS_SPARSE)
        rnn_out = decoder_train(context, IS_SPARSE)
        label = fluid.layers.data(name="target_language_next_word", shape=[1], dtype="int64", lod_level=1)
        cost = fluid.layers.cross_entropy(input=rnn_out, label=label)
        avg_cost = fluid.layers.mean(cost)
        test_program = main.clone(for_test=True)
        optimizer = fluid.optimizer.Adagrad(learning_rate=0.2,
                                            regularization=fluid.regularizer.L2DecayRegularizer(
                                                regularization_coeff=1e-4))
        optimizer.minimize(avg_cost)
    infer, infer_startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(infer, infer_startup), fluid.unique_name.guard():
        context = encoder(IS_SPARSE)
        translation_ids, translation_scores = decoder_decode(context, IS_SPARSE)
    return dict(main=main, startup=startup, test_program=test_program, loss=avg_cost, fetches={},
                infer=dict(program=infer, fetches={"ids": translation_ids, "scores": translation_scores}))


def sentence_pairs(rng, n):
    """The target counts up from the source's last word (ids 0 and 1 are reserved): its first word
    comes from the encoder's last state, every next one from the word before. Pair i and i + n/2
    have the same length, so that two equal halves of a batch hold the same number of words (the
    loss is a mean over words)."""
    src, trg = [], []
    lengths = np.tile(rng.randint(2, 6, max(n // 2, 1)), 2)[:n]
    for k in lengths:
        s = rng.randint(2, DICT_SIZE, k)
        src.append(s)
        trg.append((s[-1] - 2 + 1 + np.arange(k)) % (DICT_SIZE - 2) + 2)
    return src, trg


def batch(step, n, **options):
    rng = np.random.RandomState(11000 + step)
    src, trg = sentence_pairs(rng, n)
    col = lambda seqs: np.concatenate(seqs).astype("int64").reshape(-1, 1)  # noqa: E731
    lens = [len(s) for s in src]
    return {"src_word_id": (col(src), lens),
            "target_language_word": (col([np.concatenate([[0], t[:-1]]) for t in trg]), lens),
            "target_language_next_word": (col(trg), lens)}


def infer_batch(n, **options):
    rng = np.random.RandomState(12000)
    src, _ = sentence_pairs(rng, n)
    ones = [1] * n
    return {"src_word_id": (np.concatenate(src).astype("int64").reshape(-1, 1), [len(s) for s in src]),
            "init_ids": (np.zeros((n, 1), "int64"), [ones, ones]),
            "init_scores": (np.ones((n, 1), "float32"), [ones, ones])}
