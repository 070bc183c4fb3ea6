"""Fleet: the face of a distributed job (Paddle 1.x ``incubate.fleet.base.fleet_base``).

A fleet holds the role maker, answers who this process is and where the others are, and turns an
optimizer into a distributed one (``distributed_optimizer``). Its ``main_program`` and
``startup_program`` are what the process runs after ``minimize``. Each kind of fleet (collective,
parameter server) is a module with a singleton ``fleet``.
"""
from __future__ import annotations

import warnings
from typing import Any, List, Optional, Sequence, Union

from ..executor.executor import Executor
from ..device.places import CPUPlace
from ..optim.optimizer import Optimizer
from ..role_maker import RoleMakerBase

__all__ = ["Mode", "Fleet", "DistributedOptimizer"]


class Mode:
    TRANSPILER = 1
    PSLIB = 2
    COLLECTIVE = 3


class Fleet:
    """The base of both fleets. ``init(role_maker)`` must come first; ``role_maker=None`` means
    ``PaddleCloudRoleMaker`` (collective for the collective fleet), which reads the variables
    ``python -m fluidist.distributed.launch`` sets (Paddle 1.8 failed with AttributeError for None
    in the collective fleet and used MPISymetricRoleMaker in the parameter-server one)."""

    def __init__(self, mode: int) -> None:
        """The Fleet API of both kinds of job: ``fleet`` from ``fluidist.incubate.fleet.collective`` (all-reduce)
        or from ``fluidist.incubate.fleet.parameter_server.distribute_transpiler`` (parameter servers).

        ``init(role_maker)`` must come first; ``role_maker=None`` means ``PaddleCloudRoleMaker``
        (collective for the collective fleet), which reads the variables the launcher sets. Then
        ``distributed_optimizer(opt, strategy).minimize(loss)`` builds this process's programs
        (``fleet.main_program``, ``fleet.startup_program``). Paddle 1.8 difference: there ``init(None)``
        failed in the collective fleet and picked an MPI role maker in the parameter-server one.

        Attributes:
            main_program: this process's training program, after ``minimize``.
            startup_program: its startup program, after ``minimize``.

        Examples:
            >>> from fluidist.incubate.fleet.base import role_maker
            >>> from fluidist.incubate.fleet.collective import fleet
            >>> fleet.init(role_maker.UserDefinedCollectiveRoleMaker(0, ["127.0.0.1:6170"]))
            >>> fleet.worker_index(), fleet.worker_num(), fleet.is_first_worker()
            (0, 1, True)
        """
        self._is_initialized = False
        self._mode = mode
        self._optimizer: Any = None
        self._role_maker: Any = None
        self._executor: Any = None
        self.main_program: Any = None
        self.startup_program: Any = None
        self._origin_program: Any = None

    # ---------------------------------------------------------------- set-up
    def _default_role_maker(self):
        from ..role_maker import PaddleCloudRoleMaker
        return PaddleCloudRoleMaker(is_collective=self._mode == Mode.COLLECTIVE)

    def init(self, role_maker: Optional[RoleMakerBase] = None) -> None:
        """Take this process's role from ``role_maker`` (its ``generate_role`` runs now).

        Calling ``init`` again starts over with the new role maker.

        Args:
            role_maker: a role maker (``PaddleCloudRoleMaker``, ``UserDefinedRoleMaker``, ...), or None
                for ``PaddleCloudRoleMaker`` reading the launcher's variables.

        Raises:
            TypeError: ``role_maker`` is not a role maker.
        """
        if role_maker is None:
            role_maker = self._default_role_maker()
        if not isinstance(role_maker, RoleMakerBase):
            raise TypeError("role_maker must be an instance of RoleMakerBase, got %r" % type(role_maker).__name__)
        self._executor = Executor(CPUPlace())
        self._role_maker = role_maker
        if not role_maker._role_is_generated:
            role_maker.generate_role()
        self._optimizer = None
        self.main_program = None
        self.startup_program = None
        self._origin_program = None
        self._is_initialized = True

    def _rm(self):
        if not self._is_initialized:
            raise RuntimeError("call fleet.init(role_maker) first: this fleet does not know the role of this process")
        return self._role_maker

    # ---------------------------------------------------------------- who is who
    def is_first_worker(self) -> bool:
        """Whether this process is worker 0 (the one that saves models, by convention)."""
        return self._rm().is_first_worker()

    def worker_index(self) -> int:
        """This worker's index, 0 .. worker_num() - 1."""
        return self._rm().worker_index()

    def worker_num(self) -> int:
        """The number of workers (trainers)."""
        return self._rm().worker_num()

    def is_worker(self) -> bool:
        """Whether this process trains (computes gradients)."""
        return self._rm().is_worker()

    def is_server(self) -> bool:
        """Whether this process is a parameter server."""
        return self._rm().is_server()

    def server_index(self) -> int:
        """This server's index, 0 .. server_num() - 1."""
        return self._rm().server_index()

    def worker_endpoints(self, to_string: bool = False) -> Union[List[str], str]:
        """The workers' ``ip:port`` endpoints: a list, or one comma-separated string with ``to_string``."""
        eps = self._rm().get_trainer_endpoints()
        return ",".join(eps) if to_string else eps

    def server_endpoints(self, to_string: bool = False) -> Union[List[str], str]:
        """The servers' ``ip:port`` endpoints: a list, or one comma-separated string with ``to_string``."""
        eps = self._rm().get_pserver_endpoints()
        return ",".join(eps) if to_string else eps

    def server_num(self) -> int:
        """The number of parameter servers (0 in a collective job)."""
        return len(self._rm().get_pserver_endpoints())

    # ---------------------------------------------------------------- communication
    def barrier_worker(self) -> None:
        """Wait until every worker has reached this call."""
        self._rm().barrier_worker()

    def all_reduce_worker(self, input: Any, output: Any = None, mode: str = "sum") -> Any:
        """Reduce ``input`` (a NumPy array) over the workers with ``mode`` (``"sum"``, ``"min"``,
        ``"max"``); written into ``output`` when given, and returned."""
        return self._rm().all_reduce_worker(input, output, mode)

    def split_files(self, files: List[str]) -> List[str]:
        """This worker's share of ``files``: contiguous blocks, the first ``len % worker_num`` workers
        taking one file more (5 files over 2 workers: 3 and 2)."""
        if not isinstance(files, list):
            raise TypeError("files should be a list of file need to be read, got %r" % type(files).__name__)
        n, i = self.worker_num(), self.worker_index()
        base, extra = divmod(len(files), n)
        begin = i * base + min(i, extra)
        return files[begin:begin + base + (1 if i < extra else 0)]

    # ---------------------------------------------------------------- per kind
    def _warn(self, name, why):
        warnings.warn("fleet.%s: %s" % (name, why), stacklevel=3)

    def init_worker(self) -> None:
        """Start this worker's side of the job (parameter servers: connect to the servers)."""
        raise NotImplementedError

    def init_server(self, model_dir: Optional[str] = None) -> None:
        """Initialise this server's parameters, from ``model_dir`` (``save_persistables``'s) when given."""
        raise NotImplementedError

    def run_server(self) -> None:
        """Serve until every worker has called ``stop_worker`` (parameter servers only)."""
        raise NotImplementedError

    def stop_worker(self) -> None:
        """Tell the servers this worker is done (parameter servers); the worker then ends."""
        raise NotImplementedError

    def distributed_optimizer(self, optimizer: Any, strategy: Any = None) -> DistributedOptimizer:
        """Wrap ``optimizer`` so that ``minimize`` builds this process's distributed programs.

        Args:
            optimizer: a ``fluid.optimizer`` optimizer.
            strategy: a ``DistributedStrategy`` (collective) or a strategy from ``StrategyFactory``
                (parameter servers); None for the default.

        Returns:
            The DistributedOptimizer.
        """
        raise NotImplementedError

    def save_inference_model(self, executor: Any, dirname: str, feeded_var_names: Sequence[str], target_vars: Sequence[Any],
                             main_program: Any = None, export_for_deployment: bool = True) -> None:
        """``fluid.io.save_inference_model`` of the original (not transpiled) program."""
        raise NotImplementedError

    def save_persistables(self, executor: Any, dirname: str, main_program: Any = None) -> None:
        """``fluid.io.save_persistables`` of the parameters as this worker sees them."""
        raise NotImplementedError


class DistributedOptimizer:
    """Wraps a fluid ``Optimizer``; ``minimize`` adds backward and optimize ops and then makes the
    program distributed the fleet's way."""

    def __init__(self, optimizer, strategy=None):
        from ..optim.lookahead import LookaheadOptimizer
        if not isinstance(optimizer, (Optimizer, LookaheadOptimizer)):
            raise TypeError("optimizer must be an instance of Optimizer, got %r" % type(optimizer).__name__)
        self._optimizer = optimizer
        self._strategy = strategy

    def backward(self, loss, startup_program=None, parameter_list=None, no_grad_set=None, callbacks=None):
        return self._optimizer.backward(loss, startup_program, parameter_list, no_grad_set, callbacks)

    def apply_gradients(self, params_grads):
        return self._optimizer.apply_gradients(params_grads)

    def minimize(self, loss, startup_program=None, parameter_list=None, no_grad_set=None):
        raise NotImplementedError
