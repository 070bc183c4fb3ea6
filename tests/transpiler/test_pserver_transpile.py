"""Op lists and attributes of transpiled programs, against the spec's worked examples."""
import numpy as np
import pytest

import fluidist as fluid
from fluidist.framework.op_role import OpRole

from models import fc_model, op_types, transpile

EP0, EP1 = "127.0.0.1:6174", "127.0.0.1:6175"


def test_worked_example_sgd_two_pservers_two_trainers():
    main, startup, _ = fc_model()
    t = transpile(main, startup)
    trainer = t.get_trainer_program(wait_port=False)
    assert op_types(trainer.global_block()) == [
        "mul", "elementwise_add", "elementwise_sub", "square", "mean", "fill_constant", "mean_grad",
        "square_grad", "elementwise_sub_grad", "elementwise_add_grad", "send", "mul_grad", "split_byref", "send",
        "send_barrier", "recv", "recv", "fetch_barrier", "concat"]
    assert op_types(startup.global_block()) == [
        "fill_constant", "fill_constant", "uniform_random", "recv", "recv", "fetch_barrier", "concat"]
    ops = trainer.global_block().ops
    send_b, split, send_w = ops[10], ops[12], ops[13]
    assert send_b.input("X") == ["fc_b@GRAD.trainer_0"] and send_b.attr("epmap") == [EP0]
    assert split.attr("sections") == [500, 500] and split.attr("op_role") == OpRole.Dist
    assert send_w.input("X") == ["fc_w@GRAD.block0.trainer_0", "fc_w@GRAD.block1.trainer_0"]
    assert send_w.attr("epmap") == [EP1, EP0]
    assert send_w.attr("op_role") == OpRole.RPC and send_w.attr("op_role_var") == ["fc_w", "fc_w@GRAD"]
    recv_b, recv_w = ops[15], ops[16]
    assert recv_w.output("Out") == ["fc_w.block0", "fc_w.block1"] and recv_w.attr("epmap") == [EP1, EP0]
    # what the runtime reads: the first recv asks for the run's other blocks too; a sliced
    # parameter's blocks say which rows of it they are (the Dist concat joins them)
    assert recv_b.attr("batch_epmap") == [EP1, EP0]
    assert recv_b.attr("batch_varnames") == ["fc_w.block0", "fc_w.block1"]
    assert recv_w.attr("batch_epmap") == [] and recv_b.attr("row_block_of") == []
    assert recv_w.attr("row_block_of") == ["fc_w", "fc_w"] and recv_w.attr("row_block_begin") == [0, 500]
    st_recvs = [op for op in startup.global_block().ops if op.type == "recv"]
    assert st_recvs[0].attr("batch_varnames") == ["fc_w.block0", "fc_w.block1"]
    assert st_recvs[1].attr("row_block_begin") == [0, 500]
    assert ops[-1].input("X") == ["fc_w.block0", "fc_w.block1"] and ops[-1].output("Out") == ["fc_w"]
    assert trainer.global_block().var("fc_w.block0").shape == (500, 1000)
    assert "fc_w.block0" in startup.global_block().vars

    ps0 = t.get_pserver_program(EP0)
    assert ps0.num_blocks == 3
    assert op_types(ps0.global_block()) == ["listen_and_serv"]
    assert op_types(ps0.block(1)) == ["sum", "scale", "sgd"]
    las = ps0.global_block().ops[0]
    assert las.attr("Fanin") == 2 and las.attr("endpoint") == EP0 and las.attr("pserver_id") == 0
    assert [b.idx for b in las.attr("optimize_blocks")] == [1, 2]
    assert las.attr("grad_to_block_id") == ["fc_b@GRAD:1", "fc_w@GRAD.block1:2"]
    assert las.attr("lr_decay_block_id") == -1 and las.attr("distributed_mode") == 0
    # each block begins with the trainers' sum, which the pserver may do as the gradients arrive
    assert las.attr("sum_on_arrival") == ["fc_b@GRAD:1", "fc_w@GRAD.block1:2"]
    assert las.input("X") == ["fc_b@GRAD.trainer_0", "fc_b@GRAD.trainer_1",
                              "fc_w@GRAD.block1.trainer_0", "fc_w@GRAD.block1.trainer_1"]
    assert ps0.block(1).ops[1].attr("scale") == 0.5
    sgd = ps0.block(2).ops[2]
    assert sgd.input("Param") == ["fc_w.block1"] and sgd.input("Grad") == ["fc_w@GRAD.block1"]
    ps0_startup = t.get_startup_program(EP0, ps0)
    assert op_types(ps0_startup.global_block()) == ["fill_constant", "fill_constant", "uniform_random"]
    assert ps0_startup.global_block().var("fc_w.block1").shape == (500, 1000)
    assert ps0_startup.global_block().ops[2].attr("shape") == [500, 1000]
    ps1 = t.get_pserver_program(EP1)
    assert op_types(ps1.block(1)) == ["sum", "scale", "sgd"] and ps1.num_blocks == 2


def test_each_trainers_copy_of_a_gradient_on_a_pserver_is_a_variable_of_its_own():
    main, startup, _ = fc_model()
    t = transpile(main, startup, trainers=3)
    ps0 = t.get_pserver_program(EP0)
    ps0_startup = t.get_startup_program(EP0, ps0)
    gb, sb = ps0.global_block(), ps0_startup.global_block()
    names = ["fc_w@GRAD.block1.trainer_%d" % k for k in range(3)]
    assert ps0.global_block().ops[0].input("X")[-3:] == names
    copies = [gb.var(n) for n in names]
    for name, v in zip(names, copies):     # each declared as the gradient block is, not persistable
        assert (v.name, v.block, v.shape, v.dtype, v.type) == (name, gb, (500, 1000), "float32", "LOD_TENSOR")
        assert not (v.persistable or v.stop_gradient or v.is_data)
        assert sb.var(name) is not v and sb.var(name).block is sb and sb.var(name).shape == (500, 1000)
    copies[0].shape = (1, 1000)
    copies[1].persistable = True
    assert copies[2].shape == (500, 1000) and not copies[2].persistable and sb.var(names[0]).shape == (500, 1000)


def test_pserver_startup_gives_each_block_the_rows_of_the_whole_parameter():
    main, startup, _ = fc_model()
    local = fluid.Scope()
    fluid.Executor().run(startup.clone(), scope=local)
    whole = np.array(local.find_var("fc_w").get_tensor())
    t = transpile(main, startup)
    for ep, rows in ((EP1, slice(0, 500)), (EP0, slice(500, 1000))):
        prog = t.get_pserver_program(ep)
        scope = fluid.Scope()
        fluid.Executor().run(t.get_startup_program(ep, prog), scope=scope)
        name = "fc_w.block0" if ep == EP1 else "fc_w.block1"
        np.testing.assert_array_equal(np.array(scope.find_var(name).get_tensor()), whole[rows])


def test_large_min_block_size_keeps_params_whole():
    main, startup, _ = fc_model()
    config = fluid.DistributeTranspilerConfig()
    config.min_block_size = 1048576
    t = transpile(main, startup, config=config)
    trainer = t.get_trainer_program(wait_port=False)
    types = op_types(trainer.global_block())
    assert "split_byref" not in types and "concat" not in types
    assert types.count("send") == 2 and types.count("recv") == 2
    # fc_b -> 6174, fc_w -> 6175
    ps1 = t.get_pserver_program(EP1)
    assert ps1.global_block().ops[0].attr("grad_to_block_id") == ["fc_w@GRAD:1"]
    assert ps1.global_block().var("fc_w").shape == (1000, 1000)


def test_slice_var_up_false_shuffles_with_program_seed():
    main, startup, _ = fc_model()
    config = fluid.DistributeTranspilerConfig()
    config.slice_var_up = False
    t = transpile(main, startup, config=config)
    order = ["fc_b@GRAD", "fc_w@GRAD"]
    np.random.RandomState(main.random_seed).shuffle(order)
    eps = {g: [EP0, EP1][i] for i, g in enumerate(order)}
    trainer = t.get_trainer_program(wait_port=False)
    sends = [op for op in trainer.global_block().ops if op.type == "send"]
    for s in sends:
        g = s.attr("op_role_var")[1].split(".trainer_")[0]
        assert s.attr("epmap") == [eps[g]]


def test_async_mode_has_no_barriers_and_no_trainer_suffix():
    main, startup, _ = fc_model()
    t = transpile(main, startup, sync=False)
    trainer = t.get_trainer_program(wait_port=False)
    types = op_types(trainer.global_block())
    assert "send_barrier" not in types and "fetch_barrier" not in types
    assert types[-3:] == ["recv", "recv", "concat"]
    assert trainer.global_block().ops[10].input("X") == ["fc_b@GRAD"]
    ps0 = t.get_pserver_program(EP0)
    assert op_types(ps0.block(1)) == ["sgd"]
    assert ps0.global_block().ops[0].input("X") == ["fc_b@GRAD", "fc_w@GRAD.block1"]


def test_exponential_lr_decay_moves_to_pserver_lr_block():
    main, startup, _ = fc_model(lr_decay=True)
    t = transpile(main, startup)
    trainer = t.get_trainer_program(wait_port=False)
    assert "increment" not in op_types(trainer.global_block())
    ps0 = t.get_pserver_program(EP0)
    las = ps0.global_block().ops[0]
    assert las.attr("lr_decay_block_id") == 1
    assert op_types(ps0.block(1)) == ["increment", "cast", "scale", "floor", "fill_constant", "elementwise_pow",
                                      "scale"]
    assert op_types(ps0.block(2)) == ["sum", "scale", "sgd"]
    assert [b.idx for b in las.attr("optimize_blocks")] == [1, 2, 3]


def test_l2decay_with_value_clip_runs_on_pserver():
    main, startup, _ = fc_model(regularizer=fluid.regularizer.L2Decay(1e-4),
                                global_clip=fluid.clip.GradientClipByValue(10.0, -10.0))
    t = transpile(main, startup)
    t.get_trainer_program(wait_port=False)
    ps0 = t.get_pserver_program(EP0)
    assert ps0.num_blocks == 3
    assert op_types(ps0.block(1)) == ["sum", "scale", "clip", "sgd"]
    assert op_types(ps0.block(2)) == ["sum", "scale", "clip", "scale", "sum", "sgd"]
    clip, scale, add, sgd = ps0.block(2).ops[2:]
    assert clip.input("X") == ["fc_w@GRAD.block1"]
    assert scale.input("X") == ["fc_w.block1"]
    # fluidist: the pserver's optimizer reads the clipped, regularised gradient
    assert sgd.input("Grad") == add.output("Out") == clip.output("Out")


def test_rmsprop_accumulators_are_sliced_with_their_parameter():
    main, startup, _ = fc_model(optimizer=lambda lr: fluid.optimizer.RMSProp(learning_rate=lr))
    t = transpile(main, startup)
    t.get_trainer_program(wait_port=False)
    ps0 = t.get_pserver_program(EP0)
    assert op_types(ps0.block(2)) == ["sum", "scale", "rmsprop"]
    rms = ps0.block(2).ops[2]
    for slot in ("Moment", "MeanSquare"):
        name = rms.input(slot)[0]
        assert ps0.global_block().var(name).shape == (500, 1000)
    ps0_startup = t.get_startup_program(EP0, ps0)
    shapes = {op.output("Out")[0]: op.attr("shape") for op in ps0_startup.global_block().ops}
    assert shapes[rms.input("Moment")[0]] == [500, 1000]


def test_adam_beta_pow_updates_follow_their_parameter():
    # as Paddle 1.8's transpiler: the adam op advances its parameter's beta powers, no scale ops
    main, startup, _ = fc_model(optimizer=lambda lr: fluid.optimizer.Adam(learning_rate=lr))
    t = transpile(main, startup)
    t.get_trainer_program(wait_port=False)
    ps0 = t.get_pserver_program(EP0)
    assert op_types(ps0.block(1)) == ["sum", "scale", "adam"]
    assert op_types(ps0.block(2)) == ["sum", "scale", "adam"]
    for blk in (ps0.block(1), ps0.block(2)):
        adam = blk.ops[-1]
        param = adam.input("Param")[0].split(".block")[0]
        assert adam.input("Beta1Pow") == adam.output("Beta1PowOut") == [param + "_beta1_pow_acc_0"]


def test_blocks_of_one_parameter_on_one_pserver_advance_their_own_beta_pows():
    """HashName puts both blocks of a parameter on one pserver: each block's adam op gets its own
    beta powers (one shared pair would be advanced twice per step), filled by the startup."""
    main, startup, _ = fc_model(optimizer=lambda lr: fluid.optimizer.Adam(learning_rate=lr))
    config = fluid.DistributeTranspilerConfig()
    config.split_method = fluid.transpiler.HashName
    t = fluid.DistributeTranspiler(config)
    t.transpile(0, program=main, pservers=",".join([EP0, EP1]), trainers=1, startup_program=startup)
    plan = t._plan
    blocks = plan.param_blocks["fc_w"]
    assert len(blocks) == 2 and blocks[0].endpoint == blocks[1].endpoint
    ps = t.get_pserver_program(blocks[0].endpoint)
    adams = [op for b in ps.blocks[1:] for op in b.ops if op.type == "adam" and op.input("Param")[0].startswith("fc_w")]
    pows = [(op.input("Beta1Pow"), op.output("Beta1PowOut"), op.output("Beta2PowOut")) for op in adams]
    assert pows == [(["fc_w_beta1_pow_acc_0.block%d" % i], ["fc_w_beta1_pow_acc_0.block%d" % i],
                     ["fc_w_beta2_pow_acc_0.block%d" % i]) for i in range(2)]
    fills = {op.output("Out")[0]: (op.attr("shape"), op.attr("value"))
             for op in t.get_startup_program(blocks[0].endpoint, ps).global_block().ops if op.type == "fill_constant"}
    for i in range(2):
        assert fills["fc_w_beta1_pow_acc_0.block%d" % i] == ([1], pytest.approx(0.9))
        assert fills["fc_w_beta2_pow_acc_0.block%d" % i] == ([1], pytest.approx(0.999))


def test_config_errors_name_the_field():
    c = fluid.DistributeTranspilerConfig()
    c.min_block_size = 100
    with pytest.raises(ValueError, match="min_block_size"):
        fluid.DistributeTranspiler(c)
    c = fluid.DistributeTranspilerConfig()
    with pytest.raises(ValueError, match="runtime_split_send_recv"):
        c.runtime_split_send_recv = True
    c.sync_mode = False
    c.runtime_split_send_recv = True
    with pytest.raises(ValueError, match="sync_mode"):
        c.sync_mode = True
    c = fluid.DistributeTranspilerConfig()
    c.enable_dc_asgd = True
    with pytest.raises(ValueError, match="enable_dc_asgd"):
        fluid.DistributeTranspiler(c)
    main, startup, _ = fc_model()
    with pytest.raises(ValueError, match="pservers: .127.0.0.1. is not host:port"):
        transpile(main, startup, pservers="127.0.0.1")
    with pytest.raises(ValueError, match="not one of the pservers"):
        transpile(main, startup).get_pserver_program("127.0.0.1:1")


BAD_TRANSPILE_ARGS = [
    (dict(pservers=""), ValueError, r"transpile: pservers is empty \(''\): give at least one ip:port"),
    (dict(pservers=" , "), ValueError, r"transpile: pservers is empty"),
    (dict(pservers=None), TypeError, r"transpile: pservers must be a comma-separated string or a list of ip:port"),
    (dict(pservers="10.0.0.1:6170,10.0.0.1:6170"), ValueError, r"transpile: pservers lists an endpoint twice"),
    (dict(trainers=0), ValueError, r"transpile: trainers \(pserver mode\) must be >= 1, got 0"),
    (dict(trainers="2"), TypeError, r"transpile: trainers must be the number of trainers \(an int\) in pserver mode, "
                                    r"got the string '2'"),
    (dict(trainers=2.5), TypeError, r"transpile: trainers \(pserver mode\) must be an int, got 2.5 \(float\)"),
    (dict(trainer_id="0"), TypeError, r"transpile: trainer_id must be an int, got '0' \(str\)"),
    (dict(trainer_id=True), TypeError, r"transpile: trainer_id must be an int, got True \(bool\)"),
    (dict(program="main"), TypeError, r"transpile: program must be a Program, got 'main' \(str\)"),
    (dict(startup_program=3), TypeError, r"transpile: startup_program must be a Program, got 3 \(int\)"),
]


@pytest.mark.parametrize("bad,exc,match", BAD_TRANSPILE_ARGS)
def test_bad_transpile_arguments_are_named(bad, exc, match):
    main, startup, _ = fc_model()
    kw = dict(trainer_id=0, program=main, pservers="%s,%s" % (EP0, EP1), trainers=2, sync_mode=True,
              startup_program=startup, current_endpoint="")
    kw.update(bad)
    with pytest.raises(exc, match=match):
        fluid.DistributeTranspiler().transpile(**kw)


def test_good_transpile_arguments_in_their_other_spellings():
    main, startup, _ = fc_model()
    t = fluid.DistributeTranspiler()
    t.transpile(np.int64(1), program=main, pservers=[EP0, EP1], trainers=np.int32(2), sync_mode=np.bool_(False),
                startup_program=startup, current_endpoint=EP0)
    assert (t.trainer_id, t.trainer_num, t.sync_mode) == (1, 2, False)
    assert type(t.trainer_id) is int and type(t.trainer_num) is int


@pytest.mark.parametrize("field,value,exc,match", [
    ("slice_var_ups", False, AttributeError, r"no field 'slice_var_ups' \(did you mean 'slice_var_up'\?\)"),
    ("min_blocksize", 9000, AttributeError, r"did you mean 'min_block_size'"),
    ("min_block_size", True, ValueError, r"DistributeTranspilerConfig.min_block_size must be a number >= 8192"),
    ("min_block_size", 4096, ValueError, r"DistributeTranspilerConfig.min_block_size must be a number >= 8192"),
    ("nccl_comm_num", 0, ValueError, r"DistributeTranspilerConfig.nccl_comm_num must be >= 1, got 0"),
    ("nccl_comm_num", "2", TypeError, r"DistributeTranspilerConfig.nccl_comm_num must be an int, got '2'"),
    ("mode", "ps", ValueError, r"DistributeTranspilerConfig.mode must be one of"),
    ("split_method", "RoundRobin", ValueError, r"DistributeTranspilerConfig.split_method must be RoundRobin or HashName"),
])
def test_every_config_field_is_checked_by_name(field, value, exc, match):
    c = fluid.DistributeTranspilerConfig()
    with pytest.raises(exc, match=match):
        setattr(c, field, value)
        fluid.DistributeTranspiler(c)


def test_hashname_is_stable():
    from fluidist.transpiler import HashName
    d = HashName([EP0, EP1])
    assert d.dispatch(["fc_w.block0", "fc_w.block1", "fc_b"]) == d.dispatch(["fc_w.block0", "fc_w.block1", "fc_b"])
    import zlib
    assert d.dispatch(["abc"]) == [[EP0, EP1][zlib.crc32(b"abc") % 2]]


def test_slice_variable_rules():
    from fluidist.transpiler.slicing import slice_variable

    class V:
        def __init__(self, name, shape):
            self.name, self.shape = name, shape
    blocks = slice_variable([V("a", [1000, 1000]), V("b", [1000]), V("c", [1000, 64])], 2, 8192)
    assert [str(b) for b in blocks] == ["a:0:500000", "a:1:500000", "b:0:1000", "c:0:32000", "c:1:32000"]
    blocks = slice_variable([V("d", [10, 3001])], 3, 8192)
    assert [b.rows for b in blocks] == [4, 4, 2]
    assert [str(b) for b in slice_variable([V("a", [1000, 1000])], 2, 1048576)] == ["a:0:1000000"]
    assert blocks[2].split(":") == ["d", "2", "6002"]      # Paddle's blocks are their text, which scripts split


def test_clip_by_global_norm_is_refused_in_pserver_mode():
    main, startup, _ = fc_model(global_clip=fluid.clip.GradientClipByGlobalNorm(1.0))
    with pytest.raises(ValueError, match="clipping by the global norm"):
        transpile(main, startup)


def test_clip_by_norm_per_parameter_keeps_the_parameter_whole():
    """A clip by each gradient's own norm needs the whole gradient: the parameter is not sliced, so the
    pserver computes the norm local training computes."""
    main, startup, _ = fc_model(global_clip=fluid.clip.GradientClipByNorm(1.0))
    t = transpile(main, startup)
    plan = t._plan
    assert plan.whole == set(plan.params)
    assert all(len(plan.param_blocks[p]) == 1 for p in plan.params)
    for ep in plan.endpoints:
        t.get_pserver_program(ep).lint()


def test_sparse_embedding_gradient_is_split_by_rows():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        ids = fluid.data("ids", [None, 1], dtype="int64")
        emb = fluid.layers.embedding(ids, size=[2048, 8], is_sparse=True, param_attr=fluid.ParamAttr(name="emb_w"))
        loss = fluid.layers.mean(fluid.layers.fc(emb, 1, param_attr=fluid.ParamAttr(name="out_w"),
                                                 bias_attr=False))
        fluid.optimizer.SGD(0.1).minimize(loss)
    t = transpile(main, startup)
    trainer = t.get_trainer_program(wait_port=False)
    split = [op for op in trainer.global_block().ops if op.type == "split_selected_rows"]
    assert len(split) == 1 and split[0].attr("height_sections") == [1024, 1024]
    assert split[0].output("Out") == ["emb_w@GRAD.block0.trainer_0", "emb_w@GRAD.block1.trainer_0"]
    ps = t.get_pserver_program(EP0)
    las = ps.global_block().ops[0]
    blocks = {b.idx: op_types(b) for b in las.attr("optimize_blocks")}
    assert ["sum", "scale", "sgd"] in blocks.values()
    assert any(s.startswith("emb_w@GRAD.block") for s in las.attr("sparse_grad_to_param"))
    # a row-sparse gradient's sum stays in its block (rows are concatenated, not added on arrival)
    assert las.attr("sum_on_arrival") and not any(s.startswith("emb_w") for s in las.attr("sum_on_arrival"))


def _table_model(distributed, optimizer):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        ids = fluid.data("ids", [None, 1], dtype="int64")
        emb = fluid.layers.embedding(ids, size=[1001, 8], is_sparse=True, is_distributed=distributed,
                                     param_attr=fluid.ParamAttr(name="emb_w"))
        pred = fluid.layers.fc(emb, 1, param_attr=fluid.ParamAttr(name="fc_w"), bias_attr=fluid.ParamAttr(name="fc_b"))
        loss = fluid.layers.mean(pred)
        optimizer().minimize(loss)
    return main, startup


@pytest.mark.parametrize("sync", [True, False])
def test_adam_with_a_sparse_local_table(sync):
    main, startup = _table_model(False, lambda: fluid.optimizer.Adam(0.01))
    t = transpile(main, startup, sync=sync)
    trainer = t.get_trainer_program(wait_port=False)
    assert "split_selected_rows" not in op_types(trainer.global_block())   # 8008 elements: one block
    eps = {}
    for ep in (EP0, EP1):
        ps = t.get_pserver_program(ep)
        for b in ps.global_block().ops[0].attr("optimize_blocks"):
            adam = [op for op in b.ops if op.type == "adam"]
            if adam:
                eps[adam[0].input("Param")[0]] = op_types(b)
    want = (["sum", "scale"] if sync else []) + ["adam"]
    assert eps == {"emb_w": want, "fc_b": want, "fc_w": want}


@pytest.mark.parametrize("sync", [True, False])
def test_distributed_table_prefetch_and_table_blocks(sync):
    main, startup = _table_model(True, lambda: fluid.optimizer.Adam(0.01))
    t = transpile(main, startup, sync=sync)
    trainer = t.get_trainer_program(wait_port=False)
    types = op_types(trainer.global_block())
    assert types[:3] == ["split_ids", "prefetch", "merge_ids"] and "lookup_table" not in types
    i = types.index("lookup_table_grad")
    assert types[i + 1:i + 3] == ["split_ids", "send"]
    send = trainer.global_block().ops[i + 2]
    assert send.attr("epmap") == [EP0, EP1]
    suffix = ".trainer_0" if sync else ""
    assert send.input("X") == ["emb_w@GRAD%s.pserver_0" % suffix, "emb_w@GRAD%s.pserver_1" % suffix]
    assert not [op for op in trainer.global_block().ops if op.type == "recv" and "emb_w" in op.output("Out")]
    fake = [op for op in startup.global_block().ops if op.output("Out") == ["emb_w"]]
    assert [op.type for op in fake] == ["fake_init"] and fake[0].attr("shape") == [1001, 8]
    with pytest.warns(UserWarning, match="updated with SGD"):
        ps = t.get_pserver_program(EP1)
    las = ps.global_block().ops[0]
    table_block = ps.block(int(las.attr("grad_to_block_id")[-1].split(":")[1]))
    assert op_types(table_block) == (["sum", "scale", "sgd"] if sync else ["sgd"])
    assert las.attr("prefetch_var_name_to_block_id") == ["prefetch_compress_in_tmp_1:%d" % (table_block.idx + 1)]
    assert op_types(ps.block(table_block.idx + 1)) == ["lookup_sparse_table"]
    assert op_types(ps.block(las.attr("checkpint_block_id"))) == ["save"]
    assert ps.global_block().var("emb_w").shape == (500, 8)       # rows 1, 3, ..., 999 of 1001
    with pytest.warns(UserWarning):
        startup1 = t.get_startup_program(EP1)
    init = [op for op in startup1.global_block().ops if op.output("Out") == ["emb_w"]][0]
    assert (init.attr("row_begin"), init.attr("row_step"), init.attr("shape")) == (1, 2, [500, 8])


@pytest.mark.parametrize("sync", [True, False])
def test_distributed_table_with_adagrad_keeps_its_rule_and_lazy_accumulator(sync):
    """A row-wise rule (Adagrad) runs on the pservers' shards; its Moment is rows materialised when
    first written there (lazy_rows), and trainers hold neither the table nor its Moment."""
    main, startup = _table_model(True, lambda: fluid.optimizer.Adagrad(0.01))
    moment = [op for op in main.global_block().ops if op.type == "adagrad" and op.input("Param") == ["emb_w"]][0] \
        .input("Moment")[0]
    t = transpile(main, startup, sync=sync)
    t.get_trainer_program(wait_port=False).lint()
    fakes = {op.output("Out")[0]: op.attr("shape") for op in startup.global_block().ops if op.type == "fake_init"}
    assert fakes == {"emb_w": [1001, 8], moment: [1001, 8]}
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")     # no "updated with SGD" warning
        ps = t.get_pserver_program(EP0)
        ps_startup = t.get_startup_program(EP0, ps)
    ps.lint()
    ps_startup.lint()
    las = ps.global_block().ops[0]
    table_block = ps.block(int(las.attr("grad_to_block_id")[-1].split(":")[1]))
    assert op_types(table_block) == (["sum", "scale", "adagrad"] if sync else ["adagrad"])
    upd = table_block.ops[-1]
    assert upd.input("Param") == ["emb_w"] and upd.input("Moment") == [moment] and upd.output("MomentOut") == [moment]
    assert ps.global_block().var(moment).shape == (501, 8)        # rows 0, 2, ..., 1000 of 1001
    init = [op for op in ps_startup.global_block().ops if op.output("Out") == [moment]]
    assert [op.type for op in init] == ["lazy_rows"] and init[0].attr("shape") == [501, 8]


def test_distributed_table_with_adam_falls_back_to_sgd_and_says_so():
    main, startup = _table_model(True, lambda: fluid.optimizer.Adam(0.01, lazy_mode=True))
    t = transpile(main, startup)
    with pytest.warns(UserWarning, match="one-element state"):
        ps = t.get_pserver_program(EP0)
    las = ps.global_block().ops[0]
    assert op_types(ps.block(int(las.attr("grad_to_block_id")[-1].split(":")[1]))) == ["sum", "scale", "sgd"]


def test_async_lr_decay_counts_every_trainers_steps_in_paddles_layout():
    """Paddle 1.8's layout: per-trainer counters started in both startups, each trainer sends its own
    after its gradients, the pserver's LR block sums them where the local program incremented."""
    main, startup, _ = fc_model(lr_decay=True)
    t = transpile(main, startup, sync=False)
    trainer = t.get_trainer_program(wait_port=False)
    counter = "@LR_DECAY_COUNTER@"
    sends = [op for op in trainer.global_block().ops if op.type == "send"]
    assert sends[-1].input("X") == [counter + ".trainer_0"] * 2 and sends[-1].attr("epmap") == [EP0, EP1]
    assert sends[-1].attr("merge_add") is True
    assert [op.output("Out") for op in startup.global_block().ops[:2]] == [[counter + ".trainer_1"],
                                                                          [counter + ".trainer_0"]]
    ps = t.get_pserver_program(EP0)
    las = ps.global_block().ops[0]
    assert "%s:1" % counter in las.attr("grad_to_block_id") and las.attr("lr_decay_block_id") == 1
    assert las.attr("accumulate_on_arrival") == [counter + ".trainer_0", counter + ".trainer_1"]
    first = ps.block(1).ops[0]
    assert first.type == "sum" and first.input("X") == las.attr("accumulate_on_arrival")
    # the pserver's copies start so that their sum is the counter after one local increment
    init = {op.output("Out")[0]: op.attr("value") for op in t.get_startup_program(EP0, ps).global_block().ops
            if op.type == "fill_constant"}
    assert init[counter + ".trainer_0"] + init[counter + ".trainer_1"] == init[counter] + 1


@pytest.mark.parametrize("optimizer", ["sgd", "momentum", "adam", "adamax", "adagrad", "decayed_adagrad",
                                       "rmsprop", "ftrl", "lamb", "lars_momentum"])
@pytest.mark.parametrize("lr_decay,sync", [(False, True), (True, True), (True, False)])
def test_every_program_the_transpiler_makes_lints(optimizer, lr_decay, sync):
    """Trainer, trainer startup, and every pserver's program and startup pass Program.lint()."""
    main, startup, _ = fc_model(optimizer=OPTIMIZERS[optimizer], lr_decay=lr_decay)
    t = transpile(main, startup, sync=sync)
    t.get_trainer_program(wait_port=False).lint()
    startup.lint()
    for ep in t._plan.endpoints:
        prog = t.get_pserver_program(ep)
        prog.lint()
        t.get_startup_program(ep, prog).lint()


def test_norm_based_updates_keep_their_parameter_whole():
    """LAMB and LARS read norms of the whole parameter: such a parameter is one block on one pserver,
    while the same program with Adam slices it."""
    for name, whole in (("lamb", True), ("lars_momentum", True), ("adam", False)):
        main, startup, _ = fc_model(optimizer=OPTIMIZERS[name])
        plan = transpile(main, startup)._plan
        assert (len(plan.param_blocks["fc_w"]) == 1) == whole, name
        assert ("fc_w" in plan.whole) == whole


OPTIMIZERS = {
    "sgd": lambda lr: fluid.optimizer.SGD(lr),
    "momentum": lambda lr: fluid.optimizer.Momentum(lr, momentum=0.9, use_nesterov=True),
    "adam": lambda lr: fluid.optimizer.Adam(lr),
    "adamax": lambda lr: fluid.optimizer.Adamax(lr),
    "adagrad": lambda lr: fluid.optimizer.Adagrad(lr),
    "decayed_adagrad": lambda lr: fluid.optimizer.DecayedAdagrad(lr),
    "rmsprop": lambda lr: fluid.optimizer.RMSProp(lr, centered=True, momentum=0.5),
    "ftrl": lambda lr: fluid.optimizer.Ftrl(lr, l1=0.01, l2=0.01),
    "lamb": lambda lr: fluid.optimizer.Lamb(lr),
    "lars_momentum": lambda lr: fluid.optimizer.LarsMomentum(lr, momentum=0.9),
}


def test_gradient_merge_is_refused_in_pserver_mode():
    from fluidist.passes.gradient_merge import apply_gradient_merge
    main, startup, _ = fc_model()
    apply_gradient_merge(main, startup, 4)
    with pytest.raises(ValueError, match="gradient merge"):
        transpile(main, startup)


def test_find_distributed_lookup_table_sees_both_lookup_ops():
    """``fluid.distribute_lookup_table`` finds the table's lookups by the registry's ``table_lookup``:
    ``layers.embedding`` (lookup_table) and ``fluid.embedding`` (lookup_table_v2) alike."""
    from fluidist import distribute_lookup_table as dlt
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        ids = fluid.data("ids", [None, 1], dtype="int64")
        a = fluid.layers.embedding(ids, size=[10, 4], is_sparse=True, is_distributed=True,
                                   param_attr=fluid.ParamAttr(name="tab"))
        b = fluid.embedding(ids, size=[10, 4], is_sparse=True, is_distributed=True, param_attr=fluid.ParamAttr(name="tab"))
    assert dlt.find_distributed_lookup_table(main) == "tab"
    assert [v.name for v in dlt.find_distributed_lookup_table_inputs(main, "tab")] == ["ids", "ids"]
    assert [v.name for v in dlt.find_distributed_lookup_table_outputs(main, "tab")] == [a.name, b.name]


def test_a_sparse_tables_trainer_init_is_fake_and_the_pservers_values_are_received():
    """Paddle 1.8: a table read by a row-sparse lookup gets a ``fake_init`` on the trainer (its values
    are the pservers'); here it stands where the initialiser stood, before the startup's ``recv``."""
    main, startup = _table_model(False, lambda: fluid.optimizer.SGD(0.01))
    t = transpile(main, startup)
    t.get_trainer_program(wait_port=False)
    t.get_trainer_program(wait_port=False)      # a second call changes nothing
    ops = startup.global_block().ops
    writers = [(op.type, i) for i, op in enumerate(ops) if "emb_w" in op.output_arg_names]
    assert [w[0] for w in writers] == ["fake_init", "recv"]
    assert ops[writers[0][1]].attr("shape") == [1001, 8]
    # the dense fc keeps its initialiser
    assert [op.type for op in ops if op.output_arg_names == ["fc_w"]] == ["uniform_random", "recv"]


def test_every_sparse_table_of_a_ctr_program_gets_its_fake_init_where_its_initialiser_stood():
    """Many row-sparse tables (a CTR model has one per slot): each initialiser, and only those, is
    replaced in place by a ``fake_init`` of the table's shape; the startup's other ops keep their order."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        pooled = []
        for i in range(12):
            ids = fluid.data("slot%d" % i, [None, 1], dtype="int64", lod_level=1)
            emb = fluid.layers.embedding(ids, size=[100 + i, 4], is_sparse=True,
                                         param_attr=fluid.ParamAttr(name="emb%d" % i))
            pooled.append(fluid.layers.sequence_pool(emb, "sum"))
        loss = fluid.layers.mean(fluid.layers.fc(fluid.layers.concat(pooled, axis=1), 1))
        fluid.optimizer.SGD(0.01).minimize(loss)
    before = [(op.type, op.output_arg_names) for op in startup.global_block().ops]
    t = transpile(main, startup)
    t.get_trainer_program(wait_port=False)
    after = [(op.type, op.output_arg_names) for op in startup.global_block().ops][:len(before)]
    assert [names for _, names in after] == [names for _, names in before]
    for (old_type, names), (new_type, _), op in zip(before, after, startup.global_block().ops):
        table = names[0].startswith("emb")
        assert new_type == ("fake_init" if table else old_type), names
        if table:
            assert op.attr("shape") == [100 + int(names[0][3:]), 4]
