"""The collective fleet: every process is a worker; gradients (or, with LocalSGD, parameters) are
all-reduced among the workers (Paddle 1.x ``incubate.fleet.collective``).

::

    fleet.init(role_maker.PaddleCloudRoleMaker(is_collective=True))
    opt = fleet.distributed_optimizer(fluid.optimizer.SGD(0.1), strategy=DistributedStrategy())
    opt.minimize(loss)
    exe.run(fleet.startup_program)
    exe.run(fleet.main_program, feed=..., fetch_list=[loss])

``CollectiveOptimizer.minimize`` adds backward and optimize ops, then transpiles the program with a
``DistributeTranspilerConfig`` built from the strategy. In ``nccl2`` mode (the default)
``fleet.main_program`` is then ``CompiledProgram(main).with_data_parallel(...)`` whose build strategy
knows the trainers, and the all-reduce happens in the data-parallel runner; in ``collective`` mode it
is the transpiled Program with its ``c_*`` ops (grad_allreduce or local_sgd).

fluidist differences: a job with a single worker is not transpiled (it is local training; Paddle's
collective mode refused one trainer); AMP and dist_fc are not supported and raise
NotImplementedError when enabled. ``sync_batch_norm`` turns the batch norms into ``sync_batch_norm``
(in nccl2 mode through the CompiledProgram's build strategy, in collective mode in the program,
whose statistics are then summed over ring 0). ``forward_recompute`` (with ``recompute_checkpoints``) wraps the
optimizer in ``RecomputeOptimizer``; ``gradient_merge`` with ``gradient_merge_configs =
{"k_steps": k, "avg": True}`` updates once every ``k`` micro-batches (``fluidist.passes.gradient_merge``).
"""
import numbers
import warnings

import fluidist.io as io
from ..distributed.ports import split_endpoint
from ..executor.compiler import CompiledProgram
from ..executor.executor import Executor
from ..framework.program import Program, default_startup_program
from ..transpiler import DistributeTranspiler, DistributeTranspilerConfig
from .base import DistributedOptimizer, Fleet, Mode
from .strategy import DistFCConfig, DistributedStrategy

__all__ = ["fleet", "Collective", "CollectiveOptimizer", "DistributedStrategy", "DistFCConfig"]


def _node_ip(endpoint):
    """The host of a worker endpoint, as Paddle counts nodes (the text before the first ':' when the
    endpoint is not a well-formed ``host:port``)."""
    try:
        return split_endpoint(endpoint, "worker endpoint")[0]
    except ValueError:
        return endpoint.split(":")[0].strip()

class Collective(Fleet):
    """The collective fleet (every process a worker, gradients all-reduced): what ``fleet`` of
    ``fluid.incubate.fleet.collective`` is. The parameter-server calls (``init_worker``,
    ``run_server``, ...) only warn that they do nothing here."""

    def __init__(self):
        super().__init__(Mode.COLLECTIVE)
        self._local_ip = 0
        self._transpiled_program = None
        self._loss = None

    def _not_for_collective(self, name):
        self._warn(name, "You should not call '%s' method for collective mode." % name)

    def init_worker(self):
        self._not_for_collective("init_worker")

    def run_worker(self, main_programs=None, scopes=None):
        self._not_for_collective("run_worker")

    def init_server(self, model_dir=None):
        self._not_for_collective("init_server")

    def run_server(self):
        self._not_for_collective("run_server")

    def stop_worker(self):
        self._not_for_collective("stop_worker")

    def distributed_optimizer(self, optimizer, strategy=None):
        self._optimizer = CollectiveOptimizer(optimizer, strategy, fleet=self)
        return self._optimizer

    def _program_to_save(self, executor, main_program, what):
        if not isinstance(executor, Executor):
            raise TypeError("fleet.%s: executor must be an Executor, got %r" % (what, type(executor).__name__))
        if main_program is None:
            main_program = self._origin_program
            if main_program is None:
                raise ValueError("fleet.%s: no main_program given and minimize() has not run" % what)
        if isinstance(main_program, CompiledProgram):
            main_program = main_program._program
        if not isinstance(main_program, Program):
            raise TypeError("fleet.%s: main_program must be a Program, got %r" % (what, type(main_program).__name__))
        return main_program

    def save_inference_model(self, executor, dirname, feeded_var_names=None, target_vars=None, main_program=None,
                             export_for_deployment=True):
        """The inference part of ``main_program`` (default: the program as it was before
        distribution) with its parameters. The caller chooses which worker saves."""
        program = self._program_to_save(executor, main_program, "save_inference_model")
        return io.save_inference_model(dirname, feeded_var_names, target_vars, executor, program, None, None,
                                       export_for_deployment)

    def save_persistables(self, executor, dirname, main_program=None, filename=None):
        """Every persistable of ``main_program`` (default: the program before distribution):
        parameters, optimizer accumulators, learning rate; each worker holds all of them."""
        program = self._program_to_save(executor, main_program, "save_persistables")
        io.save_persistables(executor, dirname, program, filename)


class CollectiveOptimizer(DistributedOptimizer):
    """Wraps an optimizer for the collective fleet; see the module docstring."""

    def __init__(self, optimizer, strategy=None, fleet=None):
        if strategy is None:
            strategy = DistributedStrategy()
        if not isinstance(strategy, DistributedStrategy):
            raise TypeError("CollectiveOptimizer: strategy must be a collective DistributedStrategy, got %r"
                            % type(strategy).__name__)
        super().__init__(optimizer, strategy)
        self._fleet = fleet if fleet is not None else globals()["fleet"]
        self._forward_recompute = strategy.forward_recompute
        if not isinstance(strategy.recompute_checkpoints, list):
            raise ValueError("DistStrategy.recompute_checkpoints should be a List")
        self._recompute_checkpoints = strategy.recompute_checkpoints
        self._use_amp = strategy.use_amp
        self._amp_loss_scaling = strategy.amp_loss_scaling
        self.print_config = False
        self._loss = None

    # ---------------------------------------------------------------- checks
    @staticmethod
    def _not_supported(field, what):
        raise NotImplementedError("DistributedStrategy.%s = True: %s is not supported by fluidist; set it to False"
                                  % (field, what))

    def _check_supported(self, strategy):
        if strategy.use_amp:
            self._not_supported("use_amp", "automatic mixed precision")
        if strategy.use_dist_fc:
            self._not_supported("use_dist_fc", "the distributed fc (dist_fc)")

    @staticmethod
    def _check_condition(name, **kwargs):
        for k, v in kwargs.items():
            if v is True:
                raise AssertionError("you can't use %s and %s together" % (name, k))

    def _check_collective_mode(self, main_program, optimizer, strategy):
        from ..optim.optimizer import LambOptimizer
        use_lamb = isinstance(optimizer, LambOptimizer)
        use_dgc = type(optimizer).__name__ == "DGCMomentumOptimizer"
        if strategy.use_local_sgd:
            strategy.mode = "collective"
            strategy.collective_mode = "local_sgd"
            self._check_condition("use_local_sgd", use_dgc=use_dgc, use_dist_fc=strategy.use_dist_fc,
                                  use_lamb=use_lamb)
        if strategy.use_dist_fc:
            self._check_condition("use_dist_fc", use_dgc=use_dgc, use_local_sgd=strategy.use_local_sgd,
                                  use_lamb=use_lamb)
            assert strategy.dist_fc_config is not None, "DistributedStrategy.dist_fc_config should be set"
        if strategy._ut4grad_allreduce:
            strategy.mode = "collective"
            strategy.collective_mode = "grad_allreduce"
            self._check_condition("_ut4grad_allreduce", use_dgc=use_dgc, use_lamb=use_lamb)
        if strategy.mode not in ("nccl2", "collective"):
            raise ValueError("DistributedStrategy.mode must be 'nccl2' or 'collective', got %r" % (strategy.mode,))
        if strategy.collective_mode in ("local_sgd", "grad_allreduce"):
            assert strategy.mode == "collective", \
                "DistributedStrategy.collective_mode %r needs mode = 'collective'" % strategy.collective_mode
        if strategy.mode == "collective" and strategy.collective_mode not in ("local_sgd", "grad_allreduce"):
            raise ValueError("DistributedStrategy.mode = 'collective' needs collective_mode 'grad_allreduce' or "
                             "'local_sgd', got %r" % (strategy.collective_mode,))
        if not isinstance(strategy.local_sgd_steps, numbers.Integral) or isinstance(strategy.local_sgd_steps, bool) \
                or strategy.local_sgd_steps < 1:
            raise ValueError("DistributedStrategy.local_sgd_steps must be an int >= 1, got %r"
                             % (strategy.local_sgd_steps,))

    # ---------------------------------------------------------------- the passes
    def _transpile(self, startup_program, main_program):
        f, s = self._fleet, self._strategy
        worker_endpoints = f.worker_endpoints()
        trainer_id = f.worker_index()
        config = DistributeTranspilerConfig()
        config.mode = s.mode
        config.collective_mode = s.collective_mode
        config.nccl_comm_num = s.nccl_comm_num
        config.use_hierarchical_allreduce = s.use_hierarchical_allreduce
        config.hierarchical_allreduce_inter_nranks = s.hierarchical_allreduce_inter_nranks
        config.local_sgd_steps = s.local_sgd_steps
        t = DistributeTranspiler(config=config)
        t.transpile(trainer_id=trainer_id, trainers=",".join(worker_endpoints), startup_program=startup_program,
                    program=main_program, current_endpoint=worker_endpoints[trainer_id])
        return t

    def _try_to_compile(self, startup_program, main_program):
        f, s = self._fleet, self._strategy
        worker_endpoints = f.worker_endpoints()
        if not worker_endpoints:
            raise ValueError("the collective fleet needs the workers' endpoints, but the role maker %s gives none: "
                             "use PaddleCloudRoleMaker(is_collective=True) (PADDLE_TRAINER_ENDPOINTS), "
                             "UserDefinedCollectiveRoleMaker or MPIRoleMaker" % type(f._role_maker).__name__)
        node_num = len({_node_ip(ep) for ep in worker_endpoints})
        assert node_num >= 1, "nccl2 node_num must >= 1, now:%d" % node_num
        if node_num == 1:
            if s.nccl_comm_num > 1:
                warnings.warn("set nccl_comm_num=1 since you only have 1 node.", stacklevel=2)
            s.nccl_comm_num = 1
            if s.use_hierarchical_allreduce:
                warnings.warn("set use_hierarchical_allreduce=False since you only have 1 node.", stacklevel=2)
            s.use_hierarchical_allreduce = False
        # Paddle sets exec_strategy.num_threads to nccl_comm_num + 1 here (its NCCL stream threads); fluidist
        # runs each place in a thread of its own and has no such pool, so the field is left as the user set it
        # (setting it would make every collective job warn that it has no effect).
        if len(worker_endpoints) > 1:
            self._transpile(startup_program, main_program)
        if s.mode == "collective":
            return main_program
        s.num_trainers = f.worker_num()
        s.trainer_id = f.worker_index()
        s.trainers_endpoints = list(worker_endpoints)
        s.enable_backward_optimizer_op_deps = True
        self._compiled_program = CompiledProgram(main_program).with_data_parallel(
            loss_name=self._loss.name, build_strategy=s, exec_strategy=s.exec_strategy, share_vars_from=None)
        return self._compiled_program

    def minimize(self, loss, startup_program=None, parameter_list=None, no_grad_set=None):
        """Backward and optimize ops, then distribution: sets ``fleet.startup_program`` and
        ``fleet.main_program``; returns ``(optimize_ops, params_grads)``."""
        if isinstance(loss, (list, tuple)):
            raise TypeError("CollectiveOptimizer.minimize takes one loss Variable, not a list")
        f, s = self._fleet, self._strategy
        f._rm()
        self._check_supported(s)
        main_program = loss.block.program
        if startup_program is None:
            startup_program = default_startup_program()
        f.startup_program = startup_program
        self._loss = loss
        f._loss = loss
        self._check_collective_mode(main_program, self._optimizer, s)
        optimizer = self._optimizer
        if self._forward_recompute:
            from ..optim.optimizer import RecomputeOptimizer
            if not self._recompute_checkpoints:
                raise ValueError("DistributedStrategy.forward_recompute needs recompute_checkpoints (a list of "
                                 "Variables)")
            optimizer = RecomputeOptimizer(optimizer)
            optimizer._set_checkpoints(self._recompute_checkpoints)
        optimize_ops, param_grads = optimizer.minimize(loss, startup_program, parameter_list, no_grad_set)
        f._origin_program = main_program.clone(for_test=False)
        f._transpiled_program = main_program
        f.main_program = self._try_to_compile(startup_program, main_program)
        if s.sync_batch_norm and f.main_program is main_program:
            from ..passes.sync_batch_norm import convert_sync_batch_norm
            convert_sync_batch_norm(main_program)
        if s.gradient_merge and f.main_program is main_program:
            # collective mode runs the program itself (nccl2 mode: CompiledProgram reads the strategy)
            from ..executor.strategy_fields import resolve
            r = resolve(s, None)
            from ..passes.gradient_merge import apply_gradient_merge
            apply_gradient_merge(main_program, startup_program, r.merge_k, r.merge_avg)
        return optimize_ops, param_grads


fleet = Collective()
"""The collective fleet a script uses: ``from fluid.incubate.fleet.collective import fleet``, then
``fleet.init(role_maker)`` and ``fleet.distributed_optimizer(opt, strategy).minimize(loss)``."""
