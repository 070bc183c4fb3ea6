"""GEO-SGD's programs (geo_sgd_mode / GeoSgdTranspiler) and the half-async trainer's barrier: op
lists and attributes, as Paddle 1.8's GeoSgdTranspiler shapes them."""
import re

import numpy as np
import pytest

import fluidist as fluid
from fluidist.transpiler.geo_sgd_transpiler import GeoSgdTranspiler

from models import fc_model, op_types, transpile

EP0, EP1 = "127.0.0.1:6174", "127.0.0.1:6175"


def geo_config(push_nums=4):
    config = fluid.DistributeTranspilerConfig()
    config.geo_sgd_mode = True
    config.geo_sgd_need_push_nums = push_nums
    return config


def emb_model():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 1
    with fluid.program_guard(main, startup):
        ids = fluid.data(name="ids", shape=[None, 1], dtype="int64")
        y = fluid.data(name="y", shape=[None, 1], dtype="float32")
        emb = fluid.layers.embedding(ids, size=[2048, 8], is_sparse=True, param_attr=fluid.ParamAttr(name="emb_w"))
        pred = fluid.layers.fc(emb, 1, param_attr=fluid.ParamAttr(name="out_w"), bias_attr=False)
        fluid.optimizer.Adam(0.01).minimize(fluid.layers.mean(fluid.layers.square_error_cost(pred, y)))
    return main, startup


def test_trainer_keeps_its_optimizer_and_ends_with_the_communicator_send():
    main, startup, _ = fc_model()
    before = op_types(main.global_block())
    t = transpile(main, startup, config=geo_config())
    trainer = t.get_trainer_program(wait_port=False)
    assert op_types(trainer.global_block()) == before + ["send"]
    send = trainer.global_block().ops[-1]
    assert send.input("X") == [] and send.attr("send_varnames") == [] and send.attr("epmap") == []
    assert op_types(startup.global_block()) == [
        "fill_constant", "fill_constant", "uniform_random", "recv", "recv", "fetch_barrier", "concat", "send"]
    init = startup.global_block().ops[-1]
    assert init.attr("send_varnames") == ["param_init"] and sorted(init.input("X")) == ["fc_b", "fc_w"]
    info = t._get_vars_info()
    assert info["fc_w"] == {"var_names": ["fc_w.block0", "fc_w.block1"], "sections": ["500", "500"],
                            "epmap": [EP1, EP0], "is_sparse": ["False"]}
    assert info["fc_b"]["var_names"] == ["fc_b"] and info["fc_b"]["epmap"] == [EP0]
    assert trainer._geo_sgd["push_nums"] == 4 and trainer._geo_sgd["trainers"] == 2


def test_pserver_adds_the_deltas_of_its_blocks():
    main, startup, _ = fc_model()
    t = transpile(main, startup, config=geo_config())
    ps0 = t.get_pserver_program(EP0)
    ps0.lint()
    las = ps0.global_block().ops[0]
    assert op_types(ps0.global_block()) == ["listen_and_serv"]
    assert las.attr("distributed_mode") == 3 and las.attr("Fanin") == 2
    assert las.attr("grad_to_block_id") == ["fc_b.delta:1", "fc_w.block1.delta:2"]
    assert las.input("X") == ["fc_b.delta", "fc_w.block1.delta"] and las.attr("sparse_grad_to_param") == []
    for idx, param in ((1, "fc_b"), (2, "fc_w.block1")):
        (op,) = ps0.block(idx).ops
        assert op.type == "sum" and op.input("X") == [param, param + ".delta"] and op.output("Out") == [param]
    start = t.get_startup_program(EP0, ps0)
    scope = fluid.Scope()
    fluid.Executor().run(start, scope=scope)
    local = fluid.Scope()
    fluid.Executor().run(t.origin_startup_program, scope=local)
    np.testing.assert_array_equal(np.array(scope.find_var("fc_w.block1").get_tensor()),
                                  np.array(local.find_var("fc_w").get_tensor())[500:])


def test_sparse_table_deltas_are_row_sparse_and_its_ids_go_to_the_communicator():
    main, startup = emb_model()
    t = GeoSgdTranspiler(geo_config(7))
    t.transpile(1, program=main, pservers=EP0 + "," + EP1, trainers=2, startup_program=startup)
    main.lint()
    trainer = t.get_trainer_program(wait_port=False)
    assert "adam" in op_types(trainer.global_block())
    send = trainer.global_block().ops[-1]
    assert send.type == "send" and send.input("X") == ["ids"] and send.attr("send_varnames") == ["emb_w"]
    assert t._get_vars_info()["emb_w"]["is_sparse"] == ["True"]
    ps = t.get_pserver_program(EP1)
    las = ps.global_block().ops[0]
    assert las.attr("sparse_grad_to_param") == ["emb_w.block1.delta:emb_w.block1"]
    assert ps.global_block().var("emb_w.block1.delta").type == "SELECTED_ROWS"
    assert ps.global_block().var("emb_w.block1").shape == (1024, 8)


def test_geo_trains_a_distributed_table_as_a_sparse_parameter():
    """Paddle 1.8's GeoSgdTranspiler only records the is_distributed table's name: the table's delta is
    pushed as a row-sparse one, like that of embedding(is_sparse=True) (the same programs, but for the
    lookup's is_distributed attribute)."""
    def programs(is_distributed):
        main, startup = fluid.Program(), fluid.Program()
        with fluid.program_guard(main, startup), fluid.unique_name.guard():
            ids = fluid.data(name="ids", shape=[None, 1], dtype="int64")
            emb = fluid.layers.embedding(ids, size=[100, 4], is_sparse=True, is_distributed=is_distributed,
                                         param_attr=fluid.ParamAttr(name="emb_w"))
            fluid.optimizer.SGD(0.1).minimize(fluid.layers.mean(emb))
            t = transpile(main, startup, config=geo_config())
            texts = [str(t.get_trainer_program(wait_port=False)), str(startup)]
            texts += [str(p) for ep in (EP0, EP1) for p in t.get_pserver_programs(ep)]
            return t, [re.sub(r"op_namescope = [^,]*, |is_distributed = \w+", "", text) for text in texts]
    t, got = programs(True)
    assert got == programs(False)[1]
    assert t._get_vars_info()["emb_w"]["is_sparse"] == ["True"]


def test_geo_refuses_a_bad_push_count():
    config = geo_config()
    config.geo_sgd_need_push_nums = 0
    with pytest.raises(ValueError, match="geo_sgd_need_push_nums must be"):
        fluid.DistributeTranspiler(config)
    with pytest.raises(RuntimeError, match="not transpiled with geo_sgd_mode"):
        m, s, _ = fc_model()
        transpile(m, s)._get_vars_info()


def test_half_async_step_ends_at_the_communicator_barrier():
    main, startup, _ = fc_model()
    config = fluid.DistributeTranspilerConfig()
    config.sync_mode = False
    config.half_async = True
    trainer = transpile(main, startup, sync=False, config=config).get_trainer_program(wait_port=False)
    types = op_types(trainer.global_block())
    barrier = trainer.global_block().ops[types.index("send_barrier")]
    assert barrier.attr("half_async") and types.index("send_barrier") < types.index("recv")
    assert "fetch_barrier" not in types
