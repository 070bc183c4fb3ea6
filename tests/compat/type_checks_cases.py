"""What Paddle 1.8's layers refuse with TypeError (their ``check_variable_and_dtype`` / ``check_type`` /
``check_dtype`` calls) and what they take: one valid call per layer, and variants of it with one
tensor argument replaced by a NumPy array or by a Variable of another dtype. ``run(fluid, name)``
builds every variant of a case on ``fluid`` (Paddle's or fluidist's) and records, per variant,
``"ok"`` or the name of the exception raised while the program is built (nothing runs).
``tools/paddle18_layer_facts.py type_checks`` wrote Paddle 1.8.5's records into
``data/paddle18_type_checks.json``; ``test_paddle18_type_checks.py`` holds fluidist to them: a
TypeError where Paddle raises one, no error where Paddle builds the layer."""
import numpy as np

DTYPES = ("bool", "uint8", "int32", "int64", "float16", "float32", "float64")


class T:
    """A tensor argument: a ``fluid.data`` Variable of ``dtype``, ``shape`` and ``lod_level``."""

    def __init__(self, dtype, *shape, lod=0):
        self.dtype, self.shape, self.lod = dtype, list(shape), lod


def f32(*shape, lod=0):
    return T("float32", *shape, lod=lod)


def f64(*shape, lod=0):
    return T("float64", *shape, lod=lod)


def i32(*shape, lod=0):
    return T("int32", *shape, lod=lod)


def i64(*shape, lod=0):
    return T("int64", *shape, lod=lod)


def b(*shape, lod=0):
    return T("bool", *shape, lod=lod)


CASES = {}


def case(name, call, **args):
    """Case ``name``: the source ``call`` (``L`` is ``fluid.layers``, ``C`` its ``control_flow``, ``F``
    is ``fluid``, ``np`` NumPy; the keywords name its tensor arguments: a ``T`` or a list of them)."""
    CASES[name] = (call, args)


def _activations():
    for op in ("sigmoid", "logsigmoid", "tanh", "atan", "tanh_shrink", "sqrt", "rsqrt", "ceil", "floor", "cos",
               "acos", "asin", "sin", "round", "reciprocal", "softplus", "softsign", "abs", "exp", "square"):
        case(op, "L.%s(x)" % op, x=f32(3, 4))
    for call in ("softshrink(x, alpha=0.5)", "hard_shrink(x, threshold=0.5)", "cumsum(x, axis=1)",
                 "thresholded_relu(x, threshold=0.5)", "relu(x)", "selu(x)", "elu(x)", "relu6(x)",
                 "stanh(x)", "hard_sigmoid(x)", "swish(x)", "brelu(x)", "leaky_relu(x)", "soft_relu(x)",
                 "log(x)", "log1p(x)", "sign(x)", "mish(x)", "hard_swish(x)", "logsumexp(x)",
                 "clamp(x, min=0.1, max=0.5)", "pow(x, factor=2.0)", "softmax(x)", "log_softmax(x)",
                 "l2_normalize(x, axis=1)", "clip(x, min=0.1, max=0.5)", "clip_by_norm(x, max_norm=1.0)",
                 "scale(x, scale=2.0)", "mean(x)", "t(x)", "transpose(x, perm=[1, 0])", "flatten(x)",
                 "squeeze(L.unsqueeze(x, [0]), axes=[0])", "reshape(x, shape=[4, 3])", "flip(x, dims=[0])",
                 "roll(x, shifts=1)", "diag_embed(x)", "label_smooth(x, epsilon=0.1)",
                 "reduce_sum(x)", "reduce_mean(x)", "shape(x)", "unique(L.reshape(x, [-1]))",
                 "unique_with_counts(L.reshape(x, [-1]))", "argmin(x)", "argmax(x)", "argsort(x)",
                 "reverse(x, axis=0)", "has_inf(x)", "has_nan(x)", "isfinite(x)", "zeros_like(x)",
                 "ones_like(x)", "full_like(x, 2.0)", "tril(x)", "triu(x)", "trace(x)", "cast(x, 'int64')",
                 "dropout(x, dropout_prob=0.5)", "maxout(L.reshape(x, [1, 4, 3, 1]), groups=2)",
                 "pad(x, paddings=[1, 1, 0, 0])", "expand(x, expand_times=[1, 2])",
                 "crop(x, shape=[2, 2])", "crop_tensor(x, shape=[2, 2])", "unsqueeze(x, axes=[0])",
                 "strided_slice(x, axes=[1], starts=[0], ends=[4], strides=[2])", "slice(x, [1], [0], [2])",
                 "stack([x, x])", "sum([x, x])", "sums([x, x])", "concat([x, x])", "assign(x)",
                 "Print(x)", "lod_reset(x, target_lod=[0, 3])", "random_crop(x, shape=[2])",
                 "uniform_random_batch_size_like(x, shape=[-1, 2])",
                 "gaussian_random_batch_size_like(x, shape=[-1, 2])", "batch_norm(x)", "layer_norm(x)",
                 "fc(x, size=2)", "spectral_norm(x)", "row_conv(L.reshape(x, [3, 4]), 2)", "split(x, 2, 1)",
                 "gelu(x)", "erf(x)", "topk(x, k=2)", "unstack(x)", "increment(L.reduce_sum(x))"):
        name = call.split("(")[0]
        case(name if name not in CASES else call.split(",")[0], "L." + call, x=f32(3, 4))


def _binary():
    for op in ("elementwise_add", "elementwise_sub", "elementwise_mul", "elementwise_div", "elementwise_max",
               "elementwise_min", "elementwise_pow", "elementwise_mod", "elementwise_floordiv", "matmul", "mul",
               "dot", "dist", "kron", "cos_sim", "smooth_l1", "square_error_cost", "mse_loss", "huber_loss",
               "kldiv_loss", "log_loss", "sigmoid_cross_entropy_with_logits", "expand_as", "pad_constant_like",
               "fsp_matrix", "less_than", "less_equal", "greater_than", "greater_equal", "equal", "not_equal",
               "allclose", "addcmul"):
        extra = {"huber_loss": ", delta=1.0", "addcmul": ", L.scale(x, 1.0)"}.get(op, "")
        x, y = f32(3, 4), f32(3, 4)
        if op in ("matmul", "mul"):
            y = f32(4, 3)
        if op in ("log_loss", "sigmoid_cross_entropy_with_logits", "kldiv_loss"):
            x, y = f32(3, 1), f32(3, 1)
        if op == "fsp_matrix":
            x, y = f32(2, 3, 4, 4), f32(2, 3, 4, 4)
        if op == "addcmul":
            case(op, "L.addcmul(x, y, z)", x=x, y=y, z=f32(3, 4))
            continue
        case(op, "L.%s(x, y%s)" % (op, extra), x=x, y=y)
    for op in ("logical_and", "logical_or", "logical_xor"):
        case(op, "L.%s(x, y)" % op, x=b(3, 4), y=b(3, 4))
    case("logical_not", "L.logical_not(x)", x=b(3, 4))
    case("reduce_all", "L.reduce_all(x)", x=b(3, 4))
    case("reduce_any", "L.reduce_any(x)", x=b(3, 4))
    case("addmm", "L.addmm(inp, x, y)", inp=f32(3, 3), x=f32(3, 4), y=f32(4, 3))
    case("where", "L.where(c)", c=b(3, 4))
    case("cond_is_empty", "L.is_empty(x)", x=f32(3, 4))


def _losses():
    case("cross_entropy", "L.cross_entropy(x, label)", x=f32(3, 5), label=i64(3, 1))
    case("softmax_with_cross_entropy", "L.softmax_with_cross_entropy(x, label)", x=f32(3, 5), label=i64(3, 1))
    case("bpr_loss", "L.bpr_loss(x, label)", x=f32(3, 5), label=i64(3, 1))
    case("accuracy", "L.accuracy(x, label)", x=f32(3, 5), label=i64(3, 1))
    case("auc", "L.auc(x, label)", x=f32(3, 2), label=i64(3, 1))
    case("rank_loss", "L.rank_loss(label, left, right)", label=f32(3, 1), left=f32(3, 1), right=f32(3, 1))
    case("margin_rank_loss", "L.margin_rank_loss(label, left, right)", label=f32(3, 1), left=f32(3, 1),
         right=f32(3, 1))
    case("teacher_student_sigmoid_loss", "L.teacher_student_sigmoid_loss(x, label)", x=f32(3, 1), label=f32(3, 1))
    case("npair_loss", "L.npair_loss(a, p, labels)", a=f32(3, 4), p=f32(3, 4), labels=f32(3))
    case("edit_distance", "L.edit_distance(x, label)", x=i64(4, 1, lod=1), label=i64(4, 1, lod=1))
    case("nce", "L.nce(x, label, num_total_classes=10)", x=f32(3, 4), label=i64(3, 1))
    case("hsigmoid", "L.hsigmoid(x, label, num_classes=6)", x=f32(3, 4), label=i64(3, 1))
    case("mean_iou", "L.mean_iou(x, label, num_classes=3)", x=i32(6), label=i32(6))
    case("one_hot", "L.one_hot(x, depth=4)", x=i64(3, 1))
    case("embedding", "L.embedding(x, size=[10, 4])", x=i64(3, 1))
    case("linear_chain_crf", "L.linear_chain_crf(x, label, param_attr=F.ParamAttr(name='crfw'))",
         x=f32(4, 3, lod=1), label=i64(4, 1, lod=1))
    case("crf_decoding", "(L.create_parameter([5, 3], 'float32', name='crfw'), "
         "L.crf_decoding(x, param_attr=F.ParamAttr(name='crfw')))", x=f32(4, 3, lod=1))
    case("chunk_eval", "L.chunk_eval(x, label, chunk_scheme='IOB', num_chunk_types=2)",
         x=i64(4, 1, lod=1), label=i64(4, 1, lod=1))
    case("shard_index", "L.shard_index(x, index_num=20, nshards=2, shard_id=0)", x=i64(3, 1))
    case("index_select", "L.index_select(x, idx)", x=f32(3, 4), idx=i64(2))
    case("index_sample", "L.index_sample(x, idx)", x=f32(3, 4), idx=i64(3, 2))
    case("gather", "L.gather(x, idx)", x=f32(3, 4), idx=i64(2))
    case("gather_nd", "L.gather_nd(x, idx)", x=f32(3, 4), idx=i64(2, 1))
    case("scatter", "L.scatter(x, idx, upd)", x=f32(3, 4), idx=i64(2), upd=f32(2, 4))
    case("multiplex", "L.multiplex([x, y], idx)", x=f32(3, 4), y=f32(3, 4), idx=i32(3, 1))
    case("gather_tree", "L.gather_tree(ids, parents)", ids=i64(2, 2, 3), parents=i64(2, 2, 3))
    case("continuous_value_model", "L.continuous_value_model(x, cvm)", x=f32(3, 4, lod=1), cvm=f32(3, 2))


def _image():
    img = f32(2, 3, 8, 8)
    for call in ("conv2d(x, 2, 3)", "conv3d(L.unsqueeze(x, [2]), 2, 1)", "conv2d_transpose(x, 2, filter_size=3)",
                 "pool2d(x, 2)", "adaptive_pool2d(x, 2)", "adaptive_pool3d(L.unsqueeze(x, [2]), 1)",
                 "instance_norm(x)", "group_norm(x, groups=3)", "lrn(x)",
                 "pixel_shuffle(L.concat([x, x, x, x], 1), 2)", "temporal_shift(x, 2)",
                 "unfold(x, [2, 2])", "im2sequence(x, filter_size=[2, 2])", "pad2d(x, paddings=[1, 1, 1, 1])",
                 "resize_bilinear(x, out_shape=[4, 4])", "resize_nearest(x, out_shape=[4, 4])",
                 "image_resize(x, out_shape=[4, 4])", "prelu(x, 'all')", "inplace_abn(x)",
                 "similarity_focus(x, axis=1, indexes=[0])", "add_position_encoding(L.reshape(x, [2, 24, 8]), "
                 "1.0, 1.0)"):
        case(call.split("(")[0], "L." + call, x=img)
    case("affine_channel", "L.affine_channel(x, scale=s, bias=bias)", x=img, s=f32(3), bias=f32(3))
    case("space_to_depth", "L.space_to_depth(x, 2)", x=f32(2, 4, 8, 8))
    case("affine_grid", "L.affine_grid(theta, out_shape=[2, 3, 8, 8])", theta=f32(2, 2, 3))
    case("grid_sampler", "L.grid_sampler(x, grid)", x=img, grid=f32(2, 8, 8, 2))


def _sequences():
    seq = f32(5, 4, lod=1)
    for call in ("sequence_conv(x, 2)", "sequence_softmax(L.reshape(x, [-1, 1]))", "sequence_pool(x, 'sum')",
                 "sequence_concat([x, x])", "sequence_first_step(x)", "sequence_last_step(x)",
                 "sequence_reshape(x, 2)", "sequence_reverse(x)", "sequence_pad(x, L.fill_constant([1], "
                 "'float32', 0.0))", "lod_append(x, [1, 1, 1, 1, 1])", "dynamic_gru(x, size=2, "
                 "param_attr=None)"):
        case(call.split("(")[0], "L." + call, x=seq)
    case("sequence_expand", "L.sequence_expand(x, y)", x=f32(2, 4), y=f32(5, 4, lod=1))
    case("sequence_expand_as", "L.sequence_expand_as(x, y)", x=f32(2, 4), y=f32(5, 4, lod=1))
    case("sequence_slice", "L.sequence_slice(x, off, n)", x=f32(5, 4, lod=1), off=i64(2, 1), n=i64(2, 1))
    case("sequence_unpad", "L.sequence_unpad(x, n)", x=f32(2, 3, 4), n=i64(2))
    case("sequence_scatter", "L.sequence_scatter(x, idx, upd)", x=f32(2, 4), idx=i64(3, 1, lod=1),
         upd=f32(3, 1, lod=1))
    case("sequence_enumerate", "L.sequence_enumerate(x, win_size=2)", x=i64(5, 1, lod=1))
    case("sequence_mask", "L.sequence_mask(x)", x=i64(3))
    case("dynamic_lstm", "L.dynamic_lstm(x, size=8)", x=f32(5, 8, lod=1))
    case("dynamic_lstmp", "L.dynamic_lstmp(x, size=8, proj_size=2)", x=f32(5, 8, lod=1))
    case("dynamic_gru", "L.dynamic_gru(x, size=2)", x=f32(5, 6, lod=1))
    case("gru_unit", "L.gru_unit(x, h, size=6)", x=f32(3, 6), h=f32(3, 2))
    case("lstm_unit", "L.lstm_unit(x, h, c)", x=f32(3, 4), h=f32(3, 2), c=f32(3, 2))
    case("lstm", "L.lstm(x, h, c, max_len=4, hidden_size=2, num_layers=1)", x=f32(4, 3, 2), h=f32(1, 3, 2),
         c=f32(1, 3, 2))
    case("lod_reset_y", "L.lod_reset(x, y)", x=f32(5, 4), y=f32(5, 1, lod=1))
    case("lod_rank_table", "C.lod_rank_table(x)", x=f32(5, 4, lod=1))
    case("lod_tensor_to_array", "C.lod_tensor_to_array(x, C.lod_rank_table(y))", x=f32(5, 4, lod=1),
         y=f32(5, 4, lod=1))
    case("reorder_lod_tensor_by_rank", "L.reorder_lod_tensor_by_rank(x, C.lod_rank_table(y))", x=f32(5, 4, lod=1),
         y=f32(5, 4, lod=1))
    case("beam_search_decode", "L.beam_search_decode(L.create_array('int64'), L.create_array('float32'), 2, 0)")
    case("array_write", "L.array_write(x, i)", x=f32(3, 4), i=i64(1))
    case("array_read", "L.array_read(L.array_write(x, L.zeros([1], 'int64')), i)", x=f32(3, 4), i=i64(1))
    case("array_length", "L.array_length(L.array_write(x, L.zeros([1], 'int64')))", x=f32(3, 4))
    case("tensor_array_to_tensor", "L.tensor_array_to_tensor(L.array_write(x, L.zeros([1], 'int64')))",
         x=f32(3, 4))


def _control_flow():
    case("cond", "L.cond(pred, lambda: L.fill_constant([1], 'float32', 1.0), "
         "lambda: L.fill_constant([1], 'float32', 2.0))", pred=b(1))
    case("case", "L.case([(pred, lambda: L.fill_constant([1], 'float32', 1.0))], "
         "default=lambda: L.fill_constant([1], 'float32', 2.0))", pred=b(1))
    case("switch_case", "L.switch_case(idx, {0: lambda: L.fill_constant([1], 'float32', 1.0)}, "
         "default=lambda: L.fill_constant([1], 'float32', 2.0))", idx=i64(1))
    case("While", "F.layers.While(c)", c=b(1))
    case("while_loop", "L.while_loop(lambda i: i < 3, lambda i: [i + 1], [i])", i=i64(1))
    case("split_lod_tensor", "C.split_lod_tensor(x, mask)", x=f32(3, 4, lod=1), mask=b(3, 1))
    case("merge_lod_tensor", "C.merge_lod_tensor(x, y, z, mask)", x=f32(2, 4), y=f32(1, 4), z=f32(3, 4),
         mask=b(3, 1))
    case("select_input", "C.select_input([x, y], mask)", x=f32(3, 4), y=f32(3, 4), mask=i32(1))


def _blocks():
    """Layers of block-building classes and RNN cells; a call of several lines is run as statements."""
    case("StaticRNN", "rnn = F.layers.StaticRNN()\n"
         "with rnn.step():\n"
         "    w = rnn.step_input(x)\n"
         "    m = rnn.memory(init=h)\n"
         "    rnn.update_memory(m, w)\n"
         "    rnn.step_output(w)\n", x=f32(4, 3, 2), h=f32(3, 2))
    case("IfElse", "F.layers.IfElse(c)", c=b(3, 1))
    case("Switch", "with F.layers.Switch() as switch:\n"
         "    with switch.case(c):\n"
         "        pass\n", c=b(1))
    case("rnn", "L.rnn(L.GRUCell(4), x)", x=f32(2, 3, 4))
    case("GRUCell", "L.GRUCell(4)(x, h)", x=f32(2, 4), h=f32(2, 4))
    case("LSTMCell", "L.LSTMCell(4)(x, [h, c])", x=f32(2, 4), h=f32(2, 4), c=f32(2, 4))
    case("get_initial_states", "L.GRUCell(4).get_initial_states(batch_ref=x, shape=[4])", x=f32(2, 4))
    case("beam_search", "L.beam_search(pre_ids, pre_scores, ids, scores, beam_size=2, end_id=0)",
         pre_ids=i64(2, 1, lod=2), pre_scores=f32(2, 1, lod=2), ids=i64(2, 2, lod=2), scores=f32(2, 2, lod=2))
    case("select_output", "C.select_output(x, [y, z], mask)", x=f32(3, 4), y=f32(3, 4), z=f32(3, 4),
         mask=i32(1))
    case("warpctc", "L.warpctc(x, label)", x=f32(6, 5, lod=1), label=i32(4, 1, lod=1))


def _lists():
    """Layers Paddle 1.8 gives a list (or tuple) of Variables."""
    case("fc_list", "L.fc([x, y], size=2)", x=f32(3, 4), y=f32(3, 5))
    case("concat_tuple", "L.concat((x, y), axis=1)", x=f32(3, 4), y=f32(3, 5))
    case("concat_one", "L.concat(x)", x=f32(3, 4))
    case("sums_tuple", "L.sums((x, y))", x=f32(3, 4), y=f32(3, 4))
    case("stack_tuple", "L.stack((x, y))", x=f32(3, 4), y=f32(3, 4))
    case("sequence_concat_list", "L.sequence_concat([x, y])", x=f32(5, 4, lod=1), y=f32(4, 4, lod=1))
    case("multiplex_tuple", "L.multiplex((x, y), idx)", x=f32(3, 4), y=f32(3, 4), idx=i32(3, 1))


# cases whose call Paddle 1.8 itself refuses with TypeError: a dense tensor where a SelectedRows
# goes, a tuple where its layer (or its op) takes a list
PADDLE_REFUSES = {"get_tensor_from_selected_rows", "concat_tuple", "sums_tuple", "stack_tuple", "multiplex_tuple"}


def _made_tensors():
    case("fill_constant_out", "L.fill_constant([3, 4], 'float32', 1.0, out=x)", x=f32(3, 4))
    case("fill_constant_shape", "L.fill_constant(s, 'float32', 1.0)", s=i32(2))
    case("uniform_random_shape", "L.uniform_random(s)", s=i64(2))
    case("gaussian_random_shape", "L.gaussian_random(s)", s=i32(2))
    case("range", "L.range(0, e, 1, 'int32')", e=i32(1))
    case("linspace", "L.linspace(0.0, e, 5, 'float32')", e=f32(1))
    case("diag", "L.diag(x)", x=f32(4))
    case("zeros", "L.zeros([2, 3], 'float32')")
    case("ones", "L.ones([2, 3], 'float32')")
    case("full", "L.full([2, 3], 1.0)")
    case("arange", "L.arange(0, 5)")
    case("eye", "L.eye(3)")
    case("meshgrid", "L.meshgrid([x, y])", x=f32(3), y=f32(4))
    case("assign_numpy", "L.assign(np.ones((2, 2), 'float32'))")
    case("create_tensor", "L.create_tensor('float32')")
    case("create_global_var", "L.create_global_var([2], 1.0, 'float32')")
    case("create_parameter", "L.create_parameter([2], 'float32')")
    case("randperm", "L.randperm(5)")
    case("randint", "L.randint(0, 5, [2, 3])")
    case("sampling_id", "L.sampling_id(x)", x=f32(3, 4))
    case("py_func", "L.py_func(lambda a: a, x, out=F.default_main_program().current_block().create_var("
         "name='o', shape=[3, 4], dtype='float32'))", x=f32(3, 4))
    case("get_tensor_from_selected_rows", "L.get_tensor_from_selected_rows(x)", x=f32(3, 4))


for _fill in (_activations, _binary, _losses, _image, _sequences, _control_flow, _blocks, _lists,
              _made_tensors):
    _fill()


def variants(name):
    """The variants of case ``name``: ``"ok"``, then per tensor argument ``arg`` (``arg[0]`` for
    the first of a list) ``arg:numpy`` and ``arg:<dtype>`` for each other dtype of ``DTYPES``."""
    out = ["ok"]
    for arg, spec in CASES[name][1].items():
        key, spec = ("%s[0]" % arg, spec[0]) if isinstance(spec, list) else (arg, spec)
        out.append("%s:numpy" % key)
        out += ["%s:%s" % (key, d) for d in DTYPES if d != spec.dtype]
    return out


def _argument(fluid, arg, spec, change):
    """The value of tensor argument ``arg``: a data Variable, or ``change`` made to it."""
    if change == "numpy":
        return np.zeros([d if d > 0 else 3 for d in spec.shape], spec.dtype)
    dtype = change or spec.dtype
    return fluid.data(name=arg, shape=spec.shape, dtype=dtype, lod_level=spec.lod)


def build(fluid, name, variant):
    """Build the variant ``variant`` of case ``name`` on ``fluid``, in a program of its own."""
    call, args = CASES[name]
    target, _, change = variant.partition(":")
    prog, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(prog, startup), fluid.unique_name.guard():
        env = {"L": fluid.layers, "F": fluid, "C": fluid.layers.control_flow, "np": np}
        for arg, spec in args.items():
            if isinstance(spec, list):
                env[arg] = [_argument(fluid, "%s_%d" % (arg, i), s, change if target == "%s[0]" % arg and i == 0
                                      else None) for i, s in enumerate(spec)]
            else:
                env[arg] = _argument(fluid, arg, spec, change if target == arg else None)
        if "\n" in call:
            exec(call, env)
        else:
            eval(call, env)


def run(fluid, name):
    """``{variant: "ok" or the exception's name}`` for every variant of case ``name``."""
    record = {}
    for variant in variants(name):
        try:
            build(fluid, name, variant)
            record[variant] = "ok"
        except Exception as e:      # noqa: BLE001 (the exception's type is the fact recorded)
            record[variant] = type(e).__name__
    return record
