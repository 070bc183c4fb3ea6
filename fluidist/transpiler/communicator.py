"""``fluid.communicator`` (Paddle 1.8): the trainer's background communicator of the parameter-server
modes, for scripts that transpile themselves (Fleet starts one in ``fleet.init_worker()``)::

    t = fluid.DistributeTranspiler(config)          # async, half-async or geo_sgd_mode
    t.transpile(trainer_id, pservers=..., trainers=N)
    main = t.get_trainer_program()
    exe.run(fluid.default_startup_program())
    comm = Communicator(main, DistributedMode.ASYNC)          # or HALF_ASYNC, or GEO with kwargs
    comm.start()
    ... exe.run(main, ...) ...
    comm.stop()
    exe.close()

``mode``: ``DistributedMode`` (``fluid.transpiler.distribute_transpiler``) SYNC, ASYNC, HALF_ASYNC
or GEO (``AsyncMode`` gives Paddle 1.6's names); ``kwargs`` for GEO: ``push_vars`` (the
transpiler's ``_get_vars_info()``), ``trainers``, ``push_nums``; ``envs``: the
``communicator_*`` flags (``FLAGS_communicator_*`` otherwise, see
``fluidist.distributed.communicator_flags``). In SYNC mode the trainer program's own ops do the
work and the communicator does nothing. What each mode does: ``fluidist.distributed.communicator``
and ``fluidist.distributed.geo_communicator``. Without a started communicator a program transpiled
for async runs its sends and receives in every step, and a GEO-SGD program starts its own.
"""
from ..core.scope import global_scope
from ..distributed import communicator as _runtime
from ..distributed.geo_communicator import GeoCommunicator
from ..framework.program import Program
from .config import DistributedMode

__all__ = ["Communicator", "AsyncMode"]


class AsyncMode:
    """Paddle 1.6's names of the modes."""
    ASYNC = DistributedMode.ASYNC
    HALF_ASYNC = DistributedMode.HALF_ASYNC
    GEO_SGD = DistributedMode.GEO


class Communicator:
    """The communicator of ``program`` (a transpiled trainer program) in ``mode`` (module doc)."""

    def __init__(self, program, mode=DistributedMode.ASYNC, kwargs=None, envs=None):
        if not isinstance(program, Program):
            raise TypeError("Communicator: program must be a Program (the transpiled trainer program), got %r"
                            % type(program).__name__)
        kwargs = dict(kwargs or {})
        self.mode = mode
        if mode == DistributedMode.SYNC:
            self._impl = None
        elif mode == DistributedMode.ASYNC:
            self._impl = _runtime.AsyncCommunicator(program, global_scope(), envs)
        elif mode == DistributedMode.HALF_ASYNC:
            self._impl = _runtime.HalfAsyncCommunicator(program, global_scope(), envs)
        elif mode == DistributedMode.GEO:
            self._impl = _geo(program, kwargs, envs)
        else:
            raise ValueError("Communicator: unknown mode %r (DistributedMode.SYNC 0, ASYNC 1, HALF_ASYNC 2, GEO 3)"
                             % (mode,))
        self._running = False

    def start(self):
        """Start the background threads (call after the startup program ran, before training)."""
        if self._impl is not None:
            self._impl.start()
        self._running = True

    def stop(self):
        """Send what is queued, receive the parameters once more, end the threads."""
        if self._impl is not None:
            self._impl.stop()
        self._running = False

    def is_running(self):
        return self._impl.is_running() if self._impl is not None else self._running


def _geo(program, kwargs, envs):
    own = getattr(program, "_geo_sgd", None) or {}
    push_vars = kwargs.get("push_vars", own.get("vars_info"))
    if not push_vars:
        raise ValueError("Communicator(GEO): kwargs needs 'push_vars' (the transpiler's _get_vars_info()), "
                         "'trainers' and 'push_nums'")
    trainers = int(kwargs.get("trainers", own.get("trainers", 0)))
    push_nums = int(kwargs.get("push_nums", own.get("push_nums", 0)))
    if trainers <= 0:
        raise ValueError("Communicator(GEO): trainers must be > 0, got %r" % (kwargs.get("trainers"),))
    if push_nums <= 0:
        raise ValueError("Communicator(GEO): push_nums must be > 0, got %r" % (kwargs.get("push_nums"),))
    trainer_id = int(kwargs.get("trainer_id", own.get("trainer_id", 0)))
    return GeoCommunicator(program, global_scope(), envs, vars_info=push_vars, trainers=trainers,
                           push_nums=push_nums, trainer_id=trainer_id)
