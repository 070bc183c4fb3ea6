"""The Transformer (encoder-decoder, multi-head attention, layer_norm, label smoothing, Noam
learning rate, Adam) as Paddle's distributed transformer test builds it, with the sizes as
arguments so that a test can make it tiny. Trained here on padded synthetic sentences."""
import numpy as np

import fluidist as fluid


class ModelHyperParams(object):
    src_vocab_size = 32
    trg_vocab_size = 32
    bos_idx = 0
    eos_idx = 1
    unk_idx = 2
    max_length = 8
    d_model = 16
    d_inner_hid = 32
    d_key = 8
    d_value = 8
    n_head = 2
    n_layer = 1
    dropout = 0.0
    label_smooth_eps = 0.1


class TrainTaskConfig(object):
    learning_rate = 0.5
    beta1 = 0.9
    beta2 = 0.98
    eps = 1e-9
    warmup_steps = 4


pos_enc_param_names = ("src_pos_enc_table", "trg_pos_enc_table")


def position_encoding_init(n_position, d_pos_vec):
    """The sinusoid position encoding table."""
    channels = d_pos_vec
    position = np.arange(n_position)
    num_timescales = channels // 2
    log_timescale_increment = np.log(1e4) / max(num_timescales - 1, 1)
    inv_timescales = np.exp(np.arange(num_timescales) * -log_timescale_increment)
    scaled_time = np.expand_dims(position, 1) * np.expand_dims(inv_timescales, 0)
    signal = np.concatenate([np.sin(scaled_time), np.cos(scaled_time)], axis=1)
    signal = np.pad(signal, [[0, 0], [0, np.mod(channels, 2)]], "constant")
    return signal.reshape([n_position, channels]).astype("float32")


def multi_head_attention(queries, keys, values, attn_bias, d_key, d_value, d_model, n_head=1, dropout_rate=0.0):
    keys = queries if keys is None else keys
    values = keys if values is None else values

    def compute_qkv(queries, keys, values):
        q = fluid.layers.fc(input=queries, size=d_key * n_head, bias_attr=False, num_flatten_dims=2)
        k = fluid.layers.fc(input=keys, size=d_key * n_head, bias_attr=False, num_flatten_dims=2)
        v = fluid.layers.fc(input=values, size=d_value * n_head, bias_attr=False, num_flatten_dims=2)
        return q, k, v

    def split_heads(x, n_head):
        hidden_size = x.shape[-1]
        reshaped = fluid.layers.reshape(x=x, shape=[0, 0, n_head, hidden_size // n_head])
        return fluid.layers.transpose(x=reshaped, perm=[0, 2, 1, 3])

    def combine_heads(x):
        trans_x = fluid.layers.transpose(x, perm=[0, 2, 1, 3])
        return fluid.layers.reshape(x=trans_x, shape=[0, 0, trans_x.shape[2] * trans_x.shape[3]])

    def scaled_dot_product_attention(q, k, v, attn_bias, d_key, dropout_rate):
        product = fluid.layers.matmul(x=q, y=k, transpose_y=True, alpha=d_key ** -0.5)
        if attn_bias is not None:
            product += attn_bias
        weights = fluid.layers.softmax(product)
        if dropout_rate:
            weights = fluid.layers.dropout(weights, dropout_prob=dropout_rate, is_test=False)
        return fluid.layers.matmul(weights, v)

    q, k, v = compute_qkv(queries, keys, values)
    q = split_heads(q, n_head)
    k = split_heads(k, n_head)
    v = split_heads(v, n_head)
    ctx_multiheads = scaled_dot_product_attention(q, k, v, attn_bias, d_key, dropout_rate)
    out = combine_heads(ctx_multiheads)
    return fluid.layers.fc(input=out, size=d_model, bias_attr=False, num_flatten_dims=2)


def positionwise_feed_forward(x, d_inner_hid, d_hid):
    hidden = fluid.layers.fc(input=x, size=d_inner_hid, num_flatten_dims=2, act="relu")
    return fluid.layers.fc(input=hidden, size=d_hid, num_flatten_dims=2)


def pre_post_process_layer(prev_out, out, process_cmd, dropout_rate=0.0):
    """'a': add the residual, 'n': layer_norm, 'd': dropout; applied in the order given."""
    for cmd in process_cmd:
        if cmd == "a":
            out = out + prev_out if prev_out is not None else out
        elif cmd == "n":
            out = fluid.layers.layer_norm(out, begin_norm_axis=len(out.shape) - 1,
                                          param_attr=fluid.initializer.Constant(1.0),
                                          bias_attr=fluid.initializer.Constant(0.0))
        elif cmd == "d" and dropout_rate:
            out = fluid.layers.dropout(out, dropout_prob=dropout_rate, is_test=False)
    return out


def pre_process_layer(out, process_cmd, dropout_rate=0.0):
    return pre_post_process_layer(None, out, process_cmd, dropout_rate)


post_process_layer = pre_post_process_layer


def prepare_embedding(src_word, src_pos, src_vocab_size, src_emb_dim, src_max_len, dropout_rate=0.0,
                      word_emb_param_name=None, pos_enc_param_name=None):
    src_word_emb = fluid.layers.embedding(
        src_word, size=[src_vocab_size, src_emb_dim],
        param_attr=fluid.ParamAttr(name=word_emb_param_name,
                                   initializer=fluid.initializer.Normal(0.0, src_emb_dim ** -0.5)))
    src_word_emb = fluid.layers.scale(x=src_word_emb, scale=src_emb_dim ** 0.5)
    src_pos_enc = fluid.layers.embedding(
        src_pos, size=[src_max_len, src_emb_dim],
        param_attr=fluid.ParamAttr(
            name=pos_enc_param_name, trainable=False,
            initializer=fluid.initializer.NumpyArrayInitializer(position_encoding_init(src_max_len, src_emb_dim))))
    src_pos_enc.stop_gradient = True
    enc_input = src_word_emb + src_pos_enc
    enc_input = fluid.layers.reshape(x=enc_input, shape=[-1, src_max_len - 1, src_emb_dim])
    return fluid.layers.dropout(enc_input, dropout_prob=dropout_rate, is_test=False) if dropout_rate else enc_input


def encoder_layer(enc_input, attn_bias, n_head, d_key, d_value, d_model, d_inner_hid, dropout_rate=0.0):
    attn_output = multi_head_attention(enc_input, None, None, attn_bias, d_key, d_value, d_model, n_head,
                                       dropout_rate)
    attn_output = post_process_layer(enc_input, attn_output, "dan", dropout_rate)
    ffd_output = positionwise_feed_forward(attn_output, d_inner_hid, d_model)
    return post_process_layer(attn_output, ffd_output, "dan", dropout_rate)


def encoder(enc_input, attn_bias, n_layer, n_head, d_key, d_value, d_model, d_inner_hid, dropout_rate=0.0):
    for _ in range(n_layer):
        enc_input = encoder_layer(enc_input, attn_bias, n_head, d_key, d_value, d_model, d_inner_hid, dropout_rate)
    return enc_input


def decoder_layer(dec_input, enc_output, slf_attn_bias, dec_enc_attn_bias, n_head, d_key, d_value, d_model,
                  d_inner_hid, dropout_rate=0.0):
    slf_attn_output = multi_head_attention(dec_input, None, None, slf_attn_bias, d_key, d_value, d_model, n_head,
                                           dropout_rate)
    slf_attn_output = post_process_layer(dec_input, slf_attn_output, "dan", dropout_rate)
    enc_attn_output = multi_head_attention(slf_attn_output, enc_output, enc_output, dec_enc_attn_bias, d_key,
                                           d_value, d_model, n_head, dropout_rate)
    enc_attn_output = post_process_layer(slf_attn_output, enc_attn_output, "dan", dropout_rate)
    ffd_output = positionwise_feed_forward(enc_attn_output, d_inner_hid, d_model)
    return post_process_layer(enc_attn_output, ffd_output, "dan", dropout_rate)


def decoder(dec_input, enc_output, dec_slf_attn_bias, dec_enc_attn_bias, n_layer, n_head, d_key, d_value,
            d_model, d_inner_hid, dropout_rate=0.0):
    for _ in range(n_layer):
        dec_input = decoder_layer(dec_input, enc_output, dec_slf_attn_bias, dec_enc_attn_bias, n_head, d_key,
                                  d_value, d_model, d_inner_hid, dropout_rate)
    return dec_input


def make_all_inputs(max_length, n_head, d_model):
    seq = max_length - 1
    names = {}
    for name in ("src_word", "src_pos", "trg_word", "trg_pos"):
        names[name] = fluid.layers.data(name=name, shape=[seq, 1], dtype="int64")
    for name in ("src_slf_attn_bias", "trg_slf_attn_bias", "trg_src_attn_bias"):
        names[name] = fluid.layers.data(name=name, shape=[n_head, seq, seq], dtype="float32")
    names["lbl_word"] = fluid.layers.data(name="lbl_word", shape=[seq, 1], dtype="int64")
    names["lbl_weight"] = fluid.layers.data(name="lbl_weight", shape=[seq, 1], dtype="float32")
    return names


def transformer(hp):
    ins = make_all_inputs(hp.max_length, hp.n_head, hp.d_model)
    enc_input = prepare_embedding(ins["src_word"], ins["src_pos"], hp.src_vocab_size, hp.d_model, hp.max_length,
                                  hp.dropout, "src_word_emb_table", pos_enc_param_names[0])
    enc_output = encoder(enc_input, ins["src_slf_attn_bias"], hp.n_layer, hp.n_head, hp.d_key, hp.d_value,
                         hp.d_model, hp.d_inner_hid, hp.dropout)
    dec_input = prepare_embedding(ins["trg_word"], ins["trg_pos"], hp.trg_vocab_size, hp.d_model, hp.max_length,
                                  hp.dropout, "trg_word_emb_table", pos_enc_param_names[1])
    dec_output = decoder(dec_input, enc_output, ins["trg_slf_attn_bias"], ins["trg_src_attn_bias"], hp.n_layer,
                         hp.n_head, hp.d_key, hp.d_value, hp.d_model, hp.d_inner_hid, hp.dropout)
    predict = fluid.layers.reshape(
        x=fluid.layers.fc(input=dec_output, size=hp.trg_vocab_size, bias_attr=False, num_flatten_dims=2),
        shape=[-1, hp.trg_vocab_size])
    label = fluid.layers.reshape(ins["lbl_word"], shape=[-1, 1])
    weights = fluid.layers.reshape(ins["lbl_weight"], shape=[-1, 1])
    if hp.label_smooth_eps:
        label = fluid.layers.label_smooth(label=fluid.layers.one_hot(input=label, depth=hp.trg_vocab_size),
                                          epsilon=hp.label_smooth_eps)
    cost = fluid.layers.softmax_with_cross_entropy(logits=predict, label=label,
                                                   soft_label=True if hp.label_smooth_eps else False)
    weighted_cost = cost * weights
    sum_cost = fluid.layers.reduce_sum(weighted_cost)
    token_num = fluid.layers.reduce_sum(weights)
    token_num.stop_gradient = True
    avg_cost = sum_cost / token_num
    return sum_cost, avg_cost, predict, token_num


def build(learning_rate=TrainTaskConfig.learning_rate):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 1
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        sum_cost, avg_cost, predict, token_num = transformer(ModelHyperParams)
        test_program = main.clone(for_test=True)
        # the scale is noam_decay's own learning_rate, so that every op of the schedule is an LR-schedule
        # op that the transpiler moves to the pservers
        lr_decay = fluid.layers.learning_rate_scheduler.noam_decay(ModelHyperParams.d_model,
                                                                    TrainTaskConfig.warmup_steps,
                                                                    learning_rate=learning_rate)
        optimizer = fluid.optimizer.Adam(learning_rate=lr_decay,
                                         beta1=TrainTaskConfig.beta1, beta2=TrainTaskConfig.beta2,
                                         epsilon=TrainTaskConfig.eps)
        optimizer.minimize(avg_cost)
    return dict(main=main, startup=startup, test_program=test_program, loss=avg_cost,
                fetches={"sum_cost": sum_cost, "token_num": token_num})


def batch(step, n, **options):
    """An echo task: the label at each position is the target word given there (a task that a few
    steps can learn). Sentence i and i + n/2 have the same length, so that two equal halves of a
    batch hold the same number of tokens."""
    hp = ModelHyperParams
    seq = hp.max_length - 1
    rng = np.random.RandomState(7000 + step)
    half = max(n // 2, 1)
    lens = np.tile(rng.randint(3, seq + 1, half), 2)[:n]
    src = np.full((n, seq), hp.eos_idx, "int64")
    for i, k in enumerate(lens):
        src[i, :k] = rng.randint(3, hp.src_vocab_size, k)
    pos = np.tile(np.arange(seq, dtype="int64"), (n, 1))
    pad = np.arange(seq)[None, :] >= lens[:, None]                           # [n, seq]
    key_bias = np.where(pad, -1e9, 0.0).astype("float32")[:, None, None, :]   # [n, 1, 1, seq]
    src_bias = np.tile(key_bias, (1, hp.n_head, seq, 1))
    causal = np.triu(np.full((seq, seq), -1e9, "float32"), 1)[None, None]
    trg_bias = np.tile(causal, (n, hp.n_head, 1, 1)) + src_bias
    trg = np.concatenate([np.full((n, 1), hp.bos_idx, "int64"), src[:, :-1]], axis=1)
    weight = (~pad).astype("float32")
    return {"src_word": src[..., None], "src_pos": pos[..., None], "src_slf_attn_bias": src_bias,
            "trg_word": trg[..., None], "trg_pos": pos[..., None], "trg_slf_attn_bias": trg_bias.astype("float32"),
            "trg_src_attn_bias": src_bias.copy(), "lbl_word": trg[..., None], "lbl_weight": weight[..., None]}
