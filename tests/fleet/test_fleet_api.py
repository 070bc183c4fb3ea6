"""The Fleet API in one process: set-up, who-is-who, the programs minimize produces (collective
and parameter server), strategies, the checks, and init_server loading a saved directory."""
import warnings

import numpy as np
import pytest

import fluidist as fluid
from fleet_models import PARAMS, base_optimizer, build, global_batch, initial_params, local_history, rel_err
from fluidist.fleet.strategy import strategy_from_config
from fluidist.incubate.fleet.base import role_maker
from fluidist.incubate.fleet.collective import DistributedStrategy, fleet
from fluidist.incubate.fleet.parameter_server.distribute_transpiler import fleet as ps_fleet
from fluidist.incubate.fleet.parameter_server.distribute_transpiler.distributed_strategy import (
    AsyncStrategy, DistributedStrategy as PSStrategy, GeoStrategy, HalfAsyncStrategy, StrategyFactory, SyncStrategy)
from fluidist.transpiler.config import DistributedMode

EPS2 = ["127.0.0.1:6070", "127.0.0.1:6071"]
SERVERS = ["127.0.0.1:6170", "127.0.0.1:6171"]


@pytest.fixture
def rpc_ops():
    """The parameter-server transpiler inserts send/recv ops, registered by the rpc runtime."""
    import fluidist.ops.rpc_ops as rpc_ops
    return rpc_ops


def op_types(program):
    return [op.type for op in program.global_block().ops]


# ---------------------------------------------------------------- base
def test_two_singletons_and_init_checks():
    assert fleet is not ps_fleet
    from fluidist.fleet.collective import fleet as f1
    from fluidist.fleet.parameter_server import fleet as f2
    assert f1 is fleet and f2 is ps_fleet
    with pytest.raises(TypeError, match="role_maker must be an instance of RoleMakerBase"):
        fleet.init("not a role maker")
    fleet._is_initialized = False
    with pytest.raises(RuntimeError, match="fleet.init"):
        fleet.worker_num()


def test_who_is_who_and_split_files():
    fleet.init(role_maker.UserDefinedCollectiveRoleMaker(1, ["127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"]))
    assert fleet.is_worker() and not fleet.is_server() and not fleet.is_first_worker()
    assert fleet.worker_num() == 3 and fleet.worker_index() == 1 and fleet.server_num() == 0
    assert fleet.worker_endpoints(to_string=True) == "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3"
    assert fleet.server_endpoints() == [] and fleet.server_endpoints(to_string=True) == ""
    files = list("abcde")
    shares = []
    for i in range(2):
        fleet.init(role_maker.UserDefinedCollectiveRoleMaker(i, EPS2))
        shares.append(fleet.split_files(files))
    assert shares == [list("abc"), list("de")]
    shares = []
    for i in range(3):
        fleet.init(role_maker.UserDefinedCollectiveRoleMaker(i, ["a:1", "a:2", "a:3"]))
        shares.append(fleet.split_files(["x", "y"]))
    assert shares == [["x"], ["y"], []]
    with pytest.raises(TypeError):
        fleet.split_files("abc")
    ps_fleet.init(role_maker.UserDefinedRoleMaker(1, role_maker.Role.SERVER, 2, SERVERS))
    assert ps_fleet.is_server() and ps_fleet.server_index() == 1 and ps_fleet.server_num() == 2
    assert ps_fleet.server_endpoints(to_string=True) == ",".join(SERVERS)


def test_default_role_maker_reads_the_environment(monkeypatch):
    monkeypatch.setenv("PADDLE_TRAINER_ENDPOINTS", ",".join(EPS2))
    monkeypatch.setenv("PADDLE_TRAINER_ID", "1")
    fleet.init()
    assert fleet.worker_index() == 1 and fleet.is_worker()
    monkeypatch.delenv("PADDLE_TRAINER_ENDPOINTS")
    with pytest.raises(KeyError, match="PADDLE_TRAINER_ENDPOINTS"):
        fleet.init()


# ---------------------------------------------------------------- collective
def collective_build(strategy, current_id=1, eps=EPS2, optimizer="sgd"):
    fleet.init(role_maker.UserDefinedCollectiveRoleMaker(current_id, list(eps)))
    holder = {}

    def minimize(loss):
        holder["opt"] = fleet.distributed_optimizer(base_optimizer(optimizer), strategy)
        holder["result"] = holder["opt"].minimize(loss)

    main, startup, loss = build(minimize)
    return main, startup, loss, holder


def test_collective_grad_allreduce_program():
    s = DistributedStrategy()
    s.mode, s.collective_mode = "collective", "grad_allreduce"
    main, startup, loss, holder = collective_build(s)
    ops, params_grads = holder["result"]
    assert len(params_grads) == 4
    assert fleet.main_program is main and fleet.startup_program is startup
    types = op_types(main)
    assert types.count("c_allreduce_sum") == 4 and "c_sync_comm_stream" in types
    st = op_types(startup)
    assert st.count("c_gen_nccl_id") == 1 and st.count("c_comm_init") == 1 and st.count("c_broadcast") == 4
    assert "c_allreduce_sum" not in op_types(fleet._origin_program)


def test_collective_ut4grad_allreduce_and_local_sgd_programs():
    s = DistributedStrategy()
    s._ut4grad_allreduce = True
    collective_build(s)
    assert (s.mode, s.collective_mode) == ("collective", "grad_allreduce")
    assert op_types(fleet.main_program).count("c_allreduce_sum") == 4
    s = DistributedStrategy()
    s.use_local_sgd = True
    main, startup, _, _ = collective_build(s)
    assert (s.mode, s.collective_mode) == ("collective", "local_sgd")
    assert op_types(main).count("c_allreduce_sum") == 4 and "conditional_block" not in op_types(main)
    assert any(n.endswith("@SNAPSHOT") for n in startup.global_block().vars)
    s = DistributedStrategy()
    s.use_local_sgd, s.local_sgd_steps = True, 3
    main, _, _, _ = collective_build(s)
    assert "conditional_block" in op_types(main)


def test_collective_nccl2_compiles_data_parallel():
    s = DistributedStrategy()
    s.nccl_comm_num = 2          # one node: forced back to 1
    main, startup, loss, _ = collective_build(s)
    cp = fleet.main_program
    assert isinstance(cp, fluid.CompiledProgram) and cp._program is main and cp._is_data_parallel
    bs = cp._build_strategy
    assert bs is s and bs.num_trainers == 2 and bs.trainer_id == 1 and bs.trainers_endpoints == EPS2
    assert s.nccl_comm_num == 1 and cp._loss_name == loss.name
    assert "gen_nccl_id" in op_types(startup)
    assert main._trainers_endpoints == EPS2


def test_collective_fleet_sets_no_field_that_warns(monkeypatch):
    """Fleet's own settings are ones fluidist honours: reading the compiled program's strategies (as
    every run does) warns about nothing, where Paddle's num_threads = nccl_comm_num + 1 warned on every job."""
    from fluidist.executor import strategy_fields
    monkeypatch.setattr(strategy_fields, "_warned", set())
    s = DistributedStrategy()
    collective_build(s)
    cp = fleet.main_program
    assert s.exec_strategy.num_threads == fluid.ExecutionStrategy().num_threads
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        strategy_fields.resolve(cp._build_strategy, cp._exec_strategy)
    ps = SyncStrategy()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        strategy_fields.resolve(None, ps.get_execute_strategy())


@pytest.mark.parametrize("field,value,exc,match", [
    ("forward_recompute", True, ValueError, "forward_recompute needs recompute_checkpoints"),
    ("use_amp", True, NotImplementedError, "use_amp.*not supported"),
    ("use_dist_fc", True, NotImplementedError, "use_dist_fc.*not supported"),
    ("local_sgd_steps", 0, ValueError, "local_sgd_steps"),
    ("mode", "ring", ValueError, "mode must be 'nccl2' or 'collective'"),
    ("collective_mode", "local_sgd", AssertionError, "needs mode = 'collective'"),
])
def test_collective_strategy_checks(field, value, exc, match):
    s = DistributedStrategy()
    setattr(s, field, value)
    with pytest.raises(exc, match=match):
        collective_build(s)


def test_collective_optimizer_checks():
    fleet.init(role_maker.UserDefinedCollectiveRoleMaker(0, EPS2))
    with pytest.raises(TypeError, match="optimizer must be an instance of Optimizer"):
        fleet.distributed_optimizer("sgd")
    s = DistributedStrategy()
    s.recompute_checkpoints = "fc_0"
    with pytest.raises(ValueError, match="recompute_checkpoints should be a List"):
        fleet.distributed_optimizer(base_optimizer("sgd"), s)
    with pytest.raises(TypeError, match="collective DistributedStrategy"):
        fleet.distributed_optimizer(base_optimizer("sgd"), fluid.DistributeTranspilerConfig())
    s = DistributedStrategy()
    s.use_local_sgd = True
    fleet.init(role_maker.UserDefinedCollectiveRoleMaker(1, EPS2))
    with pytest.raises(AssertionError, match="you can't use use_local_sgd and use_lamb together"):
        build(lambda loss: fleet.distributed_optimizer(fluid.optimizer.Lamb(0.01), s).minimize(loss))
    # the collective fleet's server-side methods only warn
    fleet.init_worker()
    fleet.stop_worker()


def test_collective_single_worker_trains_like_local_and_saves(tmp_path):
    """One worker: no transpilation; the data-parallel program equals local training; the saved
    persistables and inference model reload."""
    main, startup, loss, _ = collective_build(DistributedStrategy(), current_id=0, eps=EPS2[:1], optimizer="momentum")
    assert isinstance(fleet.main_program, fluid.CompiledProgram)
    assert "gen_nccl_id" not in op_types(startup)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fleet.startup_program)
    for step in range(3):
        exe.run(fleet.main_program, feed=global_batch(step, 8), fetch_list=[loss])
    scope = fluid.global_scope()
    got = {p: np.array(scope.find_var(p).get_tensor()) for p in PARAMS}
    ref = local_history("momentum", 3, 8)
    for p in PARAMS:
        assert rel_err(got[p], ref["%s_2" % p]) < 1e-5, p
    fleet.save_persistables(exe, str(tmp_path / "persist"))
    fleet.save_inference_model(exe, str(tmp_path / "infer"), ["x", "y"], [loss])
    fresh = fluid.Scope()
    fluid.io.load_persistables(exe, str(tmp_path / "persist"), fleet._origin_program, scope=fresh)
    for p in PARAMS:
        np.testing.assert_array_equal(np.array(fresh.find_var(p).get_tensor()), got[p])
    vel = [v.name for v in fleet._origin_program.list_vars() if "_velocity_" in v.name]
    assert vel and all(fresh.find_var(v).is_initialized() for v in vel)
    with pytest.raises(TypeError, match="executor must be an Executor"):
        fleet.save_persistables("exe", str(tmp_path / "x"))


# ---------------------------------------------------------------- parameter-server strategies
def test_strategy_factory_kinds():
    s = StrategyFactory.create_sync_strategy()
    assert isinstance(s, SyncStrategy) and isinstance(s, PSStrategy)
    c = s.get_program_config()
    assert c.sync_mode and not c.runtime_split_send_recv and s.distributed_mode() == DistributedMode.SYNC
    a = StrategyFactory.create_async_strategy()
    c = a.get_program_config()
    assert not c.sync_mode and c.runtime_split_send_recv and a.distributed_mode() == DistributedMode.ASYNC
    h = StrategyFactory.create_half_async_strategy()
    assert h.get_program_config().half_async and h.distributed_mode() == DistributedMode.HALF_ASYNC
    assert h.get_execute_strategy().use_thread_barrier
    g = StrategyFactory.create_geo_strategy(7)
    assert isinstance(g, GeoStrategy) and g.get_program_config().geo_sgd_need_push_nums == 7


def test_strategy_setters():
    s = SyncStrategy()
    s.set_program_config({"slice_var_up": False, "min_block_size": 10000})
    assert not s.get_program_config().slice_var_up and s.get_program_config().min_block_size == 10000
    with pytest.raises(ValueError, match="no field 'nonsense'"):
        s.set_program_config({"nonsense": 1})
    with pytest.raises(TypeError):
        s.set_program_config(3)
    cfg = fluid.DistributeTranspilerConfig()
    s.set_program_config(cfg)
    assert s.get_program_config() is cfg
    s.set_trainer_runtime_config({"runtime_configs": {"rpc_deadline": "5000"}})
    assert s.get_trainer_runtime_config().runtime_configs["rpc_deadline"] == "5000"
    s.set_execute_strategy({"num_threads": 3})
    assert s.get_execute_strategy().num_threads == 3
    with pytest.raises(TypeError):
        s.set_build_strategy([1])


def test_config_to_strategy_mapping():
    c = fluid.DistributeTranspilerConfig()
    assert isinstance(strategy_from_config(c), SyncStrategy)
    c.sync_mode = False
    s = strategy_from_config(c)
    assert isinstance(s, HalfAsyncStrategy) and s.get_program_config() is c and not c.runtime_split_send_recv
    c.runtime_split_send_recv = True
    assert isinstance(strategy_from_config(c), AsyncStrategy)
    g = fluid.DistributeTranspilerConfig()
    g.geo_sgd_mode = True                   # sync_mode left True: GEO-SGD is asynchronous anyway
    s = strategy_from_config(g)
    assert isinstance(s, GeoStrategy) and s.distributed_mode() == DistributedMode.GEO and s._update_frequency == 100


# ---------------------------------------------------------------- parameter-server fleet
def ps_build(role, current_id, strategy=None, optimizer="momentum", workers=2):
    ps_fleet.init(role_maker.UserDefinedRoleMaker(current_id, role, workers, list(SERVERS)))
    return build(lambda loss: ps_fleet.distributed_optimizer(base_optimizer(optimizer), strategy).minimize(loss))


def test_ps_optimizer_checks():
    ps_fleet._is_initialized = False
    with pytest.raises(ValueError, match="use fleet.init\\(role\\)"):
        ps_fleet.distributed_optimizer(base_optimizer("sgd"))
    ps_fleet.init(role_maker.UserDefinedRoleMaker(0, role_maker.Role.SERVER, 2, list(SERVERS)))
    with pytest.raises(ValueError, match="optimizer must be an instance of Optimizer"):
        ps_fleet.distributed_optimizer(3)
    with pytest.raises(TypeError, match="strategy must be an instance"):
        ps_fleet.distributed_optimizer(base_optimizer("sgd"), DistributedStrategy())
    with pytest.raises(ValueError, match="startup_program is None"):
        ps_fleet.init_server()
    with pytest.raises(ValueError, match="main_program is None"):
        ps_fleet.run_server()
    opt = ps_fleet.distributed_optimizer(base_optimizer("sgd"))
    with pytest.raises(TypeError, match="can not accept loss with list"):
        opt.minimize([1])


@pytest.mark.parametrize("strategy,sync,mode", [
    (None, True, DistributedMode.SYNC),
    ("async", False, DistributedMode.ASYNC),
    ("half_async", False, DistributedMode.HALF_ASYNC),
    ("config_async", False, DistributedMode.ASYNC),
    ("geo", False, DistributedMode.GEO),
])
def test_ps_server_programs(rpc_ops, strategy, sync, mode):
    if strategy == "config_async":
        strategy = fluid.DistributeTranspilerConfig()
        strategy.sync_mode = False
        strategy.runtime_split_send_recv = True
    elif strategy:
        strategy = getattr(StrategyFactory, "create_%s_strategy" % strategy)()
    main, startup, _ = ps_build(role_maker.Role.SERVER, 1, strategy)
    ls = [op for op in ps_fleet.main_program.global_block().ops if op.type == "listen_and_serv"]
    assert len(ls) == 1
    assert ls[0].attr("endpoint") == SERVERS[1] and ls[0].attr("Fanin") == 2
    assert ls[0].attr("distributed_mode") == mode
    assert ps_fleet.main_program is not main and ps_fleet.main_program._ps_endpoint == SERVERS[1]
    assert "send" not in op_types(ps_fleet.main_program)


def test_ps_worker_programs(rpc_ops):
    cfg = fluid.DistributeTranspilerConfig()
    cfg.wait_port = False         # no servers run in this test
    main, startup, loss = ps_build(role_maker.Role.WORKER, 1, cfg)
    types = op_types(ps_fleet.main_program)
    assert ps_fleet.main_program is main and main._is_distributed
    assert "send" in types and "recv" in types and "send_barrier" in types and "fetch_barrier" in types
    assert "momentum" not in types
    assert ps_fleet.startup_program is startup and "recv" in op_types(startup)
    assert "momentum" in op_types(ps_fleet._origin_program)
    exe = fluid.Executor(fluid.CPUPlace())
    with pytest.raises(TypeError, match="the first argument is the fluid.Executor"):
        ps_fleet.save_persistables("exe", "/tmp/never")
    with pytest.raises(TypeError, match="not the CompiledProgram"):
        ps_fleet.save_persistables(exe, "/tmp/never", fluid.CompiledProgram(main))
    with pytest.raises(ValueError, match="main_program is for local"):
        ps_fleet.save_persistables(exe, "/tmp/never", fluid.Program())


def test_init_server_loads_its_blocks(rpc_ops, tmp_path):
    """A saved whole parameter is cut into this server's rows; accumulators saved whole are cut the
    same way; what the directory lacks keeps its startup value."""
    saved = {p: np.random.RandomState(i).uniform(-1, 1, v.shape).astype("float32")
             for i, (p, v) in enumerate(sorted(initial_params().items()))}
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    for p, v in saved.items():
        scope.var(p).set_value(v)
    fluid.io.save_vars(exe, str(tmp_path / "model"), vars=list(saved), scope=scope)
    seen = {}
    for sid in range(2):
        with fluid.scope_guard(fluid.Scope()):
            ps_build(role_maker.Role.SERVER, sid, optimizer="momentum")
            plan = ps_fleet._transpiler._plan
            ps_fleet.init_server(str(tmp_path / "model"))
            g = fluid.global_scope()
            for pb, _ in plan.blocks_on(SERVERS[sid]):
                got = np.array(g.find_var(pb.server_name).get_tensor())
                whole = saved[pb.orig]
                want = whole if len(plan.param_blocks[pb.orig]) == 1 else whole[pb.row_begin:pb.row_begin + pb.rows]
                np.testing.assert_array_equal(got, want)
                seen.setdefault(pb.orig, []).append(pb.server_name)
            vel = [n for n in g.local_var_names() if "_velocity_" in n]
            assert vel and all(not np.any(np.array(g.find_var(n).get_tensor())) for n in vel)
    assert sorted(seen) == sorted(PARAMS)
    assert len(seen["fc_w"]) == 2                    # fc_w is sliced over both servers

    # accumulators saved whole are sliced like their parameter
    with fluid.scope_guard(fluid.Scope()):
        ps_build(role_maker.Role.SERVER, 0, optimizer="momentum")
        plan = ps_fleet._transpiler._plan
        vel_of = {op.input("Param")[0]: op.input("Velocity")[0] for op in plan.origin_main.global_block().ops
                  if op.type == "momentum"}
        vscope = fluid.Scope()
        for p, v in saved.items():
            vscope.var(vel_of[p]).set_value(v * 2)
        fluid.io.save_vars(exe, str(tmp_path / "model"), vars=list(vel_of.values()), scope=vscope)
        ps_fleet.init_server(str(tmp_path / "model"))
        g = fluid.global_scope()
        pb = [b for b in plan.param_blocks["fc_w"] if b.endpoint == SERVERS[0]][0]
        np.testing.assert_array_equal(np.array(g.find_var(vel_of["fc_w"]).get_tensor()),
                                      saved["fc_w"][pb.row_begin:pb.row_begin + pb.rows] * 2)


def test_init_server_errors(rpc_ops, tmp_path):
    ps_build(role_maker.Role.SERVER, 0)
    with pytest.raises(ValueError, match="no directory"):
        ps_fleet.init_server(str(tmp_path / "absent"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="holds no value for parameter"):
        ps_fleet.init_server(str(tmp_path / "empty"))
    with pytest.raises(RuntimeError, match="runs on workers"):
        ps_fleet.init_worker()



def test_a_single_worker_given_without_a_port_trains_as_in_paddle():
    """Paddle 1.8 counts a collective job's nodes by the text before ':' of each worker endpoint; one worker
    whose endpoint has no port (as Paddle's test_fleet_utils gives its role maker) runs untranspiled."""
    main, startup, loss, _ = collective_build(DistributedStrategy(), current_id=0, eps=["127.0.0.1"])
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fleet.startup_program)
    first, = exe.run(fleet.main_program, feed=global_batch(0, 8), fetch_list=[loss])
    assert np.isfinite(first).all() and "c_allreduce_sum" not in op_types(main)
