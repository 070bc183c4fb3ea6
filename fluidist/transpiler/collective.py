"""nccl2 and collective modes: programs that all-reduce instead of talking to parameter servers.

``transpile_nccl2`` only adds ``gen_nccl_id`` to the startup program (the all-reduce happens in
``CompiledProgram.with_data_parallel``); ``transpile_collective`` inserts the communicator set-up,
parameter broadcast and ``c_*`` ops as Paddle's ``transpiler/collective.py`` did (GradAllReduce,
LocalSGD, SingleProcessMultiThread). LocalSGD can average every ``local_sgd_steps`` steps.
"""
from typing import Optional

from ..framework import registry, unique_name
from ..framework.op_role import OP_ROLE_ATTR, OpRole, has_role, is_backward_op, is_loss_grad_op, role_vars
from ..framework.program import Parameter
from .details import parse_endpoints

COLL = OpRole.Collective


def _endpoints(trainers, what="trainers"):
    return parse_endpoints(trainers, what)


def transpile_nccl2(config, trainer_id, trainers, current_endpoint, program, startup):
    if not isinstance(trainer_id, int) or trainer_id < 0:
        raise ValueError("nccl2 mode: trainer_id must be an int >= 0, got %r" % (trainer_id,))
    eps = _endpoints(trainers)
    if current_endpoint not in eps:
        raise ValueError("nccl2 mode: current_endpoint %r is not in trainers %s" % (current_endpoint, eps))
    if trainer_id >= len(eps):
        raise ValueError("nccl2 mode: trainer_id %d out of range for %d trainers" % (trainer_id, len(eps)))
    if config.use_hierarchical_allreduce:
        if config.hierarchical_allreduce_inter_nranks <= 1:     # Paddle: one inner rank per local GPU
            from ..core import get_cuda_device_count
            config.hierarchical_allreduce_inter_nranks = get_cuda_device_count()
        inter = config.hierarchical_allreduce_inter_nranks
        if inter <= 1 or len(eps) % inter or len(eps) <= inter:
            raise ValueError("hierarchical_allreduce_inter_nranks must be > 1, divide the number of trainers (%d) "
                             "and be smaller than it, got %r" % (len(eps), inter))
    program._trainers_endpoints = list(eps)
    program._nccl_comm_num = config.nccl_comm_num
    program._use_hierarchical_allreduce = config.use_hierarchical_allreduce
    program._hierarchical_allreduce_inter_nranks = config.hierarchical_allreduce_inter_nranks
    sb = startup.global_block()
    nccl_id = sb.create_var(name="NCCLID", persistable=True, type="RAW")
    for i in range(1, config.nccl_comm_num):
        sb.create_var(name="NCCLID_%d" % i, persistable=True, type="RAW")
    if config.use_hierarchical_allreduce:
        for i in range(config.nccl_comm_num):
            sb.create_var(name="Hierarchical_inter_NCCLID_%d" % i, persistable=True, type="RAW")
            sb.create_var(name="Hierarchical_exter_NCCLID_%d" % i, persistable=True, type="RAW")
    sb.append_op("gen_nccl_id", inputs={}, outputs={"NCCLID": [nccl_id.name]},
                 attrs={"trainers": list(eps), "trainer_id": trainer_id, "nccl_comm_num": config.nccl_comm_num,
                        "use_hierarchical_allreduce": config.use_hierarchical_allreduce,
                        "hierarchical_allreduce_inter_nranks": config.hierarchical_allreduce_inter_nranks})
    return {"mode": "nccl2", "endpoints": eps, "rank": trainer_id}


def transpile_collective(config, rank, trainers, current_endpoint, program, startup):
    mode = config.collective_mode
    eps = _endpoints(trainers)
    if mode == "single_process_multi_thread":
        t = SingleProcessMultiThread()
    elif mode == "grad_allreduce":
        t = GradAllReduce(config.nccl_comm_num)
    elif mode == "local_sgd":
        t = LocalSGD(config.nccl_comm_num, config.local_sgd_steps)
    else:
        raise ValueError("invalid collective_mode %r: use grad_allreduce, local_sgd or "
                         "single_process_multi_thread" % (mode,))
    t.transpile(startup, program, rank, eps, current_endpoint, config.wait_port)
    return {"mode": "collective", "collective_mode": mode, "endpoints": eps, "rank": rank}


class Collective:
    """Base: communicator set-up and parameter broadcast in startup; subclasses rewrite main."""

    mode: Optional[str] = None

    def __init__(self, nrings):
        self.nrings = nrings
        self.endpoints = None
        self.current_endpoint = None
        self.nranks = None
        self.rank = None
        self.startup_program = None
        self.main_program = None

    def transpile(self, startup_program, main_program, rank, endpoints, current_endpoint, wait_port):
        if isinstance(endpoints, str):
            endpoints = endpoints.split(",")
        self.endpoints = list(endpoints)
        self.current_endpoint = current_endpoint
        self.nranks = len(self.endpoints)
        if self.nranks == 1 and self.mode != "single_process_multi_thread":
            raise ValueError("the number of endpoints must > 1 (invalid trainer number in distributed: 1)")
        if not isinstance(rank, int) or rank < 0:
            raise ValueError("rank must be an int >= 0, got %r" % (rank,))
        if current_endpoint not in self.endpoints:
            raise ValueError("current_endpoint %r is not in the trainer endpoints %s"
                             % (current_endpoint, self.endpoints))
        self.rank = rank
        self.wait_port = wait_port
        self.startup_program = startup_program
        self.main_program = main_program
        startup_program._origin_program = startup_program.clone()
        main_program._origin_program = main_program.clone()
        self._transpile_startup_program()
        self._transpile_main_program()

    def _transpile_startup_program(self):
        for ring_id in range(self.nrings):
            self._init_communicator(ring_id)
        self._broadcast_params()

    def _init_communicator(self, ring_id):
        others = [e for e in self.endpoints if e != self.current_endpoint]
        block = self.startup_program.global_block()
        nccl_id = block.create_var(name=unique_name.generate("nccl_id"), persistable=True, type="RAW")
        block.append_op("c_gen_nccl_id", inputs={}, outputs={"Out": [nccl_id.name]},
                        attrs={"rank": self.rank, "endpoint": self.current_endpoint, "other_endpoints": others,
                               "ring_id": ring_id, OP_ROLE_ATTR: COLL})
        block.append_op("c_comm_init", inputs={"X": [nccl_id.name]}, outputs={},
                        attrs={"nranks": self.nranks, "rank": self.rank, "ring_id": ring_id, OP_ROLE_ATTR: COLL})

    def _params(self, block):
        return [v for v in block.vars.values() if isinstance(v, Parameter) and not v.is_distributed]

    def _broadcast_params(self):
        block = self.startup_program.global_block()
        ring_id = -1
        last = None
        for p in self._params(block):
            ring_id = (ring_id + 1) % self.nrings
            block.append_op("c_broadcast", inputs={"X": [p.name]}, outputs={"Out": [p.name]},
                            attrs={"ring_id": ring_id, "root": 0, OP_ROLE_ATTR: COLL})
            last = p.name
        if last is not None:
            for ring_id in range(self.nrings):
                block.append_op("c_sync_comm_stream", inputs={"X": [last]}, outputs={"Out": [last]},
                                attrs={"ring_id": ring_id, OP_ROLE_ATTR: COLL})

    def _transpile_main_program(self):
        raise NotImplementedError


def _is_update_op(op):
    """A parameter update op, as the registry says (its ``UpdateRule``)."""
    return registry.update_rule(op) is not None and bool(op.input("Param"))


def allreduce_gradients(block, loss_scale, reduce_ops, fuse=False, sync_rings=0):
    """The GradAllReduce pass, in place over ``block`` (the collective mode's and
    ``CompiledProgram.with_data_parallel``'s): the loss gradient scaled by ``loss_scale`` (None: left
    alone), then each parameter gradient (named by a backward op's ``op_role_var``; a distributed
    table's is left to the pservers, and one the program all-reduces itself is left to it) reduced
    right after that op by the ops ``reduce_ops(k)`` gives
    for the ``k``-th gradient reduced (last gradient first): ``[(op type, attrs)]``, each reading and
    writing the gradient in place.

    ``fuse`` (``fuse_all_reduce_ops``): the dense gradients, when several share one dtype, are
    coalesced into one buffer (``coalesce_tensor``) after the last of those ops and reduced at once
    by ``reduce_ops(0)``; row-sparse ones are reduced each alone. ``sync_rings`` > 0 (Paddle's
    layout): a ``c_sync_calc_stream`` before the reductions after each op, and a
    ``c_sync_comm_stream`` for each of rings ``0 .. sync_rings - 1`` before the first optimize op."""
    if loss_scale is not None:
        for op in list(block.ops):
            if is_loss_grad_op(op):
                g = op.output_arg_names[0]
                block.insert_after(op, "scale", inputs={"X": [g]}, outputs={"Out": [g]},
                                   attrs={"scale": loss_scale, OP_ROLE_ATTR: OpRole.Backward})
    # a gradient the program all-reduces itself (``layers.collective._allreduce``: Paddle's "reduce
    # layer") is not reduced twice; the loss scale then makes its sum the mean
    reduced = {n for op in block.ops if registry.fact(op, "comm_stream") == "queue" for n in op.input("X")}
    producers = []     # (backward op, [its gradients]), last op first
    for op in reversed(block.ops):
        if is_backward_op(op):
            grads = [g for p, g in role_vars(op) if not _is_distributed(block, p) and g not in reduced]
            if grads:
                producers.append((op, grads))
    if not producers:
        return
    fused = _fusable(block, producers) if fuse else []
    role = {OP_ROLE_ATTR: OpRole.Backward | COLL}
    sync = sync_rings > 0
    with block.edits() as edits:
        if fused:
            last = next(op for op, grads in producers if set(grads) & set(fused))
            buf = block.create_var(name=unique_name.generate("@FUSED_GRAD@"), dtype=block.var(fused[0]).dtype,
                                   stop_gradient=True)
            anchor = edits.insert_after(last, "coalesce_tensor", inputs={"Input": fused},
                                        outputs={"Output": fused, "FusedOutput": [buf.name]},
                                        attrs=dict(role, copy_data=True, dtype=buf.dtype))
            _append_reduction(edits, anchor, buf.name, reduce_ops(0), role, sync)
        k = 0
        for op, grads in producers:
            anchor = op
            for g in grads:
                if g in fused:
                    continue
                anchor = _append_reduction(edits, anchor, g, reduce_ops(k), role, sync and anchor is op)
                k += 1
    if sync:
        _sync_comm_before_updates(block, producers[-1][1][-1], sync_rings)


def _is_distributed(block, param):
    v = block._find_var_recursive(param)
    return v is not None and getattr(v, "is_distributed", False)


def _fusable(block, producers):
    """The dense gradients to coalesce into one buffer: all of them when there are several, of one
    dtype; else none."""
    from ..passes.regularizer import is_selected_rows_grad
    grads = [g for _, gs in reversed(producers) for g in gs]
    dense = [g for g in grads if not is_selected_rows_grad(block.var(g))]
    if len(dense) > 1 and len({block.var(g).dtype for g in dense}) == 1:
        return dense
    return []


def _append_reduction(edits, anchor, name, ops, role, sync_calc):
    """``ops`` on ``name`` in place after ``anchor`` (a ``c_sync_calc_stream`` first if asked);
    returns the last op inserted."""
    if sync_calc:
        anchor = edits.insert_after(anchor, "c_sync_calc_stream", inputs={"X": [name]}, outputs={"Out": [name]},
                                    attrs=dict(role))
    for op_type, attrs in ops:
        anchor = edits.insert_after(anchor, op_type, inputs={"X": [name]}, outputs={"Out": [name]},
                                    attrs=dict(role, **attrs))
    return anchor


def _sync_comm_before_updates(block, grad, rings):
    """A ``c_sync_comm_stream`` on each of ``rings`` rings, before the first optimize op."""
    first_opt = next((op for op in block.ops if has_role(op, OpRole.Optimize)), None)
    if first_opt is None:
        return
    with block.edits() as edits:
        for ring_id in range(rings):
            edits.insert_before(first_opt, "c_sync_comm_stream", inputs={"X": [grad]}, outputs={"Out": [grad]},
                                attrs={"ring_id": ring_id, OP_ROLE_ATTR: OpRole.Backward | COLL})


class GradAllReduce(Collective):
    mode = "grad_allreduce"

    def _transpile_main_program(self):
        allreduce_gradients(self.main_program.global_block(), 1.0 / self.nranks, self._reduce_ops,
                            sync_rings=self.nrings)

    def _reduce_ops(self, k):
        """The ``k``-th gradient (last first) is all-reduced on ring ``k mod nrings``."""
        return [("c_allreduce_sum", {"ring_id": k % self.nrings})]


class LocalSGD(Collective):
    """Local updates; parameters averaged over ranks every ``steps`` steps (Paddle: every step)."""

    mode = "local_sgd"
    STEP_COUNTER = "@LOCAL_SGD_STEP@"

    def __init__(self, nrings, steps=1):
        super().__init__(nrings)
        if steps < 1:
            raise ValueError("local_sgd_steps must be >= 1, got %r" % (steps,))
        self.steps = steps

    @staticmethod
    def snapshot_name(param):
        return param + "@SNAPSHOT"

    def _transpile_startup_program(self):
        super()._transpile_startup_program()
        block = self.startup_program.global_block()
        for p in self._params(block):
            snap = block.create_var(name=self.snapshot_name(p.name), shape=p.shape, dtype=p.dtype,
                                    persistable=True, stop_gradient=True)
            block.append_op("assign", inputs={"X": [p.name]}, outputs={"Out": [snap.name]},
                            attrs={OP_ROLE_ATTR: OpRole.Optimize})
        if self.steps > 1:
            block.create_var(name=self.STEP_COUNTER, shape=[1], dtype="int64", persistable=True)
            block.append_op("fill_constant", outputs={"Out": [self.STEP_COUNTER]},
                            attrs={"shape": [1], "dtype": "int64", "value": 0.0, OP_ROLE_ATTR: OpRole.Optimize})

    def _transpile_main_program(self):
        block = self.main_program.global_block()
        updated = []
        for op in list(reversed(block.ops)):
            if not _is_update_op(op):
                continue
            param = block._find_var_recursive(op.input("Param")[0])
            if param is None or getattr(param, "is_distributed", False):
                continue
            block.create_var(name=self.snapshot_name(param.name), shape=param.shape, dtype=param.dtype,
                             persistable=True, stop_gradient=True)
            updated.append(param)
        updated.reverse()
        if not updated:
            return
        if self.steps == 1:
            self._append_averaging(block, block, updated, in_place_after_updates=True)
            return
        # every k steps: counter += 1; if counter % k == 0: average
        prog = self.main_program
        gb = block
        gb.create_var(name=self.STEP_COUNTER, shape=[1], dtype="int64", persistable=True)
        k = gb.create_var(name=unique_name.generate("local_sgd_k"), shape=[1], dtype="int64")
        zero = gb.create_var(name=unique_name.generate("local_sgd_zero"), shape=[1], dtype="int64")
        rem = gb.create_var(name=unique_name.generate("local_sgd_rem"), shape=[1], dtype="int64")
        cond = gb.create_var(name=unique_name.generate("local_sgd_cond"), shape=[1], dtype="bool")
        opt = {OP_ROLE_ATTR: OpRole.Optimize}
        gb.append_op("increment", inputs={"X": [self.STEP_COUNTER]}, outputs={"Out": [self.STEP_COUNTER]},
                     attrs=dict(opt, step=1.0))
        gb.append_op("fill_constant", outputs={"Out": [k.name]}, attrs=dict(opt, shape=[1], dtype="int64",
                                                                           value=float(self.steps)))
        gb.append_op("fill_constant", outputs={"Out": [zero.name]}, attrs=dict(opt, shape=[1], dtype="int64",
                                                                              value=0.0))
        gb.append_op("elementwise_mod", inputs={"X": [self.STEP_COUNTER], "Y": [k.name]}, outputs={"Out": [rem.name]},
                     attrs=opt)
        gb.append_op("equal", inputs={"X": [rem.name], "Y": [zero.name]}, outputs={"Out": [cond.name]}, attrs=opt)
        sub = prog._create_block(gb.idx)
        self._append_averaging(sub, gb, updated, in_place_after_updates=False)
        prog._rollback()
        scope_var = gb.create_var(name=unique_name.generate("local_sgd_scope"), type="STEP_SCOPES")
        gb.append_op("conditional_block", inputs={"Cond": [cond.name], "Input": []},
                     outputs={"Out": [p.name for p in updated], "Scope": [scope_var.name]},
                     attrs=dict(opt, sub_block=sub, is_scalar_condition=True))

    def _append_averaging(self, target, gb, params, in_place_after_updates):
        """param <- snapshot - allreduce_mean(snapshot - param); snapshot <- param."""
        ring_id = -1
        opt = OpRole.Optimize
        if in_place_after_updates:
            # Paddle's placement: the delta and its all-reduce go right after each update op
            with gb.edits() as edits:
                for p in reversed(params):
                    upd = [op for op in gb.writers_of(p.name) if _is_update_op(op)][-1]
                    snap = self.snapshot_name(p.name)
                    ring_id = (ring_id + 1) % self.nrings
                    a = edits.insert_after(upd, "elementwise_sub", inputs={"X": [snap], "Y": [p.name]},
                                           outputs={"Out": [p.name]}, attrs={OP_ROLE_ATTR: opt})
                    a = edits.insert_after(a, "c_sync_calc_stream", inputs={"X": [p.name]}, outputs={"Out": [p.name]},
                                           attrs={OP_ROLE_ATTR: opt | COLL})
                    edits.insert_after(a, "c_allreduce_sum", inputs={"X": [p.name]}, outputs={"Out": [p.name]},
                                       attrs={"ring_id": ring_id, OP_ROLE_ATTR: opt | COLL})
        else:
            for p in params:
                snap = self.snapshot_name(p.name)
                ring_id = (ring_id + 1) % self.nrings
                target.append_op("elementwise_sub", inputs={"X": [snap], "Y": [p.name]}, outputs={"Out": [p.name]},
                                 attrs={OP_ROLE_ATTR: opt})
                target.append_op("c_sync_calc_stream", inputs={"X": [p.name]}, outputs={"Out": [p.name]},
                                 attrs={OP_ROLE_ATTR: opt | COLL})
                target.append_op("c_allreduce_sum", inputs={"X": [p.name]}, outputs={"Out": [p.name]},
                                 attrs={"ring_id": ring_id, OP_ROLE_ATTR: opt | COLL})
        last = params[-1].name
        for ring_id in range(self.nrings):
            target.append_op("c_sync_comm_stream", inputs={"X": [last]}, outputs={"Out": [last]},
                             attrs={"ring_id": ring_id, OP_ROLE_ATTR: opt | COLL})
        for p in params:
            snap = self.snapshot_name(p.name)
            target.append_op("scale", inputs={"X": [p.name]}, outputs={"Out": [p.name]},
                             attrs={"scale": 1.0 / self.nranks, OP_ROLE_ATTR: opt})
            target.append_op("elementwise_sub", inputs={"X": [snap], "Y": [p.name]}, outputs={"Out": [p.name]},
                             attrs={OP_ROLE_ATTR: opt})
            target.append_op("assign", inputs={"X": [p.name]}, outputs={"Out": [snap]}, attrs={OP_ROLE_ATTR: opt})


class SingleProcessMultiThread(GradAllReduce):
    mode = "single_process_multi_thread"

    def __init__(self):
        super().__init__(1)

    def _transpile_startup_program(self):
        block = self.startup_program.global_block()
        block.append_op("c_comm_init_all", inputs={}, outputs={}, attrs={"ring_id": 0, OP_ROLE_ATTR: COLL})
