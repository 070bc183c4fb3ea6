"""Distributed strategies of both fleets.

* :class:`DistributedStrategy` (collective fleet): a ``BuildStrategy`` with the collective fields
  (``mode``, ``collective_mode``, ``nccl_comm_num``, ``use_local_sgd``, ``local_sgd_steps``, ...).
* :class:`PSDistributedStrategy` and its kinds :class:`SyncStrategy`, :class:`AsyncStrategy`,
  :class:`HalfAsyncStrategy`, :class:`GeoStrategy` (parameter-server fleet), made by
  :class:`StrategyFactory`. The parameter-server modules export ``PSDistributedStrategy`` under
  Paddle's name ``DistributedStrategy``.

A strategy chooses the transpiler's mode and the trainer's communicator, which
``fleet.init_worker()`` starts (``fluidist.distributed.communicator``): Sync is ``sync_mode=True``
(send/recv with barriers, in the trainer program's own ops: no communicator); Async is
``sync_mode=False`` with ``runtime_split_send_recv=True`` (the async communicator merges queued
gradients and sends and receives from background threads); HalfAsync is ``sync_mode=False`` with
``half_async`` (each step ends at the half-async communicator's barrier; the pservers' HALF_ASYNC
mode); Geo is ``geo_sgd_mode`` with ``geo_sgd_need_push_nums = update_frequency`` (trainers update
locally and push parameter deltas: ``fluidist.distributed.geo_communicator``). The trainer runtime
configuration (the ``communicator_*`` flags, from ``FLAGS_communicator_*``) configures the communicator.
"""
import os
from typing import Optional

from ..executor.compiler import BuildStrategy, ExecutionStrategy
from ..transpiler.config import DistributeTranspilerConfig, DistributedMode, ServerRuntimeConfig

__all__ = ["DistributedStrategy", "DistFCConfig", "PSDistributedStrategy", "SyncStrategy", "AsyncStrategy",
           "HalfAsyncStrategy", "GeoStrategy", "StrategyFactory", "TrainerRuntimeConfig", "strategy_from_config"]


# ====================================================================================== collective
class DistFCConfig:
    """Placeholder, as in Paddle 1.8 (dist_fc is not supported by fluidist)."""


class DistributedStrategy(BuildStrategy):
    """How the collective fleet distributes a program.

    ``mode``: ``"nccl2"`` (the default: all-reduce inside ``CompiledProgram.with_data_parallel``)
    or ``"collective"`` (``c_*`` ops in the program, with ``collective_mode`` ``"grad_allreduce"``
    or ``"local_sgd"``). ``use_local_sgd=True`` selects collective/local_sgd; fluidist's
    ``local_sgd_steps`` (default 1) averages the parameters every that many steps.
    ``forward_recompute`` recomputes the forward segments between ``recompute_checkpoints`` in
    backward; ``gradient_merge`` / ``gradient_merge_configs`` (from BuildStrategy) update once every
    ``k_steps`` micro-batches. ``use_amp`` and ``use_dist_fc`` are not supported: enabling one makes
    ``minimize`` raise NotImplementedError.
    """

    def __init__(self):
        super().__init__()
        self.use_local_sgd = False
        self.local_sgd_steps = 1
        self.use_dist_fc = False
        self.dist_fc_config = None
        self.mode = "nccl2"
        self.collective_mode = None
        self.nccl_comm_num = 1
        self.forward_recompute = False
        self.recompute_checkpoints = []
        self.use_amp = False
        self.amp_loss_scaling = 2 ** 15
        self.exec_strategy = ExecutionStrategy()
        self._ut4grad_allreduce = False
        self.enable_backward_optimizer_op_deps = True


# ====================================================================================== parameter server
class TrainerRuntimeConfig:
    """Paddle's communicator flags (from ``FLAGS_communicator_*``, ``FLAGS_rpc_*``): the communicator
    ``fleet.init_worker()`` starts reads the ``communicator_*`` ones."""

    def __init__(self):
        self.mode = None
        cpu = os.getenv("CPU_NUM", "1")
        self.runtime_configs = {
            "communicator_max_merge_var_num": os.getenv("FLAGS_communicator_max_merge_var_num", cpu),
            "communicator_send_queue_size": os.getenv("FLAGS_communicator_send_queue_size", cpu),
            "communicator_independent_recv_thread": os.getenv("FLAGS_communicator_independent_recv_thread", "1"),
            "communicator_min_send_grad_num_before_recv":
                os.getenv("FLAGS_communicator_min_send_grad_num_before_recv", cpu),
            "communicator_thread_pool_size": os.getenv("FLAGS_communicator_thread_pool_size", "5"),
            "communicator_send_wait_times": os.getenv("FLAGS_communicator_send_wait_times", "5"),
            "communicator_is_sgd_optimizer": os.getenv("FLAGS_communicator_is_sgd_optimizer", "1"),
            "communicator_fake_rpc": os.getenv("FLAGS_communicator_fake_rpc", "0"),
            "communicator_merge_sparse_grad": os.getenv("FLAGS_communicator_merge_sparse_grad", "1"),
            "rpc_deadline": os.getenv("FLAGS_rpc_deadline", "180000"),
            "rpc_retry_times": os.getenv("FLAGS_rpc_retry_times", "3"),
        }

    def get_communicator_flags(self):
        return dict(self.runtime_configs)

    def __repr__(self):
        return "TrainerRuntimeConfig(mode=%r, %s)" % (self.mode, self.runtime_configs)


def _set_config(current, value, cls, what):
    """A strategy setter's rule: an object of the right class replaces, a dict updates fields."""
    if isinstance(value, cls):
        return value
    if isinstance(value, dict):
        for key, v in value.items():
            if key == "runtime_configs" and isinstance(current, TrainerRuntimeConfig):
                current.runtime_configs.update(v)
                continue
            if not hasattr(current, key):
                raise ValueError("%s: %s has no field %r" % (what, cls.__name__, key))
            setattr(current, key, v)
        return current
    raise TypeError("%s takes a %s or a dict of its fields, got %r" % (what, cls.__name__, type(value).__name__))


class PSDistributedStrategy:
    """A parameter-server strategy: the transpiler's program config, the trainer runtime config,
    the server runtime config and the execution/build strategies (Paddle's ``DistributedStrategy``
    of ``parameter_server.distribute_transpiler.distributed_strategy``)."""

    mode: Optional[int] = None

    def __init__(self):
        self._program_config = DistributeTranspilerConfig()
        self._trainer_runtime_config = TrainerRuntimeConfig()
        self._server_runtime_config = ServerRuntimeConfig()
        cpu = int(os.getenv("CPU_NUM", "1"))
        # Paddle also sets num_threads = CPU_NUM: a thread pool fluidist does not have (the field would warn)
        self._execute_strategy = ExecutionStrategy()
        self._build_strategy = BuildStrategy()
        if cpu > 1:
            self._build_strategy.reduce_strategy = BuildStrategy.ReduceStrategy.Reduce
        self._trainer_runtime_config.mode = self.mode

    def get_program_config(self):
        return self._program_config

    def set_program_config(self, config):
        self._program_config = _set_config(self._program_config, config, DistributeTranspilerConfig,
                                           "set_program_config")
        self.check_program_config()

    def get_trainer_runtime_config(self):
        return self._trainer_runtime_config

    def set_trainer_runtime_config(self, config):
        self._trainer_runtime_config = _set_config(self._trainer_runtime_config, config, TrainerRuntimeConfig,
                                                   "set_trainer_runtime_config")

    def get_server_runtime_config(self):
        return self._server_runtime_config

    def set_server_runtime_config(self, config):
        self._server_runtime_config = _set_config(self._server_runtime_config, config, ServerRuntimeConfig,
                                                  "set_server_runtime_config")

    def get_execute_strategy(self):
        return self._execute_strategy

    def set_execute_strategy(self, config):
        self._execute_strategy = _set_config(self._execute_strategy, config, ExecutionStrategy,
                                             "set_execute_strategy")

    def get_build_strategy(self):
        return self._build_strategy

    def set_build_strategy(self, config):
        self._build_strategy = _set_config(self._build_strategy, config, BuildStrategy, "set_build_strategy")

    def check_program_config(self):
        """Make the program config say what this kind of strategy means."""

    def distributed_mode(self):
        return self._program_config.distributed_mode()

    def __repr__(self):
        c = self._program_config
        return "%s(sync_mode=%s, runtime_split_send_recv=%s, half_async=%s)" % (
            type(self).__name__, c.sync_mode, c.runtime_split_send_recv, c.half_async)


class SyncStrategy(PSDistributedStrategy):
    """Every step: all trainers send, barrier, the pservers update once, all trainers receive."""

    mode = DistributedMode.SYNC

    def __init__(self):
        super().__init__()
        self.check_program_config()

    def check_program_config(self):
        c = self._program_config
        c.runtime_split_send_recv = False
        c.sync_mode = True
        c.half_async = False
        c.geo_sgd_mode = False


class AsyncStrategy(PSDistributedStrategy):
    """Trainers send gradients and receive parameters without waiting for each other."""

    mode = DistributedMode.ASYNC

    def __init__(self):
        super().__init__()
        self.check_program_config()

    def check_program_config(self):
        c = self._program_config
        c.sync_mode = False
        c.runtime_split_send_recv = True
        c.half_async = False
        c.geo_sgd_mode = False


class HalfAsyncStrategy(PSDistributedStrategy):
    """No trainer barriers; the pservers run in their HALF_ASYNC mode."""

    mode = DistributedMode.HALF_ASYNC

    def __init__(self):
        super().__init__()
        self._execute_strategy.use_thread_barrier = True
        self.check_program_config()

    def check_program_config(self):
        c = self._program_config
        c.sync_mode = False
        c.runtime_split_send_recv = False
        c.half_async = True
        c.geo_sgd_mode = False


class GeoStrategy(PSDistributedStrategy):
    """GEO-SGD: trainers run the optimizer locally and push parameter deltas every
    ``update_frequency`` steps; the servers add them (``fluidist.transpiler.geo``)."""

    mode = DistributedMode.GEO

    def __init__(self, update_frequency=100):
        super().__init__()
        if not isinstance(update_frequency, int) or update_frequency < 1:
            raise ValueError("GeoStrategy: update_frequency must be an int >= 1, got %r" % (update_frequency,))
        self._update_frequency = update_frequency
        self.check_program_config()

    def check_program_config(self):
        c = self._program_config
        c.sync_mode = False
        c.runtime_split_send_recv = True
        c.geo_sgd_mode = True
        c.geo_sgd_need_push_nums = self._update_frequency


class StrategyFactory:
    """Paddle 1.x's way to make a parameter-server strategy: ``StrategyFactory.create_sync_strategy()``,
    ``create_half_async_strategy()``, ``create_async_strategy()`` or ``create_geo_strategy(k)`` (GEO-SGD
    sending every ``k`` steps), for ``fleet.distributed_optimizer(opt, strategy)``."""

    @staticmethod
    def create_sync_strategy():
        return SyncStrategy()

    @staticmethod
    def create_half_async_strategy():
        return HalfAsyncStrategy()

    @staticmethod
    def create_async_strategy():
        return AsyncStrategy()

    @staticmethod
    def create_geo_strategy(update_frequency=100):
        return GeoStrategy(update_frequency)


def strategy_from_config(config):
    """The strategy a ``DistributeTranspilerConfig`` amounts to (Paddle's table), holding that very
    config as its program config, unchanged (Paddle 1.8 rewrote an async config without
    ``runtime_split_send_recv`` into half-async; fluidist's transpiler runs it as given: its
    ``distributed_mode()`` is already HALF_ASYNC)."""
    if not isinstance(config, DistributeTranspilerConfig):
        raise TypeError("strategy_from_config takes a DistributeTranspilerConfig, got %r" % type(config).__name__)
    if config.geo_sgd_mode:
        cls = GeoStrategy     # GEO-SGD is asynchronous whatever sync_mode says (its transpiler ignores it)
    else:
        cls = {DistributedMode.SYNC: SyncStrategy, DistributedMode.ASYNC: AsyncStrategy,
               DistributedMode.HALF_ASYNC: HalfAsyncStrategy}[config.distributed_mode()]
    s = cls.__new__(cls)
    PSDistributedStrategy.__init__(s)
    if cls is GeoStrategy:
        s._update_frequency = config.geo_sgd_need_push_nums
    s._program_config = config
    return s
