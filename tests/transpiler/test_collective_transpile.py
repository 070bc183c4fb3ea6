"""Op lists of programs transpiled in nccl2 and collective modes."""
import pytest

import fluidist as fluid
from fluidist.framework.op_role import OpRole

from models import fc_model, op_types

EPS = "127.0.0.1:6170,127.0.0.1:6171"


def collective(mode, rank=0, nrings=1, steps=1, optimizer=None):
    main, startup, loss = fc_model(size=16, optimizer=optimizer)
    config = fluid.DistributeTranspilerConfig()
    config.mode = "collective"
    config.collective_mode = mode
    config.nccl_comm_num = nrings
    config.local_sgd_steps = steps
    config.wait_port = False
    t = fluid.DistributeTranspiler(config)
    t.transpile(rank, trainers=EPS, current_endpoint=EPS.split(",")[rank], startup_program=startup, program=main)
    return main, startup


def test_nccl2_appends_gen_nccl_id_last():
    main, startup, _ = fc_model(size=16)
    before = op_types(main.global_block())
    config = fluid.DistributeTranspilerConfig()
    config.mode = "nccl2"
    config.wait_port = False
    config.nccl_comm_num = 2
    t = fluid.DistributeTranspiler(config)
    t.transpile(1, trainers=EPS, current_endpoint="127.0.0.1:6171", startup_program=startup, program=main)
    assert op_types(main.global_block()) == before
    op = startup.global_block().ops[-1]
    assert op.type == "gen_nccl_id" and op.output("NCCLID") == ["NCCLID"]
    assert op.attr("trainers") == EPS.split(",") and op.attr("trainer_id") == 1 and op.attr("nccl_comm_num") == 2
    assert startup.global_block().var("NCCLID_1").persistable
    assert main._trainers_endpoints == EPS.split(",") and main._nccl_comm_num == 2


def test_grad_allreduce_startup_and_main():
    main, startup = collective("grad_allreduce", nrings=2)
    assert op_types(startup.global_block())[-8:] == [
        "c_gen_nccl_id", "c_comm_init", "c_gen_nccl_id", "c_comm_init", "c_broadcast", "c_broadcast",
        "c_sync_comm_stream", "c_sync_comm_stream"]
    assert [op.attr("ring_id") for op in startup.global_block().ops if op.type == "c_broadcast"] == [0, 1]
    types = op_types(main.global_block())
    assert types == [
        "mul", "elementwise_add", "elementwise_sub", "square", "mean", "fill_constant", "scale", "mean_grad",
        "square_grad", "elementwise_sub_grad", "elementwise_add_grad", "c_sync_calc_stream", "c_allreduce_sum",
        "mul_grad", "c_sync_calc_stream", "c_allreduce_sum", "c_sync_comm_stream", "c_sync_comm_stream", "sgd",
        "sgd"]
    ops = main.global_block().ops
    assert ops[6].attr("scale") == 0.5 and ops[6].attr("op_role") == OpRole.Backward
    assert ops[12].input("X") == ["fc_b@GRAD"] and ops[12].attr("op_role") == OpRole.Backward | OpRole.Collective
    assert ops[15].input("X") == ["fc_w@GRAD"]
    # reverse walk: the last grad gets ring 0
    assert ops[15].attr("ring_id") == 0 and ops[12].attr("ring_id") == 1


def test_local_sgd_every_step_matches_paddle_layout():
    main, startup = collective("local_sgd")
    assert op_types(startup.global_block())[-2:] == ["assign", "assign"]
    assert startup.global_block().var("fc_w@SNAPSHOT").persistable
    types = op_types(main.global_block())
    assert types[-15:] == [
        "sgd", "elementwise_sub", "c_sync_calc_stream", "c_allreduce_sum",
        "sgd", "elementwise_sub", "c_sync_calc_stream", "c_allreduce_sum",
        "c_sync_comm_stream", "scale", "elementwise_sub", "assign", "scale", "elementwise_sub", "assign"]


def test_local_sgd_k_steps_uses_a_conditional_block():
    main, startup = collective("local_sgd", steps=3)
    types = op_types(main.global_block())
    assert types[-6:] == ["increment", "fill_constant", "fill_constant", "elementwise_mod", "equal",
                          "conditional_block"]
    sub = main.global_block().ops[-1].attr("sub_block")
    assert op_types(sub)[:3] == ["elementwise_sub", "c_sync_calc_stream", "c_allreduce_sum"]


def test_collective_errors():
    main, startup, _ = fc_model(size=16)
    config = fluid.DistributeTranspilerConfig()
    config.mode = "collective"
    config.collective_mode = "grad_allreduce"
    config.wait_port = False
    t = fluid.DistributeTranspiler(config)
    with pytest.raises(ValueError, match="must > 1"):
        t.transpile(0, trainers="127.0.0.1:6170", current_endpoint="127.0.0.1:6170", program=main,
                    startup_program=startup)
    with pytest.raises(ValueError, match="not in the trainer endpoints"):
        t.transpile(0, trainers=EPS, current_endpoint="127.0.0.1:9", program=main, startup_program=startup)
    config.collective_mode = "bogus"
    with pytest.raises(ValueError, match="collective_mode"):
        fluid.DistributeTranspiler(config)
