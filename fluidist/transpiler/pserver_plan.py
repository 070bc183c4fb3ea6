"""pserver mode's plan: ``plan_pserver`` reads the origin programs and decides everything once (which
parameters and gradients are split into which blocks, which pserver holds each block, each
parameter's optimize ops and accumulators)."""
import itertools
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np

from ..framework import registry, unique_name
from ..framework.op_role import OpRole, is_lr_sched_op, is_optimize_op, param_grad_pairs, role_vars
from ..framework.program import Parameter, Program
from .config import DistributedMode
from .details.vars_distributed import VarsDistributed, VarStruct
from .dispatcher import RoundRobin
from .slicing import _numel, block_shape, slice_variable


RPC = OpRole.RPC
DIST = OpRole.Dist

# What an op is (update rule, whole-tensor, initialiser kind, table lookup) is asked of the registry.


@dataclass
class RowSlice:
    """One slice of rows of a parameter or gradient (the transpiler's "block" of it) and the pserver
    that holds it."""
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
    optimizer: str           # the op type the user chose
    update: object = None    # the user's update op of the table (in the origin program)

    def row_update(self):
        """The user's update op when the pservers can run it on the table's shards: its rule is
        row-wise (a gradient row updates that row only: sgd, adagrad, adam with lazy_mode, ftrl) and
        keeps no one-element state (Adam's Beta1Pow is advanced by the whole step, not by rows).
        Its accumulators are then rows materialised when first written (LazyRows). None otherwise:
        the pservers apply SGD."""
        op = self.update
        rule = registry.fact(op, "update") if op is not None else None
        if rule is None or rule.row_wise is None or not rule.row_wise(op.attrs) or rule.scalars:
            return None
        return op

    def accumulators(self):
        """{slot: variable} of the row update's accumulators shaped like the table."""
        op = self.row_update()
        if op is None:
            return {}
        rule = registry.fact(op, "update")
        return {slot: op.input(slot)[0] for slot in rule.param_like if op.input(slot)}

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
    param_blocks: Dict[str, List[RowSlice]]
    grad_blocks: Dict[str, List[RowSlice]]     # by grad name
    sparse_grads: set = field(default_factory=set)
    lr_op_indices: List[int] = field(default_factory=list)
    opt_op_indices: List[int] = field(default_factory=list)
    send_dummies: Dict[str, str] = field(default_factory=dict)
    table: Optional["DistributedTable"] = None
    opt_ops_of: Dict[str, List[int]] = field(default_factory=dict)    # param -> its optimize ops (indices)
    accumulators: Dict[str, List[str]] = field(default_factory=dict)  # param -> accumulators shaped like it
    scalar_accumulators: Dict[str, List[str]] = field(default_factory=dict)  # param -> its one-element ones
    whole: set = field(default_factory=set)   # params kept in one block: their update needs the whole tensor
    half_async: bool = False  # async with config.half_async: each step ends at the communicator's barrier
    startup_inits: Optional[tuple] = None   # pserver_build._startup_inits' classification, read once

    @staticmethod
    def accumulator_name(acc, pb, several_blocks_here):
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


def find_optimize_ops(program):
    """The optimize ops of ``program``'s global block, found through op_role / op_role_var: (their
    indices, [(param name, grad name)] they update)."""
    ops = program.global_block().ops
    # model averaging (registry fact after_update) stays on the trainer: see finish_trainer
    opt = [i for i, op in enumerate(ops) if is_optimize_op(op)]
    staying = types_with([ops[i] for i in opt], "after_update")
    if staying:
        opt = [i for i in opt if ops[i].type not in staying]
    return opt, param_grad_pairs(ops[i] for i in opt)


def types_with(ops, fact, default=None):
    """The op types among ``ops`` whose registry fact ``fact`` is true, asked once per type (passes
    over every op of a program would ask it of thousands of ops of the same few types)."""
    return {t for t in {op.type for op in ops} if registry.fact(t, fact, default)}


def _is_table_lookup(op):
    return bool(registry.fact(op, "table_lookup", False))


def find_distributed_table(program, pairs, opt_ops):
    """The one ``embedding(is_distributed=True)`` table of the program, or None."""
    block = program.global_block()
    names = []
    lookups = types_with(block.ops, "table_lookup", False)
    for op in block.ops:
        if op.type in lookups and op.attr("is_distributed"):
            w = op.input("W")[0]
            if w not in names:
                names.append(w)
    if not names:
        return None
    if len(names) > 1:
        raise RuntimeError("transpile: only one distributed lookup table is supported, found %s" % names)
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
                            update[0].input("LearningRate")[0], update[0].type, update[0])


def lr_op_indices(program):
    return [i for i, op in enumerate(program.global_block().ops) if is_lr_sched_op(op)]


def plan_pserver(program, startup, trainer_id, endpoints, trainers, sync, config, startup_copy=None):
    """The plan of ``program`` for ``endpoints``; ``startup_copy``: a copy of ``startup`` made before
    any rewrite (the transpiler's ``origin_startup_program``), else one is made here."""
    block = program.global_block()
    opt_idx, pairs = find_optimize_ops(program)
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
    scalar_accumulators = {p: _accumulators(block, opt_ops_of.get(p, ()), scalars=True) for p in params}
    min_block = config.min_block_size
    param_blocks, grad_blocks, sparse = {}, {}, set()
    suffix = ".trainer_%d" % trainer_id if (sync and trainers > 1) else ""
    for p in params:
        g = grad_of[p]
        pv, gv = block.var(p), block.var(g)
        if gv.type == "SELECTED_ROWS":
            sparse.add(g)
        count = len(endpoints) if config.slice_var_up and p not in whole else 1
        # the gradient is cut as the parameter is (a row-sparse one is declared with the table's
        # shape): the same blocks, under the gradient's names
        pbs = gbs = slice_variable([pv], count, min_block)
        if len(pbs) == 1:
            param_blocks[p] = [RowSlice(p, p, p, 0, pbs[0].rows, 0, list(pv.shape))]
            grad_blocks[g] = [RowSlice(g, g + suffix, g, 0, gbs[0].rows, 0, list(pv.shape))]
        else:
            param_blocks[p] = [RowSlice(p, "%s.block%d" % (p, b.index), "%s.block%d" % (p, b.index), b.index,
                                     b.rows, b.row_begin, block_shape(pv, b)) for b in pbs]
            grad_blocks[g] = [RowSlice(g, "%s.block%d%s" % (g, b.index, suffix), "%s.block%d" % (g, b.index),
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
                       origin_main=program.clone(), origin_startup=startup_copy if startup_copy is not None else startup.clone(), params=params,
                       grad_of=grad_of, param_blocks=param_blocks, grad_blocks=grad_blocks, sparse_grads=sparse,
                       lr_op_indices=lr_op_indices(program), opt_op_indices=opt_idx, table=table,
                       opt_ops_of=opt_ops_of, accumulators=accumulators, whole=whole,
                       scalar_accumulators=scalar_accumulators,
                       half_async=not sync and bool(config.half_async))


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


def _accumulators(block, indices, scalars=False):
    """The accumulators shaped like the parameter that its update ops read (the registry's update
    rules), or with ``scalars`` their one-element ones (Adam's beta powers)."""
    out = []
    for i in indices:
        op = block.ops[i]
        rule = registry.update_rule(op)
        if rule is None:
            continue
        for slot in (rule.scalars if scalars else rule.param_like):
            for n in op.input(slot):
                if n not in out:
                    out.append(n)
    return out


def _ctrl_var(block):
    return block.create_var(name=unique_name.generate("@CTRL_DEP@send"), type="RAW")



def _pieces_of(accumulators, scalar_accumulators, p):
    """(origin name, vtype, cut like the parameter?) of parameter ``p`` and its accumulators."""
    return ([(p, "Param", True)] + [(n, "Optimizer", True) for n in accumulators.get(p, ())]
            + [(n, "Optimizer", False) for n in scalar_accumulators.get(p, ())])


def vars_overview(plan):
    """Paddle's record of the placement (``program._parameters_on_pservers``, a VarsDistributed): each
    parameter block (``"Param"``) and, on the same pserver, its accumulators (``"Optimizer"``: the
    parameter-shaped ones cut like it, the one-element ones whole), with each block's offset in the
    flattened origin variable. Its entries are made when first read (``_record_placement``), from the
    plan, which no later call changes; when the transpiler goes first, ``keep_placement_only``."""
    return VarsDistributed(fill=lambda overview: _record_placement(overview, *_placement_of(plan)))


def keep_placement_only(overview_ref, plan):
    """The transpiler holding ``plan`` is gone: the record ``overview_ref()``, when still alive and not
    yet read, is shared by the trainer and pserver programs and their clones; its fill now keeps what
    it needs copied (``_placement_of``: a few milliseconds for thousands of parameters) instead of the
    plan, which would keep the plan's copies of the origin programs alive as long as any of them."""
    overview = overview_ref()
    if overview is None or not overview._fill_pending():
        return
    placement = _placement_of(plan)
    overview._replace_fill(lambda record: _record_placement(record, *placement))


def _placement_of(plan):
    """What ``_record_placement`` reads of ``plan``: no program and no Variable, only the origin
    variables it describes as ``VarStruct``s ({name: its fields}) and the plan's placement (names,
    blocks; ``accumulator_name`` a static method)."""
    origin_vars = plan.origin_main.global_block().vars
    names = list(plan.params)
    names.extend(itertools.chain.from_iterable(plan.accumulators.get(p, ()) for p in plan.params))
    names.extend(itertools.chain.from_iterable(plan.scalar_accumulators.get(p, ()) for p in plan.params))
    names = [n for n in names if n in origin_vars]      # (one that is not: the fill names it, as it did)
    origins = {n: VarStruct.of(origin_vars[n]) for n in names}
    return (origins, plan.params, plan.param_blocks, plan.accumulators, plan.scalar_accumulators,
            type(plan).accumulator_name)


def _record_placement(overview, origins, params, param_blocks, accumulators, scalar_accumulators, name_on_pserver):
    """``overview``'s entries; ``origins``: {origin name: its ``VarStruct``}."""
    for p in params:
        blocks = param_blocks[p]
        on_ep = defaultdict(int)
        for pb in blocks:
            on_ep[pb.endpoint] += 1
        for pb in blocks:
            offset = pb.row_begin * (_numel(pb.shape[1:]) if len(pb.shape) > 1 else 1)
            for name, vtype, cut in _pieces_of(accumulators, scalar_accumulators, p):
                if name not in origins:
                    raise ValueError("variable %r is not in block 0 of the origin program" % name)
                whole = origins[name]
                here = pb.server_name if vtype == "Param" else name_on_pserver(name, pb, on_ep[pb.endpoint] > 1)
                piece = VarStruct(here, list(pb.shape) if cut else whole.shape, whole.dtype, whole.type,
                                  whole.lod_level, whole.persistable)
                sliced = len(blocks) > 1 and cut
                overview.add_distributed_var(whole, piece, is_slice=sliced, block_id=pb.index if sliced else 0,
                                             offset=offset if sliced else 0, vtype=vtype, endpoint=pb.endpoint)
