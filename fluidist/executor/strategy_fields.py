"""What ``CompiledProgram`` does with each ``BuildStrategy`` / ``ExecutionStrategy`` field.

Every field of Paddle 1.8's strategies exists. A field fluidist honours is read by
:func:`resolve` (the one place that reads the new ones) or by the data-parallel runner; a field
that changes nothing in fluidist (graph fusions, memory reuse, thread pools: Paddle's own
speed and memory knobs, which never change the numbers) gives one warning per field and process
when it is set to something other than Paddle's default, saying so. Fields that would change the
results and cannot be honoured raise.

==========================================  ===================================================
honoured                                    ``reduce_strategy`` (AllReduce; Reduce gives the same
                                            parameters and warns that it runs as AllReduce),
                                            ``gradient_scale_strategy``, ``num_trainers``,
                                            ``trainer_id``, ``trainers_endpoints``,
                                            ``nccl_comm_num``, ``enable_sequential_execution``
                                            (fluidist always runs ops in order),
                                            ``is_distribution``, ``gradient_merge`` /
                                            ``gradient_merge_configs``, ``num_iteration_per_run``,
                                            ``fuse_all_reduce_ops`` (the dense gradients are
                                            coalesced and all-reduced at once),
                                            ``sync_batch_norm`` (batch_norm ops become
                                            sync_batch_norm: ``fluidist.passes.sync_batch_norm``),
                                            ``ExecutionStrategy._dry_run`` (no op runs)
no effect, warned once                      the rest (see ``NO_EFFECT``)
==========================================  ===================================================
"""
import warnings
from dataclasses import dataclass

# field -> (Paddle's default, why it changes nothing here)
NO_EFFECT_BUILD: dict = {
    "fuse_broadcast_ops": (True, "nothing is broadcast: every place updates its own parameters"),
    "fuse_elewise_add_act_ops": (False, "fluidist runs no graph fusion passes"),
    "fuse_all_optimizer_ops": (False, "fluidist runs no graph fusion passes"),
    "fuse_relu_depthwise_conv": (False, "fluidist runs no graph fusion passes"),
    "fuse_bn_act_ops": (False, "fluidist runs no graph fusion passes"),
    "enable_auto_fusion": (False, "fluidist runs no graph fusion passes"),
    "enable_inplace": (True, "fluidist reuses no memory between variables"),
    "memory_optimize": (None, "fluidist reuses no memory between variables"),
    "cache_runtime_context": (False, "there is no per-op runtime context to cache"),
    "remove_unnecessary_lock": (True, "there are no locks between places to remove"),
    "enable_backward_optimizer_op_deps": (True, "ops run in program order"),
    "use_hierarchical_allreduce": (False, "the all-reduce is flat"),
    "hierarchical_allreduce_inter_nranks": (0, "the all-reduce is flat"),
    "async_mode": (False, "asynchronous training runs through the parameter-server transpiler"),
    "mkldnn_enabled_op_types": (set(), "there are no MKL-DNN kernels"),
}
NO_EFFECT_EXEC = {
    "num_threads": (0, "each place runs its ops in order in a thread of its own; all places run at once "
                       "(their all-reduces wait for each other)"),
    "num_iteration_per_drop_scope": (100, "per-place scopes keep their values; nothing is dropped"),
    "use_thread_barrier": (False, "a half-async trainer waits at its program's send_barrier op, not in the executor"),
    "allow_op_delay": (False, "ops run in program order"),
    "use_experimental_executor": (True, "there is one executor"),
}

_warned: set = set()


def _warn_once(owner, field, value, why):
    key = (owner, field)
    if key in _warned:
        return
    _warned.add(key)
    warnings.warn("%s.%s = %r has no effect in fluidist: %s" % (owner, field, value, why), stacklevel=4)


def _differs(value, default):
    if isinstance(default, set):
        return bool(value)
    return value != default


@dataclass
class Resolved:
    merge_k: int = 1
    merge_avg: bool = True
    iterations: int = 1
    dry_run: bool = False   # ExecutionStrategy._dry_run: the program is prepared, no op runs


def resolve(build_strategy, exec_strategy):
    """Check and read the strategies once (warning for fields without effect)."""
    out = Resolved()
    if build_strategy is not None:
        for field, (default, why) in NO_EFFECT_BUILD.items():
            value = getattr(build_strategy, field, default)
            if _differs(value, default):
                _warn_once("BuildStrategy", field, value, why)
        if build_strategy.reduce_strategy == 1:
            _warn_once("BuildStrategy", "reduce_strategy", "Reduce",
                       "gradients are all-reduced and every place updates (the same parameters as Reduce)")
        if getattr(build_strategy, "gradient_merge", False):
            cfg = dict(getattr(build_strategy, "gradient_merge_configs", None) or {})
            unknown = set(cfg) - {"k_steps", "avg"}
            if unknown:
                raise ValueError("gradient_merge_configs: unknown keys %s (known: k_steps, avg)" % sorted(unknown))
            k = cfg.get("k_steps", 1)
            if not isinstance(k, int) or isinstance(k, bool) or k < 1:
                raise ValueError("gradient_merge_configs['k_steps'] must be an int >= 1, got %r" % (k,))
            out.merge_k, out.merge_avg = k, bool(cfg.get("avg", True))
    if exec_strategy is not None:
        for field, (default, why) in NO_EFFECT_EXEC.items():
            value = getattr(exec_strategy, field, default)
            if _differs(value, default):
                _warn_once("ExecutionStrategy", field, value, why)
        n = exec_strategy.num_iteration_per_run
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ValueError("ExecutionStrategy.num_iteration_per_run must be an int >= 1, got %r" % (n,))
        out.iterations = n
        out.dry_run = bool(getattr(exec_strategy, "_dry_run", False))
    return out


class Pass:
    """A pass of ``BuildStrategy._finalize_strategy_and_create_passes()``; only
    ``multi_batch_merge_pass`` (``set("num_repeats", k)``: gradient merge) does something."""

    def __init__(self, strategy, name):
        self._strategy = strategy
        self.name = name

    def set(self, key, value):
        if self.name == "multi_batch_merge_pass" and key == "num_repeats":
            self._strategy.gradient_merge = int(value) > 1
            self._strategy.gradient_merge_configs = {"k_steps": int(value), "avg": True}
            return self
        raise NotImplementedError("pass %r attr %r is not supported by fluidist" % (self.name, key))

    def type(self):
        return self.name


class PassBuilder:
    def __init__(self, strategy):
        self._strategy = strategy
        self._passes = []

    def _make(self, name):
        if name != "multi_batch_merge_pass":
            raise NotImplementedError("graph pass %r is not supported by fluidist (only multi_batch_merge_pass, as "
                                      "gradient merge)" % (name,))
        return Pass(self._strategy, name)

    def append_pass(self, name):
        p = self._make(name)
        self._passes.append(p)
        return p

    def insert_pass(self, index, name):
        p = self._make(name)
        self._passes.insert(index, p)
        return p

    def remove_pass(self, index):
        del self._passes[index]

    def all_passes(self):
        return list(self._passes)
