"""Gradients summed on a sync pserver as they arrive, instead of in the round.

The transpiler's optimize block of a parameter block, with several trainers, begins with
``sum(X=[g.trainer_0, ..., g.trainer_{n-1}]) -> g`` followed by ``scale(g, 1/n)`` and the optimizer.
Run as written, the round (on every trainer's critical path: they all wait for it) allocates ``g``
and reads every trainer's copy. Here each trainer's gradient is added into a buffer kept per block
the moment it arrives, while the other trainers are still computing or sending, and the round runs
the block without its ``sum`` (a copy of the program with those ``sum`` ops removed) on the buffer.

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
    __slots__ = ("out", "block", "inputs", "buf", "round", "arrived", "ok")

    def __init__(self, out, block, inputs):
        self.out, self.block, self.inputs = out, block, inputs
        self.buf = None
        self.round = -1
        self.arrived = set()
        self.ok = False


class ArrivalSums:
    """Sums per optimize block of a sync pserver program (``round_blocks``), for ``fanin`` trainers."""

    def __init__(self, program, round_blocks, fanin):
        self.program = program
        self.by_input = {}     # received var name -> _Acc
        self.by_block = {}     # block idx -> _Acc
        self.derived = None
        if fanin < 2:
            return
        gb = program.global_block()
        for idx in round_blocks:
            ops = program.block(idx).ops
            if not ops or ops[0].type != "sum":
                continue
            xs, outs = list(ops[0].inputs.get("X") or []), list(ops[0].outputs.get("Out") or [])
            if len(xs) != fanin or len(set(xs)) != fanin or len(outs) != 1 or outs[0] in xs:
                continue
            if any(_is_sparse(gb, n) for n in xs + outs) or any(n in self.by_input for n in xs):
                continue
            acc = _Acc(outs[0], idx, xs)
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
            acc.round, acc.arrived, acc.ok = round_no, set(), True
        if not acc.ok:
            return
        if name in acc.arrived or type(value) is not np.ndarray or value.dtype.kind != "f":
            acc.ok = False
            return
        t0 = time.perf_counter()
        if not acc.arrived:
            if acc.buf is None or acc.buf.shape != value.shape or acc.buf.dtype != value.dtype:
                acc.buf = np.empty(value.shape, value.dtype)
            np.copyto(acc.buf, value)
        elif acc.buf.shape != value.shape or acc.buf.dtype != value.dtype:
            acc.ok = False
            return
        else:
            np.add(acc.buf, value, out=acc.buf)
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
