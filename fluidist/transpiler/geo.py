"""GEO-SGD's programs (``DistributeTranspilerConfig.geo_sgd_mode``, Paddle 1.8's
``GeoSgdTranspiler``), as functions over Programs like pserver mode's.

- Trainer: the program keeps its optimizer (trainers update locally) and ends with a ``send`` of
  the ids its sparse lookups read, ``send_varnames`` naming their tables, and no endpoints: a
  communicator's op (``distributed.geo_communicator``), which pushes the parameter deltas every
  ``geo_sgd_need_push_nums`` steps. The startup receives every parameter from the pservers (so all
  trainers start alike) and ends with a ``send`` of ``param_init``, which hands the parameters as
  received to the communicator.
- Pserver: the parameter blocks it holds, each with a block ``sum(X=[param, param.delta]) ->
  param`` run when a trainer's delta arrives; ``listen_and_serv`` in ``distributed_mode`` 3 (GEO).

Parameters are sliced into blocks over the pservers as in pserver mode. Every trainable parameter
with a gradient is pushed; non-trainable state (batch norm's running statistics) stays with each
trainer, as in Paddle. The delta of a parameter whose gradient is row-sparse (``embedding(...,
is_sparse=True)``) is row-sparse too: the rows the trainer's lookups touched. A table built with
``is_distributed=True`` is such a parameter too (every trainer holds it whole), as in Paddle 1.8,
whose GEO transpiler only records its name.
"""
from dataclasses import dataclass, field
from typing import List, Tuple

from ..framework import registry
from ..framework.dtypes import VarType
from ..framework.op_role import OP_ROLE_ATTR, OpRole
from ..framework.program import Parameter, Program
from .config import DistributedMode
from .dispatcher import RoundRobin
from .pserver_plan import RPC, PServerPlan, RowSlice, _ctrl_var, find_optimize_ops, lr_op_indices
from .pserver_trainer import _mark_distributed, _rewrite_trainer_startup
from .slicing import block_shape, slice_variable

PARAM_INIT = "param_init"


def delta_name(name):
    """What a parameter (block)'s delta is called (Paddle's ``<name>.delta``)."""
    return name + ".delta"


@dataclass
class GeoPlan(PServerPlan):
    """A pserver plan whose "gradients" are the parameters' deltas (``grad_of[p]`` is
    ``p.delta``), with what GEO-SGD adds: the steps between pushes, the row-sparse parameters, and
    the (ids, table) pairs of their lookups."""
    push_nums: int = 100
    sparse_params: set = field(default_factory=set)
    lookups: List[Tuple[str, str]] = field(default_factory=list)


def plan_geo(program, startup, trainer_id, endpoints, trainers, config):
    """Decide GEO-SGD's blocks and their pservers once (the trainer and the pservers agree on it)."""
    block = program.global_block()
    opt_idx, pairs = find_optimize_ops(program)
    if not pairs:
        raise ValueError("transpile (geo_sgd_mode): the program has no optimize ops; call optimizer.minimize(loss) "
                         "before transpiling")
    params, grad_of, sparse = [], {}, set()
    for p, g in pairs:
        pv = block._find_var_recursive(p)
        if p in grad_of or (isinstance(pv, Parameter) and not pv.trainable):
            continue
        params.append(p)
        grad_of[p] = delta_name(p)
        if block.var(g).type == VarType.SELECTED_ROWS:
            sparse.add(p)
    param_blocks, delta_blocks = {}, {}
    for p in params:
        pv = block.var(p)
        count = len(endpoints) if config.slice_var_up else 1
        pieces = slice_variable([pv], count, config.min_block_size)
        if len(pieces) == 1:
            param_blocks[p] = [RowSlice(p, p, p, 0, pieces[0].rows, 0, list(pv.shape))]
        else:
            param_blocks[p] = [RowSlice(p, "%s.block%d" % (p, b.index), "%s.block%d" % (p, b.index), b.index, b.rows,
                                     b.row_begin, block_shape(pv, b)) for b in pieces]
        delta_blocks[grad_of[p]] = [RowSlice(grad_of[p], delta_name(b.name), delta_name(b.name), b.index, b.rows,
                                          b.row_begin, list(b.shape)) for b in param_blocks[p]]
    dispatcher = (config.split_method or RoundRobin)(endpoints)
    every = [b for p in params for b in param_blocks[p]]
    for b, ep in zip(every, dispatcher.dispatch([b.name for b in every])):
        b.endpoint = ep
    for p in params:
        for pb, db in zip(param_blocks[p], delta_blocks[grad_of[p]]):
            db.endpoint = pb.endpoint
    lookups = []
    for op in block.ops:
        if registry.fact(op, "table_lookup", False) and op.input("W") and op.input("W")[0] in sparse:
            pair = (op.input("Ids")[0], op.input("W")[0])
            if pair not in lookups:
                lookups.append(pair)
    return GeoPlan(endpoints=list(endpoints), trainer_id=trainer_id, trainers=trainers, sync=False,
                   distributed_mode=DistributedMode.GEO, origin_main=program.clone(), origin_startup=startup.clone(),
                   params=params, grad_of=grad_of, param_blocks=param_blocks, grad_blocks=delta_blocks,
                   lr_op_indices=lr_op_indices(program), opt_op_indices=opt_idx,
                   push_nums=int(config.geo_sgd_need_push_nums), sparse_params=sparse, lookups=lookups)


def vars_info(plan):
    """Paddle's ``GeoSgdTranspiler._get_vars_info()``: per parameter its block names, their row
    counts (as strings), their pservers and whether it is row-sparse (``["True"]`` / ``["False"]``)."""
    info = {}
    for p in plan.params:
        blocks = plan.param_blocks[p]
        info[p] = {"var_names": [b.name for b in blocks], "sections": [str(b.rows) for b in blocks],
                   "epmap": [b.endpoint for b in blocks], "is_sparse": [str(p in plan.sparse_params)]}
    return info


def rewrite_geo_trainer(plan, program, startup):
    """The trainer's programs, in place (module doc). The main program remembers what its
    communicator needs (``program._geo_sgd``), so one starts by itself at the first step when the
    script started none."""
    block = program.global_block()
    dummy = _ctrl_var(block)
    block.append_op("send", inputs={"X": [ids for ids, _ in plan.lookups]}, outputs={"Out": [dummy.name]},
                    attrs={"send_varnames": [table for _, table in plan.lookups], "epmap": [], "sections": [],
                           "trainer_id": plan.trainer_id, "sync_mode": False, OP_ROLE_ATTR: RPC})
    _rewrite_trainer_startup(plan, program, startup)
    sb = startup.global_block()
    done = _ctrl_var(sb)
    sb.append_op("send", inputs={"X": list(plan.params)}, outputs={"Out": [done.name]},
                 attrs={"send_varnames": [PARAM_INIT], "epmap": [], "sections": [], "trainer_id": plan.trainer_id,
                        "sync_mode": False, OP_ROLE_ATTR: RPC})
    _mark_distributed(plan, program)
    program._geo_sgd = {"vars_info": vars_info(plan), "trainers": plan.trainers, "push_nums": plan.push_nums,
                        "trainer_id": plan.trainer_id}


def build_geo_pserver_program(plan, endpoint, server_config=None):
    """The program of the pserver at ``endpoint``: its parameter blocks and their delta blocks."""
    if endpoint not in plan.endpoints:
        raise ValueError("get_pserver_program: endpoint %r is not one of the pservers %s"
                         % (endpoint, plan.endpoints))
    origin = plan.origin_main.global_block()
    prog = Program()
    prog.random_seed = plan.origin_main.random_seed
    gb = prog.global_block()
    blocks, grad_to_block, sparse_to_param, deltas = [], [], [], []
    for pb, db in plan.blocks_on(endpoint):
        pv = origin.var(pb.orig)
        gb.create_var(name=pb.server_name, shape=pb.shape, dtype=pv.dtype, persistable=True)
        sparse = pb.orig in plan.sparse_params
        gb.create_var(name=db.server_name, shape=pb.shape, dtype=pv.dtype,
                      type=VarType.SELECTED_ROWS if sparse else VarType.LOD_TENSOR)
        deltas.append(db.server_name)
        blk = prog._create_block(0)
        blk.append_op("sum", inputs={"X": [pb.server_name, db.server_name]}, outputs={"Out": [pb.server_name]},
                      attrs={"use_mkldnn": False, OP_ROLE_ATTR: OpRole.Optimize})
        prog._rollback()
        blocks.append(blk)
        grad_to_block.append("%s:%d" % (db.server_name, blk.idx))
        if sparse:
            sparse_to_param.append("%s:%s" % (db.server_name, pb.server_name))
    if not blocks:
        blocks.append(prog._create_block(0))
        prog._rollback()
    threads = {k: getattr(server_config, "_%s" % k, 12) if server_config is not None else 12
               for k in ("rpc_get_thread_num", "rpc_send_thread_num", "rpc_prefetch_thread_num")}
    gb.append_op("listen_and_serv", inputs={"X": deltas}, outputs={},
                 attrs=dict(threads, endpoint=endpoint, pserver_id=plan.endpoints.index(endpoint),
                            Fanin=plan.trainers, optimize_blocks=blocks, distributed_mode=DistributedMode.GEO,
                            grad_to_block_id=grad_to_block, sparse_grad_to_param=sparse_to_param,
                            lr_decay_block_id=-1, prefetch_var_name_to_block_id=[], checkpint_block_id=-1,
                            **{OP_ROLE_ATTR: RPC}))
    prog._is_distributed = True
    prog._ps_endpoint = endpoint
    prog._endpoints = list(plan.endpoints)
    return prog


__all__ = ["GeoPlan", "plan_geo", "vars_info", "rewrite_geo_trainer", "build_geo_pserver_program", "delta_name",
           "PARAM_INIT"]
