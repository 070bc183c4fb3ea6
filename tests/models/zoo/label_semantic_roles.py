"""The label_semantic_roles book chapter: eight id sequences (word, predicate, five context words,
mark) embedded, a deep stack of ``dynamic_lstm`` layers (alternately reversed) mixed by fcs,
``linear_chain_crf`` as the loss and ``crf_decoding`` for the tags, SGD with exponential decay.
Synthetic sentences; small widths. The book fed both outputs of ``dynamic_lstm`` (hidden and
cell) to the next fcs; here only the hidden state goes on, because paddlepaddle 1.8.5's CPU lstm
gradient ignores what flows back into the cell output, and Paddle's numbers
are the reference."""
import numpy as np

import fluidist as fluid

WORD_DICT_LEN = 60
LABEL_DICT_LEN = 5
PRED_DICT_LEN = 10
MARK_DICT_LEN = 2
WORD_DIM = 8
MARK_DIM = 3
HIDDEN_DIM = 16
DEPTH = 3
MIX_HIDDEN_LR = 1e-3
IS_SPARSE = True
EMBEDDING_NAME = "emb"


def db_lstm(word, predicate, ctx_n2, ctx_n1, ctx_0, ctx_p1, ctx_p2, mark, **ignored):
    predicate_embedding = fluid.layers.embedding(input=predicate, size=[PRED_DICT_LEN, WORD_DIM], dtype="float32",
                                          is_sparse=IS_SPARSE, param_attr="vemb")
    mark_embedding = fluid.layers.embedding(input=mark, size=[MARK_DICT_LEN, MARK_DIM], dtype="float32",
                                     is_sparse=IS_SPARSE)
    word_input = [word, ctx_n2, ctx_n1, ctx_0, ctx_p1, ctx_p2]
    emb_layers = [fluid.layers.embedding(size=[WORD_DICT_LEN, WORD_DIM], input=x,
                                  param_attr=fluid.ParamAttr(name=EMBEDDING_NAME, trainable=False))
                  for x in word_input]
    emb_layers.append(predicate_embedding)
    emb_layers.append(mark_embedding)

    hidden_0_layers = [fluid.layers.fc(input=emb, size=HIDDEN_DIM, act="tanh") for emb in emb_layers]
    hidden_0 = fluid.layers.sums(input=hidden_0_layers)
    lstm_0, _ = fluid.layers.dynamic_lstm(input=hidden_0, size=HIDDEN_DIM, candidate_activation="relu",
                                          gate_activation="sigmoid", cell_activation="sigmoid")
    input_tmp = [hidden_0, lstm_0]
    for i in range(1, DEPTH):
        mix_hidden = fluid.layers.sums(input=[
            fluid.layers.fc(input=input_tmp[0], size=HIDDEN_DIM, act="tanh"),
            fluid.layers.fc(input=input_tmp[1], size=HIDDEN_DIM, act="tanh")])
        lstm, _ = fluid.layers.dynamic_lstm(input=mix_hidden, size=HIDDEN_DIM, candidate_activation="relu",
                                            gate_activation="sigmoid", cell_activation="sigmoid",
                                            is_reverse=((i % 2) == 1))
        input_tmp = [mix_hidden, lstm]
    return fluid.layers.sums(input=[
        fluid.layers.fc(input=input_tmp[0], size=LABEL_DICT_LEN, act="tanh"),
        fluid.layers.fc(input=input_tmp[1], size=LABEL_DICT_LEN, act="tanh")])


FEEDS = ["word_data", "verb_data", "ctx_n2_data", "ctx_n1_data", "ctx_0_data", "ctx_p1_data", "ctx_p2_data",
         "mark_data"]


def build(lr=0.05):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 90
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        ins = [fluid.data(name=name, shape=[None, 1], dtype="int64", lod_level=1) for name in FEEDS]
        feature_out = db_lstm(*ins)
        target = fluid.data(name="target", shape=[None, 1], dtype="int64", lod_level=1)
        crf_cost = fluid.layers.linear_chain_crf(
            input=feature_out, label=target, param_attr=fluid.ParamAttr(name="crfw", learning_rate=MIX_HIDDEN_LR))
        avg_cost = fluid.layers.mean(crf_cost)
        test_program = main.clone(for_test=True)
        sgd_optimizer = fluid.optimizer.SGD(learning_rate=fluid.layers.exponential_decay(
            learning_rate=lr, decay_steps=3, decay_rate=0.9, staircase=True))
        sgd_optimizer.minimize(avg_cost)
        crf_decode = fluid.layers.crf_decoding(input=feature_out, param_attr=fluid.ParamAttr(name="crfw"))
    return dict(main=main, startup=startup, test_program=test_program, loss=avg_cost,
                fetches={"crf_decode": crf_decode})


def batch(step, n, **options):
    """The tag of a word says which half of the dictionary it is in and whether the mark is set."""
    rng = np.random.RandomState(10000 + step)
    cols = {name: [] for name in FEEDS + ["target"]}
    lens = []
    for _ in range(n):
        k = rng.randint(3, 8)
        words = rng.randint(0, WORD_DICT_LEN, k)
        verb_at = rng.randint(k)
        mark = (np.abs(np.arange(k) - verb_at) <= 1).astype("int64")
        ctx = lambda d: np.full(k, words[min(max(verb_at + d, 0), k - 1)])  # noqa: E731
        for name, value in zip(FEEDS, [words, np.full(k, words[verb_at] % PRED_DICT_LEN), ctx(-2), ctx(-1), ctx(0),
                                       ctx(1), ctx(2), mark]):
            cols[name].append(value)
        cols["target"].append((words * 2 // WORD_DICT_LEN) * 2 + mark)
        lens.append(k)
    return {name: (np.concatenate(v).astype("int64").reshape(-1, 1), lens) for name, v in cols.items()}
