"""The parameter-server fleet, backed by the DistributeTranspiler (Paddle 1.x
``incubate.fleet.parameter_server.distribute_transpiler``).

::

    fleet.init(role_maker.PaddleCloudRoleMaker())
    opt = fleet.distributed_optimizer(fluid.optimizer.SGD(0.1), StrategyFactory.create_sync_strategy())
    opt.minimize(loss)                       # on servers and workers alike
    if fleet.is_server():
        fleet.init_server(model_dir)         # model_dir optional: a directory save_persistables wrote
        fleet.run_server()                   # serves until every worker has stopped
    else:
        exe.run(fleet.startup_program)       # receives the parameters from the servers
        fleet.init_worker()
        for batch in ...: exe.run(fleet.main_program, feed=..., fetch_list=[loss])
        if fleet.is_first_worker(): fleet.save_persistables(exe, dirname)
        fleet.stop_worker()

``minimize`` transpiles the program: a worker's ``main_program`` is the trainer program (forward,
backward, send gradients, receive parameters) and its ``startup_program`` the default startup
program (which ends by receiving the servers' parameters); a server's are its pserver program
(``listen_and_serv`` with the optimize blocks) and that program's startup.

**What save_persistables saves.** Every persistable variable of the program as it was before
distribution, whole and under its own name: the parameters from the worker's scope (the trainer
receives every whole parameter from the servers each step) and the optimizer state that lives on
the servers (momentum velocities, Adam moments and beta powers, the learning rate and its decay
counter), received from them: a parameter-shaped accumulator is received block by block from the
servers holding its parameter's blocks and concatenated. ``init_server(model_dir)`` loads each
server's share back (the rows of its blocks), so a reloaded job continues exactly where the saved
one stopped. A directory holding only parameters (``fluid.io.save_params``) loads too: what it
lacks keeps its startup value.
"""
import os
import warnings

import numpy as np

import fluidist.io as io
from ..executor.compiler import CompiledProgram
from ..executor.executor import Executor
from ..core.scope import Scope, global_scope
from ..distributed import trainer_session
from ..framework import registry
from ..framework.program import Program, default_startup_program
from ..optim.optimizer import Optimizer
from ..role_maker import MPIRoleMaker
from ..transpiler import DistributeTranspiler, DistributeTranspilerConfig, DistributedMode
from ..transpiler.pserver_trainer import ask_ahead
from ..distributed.ports import wait_server_ready
from .base import DistributedOptimizer, Fleet, Mode
from .strategy import (AsyncStrategy, GeoStrategy, HalfAsyncStrategy, PSDistributedStrategy, StrategyFactory,
                       SyncStrategy, TrainerRuntimeConfig, strategy_from_config)

DistributedStrategy = PSDistributedStrategy

__all__ = ["fleet", "DistributedTranspiler", "TranspilerOptimizer", "DistributedStrategy", "StrategyFactory",
           "SyncStrategy", "AsyncStrategy", "HalfAsyncStrategy", "GeoStrategy", "TrainerRuntimeConfig"]


class DistributedTranspiler(Fleet):
    """The parameter-server fleet: what ``fleet`` of
    ``fluid.incubate.fleet.parameter_server.distribute_transpiler`` is. ``distributed_optimizer``
    transpiles the program for the role this process has (worker or pserver) with the strategy's
    ``DistributeTranspilerConfig``; ``init_server``/``run_server`` start a pserver, ``init_worker``
    and ``stop_worker`` bracket a worker's training (the communicator of async modes)."""

    def __init__(self):
        super().__init__(Mode.TRANSPILER)
        self._transpiler = None
        self._strategy = None
        self._transpile_config = None
        self._communicator = None

    # ---------------------------------------------------------------- set-up
    def distributed_optimizer(self, optimizer, strategy=None):
        from ..optim.lookahead import LookaheadOptimizer
        if not isinstance(optimizer, (Optimizer, LookaheadOptimizer)):
            raise ValueError("optimizer must be an instance of Optimizer, got %r" % type(optimizer).__name__)
        if not self._is_initialized:
            raise ValueError("use fleet.init(role) to initialize the role of current node before "
                             "optimizer.minimize(loss)")
        self._optimizer = TranspilerOptimizer(optimizer, strategy, fleet=self)
        return self._optimizer

    def _is_mpi(self):
        return isinstance(self._role_maker, MPIRoleMaker)

    def _transpile(self, strategy, loss, startup_program=None):
        """Rewrite ``loss``'s program (in place, as Paddle did) for this process's role."""
        config = strategy.get_program_config()
        main = loss.block.program
        startup = startup_program if startup_program is not None else default_startup_program()
        self._strategy = strategy
        self._transpile_config = config
        self._origin_program = main.clone()
        servers = self.server_endpoints()
        if not servers:
            raise ValueError("the parameter-server fleet needs server endpoints, but the role maker %s gives none "
                             "(PADDLE_PSERVERS_IP_PORT_LIST for PaddleCloudRoleMaker)"
                             % type(self._role_maker).__name__)
        t = DistributeTranspiler(config)
        t._set_server_config(strategy.get_server_runtime_config())
        if self.is_worker():
            t.transpile(trainer_id=self.worker_index(), program=main, pservers=",".join(servers),
                        trainers=self.worker_num(), sync_mode=config.sync_mode, startup_program=startup)
            # Paddle waited for the servers here, except under MPI (their ports are not open yet):
            # there the startup program's recv waits for them (FLUIDIST_CONNECT_TIMEOUT, see distributed/reach).
            self.main_program = t.get_trainer_program(wait_port=config.wait_port and not self._is_mpi())
            self.startup_program = startup
        else:
            ep = servers[self.server_index()]
            t.transpile(trainer_id=0, program=main, pservers=",".join(servers), trainers=self.worker_num(),
                        sync_mode=config.sync_mode, startup_program=startup, current_endpoint=ep)
            self._server_endpoint = ep
            self.main_program, self.startup_program = t.get_pserver_programs(ep)
        self._transpiler = t

    # ---------------------------------------------------------------- workers
    def init_worker(self):
        """Wait (with a deadline: ``FLUIDIST_WAIT_PORT_TIMEOUT`` seconds, default 300) until every
        server accepts connections, then start the trainer's communicator (async, half-async and
        GEO-SGD strategies, with the trainer runtime config's ``communicator_*`` flags; a sync
        strategy's program talks to the servers itself)."""
        if not self.is_worker():
            raise RuntimeError("fleet.init_worker runs on workers; this process is a server")
        wait_server_ready(self.server_endpoints())
        if self._communicator is not None and self._communicator.is_running():
            warnings.warn("fleet.init_worker: the communicator is already running; this call changes nothing "
                          "(as in Paddle)", stacklevel=2)
            return
        self._communicator = self._make_communicator()
        if self._communicator is not None:
            self._communicator.start()

    def _make_communicator(self):
        from ..distributed.communicator import AsyncCommunicator, HalfAsyncCommunicator
        from ..distributed.geo_communicator import GeoCommunicator
        config = self._strategy.get_program_config()
        flags = self._strategy.get_trainer_runtime_config().get_communicator_flags()
        mode = config.distributed_mode()
        if mode == DistributedMode.SYNC:
            return None
        if mode == DistributedMode.GEO:
            return GeoCommunicator(self.main_program, global_scope(), flags, self._transpiler._get_vars_info(),
                                   self.worker_num(), config.geo_sgd_need_push_nums, self.worker_index())
        half = any(registry.fact(op, "barrier") == "send" and op.attr("half_async") for op in self.main_program.global_block().ops)
        return (HalfAsyncCommunicator if half else AsyncCommunicator)(self.main_program, global_scope(), flags)

    def stop_worker(self):
        """Tell the servers this worker is done (they stop once every worker has), then, under MPI,
        finalize MPI."""
        if not self.is_worker():
            raise RuntimeError("fleet.stop_worker runs on workers; this process is a server")
        if self._communicator is not None:
            self._communicator.stop()          # what it holds goes out before the servers hear "complete"
        _close_rpc_clients()
        self._executor.close()
        if self._is_mpi():
            self._role_maker._finalize()

    # ---------------------------------------------------------------- servers
    def init_server(self, model_dir=None):
        """Run the server's startup program; with ``model_dir`` (written by save_persistables),
        then load this server's share of the saved variables."""
        if self.startup_program is None:
            raise ValueError("startup_program is None, need invoke DistributedOptimizer.minimize first")
        if not self.is_server():
            raise RuntimeError("fleet.init_server runs on servers; this process is a worker")
        self._executor.run(self.startup_program)
        if model_dir:
            if not os.path.isdir(model_dir):
                raise ValueError("fleet.init_server: there is no directory named %r" % (model_dir,))
            self._load_server_vars(model_dir)

    def run_server(self):
        """Serve (blocks until every worker has stopped)."""
        if self.main_program is None:
            raise ValueError("main_program is None, need invoke DistributedOptimizer.minimize first")
        if not self.is_server():
            raise RuntimeError("fleet.run_server runs on servers; this process is a worker")
        self._executor.run(self.main_program)

    def _server_var_sources(self):
        """{server variable: (saved variable, (row_begin, rows) or None for all rows)} for the
        parameters and their accumulators held by this server."""
        plan = self._transpiler._plan
        ep = self._server_endpoint
        here = plan.blocks_on(ep)
        count = {}
        for pb, _ in here:
            count[pb.orig] = count.get(pb.orig, 0) + 1
        out = {}
        for pb, _ in here:
            rows = None if len(plan.param_blocks[pb.orig]) == 1 else (pb.row_begin, pb.rows)
            out[pb.server_name] = (pb.orig, rows)
            for n in plan.accumulators.get(pb.orig, ()):
                out[plan.accumulator_name(n, pb, count[pb.orig] > 1)] = (n, rows)
            for n in plan.scalar_accumulators.get(pb.orig, ()):
                out[plan.accumulator_name(n, pb, count[pb.orig] > 1)] = (n, None)
        return out

    def _load_server_vars(self, model_dir):
        sources = self._server_var_sources()
        params = {pb.server_name for pb, _ in self._transpiler._plan.blocks_on(self._server_endpoint)}
        scope = global_scope()
        staged = {}
        for var in io.get_program_persistable_vars(self.main_program):
            saved, rows = sources.get(var.name, (var.name, None))
            value = _load_one(self._executor, model_dir, saved)
            if value is None:
                if var.name in params:
                    raise ValueError("fleet.init_server(%r): the directory holds no value for parameter %r (server "
                                     "variable %r); was it written by fleet.save_persistables for this model?"
                                     % (model_dir, saved, var.name))
                continue
            if rows is not None:
                value = value[rows[0]:rows[0] + rows[1]]
            want = [d for d in (var.shape or [])]
            if want and (len(want) != value.ndim or any(w >= 0 and w != s for w, s in zip(want, value.shape))):
                raise ValueError("fleet.init_server(%r): saved %r gives shape %s for server variable %r, which is "
                                 "declared %s" % (model_dir, saved, list(value.shape), var.name, want))
            staged[var.name] = value.astype(var.dtype, copy=False) if var.dtype else value
        for name, value in staged.items():
            scope.var(name).set_value(np.array(value, copy=True))

    # ---------------------------------------------------------------- saving (on a worker)
    def _check_saver(self, executor, main_program, what):
        if isinstance(executor, CompiledProgram) or not isinstance(executor, Executor):
            raise TypeError("fleet.%s: the first argument is the fluid.Executor that runs the save, got %r"
                            % (what, type(executor).__name__))
        if isinstance(main_program, CompiledProgram):
            raise TypeError("fleet.%s: main_program is a Program (pass the CompiledProgram's own program, "
                            "not the CompiledProgram)" % what)
        if not self.is_worker():
            raise RuntimeError("fleet.%s runs on a worker (usually the first: fleet.is_first_worker()); "
                               "this process is a server" % what)

    def save_persistables(self, executor, dirname, main_program=None, **kwargs):
        """The parameters and the servers' optimizer state (see the module docstring). Call it on
        one worker (``fleet.is_first_worker()``) after training, before ``stop_worker``."""
        self._check_saver(executor, main_program, "save_persistables")
        if main_program is None:
            main_program = self.main_program
        if not isinstance(main_program, Program):
            raise TypeError("fleet.save_persistables: main_program must be a Program, got %r"
                            % type(main_program).__name__)
        if not main_program._is_distributed:
            raise ValueError("main_program is for local, may not use fleet.save_persistables")
        tmp = Scope()
        self._pull_server_state(executor, tmp)
        scope = global_scope()
        names = []
        for var in io.get_program_persistable_vars(self._origin_program):
            if tmp._find_value(var.name) is None:
                value = scope._find_value(var.name)
                if value is None:
                    continue        # neither on the servers nor here (e.g. a startup-only variable)
                tmp.var(var.name).set_value(value)
            names.append(var.name)
        missing = [p.name for p in io.get_program_parameter(self._origin_program) if p.name not in names]
        if missing:
            raise ValueError("fleet.save_persistables: parameters %s have no value in this worker's scope: run "
                             "fleet.startup_program (and train) with this executor first" % missing)
        io.save_vars(executor, dirname, self._origin_program, vars=names, filename=kwargs.get("filename"), scope=tmp)

    def _pull_server_state(self, executor, scope):
        """Receive into ``scope`` every persistable non-parameter variable the servers hold: block
        by block (concatenated) for parameter-shaped accumulators, from the first server holding it
        for the others."""
        plan = self._transpiler._plan
        sources = {}            # variable -> [(endpoint, name on that server)] in row order
        for p in plan.params:
            blocks = plan.param_blocks[p]
            per_ep = {}
            for b in blocks:
                per_ep[b.endpoint] = per_ep.get(b.endpoint, 0) + 1
            for n in plan.accumulators.get(p, ()):
                sources[n] = [(b.endpoint, plan.accumulator_name(n, b, per_ep[b.endpoint] > 1)) for b in blocks]
            for n in plan.scalar_accumulators.get(p, ()):   # every block's copy holds the same value
                sources[n] = [(blocks[0].endpoint, plan.accumulator_name(n, blocks[0], per_ep[blocks[0].endpoint] > 1))]
        held = {ep: self._transpiler.get_pserver_program(ep).global_block().vars for ep in plan.endpoints}
        for var in io.get_program_persistable_vars(plan.origin_main):
            if io.is_parameter(var) or var.name in sources:
                continue
            for ep in plan.endpoints:
                if var.name in held[ep] and held[ep][var.name].persistable:
                    sources[var.name] = [(ep, var.name)]
                    break
        if not sources:
            return
        prog = Program()
        block = prog.global_block()
        recvs = []
        for name, where in sources.items():
            src = plan.origin_main.global_block()._find_var_recursive(name)
            block.create_var(name=name, shape=src.shape if src is not None else None,
                             dtype=src.dtype if src is not None else None, persistable=False)
            recvs.append(block.append_op(
                "recv", inputs={"X": []}, outputs={"Out": [name]},
                attrs={"epmap": [ep for ep, _ in where], "recv_varnames": [n for _, n in where],
                       "trainer_id": self.worker_index(), "sync_mode": plan.sync}))
        ask_ahead(recvs)     # one wait for all of them
        executor.run(prog, scope=scope)

    def save_inference_model(self, executor, dirname, feeded_var_names, target_vars, main_program=None,
                             export_for_deployment=True):
        """The inference part of ``main_program`` (default: the program before distribution) with
        the parameters last received from the servers."""
        self._check_saver(executor, main_program, "save_inference_model")
        if main_program is None:
            main_program = self._origin_program
        return io.save_inference_model(dirname, feeded_var_names, target_vars, executor, main_program, None, None,
                                       export_for_deployment)


def _load_one(executor, dirname, name):
    """The array saved for ``name`` in ``dirname``, or None when it holds none."""
    tmp = Scope()
    try:
        io.load_vars(executor, dirname, vars=[name], scope=tmp)
    except (FileNotFoundError, KeyError):
        return None
    value = tmp._find_value(name)
    return None if value is None else np.asarray(value)


def _close_rpc_clients():
    """Tell every pserver that any executor of this process talked to that this trainer is done
    (Paddle's RPC client was one per process, so closing any executor did that; fluidist's
    executors each remember their pservers, and the user trains with their own executor)."""
    trainer_session.notify_all_complete()


class TranspilerOptimizer(DistributedOptimizer):
    """Wraps an optimizer for the parameter-server fleet. ``strategy``: a
    ``DistributeTranspilerConfig`` or a parameter-server strategy (default: SyncStrategy)."""

    def __init__(self, optimizer, strategy=None, fleet=None):
        super().__init__(optimizer, strategy)
        if strategy is None:
            strategy = StrategyFactory.create_sync_strategy()
        elif isinstance(strategy, DistributeTranspilerConfig):
            strategy = strategy_from_config(strategy)
        elif not isinstance(strategy, PSDistributedStrategy):
            raise TypeError("In TranspilerOptimizer, strategy must be an instance of DistributeTranspilerConfig or "
                            "DistributedStrategy (StrategyFactory.create_*_strategy()), got %r"
                            % type(strategy).__name__)
        strategy.get_program_config().validate()
        self._strategy = strategy
        self._fleet = fleet if fleet is not None else globals()["fleet"]

    def minimize(self, loss, scopes=None, startup_program=None, parameter_list=None, no_grad_set=None):
        if isinstance(loss, list):
            raise TypeError("DistributedTranspiler's minimize can not accept loss with list")
        if isinstance(startup_program, list):
            raise TypeError("DistributedTranspiler's minimize can not accept program with list")
        optimize_ops, params_grads = self._optimizer.minimize(loss, startup_program, parameter_list, no_grad_set)
        self._fleet._transpile(self._strategy, loss, startup_program)
        return optimize_ops, params_grads


fleet = DistributedTranspiler()
"""The parameter-server fleet a script uses: ``from
fluid.incubate.fleet.parameter_server.distribute_transpiler import fleet``, then ``fleet.init(role_maker)``
and ``fleet.distributed_optimizer(opt, strategy).minimize(loss)``; pservers call
``fleet.init_server(); fleet.run_server()``, workers ``fleet.init_worker()``, train, then
``fleet.stop_worker()``."""
