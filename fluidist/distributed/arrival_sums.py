"""Gradients summed on a sync pserver as they arrive, instead of in the round.

With several trainers, the transpiler's optimize block of a parameter block begins with
``sum(X=[g.trainer_0, ..., g.trainer_{n-1}]) -> g`` followed by ``scale(g, 1/n)`` and the optimizer;
for a dense gradient it lists that block in the ``listen_and_serv`` attr ``sum_on_arrival``
(``"g:block_index"``: block ``block_index`` begins with the sum of the trainers' copies of ``g``).
Run as written, the round (on every trainer's critical path: they all wait for it) allocates ``g``
and reads every trainer's copy. Here each trainer's gradient is added into a buffer kept per block
the moment it arrives, while the other trainers are still computing or sending, and the round runs
the block without its first op (a copy of the program with those ops removed) on the buffer. The
round's first arrival is held as it came (it stays valid: it is also stored under its own name) and
the second is added to it into the buffer, one pass over both instead of a copy and an addition.

Exactness: the buffer holds the same sum. With two trainers it is bit-identical (a + b = b + a);
with more, additions happen in arrival order rather than by trainer id (float rounding may differ in
the last bit). A round falls back to the block as written (every arriving value is still stored
under its own name) when not every trainer's gradient arrived exactly once for it, e.g. once a
trainer has completed and its last gradient is summed again, as Paddle does.
"""
import time

import numpy as np

from .. import timeline as _timeline


class _Acc:
    __slots__ = ("out", "block", "inputs", "buf", "first", "round", "arrived", "ok")

    def __init__(self, out, block, inputs):
        self.out, self.block, self.inputs = out, block, inputs
        self.buf = None
        self.first = None       # the round's first arrival, until the second is added to it
        self.round = -1
        self.arrived = set()
        self.ok = False


class ArrivalSums:
    """Sums of a sync pserver program's optimize blocks for ``fanin`` trainers: ``sums`` is the
    ``sum_on_arrival`` attr read as ``{summed gradient: block index}``."""

    def __init__(self, program, sums, fanin):
        self.program = program
        self.by_input = {}     # received var name -> _Acc
        self.by_block = {}     # block idx -> _Acc
        self.derived = None
        if fanin < 2:
            return
        gb = program.global_block()
        for out, idx in sums.items():
            if not 1 <= idx < program.num_blocks or not program.block(idx).ops:
                raise ValueError("listen_and_serv: sum_on_arrival names block %d, which has no ops to begin "
                                 "with a sum" % idx)
            first = program.block(idx).ops[0]
            xs, outs = list(first.inputs.get("X") or []), list(first.outputs.get("Out") or [])
            if outs != [out] or len(xs) != fanin or len(set(xs)) != fanin or out in xs:
                raise ValueError("listen_and_serv: sum_on_arrival says block %d begins with the sum of %d "
                                 "trainers' %r, but its first op %r reads %s into %s"
                                 % (idx, fanin, out, first.type, xs, outs))
            if any(_is_sparse(gb, n) for n in xs + outs) or any(n in self.by_input for n in xs):
                continue
            acc = _Acc(out, idx, xs)
            self.by_block[idx] = acc
            for n in xs:
                self.by_input[n] = acc
        if self.by_block:
            self.derived = program.clone()
            for idx in self.by_block:
                self.derived.block(idx)._remove_op(0)

    def add(self, name, value, round_no):
        """Take the gradient ``name`` that arrived for round ``round_no`` (0-based: the round that runs
        next). Returns nothing; the value must also be stored under ``name`` by the caller."""
        acc = self.by_input.get(name)
        if acc is None:
            return
        if acc.round != round_no:
            acc.round, acc.arrived, acc.ok, acc.first = round_no, set(), True, None
        if not acc.ok:
            return
        if name in acc.arrived or type(value) is not np.ndarray or value.dtype.kind != "f":
            acc.ok, acc.first = False, None
            return
        t0 = time.perf_counter()
        if not acc.arrived:
            acc.first = value       # held, not copied: the next arrival is added to it in one pass
        else:
            held = acc.first if acc.first is not None else acc.buf     # (the running sum, once begun)
            if held.shape != value.shape or held.dtype != value.dtype:
                acc.ok, acc.first = False, None
                return
            if acc.buf is None or acc.buf.shape != value.shape or acc.buf.dtype != value.dtype:
                acc.buf = np.empty(value.shape, value.dtype)
            np.add(held, value, out=acc.buf)
            acc.first = None
        acc.arrived.add(name)
        if _timeline.enabled:
            _timeline.complete("op", "sum on arrival", t0, time.perf_counter() - t0, var=name)

    def program_for(self, idx, round_no, set_value):
        """The program whose block ``idx`` the round ``round_no`` runs: the copy without the ``sum``
        (after storing the sum with ``set_value(name, array)``) when every trainer's gradient arrived
        once for this round, else the program as written."""
        acc = self.by_block.get(idx)
        if acc is None or acc.round != round_no or not acc.ok or len(acc.arrived) != len(acc.inputs):
            return self.program
        set_value(acc.out, acc.buf)
        return self.derived


def _is_sparse(block, name):
    v = block.vars.get(name)
    return v is not None and str(v.type).upper().endswith("SELECTED_ROWS")
