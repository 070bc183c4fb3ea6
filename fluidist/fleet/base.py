"""Fleet: the face of a distributed job (Paddle 1.x ``incubate.fleet.base.fleet_base``).

A fleet holds the role maker, answers who this process is and where the others are, and turns an
optimizer into a distributed one (``distributed_optimizer``). Its ``main_program`` and
``startup_program`` are what the process runs after ``minimize``. Each kind of fleet (collective,
parameter server) is a module with a singleton ``fleet``.
"""
import warnings

from ..executor.executor import Executor
from ..core.place import CPUPlace
from ..optimizer import Optimizer
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

    def __init__(self, mode):
        self._is_initialized = False
        self._mode = mode
        self._optimizer = None
        self._role_maker = None
        self._executor = None
        self.main_program = None
        self.startup_program = None
        self._origin_program = None

    # ---------------------------------------------------------------- set-up
    def _default_role_maker(self):
        from ..role_maker import PaddleCloudRoleMaker
        return PaddleCloudRoleMaker(is_collective=self._mode == Mode.COLLECTIVE)

    def init(self, role_maker=None):
        """Take this process's role from ``role_maker`` (its ``generate_role`` runs now). Calling
        ``init`` again starts over with the new role maker."""
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
    def is_first_worker(self):
        return self._rm().is_first_worker()

    def worker_index(self):
        return self._rm().worker_index()

    def worker_num(self):
        return self._rm().worker_num()

    def is_worker(self):
        return self._rm().is_worker()

    def is_server(self):
        return self._rm().is_server()

    def server_index(self):
        return self._rm().server_index()

    def worker_endpoints(self, to_string=False):
        eps = self._rm().get_trainer_endpoints()
        return ",".join(eps) if to_string else eps

    def server_endpoints(self, to_string=False):
        eps = self._rm().get_pserver_endpoints()
        return ",".join(eps) if to_string else eps

    def server_num(self):
        return len(self._rm().get_pserver_endpoints())

    # ---------------------------------------------------------------- communication
    def barrier_worker(self):
        self._rm().barrier_worker()

    def all_reduce_worker(self, input, output=None, mode="sum"):
        return self._rm().all_reduce_worker(input, output, mode)

    def split_files(self, files):
        """This worker's share of ``files``: contiguous blocks, the first ``len % worker_num``
        workers taking one file more (e.g. 5 files over 2 workers: 3 and 2)."""
        if not isinstance(files, list):
            raise TypeError("files should be a list of file need to be read, got %r" % type(files).__name__)
        n, i = self.worker_num(), self.worker_index()
        base, extra = divmod(len(files), n)
        begin = i * base + min(i, extra)
        return files[begin:begin + base + (1 if i < extra else 0)]

    # ---------------------------------------------------------------- per kind
    def _warn(self, name, why):
        warnings.warn("fleet.%s: %s" % (name, why), stacklevel=3)

    def init_worker(self):
        raise NotImplementedError

    def init_server(self, model_dir=None):
        raise NotImplementedError

    def run_server(self):
        raise NotImplementedError

    def stop_worker(self):
        raise NotImplementedError

    def distributed_optimizer(self, optimizer, strategy=None):
        raise NotImplementedError

    def save_inference_model(self, executor, dirname, feeded_var_names, target_vars, main_program=None,
                             export_for_deployment=True):
        raise NotImplementedError

    def save_persistables(self, executor, dirname, main_program=None):
        raise NotImplementedError


class DistributedOptimizer:
    """Wraps a fluid ``Optimizer``; ``minimize`` adds backward and optimize ops and then makes the
    program distributed the fleet's way."""

    def __init__(self, optimizer, strategy=None):
        from ..lookahead import LookaheadOptimizer
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
