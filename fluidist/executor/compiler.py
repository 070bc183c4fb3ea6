"""CompiledProgram.with_data_parallel: one process drives several places; gradients are
all-reduced across the places (threads) and, with ``num_trainers > 1``, across processes.

Every place runs the whole program on its slice of the batch in its own thread and scope; its copy
of the program has the loss gradient scaled by 1/(places x trainers) and ``c_allreduce_sum`` ops on
the gradients after backward (the ops and communicators of the collective mode), so every place
then applies the same update. Place 0 uses the caller's scope, so parameters are read where users
expect them.
"""
from __future__ import annotations

import itertools
import weakref
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Sequence

import numpy as np

from ..distributed.collective import device_sum, registry as collective_registry
from ..distributed.collective.base import CollectiveError
from ..distributed.collective.common import CollectiveTimeout
from ..distributed.collective.registry import init_comms_from_nccl_id
from ..distributed.collective.threads import thread_group
from ..framework import registry
from ..framework.op_role import OP_ROLE_ATTR, OpRole
from ..framework.program import Program
from ..transpiler.collective import allreduce_gradients
from .executor import Executor, _as_fetch_names
from .feed_split import split_feed
from ..device.places import CUDAPlace, cpu_places, cuda_places, is_device_array, to_host
from ..core.placement import copy_to, to_place
from ..core.fetched import as_fetched
from ..core.scope import Scope, global_scope
from ..core.tensor import LoDTensor, SelectedRows


class BuildStrategy:
    """How ``CompiledProgram.with_data_parallel`` builds its data-parallel run: every field of
    Paddle 1.8's ``BuildStrategy``, with its defaults.

    Honoured: ``reduce_strategy`` (AllReduce; Reduce gives the same parameters and warns that it
    runs as AllReduce), ``gradient_scale_strategy``, ``num_trainers`` / ``trainer_id`` /
    ``trainers_endpoints`` (several processes), ``nccl_comm_num``, ``fuse_all_reduce_ops`` (dense
    gradients all-reduced in one buffer), ``sync_batch_norm``, ``enable_sequential_execution``,
    ``is_distribution``, ``debug_graphviz_path``, and fluidist's ``gradient_merge`` /
    ``gradient_merge_configs`` (``k_steps`` micro-batches, then one update).

    Paddle 1.8 difference: the graph passes (fusions, in-place memory reuse, hierarchical
    all-reduce, MKL-DNN) do not exist; setting one of those fields to another value than Paddle's
    default warns once that it changes nothing (``fluidist.executor.strategy_fields``).

    Examples:
        >>> bs = fluid.BuildStrategy()
        >>> bs.gradient_scale_strategy = fluid.BuildStrategy.GradientScaleStrategy.CoeffNumDevice
        >>> bs.fuse_all_reduce_ops = True
        >>> bs.reduce_strategy == fluid.BuildStrategy.ReduceStrategy.AllReduce
        True
    """

    class ReduceStrategy:
        AllReduce = 0
        Reduce = 1

    class GradientScaleStrategy:
        CoeffNumDevice = 0
        One = 1
        Customized = 2

    def __init__(self) -> None:
        """Every field of Paddle 1.8's BuildStrategy, with its defaults; ``strategy_fields`` says
        which are honoured (and warns once for those without effect)."""
        self.reduce_strategy = BuildStrategy.ReduceStrategy.AllReduce
        self.gradient_scale_strategy = BuildStrategy.GradientScaleStrategy.CoeffNumDevice
        self.num_trainers = 1
        self.trainer_id = 0
        self.trainers_endpoints: list[str] = []
        self.nccl_comm_num = 1
        self.use_hierarchical_allreduce = False
        self.hierarchical_allreduce_inter_nranks = 0
        self.fuse_all_reduce_ops = True
        self.fuse_broadcast_ops = True
        self.fuse_elewise_add_act_ops = False
        self.fuse_all_optimizer_ops = False
        self.fuse_relu_depthwise_conv = False
        self.fuse_bn_act_ops = False
        self.enable_auto_fusion = False
        self.enable_inplace = True
        self.memory_optimize = None
        self.cache_runtime_context = False
        self.remove_unnecessary_lock = True
        self.mkldnn_enabled_op_types: set[str] = set()
        self.sync_batch_norm = False
        self.enable_backward_optimizer_op_deps = True
        self.enable_sequential_execution = False
        self.debug_graphviz_path = ""  # written (DOT) at <path>_multi_devices_graph on the first run
        self.is_distribution = False
        self.async_mode = False
        # fluidist (the names of Paddle 2's fleet strategy): k micro-batches, then one update
        self.gradient_merge = False
        self.gradient_merge_configs = {"k_steps": 1, "avg": True}

    def _finalize_strategy_and_create_passes(self):
        """Paddle's pass builder; ``insert_pass(0, "multi_batch_merge_pass").set("num_repeats", k)``
        turns on gradient merge over ``k`` batches."""
        from .strategy_fields import PassBuilder
        return PassBuilder(self)


class ExecutionStrategy:
    """How a compiled program runs: every field of Paddle 1.8's ``ExecutionStrategy``.

    Honoured: ``num_iteration_per_run`` (the program runs that many times per ``Executor.run``).

    Paddle 1.8 difference: the thread-pool and scope-dropping fields (``num_threads``,
    ``num_iteration_per_drop_scope``, ``allow_op_delay``, ``use_thread_barrier``, ...) change
    nothing (each place runs its ops in order in a thread of its own); a value other than Paddle's
    default warns once.

    Examples:
        >>> es = fluid.ExecutionStrategy()
        >>> es.num_iteration_per_run = 1
    """

    def __init__(self) -> None:
        self.num_threads = 0
        self.num_iteration_per_drop_scope = 100
        self.num_iteration_per_run = 1
        self.use_thread_barrier = False
        self.allow_op_delay = False
        self.use_cuda = True
        self.use_experimental_executor = True
        self._dry_run = False


class CompiledProgram:
    """A program prepared to run in a particular way: data-parallel over several places (and
    processes) with ``with_data_parallel``, or under the strategies' options.

    ``Executor.run`` takes it in place of the program. Without ``with_data_parallel`` it runs the
    program as it is (with ``gradient_merge`` or ``num_iteration_per_run`` when set).

    Args:
        program_or_graph: the Program (a main program with its optimizer ops).
        build_strategy: a ``BuildStrategy``; the defaults when None.

    Raises:
        TypeError: something other than a Program.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> loss = fluid.layers.mean(fluid.layers.fc(x, size=1))
        >>> _ = fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> _ = exe.run(fluid.default_startup_program())
        >>> compiled = fluid.CompiledProgram(fluid.default_main_program()).with_data_parallel(
        ...     loss_name=loss.name, places=fluid.cpu_places(2))
        >>> out, = exe.run(compiled, feed={"x": np.ones((4, 4), "float32")}, fetch_list=[loss])
        >>> out.shape
        (2,)
    """

    def __init__(self, program_or_graph: Program, build_strategy: BuildStrategy | None = None):
        if not isinstance(program_or_graph, Program):
            raise TypeError("CompiledProgram takes a Program, got %r" % type(program_or_graph).__name__)
        self._program = program_or_graph
        self._build_strategy = build_strategy
        self._exec_strategy: ExecutionStrategy | None = None
        self._is_data_parallel = False
        self._loss_name: Any = None
        self._places: list[Any] | None = None
        self._share_vars_from: CompiledProgram | None = None
        self._runner = None
        self._compiled_with = None
        self._run_program = None
        self._resolved = None
        self._is_inference = False     # Paddle's flag: _with_inference_optimize was called
        self._infer_config = None
        self._predictor = None

    def with_data_parallel(self, loss_name: str | None = None, build_strategy: BuildStrategy | None = None,
                           exec_strategy: ExecutionStrategy | None = None,
                           share_vars_from: CompiledProgram | None = None,
                           places: Sequence[Any] | None = None) -> CompiledProgram:
        """Run the program data-parallel: every place gets a slice of each batch, gradients are all-reduced
        across the places (and across ``build_strategy.num_trainers`` processes), every place applies the
        same update. Returns this CompiledProgram, for ``exe.run(compiled, feed=..., fetch_list=...)``.

        Args:
            loss_name: the loss variable's name (required when the program has backward ops): its gradient
                is scaled by 1 / (places x trainers) under the default gradient scale strategy.
            build_strategy: BuildStrategy (``num_trainers`` / ``trainer_id`` / ``trainers_endpoints`` for
                several processes, ``gradient_scale_strategy``, ``debug_graphviz_path``: a DOT picture of the
                graph at ``<path>_multi_devices_graph``); other fields are accepted and change nothing.
            exec_strategy: accepted for Paddle's signature.
            share_vars_from: another data-parallel CompiledProgram whose per-place scopes this one uses (a test
                program beside its training program); it must have run first.
            places: the places (default: every CUDA device under CUDAPlace, else ``cpu_places()``).

        A batch is split along its first dimension; each place needs at least one sample. Fetched values
        are merged over the places (concatenated, or one value per place for scalars) unless
        ``return_merged=False`` is given to ``Executor.run``.
        """
        if self._is_data_parallel:
            raise RuntimeError("with_data_parallel can be called only once on a CompiledProgram")
        has_backward = any(int(op.attr(OP_ROLE_ATTR) or 0) & OpRole.Backward for op in self._program.global_block().ops)
        if has_backward and not loss_name:
            raise ValueError("with_data_parallel: loss_name is required for a program with backward ops")
        if share_vars_from is not None:
            if not isinstance(share_vars_from, CompiledProgram) or not share_vars_from._is_data_parallel:
                raise ValueError("share_vars_from must be a data-parallel CompiledProgram")
        self._is_data_parallel = True
        self._loss_name = getattr(loss_name, "name", loss_name)
        self._build_strategy = build_strategy or self._build_strategy or BuildStrategy()
        self._exec_strategy = exec_strategy or ExecutionStrategy()
        self._share_vars_from = share_vars_from
        if places is not None and not isinstance(places, (list, tuple)):
            places = [places]           # one place, as Paddle takes it
        self._places = list(places) if places is not None else None
        return self

    def _with_inference_optimize(self, config):
        """Run this program's saved model through the native inference API: ``config`` is a
        NativeConfig or AnalysisConfig naming the model; ``exe.run(compiled, feed=[PaddleTensor, ...])``
        then returns the predictor's PaddleTensors (a dict feed is matched to the inputs by name).
        Returns self."""
        if self._is_data_parallel:
            raise ValueError("Cannot compile the program with inference optimization: it is already "
                             "compiled for data parallel")
        if self._is_inference:
            raise ValueError("The program is already compiled with inference optimization")
        if not hasattr(config, "_create_predictor"):
            raise TypeError("_with_inference_optimize takes a NativeConfig or an AnalysisConfig, got %r"
                            % type(config).__name__)
        self._is_inference = True
        self._infer_config = config
        self._predictor = None
        return self

    def _run_inference(self, feed):
        if self._predictor is None:
            self._predictor = self._infer_config._create_predictor()
        if isinstance(feed, dict):
            return self._predictor._run_named(feed)
        return self._predictor.run(list(feed))

    def _program_for_run(self, executor, scope):
        """The program this CompiledProgram runs: the strategies are read once, here (see
        ``strategy_fields``), and with gradient merge on, a merged copy of the program whose new
        state is filled in ``scope`` the first time."""
        if self._run_program is None:
            from .strategy_fields import resolve
            self._resolved = resolve(self._build_strategy, self._exec_strategy)
            self._run_program = self._program
            if self._resolved.merge_k > 1:
                from ..passes.gradient_merge import apply_gradient_merge, init_program_for
                merged = apply_gradient_merge(self._program.clone(), Program(), self._resolved.merge_k,
                                              self._resolved.merge_avg)
                init = init_program_for(merged, lambda n: scope._find_value(n) is not None)
                if init.global_block().ops:
                    executor.run(init, scope=scope)
                self._run_program = merged
        return self._run_program

    def _run_on(self, executor, feed, fetch_list, scope, return_numpy, return_merged):
        if self._is_inference:
            return self._run_inference(feed)
        scope = scope if scope is not None else global_scope()
        program = self._program_for_run(executor, scope)
        if self._resolved.dry_run:      # as Paddle's dry run: nothing runs, each fetch is an empty array
            return [np.zeros((0,), "float32") for _ in _as_fetch_names(fetch_list)]
        out = None
        for _ in range(self._resolved.iterations):      # ExecutionStrategy.num_iteration_per_run
            out = self._run_once(executor, program, feed, fetch_list, scope, return_numpy, return_merged)
        return out

    def _run_once(self, executor, program, feed, fetch_list, scope, return_numpy, return_merged):
        if not self._is_data_parallel:
            return executor.run(program, feed=feed, fetch_list=fetch_list, scope=scope, return_numpy=return_numpy)
        key = (id(scope), executor.place)
        if self._compiled_with is None:
            if self._share_vars_from is not None:
                if self._share_vars_from._runner is None:
                    raise ValueError("share_vars_from: the CompiledProgram it names has not run yet")
            self._compiled_with = key
            self._runner = _DataParallelRunner(self, executor, scope)
        elif self._compiled_with != key:
            raise ValueError("Cannot compile program with different scope/place: a CompiledProgram runs with "
                             "the scope and place of its first run")
        return self._runner.run(feed, _as_fetch_names(fetch_list), return_numpy, return_merged)


_LOCAL_RINGS = itertools.count(1 << 20)   # ring ids of the runners' thread rings (clear of users' ids)


class _DataParallelRunner:
    """Every place runs the whole program in its own thread and scope; the gradients are all-reduced
    by ``c_allreduce_sum`` ops on the communicators of the collective mode: a ring of the places'
    threads (``c_comm_init_all``'s kind), and across processes ring 0 (from ``gen_nccl_id``). With
    several places and several processes, place 0 all-reduces across processes and broadcasts to its
    siblings. ``fuse_all_reduce_ops`` (Paddle's default) puts the dense gradients into one buffer
    (``coalesce_tensor``) reduced at once; else each gradient is reduced right after the op that
    produces it."""

    def __init__(self, compiled, executor, scope):
        prog = compiled._run_program     # set by _program_for_run before the runner is made
        bs = compiled._build_strategy
        place = executor.place
        places = compiled._places
        if places is None:
            places = cuda_places() if isinstance(place, CUDAPlace) else cpu_places()
        self.places = places
        self.nplaces = len(places)
        self.num_trainers = int(bs.num_trainers or 1)
        self.trainer_id = int(bs.trainer_id or 0)
        if self.num_trainers > 1:
            eps = bs.trainers_endpoints or prog._trainers_endpoints
            if eps and len(eps) != self.num_trainers:
                raise ValueError("BuildStrategy.num_trainers is %d but the program lists %d trainer endpoints"
                                 % (self.num_trainers, len(eps)))
        self.loss_name = compiled._loss_name
        self.local_ring = next(_LOCAL_RINGS) if self.nplaces > 1 else None
        fuse = bool(getattr(bs, "fuse_all_reduce_ops", True))
        self.programs = [self._place_program(prog, compiled, i, fuse) for i in range(self.nplaces)]
        if bs.debug_graphviz_path:  # as Paddle: the DOT text at <path>_multi_devices_graph
            from ..viz.debugger import data_parallel_graph
            data_parallel_graph(self.programs, places, self.num_trainers).save(
                bs.debug_graphviz_path + "_multi_devices_graph")
        shared = compiled._share_vars_from._runner if compiled._share_vars_from is not None else None
        if shared is not None and shared.nplaces != self.nplaces:
            raise ValueError("share_vars_from: the shared CompiledProgram runs on %d places, this one on %d"
                             % (shared.nplaces, self.nplaces))
        # sharing (a test program beside its training program): the same per-place scopes, so every
        # place sees the current parameters
        self.scopes = list(shared.scopes) if shared is not None else \
            [scope] + [Scope() for _ in range(self.nplaces - 1)]
        self.executors = [Executor(p) for p in places]
        # all places run at once: their all-reduces wait for each other
        self.pool = ThreadPoolExecutor(max_workers=self.nplaces) if self.nplaces > 1 else None
        self.comm = None
        if self.num_trainers > 1:
            comms = init_comms_from_nccl_id(scope, places[0], self.num_trainers, self.trainer_id,
                                            max(1, prog._nccl_comm_num or 1))
            self.comm = comms[0] if isinstance(comms, (list, tuple)) else comms
        if self.local_ring is not None:
            self._make_local_ring()
            weakref.finalize(self, collective_registry.destroy, self.local_ring)
        if shared is None:
            self._broadcast_persistables(prog, scope)

    # ------------------------------------------------------------ the per-place programs
    def _place_program(self, prog, compiled, i, fuse):
        """``prog`` for place ``i``: the collective mode's GradAllReduce pass
        (``transpiler.collective.allreduce_gradients``) with the loss gradient scaled by
        1/(places x trainers) and the gradients reduced over this runner's rings."""
        p = prog.clone()
        if getattr(compiled._build_strategy, "sync_batch_norm", False):
            from ..passes.sync_batch_norm import convert_sync_batch_norm
            convert_sync_batch_norm(p)
        total = self.nplaces * self.num_trainers
        scale = compiled._build_strategy.gradient_scale_strategy
        if scale == BuildStrategy.GradientScaleStrategy.Customized:
            raise ValueError("BuildStrategy.gradient_scale_strategy Customized is not supported: use "
                             "CoeffNumDevice (the mean over all devices) or One (their sum)")
        if scale == BuildStrategy.GradientScaleStrategy.One:
            total = 1          # every device's loss gradient is 1: gradients are summed, not averaged
        reduce_ops = self._reduce_ops(i)
        if reduce_ops or (total > 1 and self.loss_name):
            allreduce_gradients(p.global_block(), 1.0 / total if total > 1 and self.loss_name else None,
                                lambda k: reduce_ops, fuse=fuse)
        p.lint()
        return p

    def _reduce_ops(self, i):
        """(op type, attrs) of the all-reduce of one tensor on place ``i``: over the places' ring,
        then (place 0) over the processes' ring 0 and a broadcast to the siblings."""
        ops = []
        if self.nplaces > 1:
            ops.append(("c_allreduce_sum", {"ring_id": self.local_ring}))
        if self.num_trainers > 1:
            if i == 0:
                ops.append(("c_allreduce_sum", {"ring_id": 0}))
            if self.nplaces > 1:
                ops.append(("c_broadcast", {"ring_id": self.local_ring, "root": 0}))
        return ops

    def _sum_plan(self, i):
        """How place ``i`` sums over every device (``device_sum``, for sync_batch_norm): the
        collectives of its gradients, a broadcast where they have a root."""
        return [("broadcast", a["ring_id"], a["root"]) if "root" in a else ("allreduce", a["ring_id"])
                for _, a in self._reduce_ops(i)]

    # ------------------------------------------------------------ communicators
    def _make_local_ring(self):
        """The ring of this runner's places (threads), made anew after a failure broke it."""
        if isinstance(self.places[0], CUDAPlace):
            from ..distributed.collective.device_ring import gpu_thread_group
            devices = [p.device_id for p in self.places]
            collective_registry.register_group(self.local_ring, gpu_thread_group(self.local_ring, devices), devices)
        elif all(getattr(p, "kind", None) == "standin" for p in self.places):    # reduced on the devices
            from ..distributed.collective.device_ring import standin_thread_group
            collective_registry.register_group(self.local_ring, standin_thread_group(self.nplaces, self.local_ring))
        else:
            collective_registry.register_group(self.local_ring, thread_group(self.nplaces, self.local_ring))
        self._local_broken = False

    def _broadcast_persistables(self, prog, scope):
        """Place 0's persistables (trainer 0's, over several trainers) copied to the other places.
        Those an update op keeps on the host (Adam's beta powers: ``registry.host_scalar_names``)
        stay there on every place, as Paddle 1.8 copies a host tensor to each place's scope."""
        names = sorted(v.name for v in prog.list_vars() if v.persistable and v.type != "RAW")
        on_host = registry.host_scalar_names(prog) if any(p.is_device for p in self.places) else frozenset()
        for name in names:
            value = scope.vals.get(name)
            if value is None:
                continue
            stays = name in on_host and isinstance(value, np.ndarray)
            if self.comm is not None and (isinstance(value, np.ndarray) or is_device_array(value)):
                value = _broadcast_from_rank0(self.comm, value, self.places[0])
                value = to_host(value) if stays else value
                scope.vals[name] = value
            for i in range(1, self.nplaces):
                with self.places[i].device_context():
                    self.scopes[i].vals[name] = value.copy() if stays else copy_to(value, self.places[i])

    # ------------------------------------------------------------ running
    def _run_place(self, i, feed):
        try:
            with collective_registry.thread_rank(i), device_sum.plan(self._sum_plan(i)):
                self.executors[i].run(self.programs[i], feed=feed, scope=self.scopes[i])
        except BaseException as e:
            if self.local_ring is not None:   # wake the siblings waiting in an all-reduce for this place
                self._local_broken = True
                for comm in collective_registry.group_communicators(self.local_ring):
                    fail = getattr(getattr(comm, "group", None), "fail", None)
                    if fail is not None:
                        fail("place %d (%r) failed: %s: %s" % (i, self.places[i], type(e).__name__, e))
            raise

    def _each_place(self, feeds):
        if self.pool is None:
            self._run_place(0, feeds[0])
            return
        futures = [self.pool.submit(self._run_place, i, feeds[i]) for i in range(self.nplaces)]
        errors = []
        for f in futures:
            try:
                f.result()
            except BaseException as e:
                errors.append(e)
        if errors:
            if self._local_broken:
                self._make_local_ring()
            # the root cause first: a sibling's error only says that this place failed
            root = next((e for e in errors if not isinstance(e, (CollectiveError, CollectiveTimeout))), errors[0])
            raise root

    def _is_persistable(self, name):
        v = self.programs[0].global_block()._find_var_recursive(name)
        return v is not None and v.persistable

    def run(self, feed, fetch_names, return_numpy, return_merged):
        if isinstance(feed, dict):
            feeds = split_feed(feed, self.nplaces, self._is_persistable) if self.nplaces > 1 else [feed]
        elif isinstance(feed, (list, tuple)):
            if len(feed) != self.nplaces:
                raise ValueError("a list feed needs one dict per place: got %d dicts for %d places"
                                 % (len(feed), self.nplaces))
            for i, f in enumerate(feed):
                if not isinstance(f, dict):
                    raise TypeError("feed[%d] must be a dict, got %r" % (i, type(f).__name__))
            feeds = list(feed)
        elif feed is None:
            feeds = [{} for _ in range(self.nplaces)]
        else:
            raise TypeError("feed must be a dict or a list of dicts, got %r" % type(feed).__name__)
        self._each_place(feeds)
        values = []     # per place, its values of the fetched variables
        for i in range(self.nplaces):
            row = []
            for name in fetch_names:
                v = self.scopes[i]._find_value(name)
                if v is None:
                    raise ValueError("fetch variable %r has no value on place %d" % (name, i))
                row.append(v.value if isinstance(v, SelectedRows) else v)
            values.append(row)
        if not return_merged:
            return [[as_fetched(np.array(to_host(v), copy=True)) for v in row] for row in values]
        return [self._merged([row[j] for row in values]) for j in range(len(fetch_names))]

    def _merged(self, parts):
        """One fetched variable's values on every place, joined along dim 0 (a scalar counts as [1]) on
        the host. Values of device places are joined on place 0's device first (copied there from the
        others' devices) and read back once: one synchronisation, as a single place's fetch."""
        place = self.places[0]
        if getattr(place, "is_device", False) and all(is_device_array(p) for p in parts):
            xp = place.xp
            with place.device_context():
                joined = xp.concatenate([xp.asarray(p).reshape(-1) if p.ndim == 0 else xp.asarray(p) for p in parts])
            return as_fetched(np.asarray(place.to_host(joined)))
        host = [np.array(to_host(p), copy=True) for p in parts]
        return as_fetched(np.concatenate([p.reshape(1) if p.ndim == 0 else p for p in host], axis=0))


def _broadcast_from_rank0(comm, value, place):
    """Trainer 0's ``value`` on every trainer. NCCL takes device arrays; the CPU backend takes host
    ones, so a value on a device place crosses through the place."""
    if isinstance(value, np.ndarray) or collective_registry.backend_for(place) == "nccl":
        return comm.broadcast(value, 0)
    return to_place(comm.broadcast(to_host(value), 0), place)


__all__ = ["CompiledProgram", "BuildStrategy", "ExecutionStrategy"]
