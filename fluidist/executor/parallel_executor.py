"""``fluid.ParallelExecutor``: Paddle 1.x's data-parallel executor, here a thin face over
``CompiledProgram(...).with_data_parallel(...)`` run by an ``Executor``.

::

    pe = fluid.ParallelExecutor(use_cuda=False, loss_name=loss.name, main_program=main,
                                build_strategy=bs, exec_strategy=es)
    loss_v, = pe.run(fetch_list=[loss.name], feed={"x": x, "y": y})   # the batch is split over the places
    test_pe = fluid.ParallelExecutor(use_cuda=False, main_program=test_prog, share_vars_from=pe)

The places are ``fluid.cpu_places()`` (``CPU_NUM`` of them) or ``fluid.cuda_places()``; the feed is
a dict (split along the batch over the places) or a list of one dict per place.
"""
import warnings

from ..device.places import cpu_places, cuda_places
from ..core.scope import global_scope
from .compiler import BuildStrategy, CompiledProgram, ExecutionStrategy
from .executor import Executor
from ..framework.program import default_main_program

__all__ = ["ParallelExecutor"]


class ParallelExecutor:
    def __init__(self, use_cuda, loss_name=None, main_program=None, share_vars_from=None, exec_strategy=None,
                 build_strategy=None, num_trainers=1, trainer_id=0, scope=None):
        if build_strategy is None:
            build_strategy = BuildStrategy()
        if num_trainers != 1 or build_strategy.num_trainers in (None, 0):
            build_strategy.num_trainers = num_trainers
        if trainer_id != 0:
            build_strategy.trainer_id = trainer_id
        if exec_strategy is None:
            exec_strategy = ExecutionStrategy()
        exec_strategy.use_cuda = bool(use_cuda)
        if share_vars_from and not isinstance(share_vars_from, ParallelExecutor):   # Paddle reads it if truthy
            raise TypeError("share_vars_from must be a ParallelExecutor, got %r" % type(share_vars_from).__name__)
        self._places = cuda_places() if use_cuda else cpu_places()
        self._scope = scope if scope is not None else global_scope()
        program = main_program if main_program is not None else default_main_program()
        self._compiled_program = CompiledProgram(program, build_strategy).with_data_parallel(
            loss_name=loss_name, build_strategy=build_strategy, exec_strategy=exec_strategy,
            share_vars_from=share_vars_from._compiled_program if share_vars_from else None,
            places=self._places)
        self._place = self._places[0]
        self._exe = Executor(self._place)
        self._scopes_dropped = False    # drop_local_exe_scopes() since the last run

    def run(self, fetch_list, feed=None, feed_dict=None, return_numpy=True):
        """Run one step on every place; returns the fetched values of all places concatenated."""
        if feed is None and feed_dict is not None:
            warnings.warn("ParallelExecutor.run(feed_dict=...) is deprecated: use feed=", stacklevel=2)
            feed = feed_dict
        self._scopes_dropped = False
        return self._exe.run(self._compiled_program, scope=self._scope, feed=feed, fetch_list=fetch_list,
                             return_numpy=return_numpy)

    @property
    def device_count(self):
        return len(self._places)

    def drop_local_exe_scopes(self):
        """Forget the temporaries of every place (parameters and other persistables stay)."""
        runner = self._compiled_program._runner
        if runner is None:
            return
        self._scopes_dropped = True
        program = self._compiled_program._run_program    # with gradient merge: the merged copy
        keep = {v.name for v in program.list_vars() if v.persistable}
        for s in runner.scopes:
            s.erase([n for n in list(s.vals) if n not in keep])

    def _need_create_local_exe_scopes(self):
        """Whether the next run makes the places' temporaries anew: before the first run, and after
        ``drop_local_exe_scopes``."""
        return self._compiled_program._runner is None or self._scopes_dropped
