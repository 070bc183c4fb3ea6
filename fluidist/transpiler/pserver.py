"""pserver mode as functions over Programs.

``plan_pserver(...)`` reads the origin programs and decides everything once: which parameters and
gradients are split into which blocks, and which pserver holds each block. ``rewrite_trainer``
applies that plan to the trainer's main and startup programs (in place, as Paddle did);
``build_pserver_program`` and ``build_pserver_startup`` compute a pserver's programs from it.
"""
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np

from collections import defaultdict

from ..framework import registry, unique_name
from ..framework.op_role import (OP_ROLE_ATTR, OP_ROLE_VAR_ATTR, OpRole, is_lr_sched_op, is_optimize_op,
                                 param_grad_pairs, role_vars)
from ..framework.program import Parameter, Program
from .config import DistributedMode
from .dispatcher import RoundRobin
from .slicing import block_shape, orig_varname, slice_variable

RPC = OpRole.RPC
DIST = OpRole.Dist

# What an op is (update rule, whole-tensor, initialiser kind, table lookup) is asked of the registry.


@dataclass
class Block:
    """One block of a parameter or gradient and where it lives."""
    orig: str           # the whole variable's name
    name: str           # name in the trainer program (may carry .block<i> and .trainer_<k>)
    server_name: str    # name on the pserver (no trainer suffix)
    index: int
    rows: int
    row_begin: int
    shape: list
    endpoint: str = ""


@dataclass
class DistributedTable:
    """An ``embedding(is_distributed=True)`` table: row ``i`` lives on pserver ``i % N`` as its row ``i // N``."""
    name: str
    grad: str
    rows: int
    width: int
    dtype: str
    lr: str                  # the learning-rate variable its update uses
    optimizer: str           # the op type the user chose (the pservers apply SGD)

    def shard_rows(self, k, n):
        return len(range(k, self.rows, n))

    def trainer_grad(self, trainer_id, k, sync, trainers):
        if sync and trainers > 1:
            return "%s.trainer_%d.pserver_%d" % (self.grad, trainer_id, k)
        return "%s.pserver_%d" % (self.grad, k)

    def merged_grad(self, k):
        return "%s.pserver_%d" % (self.grad, k)


@dataclass
class PServerPlan:
    endpoints: List[str]
    trainer_id: int
    trainers: int
    sync: bool
    distributed_mode: int
    origin_main: Program
    origin_startup: Program
    params: List[str]                       # parameter names, in optimizer order
    grad_of: Dict[str, str]                 # param -> grad
    param_blocks: Dict[str, List[Block]]
    grad_blocks: Dict[str, List[Block]]     # by grad name
    sparse_grads: set = field(default_factory=set)
    lr_op_indices: List[int] = field(default_factory=list)
    opt_op_indices: List[int] = field(default_factory=list)
    send_dummies: Dict[str, str] = field(default_factory=dict)
    table: Optional["DistributedTable"] = None
    opt_ops_of: Dict[str, List[int]] = field(default_factory=dict)    # param -> its optimize ops (indices)
    accumulators: Dict[str, List[str]] = field(default_factory=dict)  # param -> accumulators shaped like it
    whole: set = field(default_factory=set)   # params kept in one block: their update needs the whole tensor

    def accumulator_name(self, acc, pb, several_blocks_here):
        """The name of accumulator ``acc`` for param block ``pb`` on its pserver: the same name, with a
        block suffix only when two blocks of the parameter live on that pserver."""
        return acc + (".block%d" % pb.index if several_blocks_here else "")

    def blocks_on(self, endpoint):
        """(param block, grad block) pairs held by ``endpoint``, in dispatch order."""
        out = []
        for p in self.params:
            g = self.grad_of[p]
            for pb, gb in zip(self.param_blocks[p], self.grad_blocks[g]):
                if pb.endpoint == endpoint:
                    out.append((pb, gb))
        return out


def optimize_pass(program):
    """(indices of optimize ops, [(param name, grad name)]) found through op_role / op_role_var."""
    ops = program.global_block().ops
    # model averaging (registry fact after_update) stays on the trainer: see finish_trainer
    opt = [i for i, op in enumerate(ops) if is_optimize_op(op) and not registry.fact(op, "after_update")]
    return opt, param_grad_pairs(ops[i] for i in opt)


def _is_table_lookup(op):
    return bool(registry.fact(op, "table_lookup", False))


def find_distributed_table(program, pairs, opt_ops):
    """The one ``embedding(is_distributed=True)`` table of the program, or None."""
    block = program.global_block()
    names = []
    for op in block.ops:
        if _is_table_lookup(op) and op.attr("is_distributed"):
            w = op.input("W")[0]
            if w not in names:
                names.append(w)
    if not names:
        return None
    if len(names) > 1:
        raise ValueError("transpile: only one distributed lookup table is supported, found %s" % names)
    name = names[0]
    grad = dict(pairs).get(name)
    if grad is None:
        raise ValueError("transpile: the distributed table %r has no optimize op" % name)
    if block.var(grad).type != "SELECTED_ROWS":
        raise ValueError("transpile: the distributed table %r needs a row-sparse gradient: build it with "
                         "embedding(..., is_sparse=True, is_distributed=True)" % name)
    update = [op for op in opt_ops if op.input("Param") == [name] and "LearningRate" in op.inputs]
    if not update:
        raise ValueError("transpile: no optimizer op updates the distributed table %r" % name)
    w = block.var(name)
    return DistributedTable(name, grad, int(w.shape[0]), int(w.shape[1]), w.dtype,
                            update[0].input("LearningRate")[0], update[0].type)


def lr_op_indices(program):
    return [i for i, op in enumerate(program.global_block().ops) if is_lr_sched_op(op)]


def plan_pserver(program, startup, trainer_id, endpoints, trainers, sync, config):
    block = program.global_block()
    opt_idx, pairs = optimize_pass(program)
    if not pairs:
        raise ValueError("transpile: the program has no optimize ops (op_role Optimize with op_role_var); "
                         "call optimizer.minimize(loss) before transpiling")
    _refuse_updates_in_sub_blocks(program)
    opt_ops_of = _optimize_ops_by_param(block, opt_idx)
    table = find_distributed_table(program, pairs, [block.ops[i] for i in opt_idx])
    params, grad_of = [], {}
    for p, g in pairs:
        if table is not None and p == table.name:
            continue
        pv = block._find_var_recursive(p)
        if isinstance(pv, Parameter) and not pv.trainable:
            continue
        if p in grad_of:
            continue
        params.append(p)
        grad_of[p] = g
    whole = _params_needing_whole_tensors(block, opt_ops_of, params)
    accumulators = {p: _accumulators(block, opt_ops_of.get(p, ())) for p in params}
    min_block = config.min_block_size
    param_blocks, grad_blocks, sparse = {}, {}, set()
    suffix = ".trainer_%d" % trainer_id if (sync and trainers > 1) else ""
    for p in params:
        g = grad_of[p]
        pv, gv = block.var(p), block.var(g)
        if gv.type == "SELECTED_ROWS":
            sparse.add(g)
        count = len(endpoints) if config.slice_var_up and p not in whole else 1
        pbs = slice_variable([pv], count, min_block)
        gbs = slice_variable([_shape_like(gv, pv)], count, min_block)
        if len(pbs) != len(gbs):
            raise ValueError("parameter %r and its gradient %r slice differently" % (p, g))
        if len(pbs) == 1:
            param_blocks[p] = [Block(p, p, p, 0, pbs[0].rows, 0, list(pv.shape))]
            grad_blocks[g] = [Block(g, g + suffix, g, 0, gbs[0].rows, 0, list(pv.shape))]
        else:
            param_blocks[p] = [Block(p, "%s.block%d" % (p, b.index), "%s.block%d" % (p, b.index), b.index,
                                     b.rows, b.row_begin, block_shape(pv, b)) for b in pbs]
            grad_blocks[g] = [Block(g, "%s.block%d%s" % (g, b.index, suffix), "%s.block%d" % (g, b.index),
                                    b.index, b.rows, b.row_begin, block_shape(pv, b)) for b in gbs]
    # dispatch: gradients in optimizer order (shuffled when not slicing), param block k with grad block k
    dispatcher = (config.split_method or RoundRobin)(endpoints)
    order = [grad_of[p] for p in params]
    if not config.slice_var_up:
        np.random.RandomState(program.random_seed).shuffle(order)
    for g in order:
        eps = dispatcher.dispatch([b.name for b in grad_blocks[g]])
        for b, ep in zip(grad_blocks[g], eps):
            b.endpoint = ep
    for p in params:
        for pb, gb in zip(param_blocks[p], grad_blocks[grad_of[p]]):
            pb.endpoint = gb.endpoint
    return PServerPlan(endpoints=list(endpoints), trainer_id=trainer_id, trainers=trainers, sync=sync,
                       distributed_mode=config.distributed_mode() if sync == config.sync_mode else
                       (DistributedMode.SYNC if sync else DistributedMode.ASYNC),
                       origin_main=program.clone(), origin_startup=startup.clone(), params=params,
                       grad_of=grad_of, param_blocks=param_blocks, grad_blocks=grad_blocks, sparse_grads=sparse,
                       lr_op_indices=lr_op_indices(program), opt_op_indices=opt_idx, table=table,
                       opt_ops_of=opt_ops_of, accumulators=accumulators, whole=whole)


def _refuse_updates_in_sub_blocks(program):
    """Parameter updates inside a sub-block (gradient merge runs them under a conditional_block)
    cannot be moved to the pservers: refused, rather than a trainer that never updates."""
    for b in program.blocks[1:]:
        for op in b.ops:
            if registry.update_rule(op) is not None:
                raise ValueError(
                    "transpile: op %r updating %r runs inside block %d (a conditional_block: gradient merge "
                    "does this): pserver mode runs updates on the pservers and cannot run them conditionally. "
                    "Use gradient merge with the collective mode or CompiledProgram.with_data_parallel"
                    % (op.type, (op.input("Param") or ["?"])[0], b.idx))


def _optimize_ops_by_param(block, opt_idx):
    """{param: [indices of its optimize ops]} (an op belongs to the first param of its op_role_var).
    An optimize op of one parameter that reads what the optimize ops of another computed (a clip by
    the global norm of all gradients) is refused: each pserver updates only the parameters it holds."""
    ops = block.ops
    by_param, writer_param = defaultdict(list), {}
    for i in opt_idx:
        op = ops[i]
        pairs = role_vars(op)
        p = pairs[0][0] if pairs else None
        by_param[p].append(i)
        for n in op.output_arg_names:
            writer_param.setdefault(n, p)
    for p, idx in by_param.items():
        if p is None:
            continue
        for i in idx:
            op = ops[i]
            for n in op.input_arg_names:
                other = writer_param.get(n)
                if other is not None and other != p:
                    raise ValueError(
                        "transpile: op %r updating %r reads %r, which the optimize ops of %r compute: in pserver "
                        "mode each parameter is updated on the pserver that holds it, so an update may not depend "
                        "on other parameters (gradient clipping by the global norm does). Clip by value or by "
                        "norm per parameter (GradientClipByNorm), or use the collective mode" % (op.type, p, n, other))
    return dict(by_param)


def _params_needing_whole_tensors(block, opt_ops_of, params):
    """Parameters whose optimize ops read a whole tensor at once (a norm-based update such as LAMB or
    LARS, a clip by norm): they are kept in one block on one pserver, so the update sees all of it."""
    whole = set()
    for p in params:
        for i in opt_ops_of.get(p, ()):
            op = block.ops[i]
            rule = registry.update_rule(op)
            if (rule is not None and rule.whole_param) or registry.fact(op, "whole_tensor", False):
                whole.add(p)
                break
    return whole


def _accumulators(block, indices):
    """The accumulators shaped like the parameter that its update ops read (the registry's update rules)."""
    out = []
    for i in indices:
        op = block.ops[i]
        rule = registry.update_rule(op)
        if rule is None:
            continue
        for slot in rule.param_like:
            for n in op.input(slot):
                if n not in out:
                    out.append(n)
    return out


class _ShapeOf:
    def __init__(self, name, shape):
        self.name, self.shape = name, shape


def _shape_like(grad_var, param_var):
    # a row-sparse gradient is declared with the table's shape
    return _ShapeOf(grad_var.name, list(param_var.shape))


def _ctrl_var(block):
    return block.create_var(name=unique_name.generate("@CTRL_DEP@send"), type="RAW")


# ---------------------------------------------------------------------------------------- trainer
def rewrite_trainer(plan, program, startup):
    """Insert split/send/send_barrier/recv/fetch_barrier/concat into ``program`` and recv/concat
    into ``startup`` (in place). Optimize and LR ops are removed later by ``finish_trainer``."""
    block = program.global_block()
    tid = plan.trainer_id
    # create block vars / rename single-block grads
    for p in plan.params:
        g = plan.grad_of[p]
        gv = block.var(g)
        gbs = plan.grad_blocks[g]
        if len(gbs) == 1:
            if gbs[0].name != g:
                block._rename_var(g, gbs[0].name)
        else:
            for b in gbs:
                block.create_var(name=b.name, shape=b.shape, dtype=gv.dtype, type=gv.type)
            pv = block.var(p)
            for b in plan.param_blocks[p]:
                block.create_var(name=b.name, shape=b.shape, dtype=pv.dtype, type=pv.type)
    send_dummies = []
    order = [plan.grad_of[p] for p in plan.params]
    param_of = {g: p for p, g in plan.grad_of.items()}
    with block.edits() as edits:
        _insert_sends(plan, block, edits, order, param_of, send_dummies)
    barrier_out = None
    if plan.sync:
        barrier_out = _ctrl_var(block).name
        block.append_op("send_barrier", inputs={"X": send_dummies}, outputs={"Out": [barrier_out]},
                        attrs={"endpoints": plan.endpoints, "trainer_id": tid, "half_async": False,
                               OP_ROLE_ATTR: RPC})
    recv_outs = []
    for p in plan.params:
        g = plan.grad_of[p]
        pbs = plan.param_blocks[p]
        outs = [b.name for b in pbs]
        recv_outs.extend(outs)
        dep = barrier_out if plan.sync else plan.send_dummies[g]
        block.append_op("recv", inputs={"X": [dep]}, outputs={"Out": outs},
                        attrs={"epmap": [b.endpoint for b in pbs], "recv_varnames": [], "trainer_id": tid,
                               "sync_mode": plan.sync, OP_ROLE_ATTR: RPC,
                               OP_ROLE_VAR_ATTR: [p, plan.grad_blocks[g][0].name if len(pbs) == 1 else g]})
    if plan.sync:
        block.append_op("fetch_barrier", inputs={"X": [barrier_out]}, outputs={"Out": recv_outs},
                        attrs={"endpoints": plan.endpoints, "trainer_id": tid, OP_ROLE_ATTR: RPC})
    for p in plan.params:
        pbs = plan.param_blocks[p]
        if len(pbs) > 1:
            block.append_op("concat", inputs={"X": [b.name for b in pbs]}, outputs={"Out": [p]},
                            attrs={"axis": 0, OP_ROLE_ATTR: DIST})
    if plan.table is not None:
        _rewrite_table_trainer(plan, program, barrier_out)
    if not plan.sync and plan.lr_op_indices:
        _send_lr_steps(plan, program)
    _rewrite_trainer_startup(plan, program, startup)
    _mark_distributed(plan, program)


def _insert_sends(plan, block, edits, order, param_of, send_dummies):
    """After the last writer of each gradient: its split (when sliced) and its send."""
    tid = plan.trainer_id
    for g in order:
        gbs = plan.grad_blocks[g]
        p = param_of[g]
        sent_name = gbs[0].name if len(gbs) == 1 else g
        anchor = block.last_writer(sent_name)
        if anchor is None:
            raise ValueError("transpile: no op of the program writes gradient %r" % sent_name)
        if len(gbs) > 1:
            if g in plan.sparse_grads:
                anchor = edits.insert_after(anchor, "split_selected_rows", inputs={"X": [g]},
                                            outputs={"Out": [b.name for b in gbs]},
                                            attrs={"height_sections": [b.rows for b in gbs], OP_ROLE_ATTR: DIST})
            else:
                anchor = edits.insert_after(anchor, "split_byref", inputs={"X": [g]},
                                            outputs={"Out": [b.name for b in gbs]},
                                            attrs={"sections": [b.rows for b in gbs], OP_ROLE_ATTR: DIST})
        dummy = _ctrl_var(block)
        edits.insert_after(anchor, "send", inputs={"X": [b.name for b in gbs]}, outputs={"Out": [dummy.name]},
                           attrs={"epmap": [b.endpoint for b in gbs], "sections": [], "send_varnames": [],
                                  "trainer_id": tid, "sync_mode": plan.sync, OP_ROLE_ATTR: RPC,
                                  OP_ROLE_VAR_ATTR: [p, sent_name]})
        plan.send_dummies[g] = dummy.name
        send_dummies.append(dummy.name)


LR_STEP_VAR = "@LR_STEP@"


def _lr_step_name(trainer_id):
    return "%s.trainer_%d" % (LR_STEP_VAR, trainer_id)


def _send_lr_steps(plan, program):
    """Async with an LR schedule: each trainer step first tells every pserver "one more step", and
    the pserver runs its LR block on it, so the rate decays with the steps of all trainers (Paddle
    sent a step counter to be summed; the LR block ran once at start-up otherwise)."""
    block = program.global_block()
    name = _lr_step_name(plan.trainer_id)
    block.create_var(name=name, shape=[1], dtype="float32")
    dummy = _ctrl_var(block)
    fill = block._prepend_op("fill_constant", outputs={"Out": [name]},
                             attrs={"shape": [1], "value": 1.0, "dtype": "float32", OP_ROLE_ATTR: RPC})
    block.insert_after(fill, "send", inputs={"X": [name] * len(plan.endpoints)}, outputs={"Out": [dummy.name]},
                       attrs={"epmap": plan.endpoints, "sections": [], "send_varnames": [],
                              "trainer_id": plan.trainer_id, "sync_mode": False, OP_ROLE_ATTR: RPC})


def _prefetch_names(k):
    return "prefetch_compress_in_tmp_%d" % k, "prefetch_compress_out_tmp_%d" % k


def _rewrite_table_trainer(plan, program, barrier_out):
    """Lookups of the distributed table become split_ids / prefetch / merge_ids; its row-sparse
    gradient goes out through split_ids / send, one part per pserver."""
    t = plan.table
    block = program.global_block()
    n = len(plan.endpoints)
    lookups = [op for op in block.readers_of(t.name) if _is_table_lookup(op) and op.input("W") == [t.name]]
    for op in lookups:
        if not op.attr("is_distributed"):
            raise RuntimeError("lookup of the distributed table %r by op %r without is_distributed"
                               % (t.name, op.type))
    ids = [op.input("Ids")[0] for op in lookups]
    outs = [op.output("Out")[0] for op in lookups]
    ins, pre = [], []
    for k in range(n):
        a, b = _prefetch_names(k)
        block.create_var(name=a, shape=[-1, 1], dtype="int64")
        block.create_var(name=b, shape=[-1, t.width], dtype=t.dtype)
        ins.append(a)
        pre.append(b)
    split = block.insert_before(lookups[0], "split_ids", inputs={"Ids": ids}, outputs={"Out": ins},
                                attrs={OP_ROLE_ATTR: 0})
    fetch = block.insert_after(split, "prefetch", inputs={"X": ins}, outputs={"Out": pre},
                               attrs={"epmap": plan.endpoints, "trainer_id": plan.trainer_id, OP_ROLE_ATTR: 0})
    block.insert_after(fetch, "merge_ids", inputs={"Ids": ids, "Rows": ins, "X": pre}, outputs={"Out": outs},
                       attrs={OP_ROLE_ATTR: 0})
    block.remove_ops(lookups)
    # backward: the gradient split over the pservers and sent
    anchor = block.last_writer(t.grad)
    if anchor is None:
        raise ValueError("transpile: no op writes the gradient %r of the distributed table" % t.grad)
    gv = block.var(t.grad)
    parts = [t.trainer_grad(plan.trainer_id, k, plan.sync, plan.trainers) for k in range(n)]
    for name in parts:
        block.create_var(name=name, shape=[-1, t.width], dtype=gv.dtype, type="SELECTED_ROWS")
    anchor = block.insert_after(anchor, "split_ids", inputs={"Ids": [t.grad]}, outputs={"Out": parts},
                                attrs={OP_ROLE_ATTR: DIST})
    dummy = _ctrl_var(block)
    block.insert_after(anchor, "send", inputs={"X": parts}, outputs={"Out": [dummy.name]},
                     attrs={"epmap": plan.endpoints, "sections": [], "send_varnames": [],
                            "trainer_id": plan.trainer_id, "sync_mode": plan.sync, OP_ROLE_ATTR: RPC,
                            OP_ROLE_VAR_ATTR: [t.name, t.grad]})
    plan.send_dummies[t.grad] = dummy.name
    if barrier_out is not None:
        for op in block.writers_of(barrier_out):
            op.set_input("X", op.input("X") + [dummy.name])


def _rewrite_trainer_startup(plan, program, startup):
    sb = startup.global_block()
    if plan.table is not None:
        for op in sb.writers_of(plan.table.name):
            sb.insert_before(op, "fake_init", outputs={"Out": [plan.table.name]},
                             attrs={"shape": [plan.table.rows, plan.table.width]})
            sb.remove_op(op)
    main_block = program.global_block()
    tid = plan.trainer_id
    for p in plan.params:
        pbs = plan.param_blocks[p]
        pv = main_block.var(p)
        for b in pbs:
            if not sb.has_var(b.name):
                sb.create_var(name=b.name, shape=b.shape, dtype=pv.dtype, type=pv.type)
        sb.append_op("recv", inputs={"X": []}, outputs={"Out": [b.name for b in pbs]},
                     attrs={"epmap": [b.endpoint for b in pbs], "recv_varnames": [], "trainer_id": tid,
                            "sync_mode": plan.sync, OP_ROLE_ATTR: RPC})
    dummy = sb.create_var(name=unique_name.generate("@CTRL_DEP@fetch_barrier"), type="RAW")
    sb.append_op("fetch_barrier", inputs={"X": []}, outputs={"Out": [dummy.name]},
                 attrs={"endpoints": plan.endpoints, "trainer_id": tid, OP_ROLE_ATTR: RPC})
    for p in plan.params:
        pbs = plan.param_blocks[p]
        if len(pbs) > 1:
            if not sb.has_var(p):
                sb._clone_variable(main_block.var(p))
            sb.append_op("concat", inputs={"X": [b.name for b in pbs]}, outputs={"Out": [p]},
                         attrs={"axis": 0, OP_ROLE_ATTR: DIST})


def _mark_distributed(plan, program):
    program._is_distributed = True
    program._endpoints = list(plan.endpoints)
    program._is_chief = plan.trainer_id == 0
    program._distributed_lookup_table = plan.table.name if plan.table is not None else None


def finish_trainer(plan, program):
    """Remove optimize and LR-schedule ops (they run on the pservers); ops that read the updated
    parameters (registry fact ``after_update``: model averaging) move to the end, after the
    parameters are received."""
    block = program.global_block()
    after = [op for op in block.ops if registry.fact(op, "after_update")]
    moved = {id(op) for op in after}
    block.ops = [op for op in block.ops
                 if not (is_optimize_op(op) or is_lr_sched_op(op) or id(op) in moved)] + after
    program._version += 1
    return program


# ---------------------------------------------------------------------------------------- pserver
def _pserver_var(block, src, name=None, shape=None, persistable=True):
    if name is None:
        name = src.name
    if block.has_var(name):
        return block.var(name)
    return block.create_var(name=name, shape=shape if shape is not None else src.shape, dtype=src.dtype,
                            type=src.type, lod_level=src.lod_level, persistable=persistable)


def build_pserver_program(plan, endpoint, config):
    if endpoint not in plan.endpoints:
        raise ValueError("get_pserver_program: endpoint %r is not one of the pservers %s"
                         % (endpoint, plan.endpoints))
    origin = plan.origin_main
    ob = origin.global_block()
    prog = Program()
    prog.random_seed = origin.random_seed
    gb = prog.global_block()
    pairs = plan.blocks_on(endpoint)
    multi = plan.sync and plan.trainers > 1
    recv_inputs = []
    for pb, gb_ in pairs:
        pv = ob.var(pb.orig)
        _pserver_var(gb, pv, pb.server_name, pb.shape)
        gv = ob.var(gb_.orig)
        _pserver_var(gb, gv, gb_.server_name, gb_.shape)
        if multi:
            for k in range(plan.trainers):
                v = _pserver_var(gb, gv, "%s.trainer_%d" % (gb_.server_name, k), gb_.shape, persistable=False)
                recv_inputs.append(v.name)
        else:
            recv_inputs.append(gb_.server_name)

    optimize_blocks = []
    lr_block_id = -1
    if plan.lr_op_indices:
        lr_block = prog._create_block(0)
        for i in plan.lr_op_indices:
            _clone_op_into(lr_block, ob.ops[i], origin, prog)
        prog._rollback()
        lr_block_id = lr_block.idx
        optimize_blocks.append(lr_block)

    grad_to_block, sparse_to_param = [], []
    if lr_block_id >= 0 and not plan.sync:
        for k in range(plan.trainers):
            v = gb.create_var(name=_lr_step_name(k), shape=[1], dtype="float32")
            recv_inputs.append(v.name)
        grad_to_block.append("%s:%d" % (LR_STEP_VAR, lr_block_id))
    per_param_count = {}
    for pb, _ in pairs:
        per_param_count[pb.orig] = per_param_count.get(pb.orig, 0) + 1
    for pb, gblk in pairs:
        param = pb.orig
        ops_for_param = [ob.ops[i] for i in plan.opt_ops_of.get(param, ())]
        if not ops_for_param:
            continue
        blk = prog._create_block(0)
        merged = gblk.server_name
        grad_to_block.append("%s:%d" % (merged, blk.idx))
        if multi:
            blk.append_op("sum", inputs={"X": ["%s.trainer_%d" % (merged, k) for k in range(plan.trainers)]},
                          outputs={"Out": [merged]}, attrs={"use_mkldnn": False, OP_ROLE_ATTR: OpRole.Optimize})
            # fluidist: row-sparse gradients are averaged too (Paddle only summed them, so a sparse
            # table learned `trainers` times faster than the local run it should equal)
            blk.append_op("scale", inputs={"X": [merged]}, outputs={"Out": [merged]},
                          attrs={"scale": 1.0 / plan.trainers, OP_ROLE_ATTR: OpRole.Optimize})
        rename = _block_renames(plan, pb, gblk, ob, per_param_count[param] > 1)
        for op in ops_for_param:
            _append_block_op(blk, op, rename, pb, ob, prog)
            if registry.update_rule(op) is not None and gblk.orig in plan.sparse_grads:
                sparse_to_param.append("%s:%s" % (merged, pb.server_name))
        prog._rollback()
        optimize_blocks.append(blk)
    prefetch_to_block, checkpoint_block = [], -1
    if plan.table is not None:
        tb, pb_, cb = _append_table_blocks(plan, endpoint, prog, ob, multi, recv_inputs)
        optimize_blocks.append(tb)
        grad_to_block.append("%s:%d" % (plan.table.merged_grad(plan.endpoints.index(endpoint)), tb.idx))
        prefetch_to_block.append("%s:%d" % (_prefetch_names(plan.endpoints.index(endpoint))[0], pb_.idx))
        checkpoint_block = cb.idx
    if not optimize_blocks:
        blk = prog._create_block(0)
        prog._rollback()
        optimize_blocks.append(blk)
    gb.append_op("listen_and_serv", inputs={"X": recv_inputs}, outputs={},
                 attrs={"endpoint": endpoint, "pserver_id": plan.endpoints.index(endpoint),
                        "Fanin": plan.trainers, "optimize_blocks": optimize_blocks,
                        "distributed_mode": plan.distributed_mode,
                        "grad_to_block_id": list(dict.fromkeys(grad_to_block)),
                        "sparse_grad_to_param": sparse_to_param, "lr_decay_block_id": lr_block_id,
                        "rpc_get_thread_num": 12, "rpc_send_thread_num": 12, "rpc_prefetch_thread_num": 12,
                        "prefetch_var_name_to_block_id": prefetch_to_block, "checkpint_block_id": checkpoint_block,
                        OP_ROLE_ATTR: RPC})
    prog._is_distributed = True
    prog._distributed_lookup_table = plan.table.name if plan.table is not None else None
    prog._ps_endpoint = endpoint
    prog._endpoints = list(plan.endpoints)
    return prog


def _append_table_blocks(plan, endpoint, prog, ob, multi, recv_inputs):
    """This pserver's shard of the distributed table: its update block, its prefetch block (ids in,
    rows out) and its checkpoint block (``save`` into the directory a checkpoint request names)."""
    t = plan.table
    n = len(plan.endpoints)
    k = plan.endpoints.index(endpoint)
    gb = prog.global_block()
    opt = {OP_ROLE_ATTR: OpRole.Optimize}
    gb.create_var(name=t.name, shape=[t.shard_rows(k, n), t.width], dtype=t.dtype, persistable=True)
    merged = t.merged_grad(k)
    gb.create_var(name=merged, shape=[t.shard_rows(k, n), t.width], dtype=t.dtype, type="SELECTED_ROWS",
                  persistable=True)
    _pserver_var(gb, ob.var(t.lr), t.lr, persistable=True)
    if t.optimizer != "sgd":
        import warnings
        warnings.warn("the distributed table %r is updated with SGD on the pservers (its optimizer %r is "
                      "not used for it)" % (t.name, t.optimizer))
    blk = prog._create_block(0)
    if multi:
        per_trainer = [t.trainer_grad(i, k, True, plan.trainers) for i in range(plan.trainers)]
        for name in per_trainer:
            gb.create_var(name=name, shape=[-1, t.width], dtype=t.dtype, type="SELECTED_ROWS")
        recv_inputs.extend(per_trainer)
        blk.append_op("sum", inputs={"X": per_trainer}, outputs={"Out": [merged]}, attrs=dict(opt, use_mkldnn=False))
        blk.append_op("scale", inputs={"X": [merged]}, outputs={"Out": [merged]},
                      attrs=dict(opt, scale=1.0 / plan.trainers))
    else:
        recv_inputs.append(merged)
    blk.append_op("sgd", inputs={"Param": [t.name], "Grad": [merged], "LearningRate": [t.lr]},
                  outputs={"ParamOut": [t.name]}, attrs=dict(opt, op_role_var=[t.name, merged]))
    prog._rollback()
    ids, rows = _prefetch_names(k)
    gb.create_var(name=ids, shape=[-1, 1], dtype="int64")
    gb.create_var(name=rows, shape=[-1, t.width], dtype=t.dtype)
    pblk = prog._create_block(0)
    pblk.append_op("lookup_sparse_table", inputs={"W": [t.name], "Ids": [ids]}, outputs={"Out": [rows]},
                   attrs={"is_sparse": True, "is_distributed": True, "padding_idx": -1, "shard_num": n})
    prog._rollback()
    gb.create_var(name="kLookupTablePath", type="RAW", persistable=True)
    cblk = prog._create_block(0)
    cblk.append_op("save", inputs={"X": [t.name]}, attrs={"file_path": "none"})
    prog._rollback()
    return blk, pblk, cblk


def _block_renames(plan, pb, gblk, ob, several_blocks_here):
    """Names of the origin program -> names on this pserver for one param block's optimize ops."""
    param, grad = pb.orig, gblk.orig
    rename = {param: pb.server_name, grad: gblk.server_name}
    rows_scale = {param: pb.shape, grad: gblk.shape}
    acc_shape = {}
    for n in plan.accumulators.get(param, ()):
        rename[n] = plan.accumulator_name(n, pb, several_blocks_here)
        acc_shape[rename[n]] = pb.shape
    return {"names": rename, "shapes": rows_scale, "acc_shape": acc_shape}


def _append_block_op(blk, op, rename, pb, ob, prog):
    names = rename["names"]
    gb = prog.global_block()

    def mapped(n):
        new = names.get(n)
        if new is None:
            # vars derived from the param or grad (fc_w@GRAD@CLIP, fc_w@L2DECAY) follow the block's shape
            base = n.split("@")[0]
            shape = None
            for orig, s in rename["shapes"].items():
                if n != orig and (n.startswith(orig + "@") or base == orig):
                    shape = s
            src = ob._find_var_recursive(n)
            if src is not None and not gb.has_var(n):
                _pserver_var(gb, src, n, shape, persistable=src.persistable)
            return n
        src = ob._find_var_recursive(n)
        if src is not None and not gb.has_var(new):
            shape = rename["acc_shape"].get(new)
            _pserver_var(gb, src, new, shape, persistable=True)
        return new

    inputs = {slot: [mapped(n) for n in ns] for slot, ns in op.inputs.items()}
    outputs = {slot: [mapped(n) for n in ns] for slot, ns in op.outputs.items()}
    attrs = dict(op.attrs)
    if attrs.get(OP_ROLE_VAR_ATTR):
        attrs[OP_ROLE_VAR_ATTR] = [names.get(n, n) for n in attrs[OP_ROLE_VAR_ATTR]]
    blk.append_op(op.type, inputs=inputs, outputs=outputs, attrs=attrs)


def _clone_op_into(block, op, origin, prog):
    """Copy an op (and the vars it names, and its sub-blocks) from ``origin`` into ``block``."""
    gb = prog.global_block()
    ob = op.block
    for n in op.input_arg_names + op.output_arg_names:
        src = ob._find_var_recursive(n)
        if src is not None and not gb.has_var(n) and not block.has_var(n):
            target = gb if src.block.idx == 0 else block
            _pserver_var(target, src, n, persistable=src.persistable)
    attrs = dict(op.attrs)
    for k, v in op.attrs.items():
        if hasattr(v, "ops") and hasattr(v, "idx"):
            sub = prog._create_block(block.idx)
            for sop in v.ops:
                _clone_op_into(sub, sop, origin, prog)
            prog._rollback()
            attrs[k] = sub
    block.append_op(op.type, inputs=op.inputs, outputs=op.outputs, attrs=attrs)


def build_pserver_startup(plan, endpoint, pserver_program, startup=None):
    """The pserver's startup: origin init ops for what lives here, renamed to its blocks. A block of
    a randomly initialised parameter gets exactly the rows the whole parameter has under the origin
    startup program and seed (fluidist; Paddle drew a fresh random block)."""
    origin_startup = startup or plan.origin_startup
    prog = Program()
    prog.random_seed = origin_startup.random_seed
    sb = prog.global_block()
    pgb = pserver_program.global_block()
    for v in pgb.vars.values():
        sb._clone_variable(v, force_persistable=v.persistable)
    blocks_here = {}
    for p in plan.params:
        for b in plan.param_blocks[p]:
            if b.endpoint == endpoint and b.name != p:
                blocks_here.setdefault(p, []).append(b)
    table = plan.table
    block_copies = defaultdict(list)   # accumulator -> its per-block copies here (two blocks of one param)
    for name in pgb.vars:
        if ".block" in name and name.startswith(orig_varname(name) + ".block"):
            block_copies[orig_varname(name)].append(name)
    for op in origin_startup.global_block().ops:
        if int(op.attr(OP_ROLE_ATTR) or 0) & (RPC | DIST):
            continue   # a trainer startup's own recv / fetch_barrier / concat
        if table is not None and op.output_arg_names == [table.name]:
            _append_table_init(sb, op, table, plan.endpoints.index(endpoint), len(plan.endpoints))
            continue
        outs = op.output_arg_names
        if len(outs) != 1:
            continue
        out = outs[0]
        src = op.input("X") if op.type == "assign" else []
        if src and src[0] in blocks_here:
            # a copy of a sliced parameter (Lookahead's slow weights): each block copies its block
            here = blocks_here[src[0]]
            for b in here:
                target = plan.accumulator_name(out, b, len(here) > 1)
                if pgb.has_var(target):
                    sb.append_op("assign", inputs={"X": [b.name]}, outputs={"Out": [target]})
            continue
        if out in blocks_here:
            for b in blocks_here[out]:
                _append_block_init(sb, op, out, b)
        elif pgb.has_var(out):
            attrs = dict(op.attrs)
            kind = registry.fact(op, "init")
            if kind in ("random", "fill") and pgb.var(out).shape is not None:
                full = list(op.attrs.get("shape") or [])
                attrs["shape"] = list(pgb.var(out).shape)
                if kind == "random" and full != attrs["shape"]:
                    attrs["salt"] = attrs.get("salt") or out
            sb.append_op(op.type, inputs=op.inputs, outputs=op.outputs, attrs=attrs)
        else:
            for name in block_copies.get(out, ()):
                attrs = dict(op.attrs)
                attrs["shape"] = list(pgb.var(name).shape)
                sb.append_op(op.type, inputs=op.inputs, outputs={"Out": [name]}, attrs=attrs)
    return prog


def _append_table_init(sb, op, table, k, n):
    """Shard ``k`` of the table gets rows k, k+n, ... of what the whole table gets locally."""
    attrs = dict(op.attrs)
    shape = [table.shard_rows(k, n), table.width]
    kind = registry.fact(op, "init")
    if kind == "random":
        attrs.update(full_shape=list(op.attrs["shape"]), shape=shape, row_begin=k, row_end=table.rows,
                     row_step=n, salt=op.attrs.get("salt") or table.name)
    elif kind == "fill":
        attrs["shape"] = shape
    else:
        raise ValueError("cannot initialise the distributed table %r on a pserver from a %r op"
                         % (table.name, op.type))
    sb.append_op(op.type, inputs=op.inputs, outputs=op.outputs, attrs=attrs)


def _append_block_init(sb, op, whole, b):
    attrs = dict(op.attrs)
    kind = registry.fact(op, "init")
    if kind == "random":
        attrs["full_shape"] = list(op.attrs["shape"])
        attrs["shape"] = list(b.shape)
        attrs["row_begin"], attrs["row_end"] = b.row_begin, b.row_begin + b.rows
        attrs["salt"] = op.attrs.get("salt") or whole
    elif kind == "fill":
        attrs["shape"] = list(b.shape)
    elif kind == "values":
        width = int(np.prod(op.attrs["shape"][1:])) if len(op.attrs["shape"]) > 1 else 1
        for key in ("fp32_values", "int32_values", "int64_values", "bool_values"):
            vals = op.attrs.get(key) or []
            if vals:
                attrs[key] = vals[b.row_begin * width:(b.row_begin + b.rows) * width]
        attrs["shape"] = list(b.shape)
    else:
        raise ValueError("cannot initialise block %r of %r: its init op %r is not a fill or random op"
                         % (b.name, whole, op.type))
    sb.append_op(op.type, inputs=op.inputs, outputs={"Out": [b.name]}, attrs=attrs)
