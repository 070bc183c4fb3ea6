"""pserver mode's pserver programs: ``build_pserver_program`` and ``build_pserver_startup`` compute a
pserver's main and startup programs from the plan."""
from collections import defaultdict

import numpy as np

from ..framework import registry
from ..framework.op_role import OP_ROLE_ATTR, OP_ROLE_VAR_ATTR, OpRole
from ..framework.program import Program
from ..framework.variable import _copy_var
from .pserver_plan import DIST, RPC
from .pserver_trainer import _prefetch_names, async_lr_counter, trainer_counter_names


# ---------------------------------------------------------------------------------------- pserver
def _pserver_var(block, src, name=None, shape=None, persistable=True):
    if name is None:
        name = src.name
    known = block.vars.get(name)
    if known is not None:
        return known
    return block._declare(name, shape if shape is not None else src.shape, src.dtype, src.type, src.lod_level,
                          persistable)


def build_pserver_program(plan, endpoint, config):
    """The program of the pserver at ``endpoint``: its parameter and gradient blocks, an LR block,
    one optimize block per parameter block, the distributed table's blocks, and the
    ``listen_and_serv`` op that runs them."""
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
    recv_inputs, trainer_copies = _declare_blocks(plan, gb, ob, pairs, multi)

    optimize_blocks = []
    lr_block_id = -1
    counted = async_lr_counter(plan)
    accumulate = []
    if plan.lr_op_indices:
        lr_block = prog._create_block(0)
        for i in plan.lr_op_indices:
            _clone_op_into(lr_block, ob.ops[i], origin, prog)
        prog._rollback()
        lr_block_id = lr_block.idx
        optimize_blocks.append(lr_block)
        if counted is not None:
            accumulate = _count_trainer_steps(plan, gb, lr_block, counted[0])
            recv_inputs.extend(accumulate)

    grad_to_block, sparse_to_param = [], []
    if accumulate:
        grad_to_block.append("%s:%d" % (counted[0], lr_block_id))
    sum_on_arrival = []
    optimize_blocks += _append_param_blocks(plan, prog, ob, pairs, trainer_copies, grad_to_block, sparse_to_param,
                                            sum_on_arrival)
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
                        "sum_on_arrival": sum_on_arrival, "accumulate_on_arrival": accumulate, OP_ROLE_ATTR: RPC})
    prog._is_distributed = True
    prog._distributed_lookup_table = plan.table.name if plan.table is not None else None
    prog._ps_endpoint = endpoint
    prog._endpoints = list(plan.endpoints)
    return prog


def _count_trainer_steps(plan, gb, lr_block, counter):
    """Async LR decay (``pserver_trainer._send_lr_steps``): declare the trainer counters this pserver
    receives and make the LR block's ``increment`` of ``counter`` their ``sum``; returns their names."""
    names = trainer_counter_names(plan, counter)
    cv = gb.var(counter)
    for name in names:
        gb.create_var(name=name, shape=[1], dtype=cv.dtype, persistable=True)
    for idx, op in enumerate(lr_block.ops):
        if registry.fact(op, "counter") and op.output("Out") == [counter]:
            lr_block._remove_op(idx)
            lr_block._insert_op(idx, "sum", inputs={"X": names}, outputs={"Out": [counter]},
                                attrs={OP_ROLE_ATTR: op.attr(OP_ROLE_ATTR)})
            break
    return names


def _declare_blocks(plan, gb, ob, pairs, multi):
    """Declare this pserver's parameter and gradient blocks in its global block (with several sync
    trainers, one gradient copy per trainer); returns the names ``listen_and_serv`` receives and
    ``{gradient block: its per-trainer copies}`` (empty without them)."""
    recv_inputs, copies = [], {}
    for pb, gb_ in pairs:
        pv = ob.var(pb.orig)
        _pserver_var(gb, pv, pb.server_name, pb.shape)
        gv = ob.var(gb_.orig)
        _pserver_var(gb, gv, gb_.server_name, gb_.shape)
        if multi:
            names = copies[gb_.server_name] = _trainer_copies(plan, gb_)
            recv_inputs.extend(_declare_like(gb, gv, names, gb_.shape))
        else:
            recv_inputs.append(gb_.server_name)
    return recv_inputs, copies


def _trainer_copies(plan, gblk):
    """The names of the per-trainer copies of gradient block ``gblk`` a pserver receives."""
    return ["%s.trainer_%d" % (gblk.server_name, k) for k in range(plan.trainers)]


def _declare_like(block, src, names, shape):
    """Declare in ``block`` each of ``names`` (those it has not yet) as ``_pserver_var`` declares a
    non-persistable copy of ``src`` with ``shape``: the first one so, the others as copies of it
    under their names (equal fields, made without normalising them again). Returns ``names``."""
    first = None
    vars_ = block.vars
    for name in names:
        if name in vars_:
            continue
        if first is None:
            first = _pserver_var(block, src, name, shape, persistable=False)
        else:
            vars_[name] = _copy_var(first, block, name)
    if first is not None:
        block.program._bump_version()
    return names


def _append_param_blocks(plan, prog, ob, pairs, trainer_copies, grad_to_block, sparse_to_param, sum_on_arrival):
    """One optimize block per parameter block held here (the trainers' gradients averaged first when
    there are several sync trainers, whose copies ``trainer_copies`` names: the block begins with
    their ``sum``, which a pserver may do as they arrive for a dense gradient, listed in
    ``sum_on_arrival``); appends to ``grad_to_block`` / ``sparse_to_param`` / ``sum_on_arrival`` and
    returns the blocks."""
    blocks = []
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
        if trainer_copies:
            blk.append_op("sum", inputs={"X": trainer_copies[merged]},
                          outputs={"Out": [merged]}, attrs={"use_mkldnn": False, OP_ROLE_ATTR: OpRole.Optimize})
            if gblk.orig not in plan.sparse_grads:
                sum_on_arrival.append("%s:%d" % (merged, blk.idx))
            # fluidist: row-sparse gradients are averaged too (Paddle only summed them, so a sparse
            # table learned `trainers` times faster than the local run it should equal)
            blk.append_op("scale", inputs={"X": [merged]}, outputs={"Out": [merged]},
                          attrs={"scale": 1.0 / plan.trainers, OP_ROLE_ATTR: OpRole.Optimize})
        rename = _block_renames(plan, pb, gblk, ob, per_param_count[param] > 1)
        for op in ops_for_param:
            _append_block_op(blk, op, rename, ob, prog)
            if registry.update_rule(op) is not None and gblk.orig in plan.sparse_grads:
                sparse_to_param.append("%s:%s" % (merged, pb.server_name))
        prog._rollback()
        blocks.append(blk)
    return blocks


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
    update = t.row_update()
    if update is None:    # the user's rule is not row-wise (SGD's always is): the pservers fall back to SGD
        import warnings
        warnings.warn("the distributed table %r is updated with SGD on the pservers (its optimizer %r updates "
                      "every row or keeps one-element state, which a shard of rows cannot)" % (t.name, t.optimizer))
    for acc in t.accumulators().values():
        gb.create_var(name=acc, shape=[t.shard_rows(k, n), t.width], dtype=t.dtype, persistable=True)
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
    if update is None:
        blk.append_op("sgd", inputs={"Param": [t.name], "Grad": [merged], "LearningRate": [t.lr]},
                      outputs={"ParamOut": [t.name]}, attrs=dict(opt, op_role_var=[t.name, merged]))
    else:
        inputs = {slot: list(update.input(slot)) for slot in update.inputs}
        inputs.update(Param=[t.name], Grad=[merged], LearningRate=[t.lr])
        outputs = {slot: list(update.output(slot)) for slot in update.outputs}
        outputs["ParamOut"] = [t.name]
        blk.append_op(update.type, inputs=inputs, outputs=outputs,
                      attrs=dict(update.attrs, **opt, op_role_var=[t.name, merged]))
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
    for n in plan.scalar_accumulators.get(param, ()):
        # each block's update advances its own copy (Adam's beta powers): one shared copy would be
        # advanced once per block and step
        rename[n] = plan.accumulator_name(n, pb, several_blocks_here)
    return {"names": rename, "shapes": rows_scale, "acc_shape": acc_shape}


def _append_block_op(blk, op, rename, ob, prog):
    """Copy ``op``, an optimize op of the origin program, into ``blk`` with its names renamed for the
    block (``rename``: ``_block_renames``); each variable it names that the pserver's global block
    has not declared yet is declared there first (``_declare_for_block``), in the order it names them."""
    names = rename["names"]
    gb = prog.global_block()
    known = gb.vars
    inputs, outputs = {}, {}
    for given, mapped in ((op.inputs, inputs), (op.outputs, outputs)):
        for slot, ns in given.items():
            out = mapped[slot] = []
            for n in ns:
                new = names.get(n, n)
                if new not in known:
                    _declare_for_block(gb, ob, n, new, rename)
                out.append(new)
    attrs = op.attrs.copy()
    if attrs.get(OP_ROLE_VAR_ATTR):
        attrs[OP_ROLE_VAR_ATTR] = [names.get(n, n) for n in attrs[OP_ROLE_VAR_ATTR]]
    blk.append_op(op.type, inputs=inputs, outputs=outputs, attrs=attrs)


def _declare_for_block(gb, ob, n, new, rename):
    """Declare ``new``, the name on the pserver of ``n`` (a variable of the origin block ``ob``), in
    its global block ``gb``: a renamed one (an accumulator) persistable with its block's shape, any
    other with the shape of the block it derives from (``_derived_shape``) or its own."""
    src = ob._find_var_recursive(n)
    if src is None:
        return
    if n in rename["names"]:
        _pserver_var(gb, src, new, rename["acc_shape"].get(new), persistable=True)
    else:
        _pserver_var(gb, src, n, _derived_shape(n, rename["shapes"]), persistable=src.persistable)


def _derived_shape(n, shapes):
    """The shape on the pserver of ``n``, a variable derived from the param or grad of a block
    (``fc_w@GRAD@CLIP``, ``fc_w@L2DECAY``): the block's (``shapes``: {origin name: block shape});
    None for other variables."""
    base = n.split("@")[0]
    shape = None
    for orig, s in shapes.items():
        if n != orig and (n.startswith(orig + "@") or base == orig):
            shape = s
    return shape


def _clone_op_into(block, op, origin, prog):
    """Copy an op (and the vars it names, and its sub-blocks) from ``origin`` into ``block``."""
    gb = prog.global_block()
    ob = op.block
    for n in op.input_arg_names + op.output_arg_names:
        src = ob._find_var_recursive(n)
        if src is not None and not gb.has_var(n) and not block.has_var(n):
            target = gb if src.block.idx == 0 else block
            _pserver_var(target, src, n, persistable=src.persistable)
    attrs = op.attrs.copy()
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
    svars = sb.vars
    for v in pgb.vars.values():     # (Block._clone_variable without persistable forced, one bump for all)
        svars[v.name] = _copy_var(v, sb)
    prog._bump_version()
    blocks_here = {}
    for p in plan.params:
        for b in plan.param_blocks[p]:
            if b.endpoint == endpoint and b.name != p:
                blocks_here.setdefault(p, []).append(b)
    table = plan.table
    block_copies = defaultdict(list)   # accumulator -> its per-block copies here (two blocks of one param)
    for name in [n for n in pgb.vars if ".block" in n]:
        # a block of a variable (its own name's first suffix is .block<i>, not .trainer_<k>: orig_varname)
        at = name.find(".block")
        if not 0 <= name.find(".trainer_") < at:
            block_copies[name[:at]].append(name)
    # the inits that give this pserver an op: the table's, copies of a parameter with blocks here, and
    # those of a variable here, or with blocks or per-block copies here (the others are skipped below)
    wanted = set(pgb.vars)
    wanted.update(blocks_here, block_copies)
    inits = [init for init in _startup_inits(plan, origin_startup)
             if init[2] in wanted or init[3] is not None or init[0] != "init"]
    for what, op, out, src, kind in inits:
        if what == "table":
            _append_table_init(sb, op, table, plan.endpoints.index(endpoint), len(plan.endpoints))
            continue
        if what == "table accumulator":
            _append_table_accumulator_init(sb, op, table, plan.endpoints.index(endpoint), len(plan.endpoints))
            continue
        if src is not None and src in blocks_here:
            # a copy of a sliced parameter (Lookahead's slow weights): each block copies its block
            here = blocks_here[src]
            for b in here:
                target = plan.accumulator_name(out, b, len(here) > 1)
                if pgb.has_var(target):
                    sb.append_op("assign", inputs={"X": [b.name]}, outputs={"Out": [target]})
            continue
        if out in blocks_here:
            for b in blocks_here[out]:
                _append_block_init(sb, op, kind, out, b)
        elif out in pgb.vars:
            attrs = op.attrs.copy()
            shape = pgb.vars[out].shape
            if kind in ("random", "fill") and shape is not None:
                attrs["shape"] = list(shape)
            sb.append_op(op.type, inputs=op.inputs, outputs=op.outputs, attrs=attrs)
        else:
            for name in block_copies.get(out, ()):
                attrs = op.attrs.copy()
                attrs["shape"] = list(pgb.vars[name].shape)
                sb.append_op(op.type, inputs=op.inputs, outputs={"Out": [name]}, attrs=attrs)
    _init_trainer_counters(plan, origin_startup, sb)
    return prog


def _startup_inits(plan, origin_startup):
    """The origin startup's ops a pserver's startup may take, as ``(what, op, output, copied input or
    None, init kind)``; ``what``: "table" (the distributed table's initialiser), "table accumulator"
    (one of its row update's), or "init" (an op of one output). Read once per plan and startup
    program (every pserver asks), not once per pserver."""
    key = (id(origin_startup), origin_startup._version)
    cached = plan.startup_inits
    if cached is not None and cached[0] == key and cached[1] is origin_startup:
        return cached[2]
    table = plan.table
    table_accs = set(table.accumulators().values()) if table is not None else set()
    inits = []
    ops = origin_startup.global_block().ops
    kinds = {t: registry.fact(t, "init") for t in {op.type for op in ops}}
    for op in ops:
        if int(op.attrs.get(OP_ROLE_ATTR) or 0) & (RPC | DIST):
            continue   # a trainer startup's own recv / fetch_barrier / concat
        outs = op.output_arg_names
        if table is not None and outs == [table.name]:
            inits.append(("table", op, outs[0], None, None))
        elif table is not None and outs and outs[0] in table_accs:
            inits.append(("table accumulator", op, outs[0], None, None))
        elif len(outs) == 1:
            kind = kinds[op.type]
            src = op.input("X") if kind == "copy" else []
            inits.append(("init", op, outs[0], src[0] if src else None, kind))
    plan.startup_inits = (key, origin_startup, inits)
    return inits


def _init_trainer_counters(plan, origin_startup, sb):
    """Async LR decay: the pserver's copies of the trainer counters start so that their sum, the
    step counter, is what the origin startup gives it plus one step (the rate of the first step, as
    a local run's ``increment`` gives it); each arriving step then adds to its trainer's copy."""
    counted = async_lr_counter(plan)
    if counted is None:
        return
    counter, step = counted
    begin = 0.0
    for op in origin_startup.global_block().ops:
        if op.output_arg_names == [counter] and registry.fact(op, "init") == "fill":
            begin = float(op.attr("value"))
    dtype = sb.var(counter).dtype if sb.has_var(counter) else "int64"
    for k, name in enumerate(trainer_counter_names(plan, counter)):
        sb._prepend_op("fill_constant", outputs={"Out": [name]},
                       attrs={"shape": [1], "value": begin + step if k == 0 else 0.0, "dtype": dtype,
                              "force_cpu": False})


def _append_table_init(sb, op, table, k, n):
    """Shard ``k`` of the table gets rows k, k+n, ... of what the whole table gets locally."""
    attrs = op.attrs.copy()
    shape = [table.shard_rows(k, n), table.width]
    kind = registry.fact(op, "init")
    if kind == "random":
        attrs.update(full_shape=list(op.attrs["shape"]), shape=shape, row_begin=k, row_end=table.rows,
                     row_step=n)
    elif kind == "fill":
        attrs["shape"] = shape
    else:
        raise ValueError("cannot initialise the distributed table %r on a pserver from a %r op"
                         % (table.name, op.type))
    sb.append_op(op.type, inputs=op.inputs, outputs=op.outputs, attrs=attrs)


def _append_table_accumulator_init(sb, op, table, k, n):
    """An accumulator of the table's row update starts as the constant its startup op fills in; on
    the pserver it is rows materialised when first written (``lazy_rows``), so a table of 100M rows
    does not also cost its accumulators' 100M rows."""
    if registry.fact(op, "init") != "fill" or "value" not in op.attrs:
        raise ValueError("cannot initialise %r, an accumulator of the distributed table %r, from a %r op "
                         "(the pservers hold it as rows filled with a constant)"
                         % (op.output_arg_names[0], table.name, op.type))
    sb.append_op("lazy_rows", outputs={"Out": list(op.output_arg_names[:1])},
                 attrs={"shape": [table.shard_rows(k, n), table.width], "value": float(op.attrs["value"]),
                        "dtype": op.attrs.get("dtype") or table.dtype})


def _append_block_init(sb, op, kind, whole, b):
    """Block ``b`` of ``whole`` initialised by a copy of ``op``, its init op (of registry init fact ``kind``)."""
    attrs = op.attrs.copy()
    if kind == "random":
        attrs["full_shape"] = list(op.attrs["shape"])
        attrs["shape"] = list(b.shape)
        attrs["row_begin"], attrs["row_end"] = b.row_begin, b.row_begin + b.rows
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
