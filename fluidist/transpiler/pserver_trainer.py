"""pserver mode's trainer rewrite: ``rewrite_trainer`` applies the plan to the trainer's main and
startup programs in place (sends, barriers, recvs, the distributed table's prefetch), as Paddle did."""
from ..framework import registry, unique_name
from ..framework.op_role import OP_ROLE_ATTR, OP_ROLE_VAR_ATTR, is_optimize_or_lr_sched_op
from .pserver_plan import DIST, RPC, _ctrl_var, _is_table_lookup, types_with


# ---------------------------------------------------------------------------------------- trainer
def rewrite_trainer(plan, program, startup):
    """Insert split/send/send_barrier/recv/fetch_barrier/concat into ``program`` and recv/concat
    into ``startup`` (in place). Optimize and LR ops are removed later by ``finish_trainer``."""
    block = program.global_block()
    tid = plan.trainer_id
    # create block vars / rename single-block grads
    with block.renames() as renames:
        for p in plan.params:
            g = plan.grad_of[p]
            gv = block.var(g)
            gbs = plan.grad_blocks[g]
            if len(gbs) == 1:
                if gbs[0].name != g:
                    renames.rename(g, gbs[0].name)
            else:
                for b in gbs:
                    block.create_var(name=b.name, shape=b.shape, dtype=gv.dtype, type=gv.type)
                pv = block.var(p)
                for b in plan.param_blocks[p]:
                    block.create_var(name=b.name, shape=b.shape, dtype=pv.dtype, type=pv.type)
    send_dummies = []
    order = [plan.grad_of[p] for p in plan.params]
    param_of = {g: p for p, g in plan.grad_of.items()}
    sent = {g: plan.grad_blocks[g][0].name if len(plan.grad_blocks[g]) == 1 else g for g in order}
    last, lookups = _scan_ops(block, list(sent.values()) + ([plan.table.grad] if plan.table is not None else []),
                              plan.table)
    with block.edits() as edits:
        _insert_sends(plan, block, edits, sent, param_of, send_dummies, last)
    _send_lr_steps(plan, program, startup)
    barrier_out = barrier = None
    if plan.half_async:     # Paddle 1.8: the step ends at the half-async communicator's barrier
        block.append_op("send_barrier", inputs={"X": send_dummies}, outputs={"Out": [_ctrl_var(block).name]},
                        attrs={"endpoints": plan.endpoints, "trainer_id": tid, "half_async": True,
                               OP_ROLE_ATTR: RPC})
    if plan.sync:
        barrier_out = _ctrl_var(block).name
        barrier = block.append_op("send_barrier", inputs={"X": send_dummies}, outputs={"Out": [barrier_out]},
                                  attrs={"endpoints": plan.endpoints, "trainer_id": tid, "half_async": False,
                                         OP_ROLE_ATTR: RPC})
    recvs = []
    for p in plan.params:
        g = plan.grad_of[p]
        pbs = plan.param_blocks[p]
        dep = barrier_out if plan.sync else plan.send_dummies[g]
        role_var = [p, plan.grad_blocks[g][0].name if len(pbs) == 1 else g]
        recvs.append(block.append_op("recv", inputs={"X": [dep]}, outputs={"Out": [b.name for b in pbs]},
                                     attrs=_recv_attrs(plan, p, **{OP_ROLE_VAR_ATTR: role_var})))
    ask_ahead(recvs)
    recv_outs = [n for op in recvs for n in op.output("Out")]
    if plan.sync:
        block.append_op("fetch_barrier", inputs={"X": [barrier_out]}, outputs={"Out": recv_outs},
                        attrs={"endpoints": plan.endpoints, "trainer_id": tid, OP_ROLE_ATTR: RPC})
    for p in plan.params:
        pbs = plan.param_blocks[p]
        if len(pbs) > 1:
            block.append_op("concat", inputs={"X": [b.name for b in pbs]}, outputs={"Out": [p]},
                            attrs={"axis": 0, OP_ROLE_ATTR: DIST})
    if plan.table is not None:
        _rewrite_table_trainer(plan, program, barrier, lookups, last.get(plan.table.grad))
    _rewrite_trainer_startup(plan, program, startup)
    _mark_distributed(plan, program)


def _recv_attrs(plan, param, **extra):
    """The attrs of the ``recv`` of ``param``'s blocks: where each comes from and, when the parameter
    is sliced, the rows of the parameter each block is (the Dist ``concat`` after the recvs joins
    them; ``recv`` writes them straight into those rows)."""
    pbs = plan.param_blocks[param]
    sliced = len(pbs) > 1
    attrs = {"epmap": [b.endpoint for b in pbs], "recv_varnames": [], "trainer_id": plan.trainer_id,
             "sync_mode": plan.sync, "row_block_of": [param] * len(pbs) if sliced else [],
             "row_block_begin": [b.row_begin for b in pbs] if sliced else [], OP_ROLE_ATTR: RPC}
    attrs.update(extra)
    return attrs


def ask_ahead(recvs):
    """The first of consecutive ``recv`` ops asks for what all of them receive (one wait instead of
    a round trip per op): its ``batch_epmap`` / ``batch_varnames`` list the others' blocks."""
    if len(recvs) < 2:
        return
    rest = recvs[1:]
    recvs[0]._set_attr("batch_epmap", [ep for op in rest for ep in op.attr("epmap")])
    recvs[0]._set_attr("batch_varnames", [n for op in rest for n in (op.attr("recv_varnames") or op.output("Out"))])


def _insert_sends(plan, block, edits, sent, param_of, send_dummies, last):
    """After the last writer of each gradient (``last``: by name), its split (when sliced) and its
    send; ``sent``: {gradient: the name its send sends (itself or its only block)}, in order."""
    tid = plan.trainer_id
    for g, sent_name in sent.items():
        gbs = plan.grad_blocks[g]
        p = param_of[g]
        anchor = last.get(sent_name)
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


def _scan_ops(block, names, table):
    """One pass over the ops of ``block``: ``({name: the last op that writes it}`` for those of
    ``names`` some op writes, ``[the lookups of the distributed table]``, in order; none without a
    table). ``Block.last_writer`` / ``readers_of`` would build the block's def-use index, a pass over
    every name of every op that each later edit then keeps up to date."""
    wanted = set(names)
    last, lookups = {}, []
    table_w = [table.name] if table is not None else None
    lookup_types = {}
    for op in block.ops:
        for out in op.outputs.values():
            if not wanted.isdisjoint(out):
                for name in out:
                    if name in wanted:
                        last[name] = op
        if table_w is not None and op.inputs.get("W") == table_w:
            is_lookup = lookup_types.get(op.type)
            if is_lookup is None:
                is_lookup = lookup_types[op.type] = _is_table_lookup(op)
            if is_lookup:
                lookups.append(op)
    return last, lookups


def async_lr_counter(plan):
    """Async mode with an LR schedule that counts steps (an ``increment`` among the LR ops):
    ``(counter name, its step)``; None otherwise."""
    if plan.sync or not plan.lr_op_indices:
        return None
    ops = plan.origin_main.global_block().ops
    for i in plan.lr_op_indices:
        if registry.fact(ops[i], "counter"):
            return ops[i].output("Out")[0], float(ops[i].attr("step") or 1.0)
    return None


def trainer_counter_names(plan, counter):
    """Paddle's per-trainer step counters of async LR decay: ``<counter>.trainer_<k>``."""
    return ["%s.trainer_%d" % (counter, k) for k in range(plan.trainers)]


def _send_lr_steps(plan, program, startup):
    """Async with an LR schedule, in Paddle 1.8's layout: every trainer counter
    ``<counter>.trainer_<k>`` starts at the counter's step (one ``fill_constant`` each in the startup),
    and each trainer step, after its gradients, sends its own to every pserver (``merge_add``: a
    communicator merging several steps sends their sum). A pserver adds what arrives into its copy
    (``accumulate_on_arrival``) and its LR block, whose ``increment`` became ``sum`` of the trainer
    counters, then decays the rate by the steps of all trainers."""
    found = async_lr_counter(plan)
    if found is None:
        return
    counter, step = found
    block, sb = program.global_block(), startup.global_block()
    dtype = block.var(counter).dtype
    names = trainer_counter_names(plan, counter)
    for name in names:
        block.create_var(name=name, shape=[1], dtype=dtype, persistable=True)
        sb.create_var(name=name, shape=[1], dtype=dtype, persistable=True)
        sb._prepend_op("fill_constant", outputs={"Out": [name]},
                       attrs={"shape": [1], "value": step, "dtype": dtype, "force_cpu": False})
    mine = names[plan.trainer_id] if 0 <= plan.trainer_id < plan.trainers else names[0]
    block.append_op("send", inputs={"X": [mine] * len(plan.endpoints)}, outputs={"Out": [_ctrl_var(block).name]},
                    attrs={"epmap": plan.endpoints, "sections": [], "send_varnames": [], "merge_add": True,
                           "use_send_handler": False, "trainer_id": plan.trainer_id, "sync_mode": False,
                           OP_ROLE_ATTR: RPC, OP_ROLE_VAR_ATTR: [mine, mine]})


def _prefetch_names(k):
    return "prefetch_compress_in_tmp_%d" % k, "prefetch_compress_out_tmp_%d" % k


def _rewrite_table_trainer(plan, program, barrier, lookups, anchor):
    """Lookups of the distributed table (``lookups``) become split_ids / prefetch / merge_ids; its
    row-sparse gradient goes out through split_ids / send after ``anchor``, its last writer, one part
    per pserver (which the ``send_barrier`` ``barrier`` of sync mode then waits for too)."""
    t = plan.table
    block = program.global_block()
    n = len(plan.endpoints)
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
    if anchor is None:
        raise ValueError("transpile: no op writes the gradient %r of the distributed table" % t.grad)
    gv = block.var(t.grad)
    parts = [t.trainer_grad(plan.trainer_id, k, plan.sync, plan.trainers) for k in range(n)]
    for name in parts:
        block.create_var(name=name, shape=[-1, t.width], dtype=gv.dtype, type="SELECTED_ROWS")
    anchor = block.insert_after(anchor, "split_ids", inputs={"Ids": [t.grad]}, outputs={"Out": parts},
                                attrs={"shard_rows": True, OP_ROLE_ATTR: DIST})
    dummy = _ctrl_var(block)
    block.insert_after(anchor, "send", inputs={"X": parts}, outputs={"Out": [dummy.name]},
                     attrs={"epmap": plan.endpoints, "sections": [], "send_varnames": [],
                            "trainer_id": plan.trainer_id, "sync_mode": plan.sync, OP_ROLE_ATTR: RPC,
                            OP_ROLE_VAR_ATTR: [t.name, t.grad]})
    plan.send_dummies[t.grad] = dummy.name
    if barrier is not None:
        barrier.set_input("X", barrier.input("X") + [dummy.name])


def _rewrite_trainer_startup(plan, program, startup):
    sb = startup.global_block()
    if plan.table is not None:
        _fake_init_table(plan.table, sb)
    main_block = program.global_block()
    tid = plan.trainer_id
    recvs = []
    for p in plan.params:
        pbs = plan.param_blocks[p]
        pv = main_block.var(p)
        for b in pbs:
            if not sb.has_var(b.name):
                sb.create_var(name=b.name, shape=b.shape, dtype=pv.dtype, type=pv.type)
        recvs.append(sb.append_op("recv", inputs={"X": []}, outputs={"Out": [b.name for b in pbs]},
                                  attrs=_recv_attrs(plan, p)))
    ask_ahead(recvs)
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


def _fake_init_table(table, sb):
    """The distributed table and its accumulators live on the pservers only: each op of the trainer's
    startup ``sb`` that writes one of them becomes a ``fake_init`` of the table's shape. Their
    writers are found in one pass over the startup (its def-use index would cost a pass and more)."""
    writers = {name: [] for name in [table.name] + list(table.accumulators().values())}
    wanted = writers.keys()
    for op in sb.ops:
        for names in op.outputs.values():
            if wanted.isdisjoint(names):
                continue
            for name in names:
                found = writers.get(name)
                if found is not None and op not in found:
                    found.append(op)
    gone = {}
    with sb.edits() as edits:
        for name, ops in writers.items():
            for op in ops:
                if id(op) not in gone:      # (an op replaced for an earlier name is not in the block any more)
                    edits.insert_before(op, "fake_init", outputs={"Out": [name]},
                                        attrs={"shape": [table.rows, table.width]})
                    gone[id(op)] = op
    if gone:
        sb.remove_ops(gone.values())


def _mark_distributed(plan, program):
    program._is_distributed = True
    program._endpoints = list(plan.endpoints)
    program._is_chief = plan.trainer_id == 0
    program._distributed_lookup_table = plan.table.name if plan.table is not None else None


def _fake_init_sparse_tables(program, startup):
    """Paddle 1.8's ``get_trainer_program``: the initialiser of each table a row-sparse lookup reads
    (``is_sparse``) becomes a ``fake_init`` of its shape in the trainer's startup: the table's values
    are the pservers', received by the startup's ``recv`` after it. A table with another number of
    initialisers than one keeps them (Paddle refused it). One pass over the startup's ops (a table
    of a CTR model has hundreds of them)."""
    tables = {}
    ops = program.global_block().ops
    lookup = types_with(ops, "table_lookup", False)
    for op in ops:
        if op.type in lookup and op.attr("is_sparse") and op.input("W"):
            tables.setdefault(op.input("W")[0], [])
    if not tables:
        return
    sb = startup.global_block()
    names = tables.keys()
    for op in sb.ops:
        for out in op.outputs.values():
            if not names.isdisjoint(out):
                if not int(op.attrs.get(OP_ROLE_ATTR) or 0) & (RPC | DIST):
                    for name in dict.fromkeys(op.output_arg_names):
                        if name in tables:
                            tables[name].append(op)
                break
    replaced = set()
    with sb.edits() as edits:
        for name, inits in tables.items():
            if len(inits) != 1 or registry.fact(inits[0], "init") == "placeholder":
                continue
            shape = list(inits[0].attr("shape") or program.global_block().var(name).shape)
            edits.insert_before(inits[0], "fake_init", outputs={"Out": [name]}, attrs={"shape": shape})
            replaced.add(id(inits[0]))
    if replaced:
        sb.ops = [op for op in sb.ops if id(op) not in replaced]


def finish_trainer(plan, program, startup=None):
    """Remove optimize and LR-schedule ops (they run on the pservers); ops that read the updated
    parameters (registry fact ``after_update``: model averaging) move to the end, after the
    parameters are received. With ``startup``, its row-sparse tables' initialisers become
    ``fake_init`` (``_fake_init_sparse_tables``)."""
    if startup is not None:
        _fake_init_sparse_tables(program, startup)
    block = program.global_block()
    moving = types_with(block.ops, "after_update")
    after = [op for op in block.ops if op.type in moving]
    moved = {id(op) for op in after}
    block.ops = [op for op in block.ops if not (is_optimize_or_lr_sched_op(op) or id(op) in moved)] + after
    program._bump_version()
    return program
