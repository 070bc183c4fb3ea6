"""The Executor: plans a block once (a flat list of kernel calls), then runs it fast.

Plans are cached per (program, block) and keyed on ``Program._version``, which every edit bumps,
so an edit after the first run is always seen. They are kept on the program, not the executor (see
``Executor._plan``): a program the user drops goes with its plans. The Executor never rewrites programs.
"""
from __future__ import annotations

import sys
import weakref
from typing import TYPE_CHECKING, Any, List, Literal, Sequence, overload

import numpy as np

from ..framework.program import Program, Variable, default_main_program
from ..device.base import Place, checked_place
from ..device.places import is_device_array, to_host
from ..device.switch import default_place
from ..core.placement import is_placed, to_place
from ..core.fetched import FetchedArray, as_fetched
from ..core.scope import global_scope
from ..core.tensor import LoDTensor, LoDTensorArray, SelectedRows
from ..reader.feeding import _NP_DTYPES, _shape_ok, check_feed_value  # noqa: F401 (check_feed_value: re-exported)
from . import nan_inf
from .host_memory import keep_freed_blocks
from .plan import Plan, _executors, _missing_value_error
from .prune import needs_split, pruned_run_args, refuse_compiled_prune, split_fetch_list
from .plan import set_kernel_wrapper  # noqa: F401 (re-exported: the profiler's hook)

_RPC_MODULE = "fluidist.distributed.rpc"

if TYPE_CHECKING:  # for the annotations only (compiler imports this module's helpers)
    from ..core.scope import Scope
    from .compiler import CompiledProgram


def _host_copy(value):
    """A NumPy copy of a fetched value (one device-to-host transfer for a device array)."""
    host = to_host(value)
    return np.array(host, copy=True) if host is value or not isinstance(host, np.ndarray) else host


def _copy_on_place(value):
    """A copy of an array where it lives (a device array stays on its device)."""
    if isinstance(value, np.ndarray) or is_device_array(value):
        return value.copy()
    return np.array(value, copy=True)


def _fetch_array(value, return_numpy):
    """A fetched LoDTensorArray: a list of numpy arrays (Paddle's ``as_numpy``), or a copy (on its place)."""
    if return_numpy:
        return [None if t is None else as_fetched(_host_copy(t._array)) for t in value]
    out = LoDTensorArray()
    for t in value:
        out.append(None if t is None else LoDTensor(_copy_on_place(t._array), t._lod))
    return out


def _plain_fetch_names(fetch_list):
    """The names of a fetch list of Variables and names only (or None / a single one), else None."""
    if fetch_list is None:
        return []
    if type(fetch_list) is not list:
        return [fetch_list] if type(fetch_list) is str else \
            [fetch_list.name] if isinstance(fetch_list, Variable) else None
    names = []
    for f in fetch_list:
        if type(f) is str:
            names.append(f)
        elif isinstance(f, Variable):
            names.append(f.name)
        else:
            return None
    return names


def _as_fetch_names(fetch_list):
    """The names of a fetch list, or the TypeError naming its element that is neither a Variable nor a name."""
    names = _plain_fetch_names(fetch_list)
    if names is not None:
        return names
    if not isinstance(fetch_list, (list, tuple)):
        raise TypeError("fetch_list must be a list of Variables or names, got %r" % type(fetch_list).__name__)
    names = []
    for i, f in enumerate(fetch_list):
        if isinstance(f, Variable):
            names.append(f.name)
        elif isinstance(f, str):
            names.append(f)
        else:
            raise TypeError("fetch_list[%d] must be a Variable or a name, got %r" % (i, type(f).__name__))
    return names


def _no_plan():
    """What ``Executor._last_plan`` holds before a run (it holds a weak reference to a plan): none."""
    return None


class Executor:
    """Runs Programs on a place: ``Executor(CPUPlace()).run(program, feed, fetch_list)``. Without a
    place, ``CUDAPlace(0)`` where CuPy sees a GPU, else the CPU (``device.default_place``)."""

    def __init__(self, place: Place | None = None) -> None:
        self.place = checked_place(place, "Executor") if place is not None else default_place()
        self._on_host = not self.place.is_device and self.place.xp is np
        keep_freed_blocks()     # a step's big outputs reuse the last step's memory (host_memory.py)
        self._closed = False
        self._planned: weakref.WeakSet = weakref.WeakSet()   # the programs holding plans of this executor
        self._last_plan = _no_plan  # (weakly) the plan of the last run's block 0: the next run's first guess
        self._close_hooks: list = []
        self._run_feed: dict | None = None    # the feed of the run in progress (what a loader yielded)
        _executors.add(self)

    @property
    def _default_executor(self) -> "Executor":
        """What Paddle scripts pass to ``core`` functions as the executor (Paddle's C++ one): this."""
        return self

    # ------------------------------------------------------------------ planning
    def _drop_plans(self):
        """Forget every plan (the kernel wrapper changed): the next run plans afresh."""
        for program in list(self._planned):
            program._executor_plans.pop(self, None)
        self._planned.clear()
        self._last_plan = _no_plan

    def _plan(self, program, block_idx):
        """This executor's plan of ``program``'s block ``block_idx``, made afresh after an edit.

        Plans live on their program (``program._executor_plans``, keyed weakly by executor), not on
        the executor: a plan holds its program (its ops and blocks do), so a cache on the executor
        would keep every program it ever ran alive, with its plans. There, they go when the program
        goes; a plan holds its executor weakly, so a program does not keep executors alive either."""
        by_executor = program._executor_plans
        if by_executor is None:
            by_executor = program._executor_plans = weakref.WeakKeyDictionary()
        per_prog = by_executor.get(self)
        if per_prog is None:
            per_prog = by_executor[self] = {}
            self._planned.add(program)
        plan = per_prog.get(block_idx)
        if plan is None or plan.version != program._version or plan.nan_inf != nan_inf.settings():
            plan = per_prog[block_idx] = Plan(self, program, block_idx)
        return plan

    def _run_block(self, program, block_idx, scope):
        """A whole block in ``scope`` itself (a pserver's optimize, prefetch and checkpoint blocks):
        its inputs placed first, as for a run."""
        plan = self._plan(program, block_idx)
        self._place_inputs(plan, scope)
        plan.run(scope)

    # ------------------------------------------------------------------ running
    # What a run returns, as the arguments say it: NumPy arrays (the default, return_numpy=True, merged);
    # other combinations (LoDTensors, one list per place) are not told apart. A fetched LoDTensorArray
    # is a list of arrays even so (cast that one).
    @overload
    def run(self, program: Program | CompiledProgram | None = None,
            feed: dict[str, Any] | list[dict[str, Any]] | None = None,
            fetch_list: Sequence[Variable | str] | None = None, feed_var_name: str = "feed",
            fetch_var_name: str = "fetch", scope: Scope | None = None, return_numpy: Literal[True] = True,
            use_program_cache: bool = False, return_merged: Literal[True] = True,
            use_prune: bool = False) -> List[np.ndarray]: ...

    @overload
    def run(self, program: Program | CompiledProgram | None = None,
            feed: dict[str, Any] | list[dict[str, Any]] | None = None,
            fetch_list: Sequence[Variable | str] | None = None, feed_var_name: str = "feed",
            fetch_var_name: str = "fetch", scope: Scope | None = None, return_numpy: bool = True,
            use_program_cache: bool = False, return_merged: bool = True, use_prune: bool = False) -> List[Any]: ...

    def run(self, program: Program | CompiledProgram | None = None,
            feed: dict[str, Any] | list[dict[str, Any]] | None = None,
            fetch_list: Sequence[Variable | str] | None = None, feed_var_name: str = "feed",
            fetch_var_name: str = "fetch", scope: Scope | None = None, return_numpy: bool = True,
            use_program_cache: bool = False, return_merged: bool = True, use_prune: bool = False) -> list:
        """Run ``program`` once and return the values of ``fetch_list``.

        Args:
            program: a Program (default: the default main program) or a CompiledProgram (data parallel).
            feed: ``{variable name: value}``; a value is a NumPy array, a LoDTensor (sequences) or anything
                ``numpy.asarray`` takes. Its shape and dtype are checked against the data variable. A
                CompiledProgram over several places also takes one dict per place.
            fetch_list: Variables or variable names to return, in this order.
            scope: where variables live (default: the global scope); the values the program writes stay there.
            return_numpy: True returns NumPy arrays; False returns LoDTensors (which keep their LoD).
            use_program_cache: accepted for Paddle's signature; the Executor always reuses its plan of a
                program until the program changes.
            return_merged: for a data-parallel CompiledProgram, False returns each place's values apart.
            feed_var_name: accepted for Paddle's signature (fluidist has no feed ops).
            fetch_var_name: accepted for Paddle's signature (fluidist has no fetch ops).
            use_prune: run only the ops the fetches and optimize ops need, as Paddle 1.8 (see
                ``executor.prune``); optimize ops (``minimize``'s) in ``fetch_list`` set it too.

        Returns:
            one value per entry of ``fetch_list``.

        Raises:
            RuntimeError: the Executor was closed.
            ValueError: a feed that does not fit its variable, or an input that no op and no feed
                provides (the message names the variable and the op).
            TypeError: a feed or fetch_list of the wrong kind (the message names the entry).

        Examples:
            >>> main, startup = fluid.Program(), fluid.Program()
            >>> with fluid.program_guard(main, startup):
            ...     x = fluid.data(name="x", shape=[None, 2], dtype="float32")
            ...     y = fluid.layers.fc(x, size=1)
            >>> exe = fluid.Executor(fluid.CPUPlace())
            >>> _ = exe.run(startup)
            >>> out, = exe.run(main, feed={"x": np.ones((4, 2), "float32")}, fetch_list=[y])
            >>> out.shape
            (4, 1)
        """
        if self._closed:
            raise RuntimeError("Attempted to use a closed Executor")
        if type(program) is Program and not use_prune:     # the common case, without the checks below
            fetch_names = _plain_fetch_names(fetch_list)
            if fetch_names is not None:
                return self._run_program(program, feed, fetch_names, scope, return_numpy)
        optimize_ops: list = []
        if needs_split(fetch_list):             # optimize ops in fetch_list: a pruned run, as in Paddle
            fetch_list, optimize_ops = split_fetch_list(fetch_list)
            use_prune = use_prune or bool(optimize_ops)
        if program is None:
            program = default_main_program()
        if not isinstance(program, Program):
            run_compiled = getattr(program, "_run_on", None)   # a CompiledProgram runs itself
            if run_compiled is not None:
                refuse_compiled_prune(use_prune)
                return run_compiled(self, feed, fetch_list, scope, return_numpy, return_merged)
            raise TypeError("Executor.run expects a Program or CompiledProgram, got %r" % type(program).__name__)
        feed = self._feed_dict(feed)
        fetch_names = _as_fetch_names(fetch_list)
        if use_prune:
            program, feed = pruned_run_args(program, feed, fetch_names, optimize_ops)
        return self._run_program(program, feed, fetch_names, scope, return_numpy)

    @staticmethod
    def _feed_dict(feed):
        if feed is None:
            return {}
        if isinstance(feed, (list, tuple)) and len(feed) == 1 and isinstance(feed[0], dict):
            feed = feed[0]
        if not isinstance(feed, dict):
            raise TypeError("feed must be a dict of {name: array} for a Program, got %r" % type(feed).__name__)
        return feed

    def _run_program(self, program, feed, fetch_names, scope, return_numpy):
        """Block 0 of ``program`` run once: feeds in, the plan's function, fetches out."""
        if scope is None:
            scope = global_scope()
        if type(feed) is not dict:
            feed = self._feed_dict(feed)
        plan = self._last_plan()    # (the checks of _plan, for the plan a loop runs again and again)
        if plan is None or plan.program is not program or plan.version != program._version \
                or plan.nan_inf != nan_inf.settings():
            plan = self._plan(program, 0)
            self._last_plan = weakref.ref(plan)     # (weak: it keeps no program alive)
        self._run_feed = feed
        if feed:
            self._feed(plan, scope, feed)
        vals = scope.vals
        for n in plan.fresh_arrays:
            vals[n] = LoDTensorArray()
        try:
            if self._on_host:
                names = plan.placed_names      # (all host arrays of the scope itself: nothing to do)
                if list(map(type, map(vals.get, names))).count(np.ndarray) != len(names):
                    self._ready_inputs(plan, scope)
                plan.run(scope)
            else:
                if not self._all_placed(plan, vals):
                    self._ready_inputs(plan, scope)
                with self.place.device_context():
                    plan.run(scope)
        finally:
            rpc = sys.modules.get(_RPC_MODULE)   # (not imported: nothing was posted)
            if rpc is not None and rpc.pending():
                rpc.dispatch()      # what send ops queued and no recv took along leaves with the run
        return self._fetch(plan, scope, fetch_names, return_numpy)

    def _feed(self, plan, scope, feed):
        """Fed values into the scope, each checked and copied to the executor's place (one transfer
        per fed variable on a device). A host array of the shape and dtype the plan last accepted
        for its variable goes in as it is (``plan.fed``: a program edit makes a new plan)."""
        block = plan.block
        vals, lods = scope.vals, scope.lods
        place = self.place
        on_host = not place.is_device
        fed = plan.fed
        for name, value in feed.items():
            # an array of the place (on the host, exactly a NumPy array) taken as it is
            as_is = type(value) is np.ndarray if on_host else place.owns(value)
            if as_is and fed.get(name) == (value.shape, value.dtype):
                vals[name] = value
                if lods and name in lods:
                    del lods[name]
                continue
            var = block.vars.get(name)
            if var is None:
                raise ValueError("feed variable %r is not a variable of the program" % name)
            if as_is and var.lod_level == 0 and \
                    value.dtype is _NP_DTYPES.get(var.dtype) and _shape_ok(var.shape, value.shape):
                vals[name] = value
                fed[name] = (value.shape, value.dtype)
                if lods and name in lods:
                    del lods[name]
                continue
            arr, lod = check_feed_value(var, name, value)
            if not place.owns(arr):
                with place.device_context():
                    arr = place.to_device(arr)
            vals[name] = arr
            if lod:
                lods[name] = lod
            elif name in lods:
                del lods[name]

    def _all_placed(self, plan, vals):
        """Whether every value the block reads is in ``vals`` (the scope's own) as an array of the
        executor's place: what ``_ready_inputs`` then finds with nothing to do (the common case,
        checked with C loops)."""
        return plan.external_names <= vals.keys() and self.place.owns_all(list(map(vals.get, plan.placed_names)))

    def _ready_inputs(self, plan, scope):
        """Every input the block reads from the scope there, and on the executor's place."""
        self._check_inputs(plan, scope)
        self._place_inputs(plan, scope)

    def _check_inputs(self, plan, scope):
        vals = scope.vals
        if plan.external_names <= vals.keys():
            return
        for name, _ in plan.external:
            if name not in vals:
                if scope.parent is not None and scope._owner(name) is not None:
                    continue
                raise _missing_value_error(plan.block, name,
                                           next(s.op for s in plan.steps if name in s.op.input_arg_names))

    def _place_inputs(self, plan, scope):
        """Values the block reads from the scope that are not on the executor's place (set by the
        user without a place, or by another executor) are moved there, once: the moved value
        replaces the old one in the scope that holds it."""
        vals = scope.vals
        place = self.place
        on_host = not place.is_device
        for name in plan.placed_names:
            holder = vals
            if name not in vals:
                owner = scope._owner(name) if scope.parent is not None else None
                if owner is None:
                    continue
                holder = owner.vals
            v = holder[name]
            if v is None or (on_host and type(v) is np.ndarray):
                continue
            if not is_placed(v, place):
                with place.device_context():
                    holder[name] = to_place(v, place)

    def _fetch(self, plan, scope, names, return_numpy):
        out = []
        vals = scope.vals
        for name in names:
            value = vals.get(name)
            if type(value) is np.ndarray and return_numpy:
                out.append(value.copy().view(FetchedArray))      # (as_fetched, inline)
                continue
            owner = scope._owner(name)
            value = owner.vals.get(name) if owner is not None else None
            if value is None:
                if plan.block._find_var_recursive(name) is None:
                    raise ValueError("fetch variable %r is not a variable of the program" % name)
                raise ValueError("fetch variable %r has no value: no op of the program produces it and "
                                 "it was neither fed nor set in the scope" % name)
            if isinstance(value, LoDTensorArray):
                out.append(_fetch_array(value, return_numpy))
                continue
            if return_numpy:
                if isinstance(value, SelectedRows):
                    value = value.value
                out.append(as_fetched(_host_copy(value)))
            else:
                if isinstance(value, SelectedRows):
                    out.append(value)
                else:   # stays on the place: a copy there
                    out.append(LoDTensor(_copy_on_place(value), owner._find_lod(name)))
        return out

    def on_close(self, callback: Any) -> None:
        """Call ``callback()`` when this executor closes (the parameter-server ops register one that
        tells the pservers this trainer is done)."""
        if self._closed:
            raise RuntimeError("on_close: the Executor is already closed")
        self._close_hooks.append(callback)

    # ------------------------------------------------------------------ datasets
    def train_from_dataset(self, program: Any = None, dataset: Any = None, scope: Scope | None = None, thread: int = 0,
                           debug: bool = False, fetch_list: Sequence[Any] | None = None,
                           fetch_info: Sequence[str] | None = None, print_period: int = 100,
                           fetch_handler: Any = None) -> None:
        """Run ``program`` on every batch of ``dataset`` (``fluid.DatasetFactory``), in ``thread``
        threads (Hogwild, as in Paddle; a program that talks to other processes runs one step at a
        time); see :mod:`fluidist.executor.dataset_runner`.

        Args:
            program: the program (or a CompiledProgram); the default main program when None.
            dataset: a ``fluid.DatasetFactory().create_dataset(...)`` with its files and slots set.
            scope: where the parameters live; the global scope when None.
            thread: the number of worker threads; the dataset's ``set_thread`` when 0.
            debug: accepted for Paddle's signature.
            fetch_list: Variables (or names) printed every ``print_period`` batches by thread 0.
            fetch_info: the label printed before each fetched value (its name when None).
            print_period: batches between prints.
            fetch_handler: a ``FetchHandler`` called with the values of its variables every
                ``period_secs`` seconds.

        Returns:
            None.

        Raises:
            RuntimeError: no dataset, or no thread count.
            ValueError: ``fetch_info`` and ``fetch_list`` of different lengths, or a dataset slot
                that is not a variable of the program.
        """
        from .dataset_runner import run_from_dataset
        return run_from_dataset(self, program, dataset, scope, thread, False, debug, fetch_list, fetch_info,
                                print_period, fetch_handler)

    def infer_from_dataset(self, program: Any = None, dataset: Any = None, scope: Scope | None = None, thread: int = 0,
                           debug: bool = False, fetch_list: Sequence[Any] | None = None,
                           fetch_info: Sequence[str] | None = None, print_period: int = 100,
                           fetch_handler: Any = None) -> None:
        """``train_from_dataset`` on a copy of the program without its backward and optimize ops:
        the parameters do not change.

        Args:
            program: the program (or a CompiledProgram); the default main program when None.
            dataset: a ``fluid.DatasetFactory().create_dataset(...)`` with its files and slots set.
            scope: where the parameters live; the global scope when None.
            thread: the number of worker threads; the dataset's ``set_thread`` when 0.
            debug: accepted for Paddle's signature.
            fetch_list: Variables (or names) printed every ``print_period`` batches by thread 0.
            fetch_info: the label printed before each fetched value (its name when None).
            print_period: batches between prints.
            fetch_handler: a ``FetchHandler`` called with the values of its variables every
                ``period_secs`` seconds.

        Returns:
            None.

        Raises:
            RuntimeError: no dataset, or no thread count.
            ValueError: ``fetch_info`` and ``fetch_list`` of different lengths, or a dataset slot
                that is not a variable of the program.
        """
        from .dataset_runner import run_from_dataset
        return run_from_dataset(self, program, dataset, scope, thread, True, debug, fetch_list, fetch_info,
                                print_period, fetch_handler)

    def close(self) -> None:
        """Tell every parameter server this trainer talked to that it is done; the executor is then closed."""
        if self._closed:
            return
        errors = []
        for hook in list(self._close_hooks):
            try:
                hook()
            except Exception as e:  # report every failure, after trying all
                errors.append(e)
        self._close_hooks = []
        self._closed = True
        if errors:
            raise RuntimeError("Executor.close: %s" % "; ".join(str(e) for e in errors))
