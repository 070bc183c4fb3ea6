"""What a parameter server accepts, read from its program: the acceptance rules of one
``listen_and_serv``.

A pserver program says, as data, everything a well-behaved trainer may ask of it:

- ``send``: only the variables ``listen_and_serv`` receives (its ``X``: gradient blocks, per-trainer
  copies ``<grad>.trainer_<k>`` in sync mode, learning-rate steps), each of its declared dtype, dense or
  row-sparse as declared (``SELECTED_ROWS``), of the declared shape (row-sparse: the declared row width,
  and the height of the declared variable or, when that is unknown, of the parameter its optimize block
  updates); a per-trainer copy only from that trainer.
- ``get``: only persistable state the pserver holds (parameters, optimizer accumulators, the learning
  rate) or a variable of its global block that its served blocks compute (``layers.io.ListenAndServ``'s
  results), never a received gradient, and without a payload.
- ``prefetch``: only the id variables of its prefetch blocks, as a dense integer array of ids that lie
  in the table, naming an output the block writes.
- ``checkpoint``: only into a directory under a root fixed when the pserver starts
  (``FLUIDIST_CHECKPOINT_ROOT``, else its working directory then), never through a symbolic link out of it.

Everything else raises :class:`Refused` with a message naming the trainer and the variable; the pserver
answers it with an error reply and serves on. The rules also give the largest message a trainer may
send (:attr:`ServingRules.max_message_bytes`), which the pserver's socket enforces before buffering a
payload.
"""
import os
import re

import numpy as np

from ..core.tensor import SelectedRows
from ..framework import registry
from ..framework.dtypes import VarType

CHECKPOINT_ROOT_ENV = "FLUIDIST_CHECKPOINT_ROOT"
MAX_MESSAGE_ENV = "FLUIDIST_MAX_MESSAGE_BYTES"
MESSAGE_MARGIN = (1 << 20) + (64 << 10)    # the header frame (at most 1 MiB) and CURVE's framing
UNBOUNDED_FLOOR = 64 << 20                 # row-sparse or unknown-size payloads: at least this much
_NUMERIC = frozenset(["bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32", "float64"])
_PER_TRAINER = re.compile(r"\.trainer_(\d+)(?:\.|$)")
_ID_DTYPES = frozenset(["int64", "int32"])


class Refused(ValueError):
    """A request the pserver's program does not allow; the message says why."""


def _known(shape):
    return shape is not None and all(d is not None and d >= 0 for d in shape)


def _nbytes(var):
    if not _known(var.shape) or var.dtype not in _NUMERIC:
        return None
    return int(np.prod(var.shape, dtype=np.int64)) * np.dtype(var.dtype).itemsize


class _Recv:
    """One variable the pserver receives: dtype, shape, dense or row-sparse, the expected height of
    a row-sparse value (None when unknown), and the trainer it must come from (None: any)."""

    __slots__ = ("name", "dtype", "shape", "sparse", "height", "trainer")

    def __init__(self, name, dtype, shape, sparse, height, trainer):
        self.name, self.dtype, self.shape, self.sparse = name, dtype, shape, sparse
        self.height, self.trainer = height, trainer


class _Prefetch:
    __slots__ = ("ids", "table", "rows", "outputs")

    def __init__(self, ids, table, rows, outputs):
        self.ids, self.table, self.rows, self.outputs = ids, table, rows, outputs


class ServingRules:
    """The acceptance rules of one pserver program (see the module doc)."""

    def __init__(self, program, endpoint, recv_names, grad_to_block, prefetch_blocks, checkpoint_root=None):
        self.endpoint = endpoint
        gb = program.global_block()
        self._gb = gb
        self.recv = {}
        for name in recv_names:
            var = gb.vars.get(name)
            if var is None:
                continue   # the executor reports a missing variable when the op is checked
            sparse = var.type == VarType.SELECTED_ROWS
            height = None
            if sparse:
                if var.shape and var.shape[0] is not None and var.shape[0] >= 0:
                    height = int(var.shape[0])
                else:
                    height = _updated_rows(program, name, grad_to_block)
            m = _PER_TRAINER.search(name)
            self.recv[name] = _Recv(name, var.dtype, list(var.shape) if var.shape is not None else None, sparse,
                                    height, int(m.group(1)) if m else None)
        gradients = set(self.recv) | set(grad_to_block)
        computed = {n for b in program.blocks[1:] for op in b.ops for n in op.output_arg_names}
        self.served = {n for n, v in gb.vars.items()
                       if (v.persistable or n in computed) and v.type not in (VarType.RAW, VarType.SELECTED_ROWS)
                       and n not in gradients}
        self.prefetch = {}
        for name, idx in prefetch_blocks.items():
            self.prefetch[name] = _prefetch_rule(program, name, idx)
        root = checkpoint_root or os.environ.get(CHECKPOINT_ROOT_ENV) or os.getcwd()
        self.checkpoint_root = os.path.realpath(root)
        self.max_message_bytes = self._message_limit(program)
        # requests one trainer may have waiting for a sync round: one get per variable served and
        # per prefetch table, a fetch_barrier, with room for a few threads' worth
        self.max_parked = 2 * (len(self.served) + len(self.prefetch)) + 16

    # ------------------------------------------------------------------ limits
    def _message_limit(self, program):
        """The largest payload frame a trainer may send: the largest variable it sends densely, or,
        when it sends row-sparse or unknown-size values (their row count depends on the batch), the
        larger of 4x the program's largest variable and 64 MiB; ``FLUIDIST_MAX_MESSAGE_BYTES`` overrides."""
        raw = os.environ.get(MAX_MESSAGE_ENV, "").strip()
        if raw:
            try:
                value = int(raw)
            except ValueError:
                raise ValueError("%s must be a number of bytes, got %r" % (MAX_MESSAGE_ENV, raw)) from None
            if value <= 0:
                raise ValueError("%s must be > 0, got %r" % (MAX_MESSAGE_ENV, raw))
            return value + MESSAGE_MARGIN
        largest = max([b for b in (_nbytes(v) for v in self._gb.vars.values()) if b is not None] or [0])
        sent = 0
        unbounded = bool(self.prefetch)
        for r in self.recv.values():
            b = _nbytes(self._gb.vars[r.name])
            if r.sparse or b is None:
                unbounded = True
            else:
                sent = max(sent, b)
        if unbounded:
            sent = max(sent, 4 * largest, UNBOUNDED_FLOOR)
        return sent + MESSAGE_MARGIN

    # ------------------------------------------------------------------ checks
    def check_send(self, m):
        """A ``send`` of a variable this pserver receives, of the declared kind, dtype and shape."""
        k = m.trainer
        r = self.recv.get(m.name) if m.name else None
        if r is None:
            raise Refused("pserver %s does not receive %r (sent by trainer %d); it receives %s"
                          % (self.endpoint, m.name, k, _some(sorted(self.recv))))
        if r.trainer is not None and r.trainer != k:
            raise Refused("pserver %s: %r is trainer %d's gradient, but trainer %d sent it"
                          % (self.endpoint, m.name, r.trainer, k))
        v = m.value
        if v is None:
            raise Refused("'send %s' from trainer %d carries no value" % (m.name, k))
        sparse = isinstance(v, SelectedRows)
        if sparse != r.sparse:
            raise Refused("pserver %s: %r is a %s gradient, trainer %d sent a %s one"
                          % (self.endpoint, m.name, "row-sparse" if r.sparse else "dense", k,
                             "row-sparse" if sparse else "dense"))
        arr = v.value if sparse else v
        if r.dtype in _NUMERIC and arr.dtype.name != r.dtype:
            raise Refused("pserver %s: %r must be %s, trainer %d sent %s"
                          % (self.endpoint, m.name, r.dtype, k, arr.dtype.name))
        if r.shape is not None:
            want, got = (r.shape[1:], list(arr.shape[1:])) if sparse else (r.shape, list(arr.shape))
            if len(want) != len(got) or any(w is not None and w >= 0 and w != g for w, g in zip(want, got)):
                raise Refused("pserver %s: %r has shape %s, trainer %d sent %s%s"
                              % (self.endpoint, m.name, r.shape, k, list(arr.shape),
                                 " (row-sparse)" if sparse else ""))
        if sparse and r.height is not None and v.height != r.height:
            raise Refused("pserver %s: %r has %d rows, trainer %d sent a row-sparse value of height %d"
                          % (self.endpoint, m.name, r.height, k, v.height))
        if m.lod and sparse:
            raise Refused("pserver %s: a row-sparse %r cannot carry a LoD (trainer %d)" % (self.endpoint, m.name, k))

    def check_get(self, m):
        """A ``get`` (or ``fetch_barrier``) without a payload, of a variable this pserver serves."""
        if m.value is not None:
            raise Refused("a %r request carries no value (trainer %d sent one for %r)" % (m.kind, m.trainer, m.name))
        if m.kind != "get":
            return
        if m.name not in self.served:
            why = ("a gradient it receives" if m.name in self.recv else
                   "not a variable it holds" if m.name not in self._gb.vars else "not persistable state")
            raise Refused("pserver %s does not serve %r to trainer %d: %s" % (self.endpoint, m.name, m.trainer, why))

    def check_prefetch(self, m):
        """A ``prefetch`` of a table this pserver serves, with ids that lie in it; returns the rule."""
        p = self.prefetch.get(m.name) if m.name else None
        if p is None:
            raise Refused("pserver %s has no prefetch block for %r (it serves %s)"
                          % (self.endpoint, m.name, _some(sorted(self.prefetch)) if self.prefetch else "none"))
        out = m.get("out")
        if not out:
            raise Refused("'prefetch %s' names no output variable (trainer %d)" % (m.name, m.trainer))
        if out not in p.outputs:
            raise Refused("'prefetch %s' from trainer %d asks for %r, but the prefetch block writes %s"
                          % (m.name, m.trainer, out, _some(sorted(p.outputs))))
        v = m.value
        if v is None or isinstance(v, SelectedRows):
            raise Refused("'prefetch %s' must carry a dense array of ids (trainer %d)" % (m.name, m.trainer))
        if v.dtype.name not in _ID_DTYPES or v.ndim not in (1, 2) or (v.ndim == 2 and v.shape[1] != 1):
            raise Refused("'prefetch %s' from trainer %d: ids must be int64 of shape [n] or [n, 1], got %s%s"
                          % (m.name, m.trainer, v.dtype.name, list(v.shape)))
        if v.size and p.rows is not None:
            lo, hi = int(v.min()), int(v.max())
            if lo < 0 or hi >= p.rows:
                bad = v.reshape(-1)[(v.reshape(-1) < 0) | (v.reshape(-1) >= p.rows)][:5].tolist()
                raise Refused("'prefetch %s' from trainer %d: ids %s are outside table %r (ids 0..%d)"
                              % (m.name, m.trainer, bad, p.table, p.rows - 1))
        return p

    def checkpoint_dir(self, m):
        """The directory a ``checkpoint`` request may write into (resolved), or Refused."""
        d = m.get("dir")
        if not d:
            raise Refused("a checkpoint request needs a 'dir' (trainer %d)" % m.trainer)
        if "\0" in d:
            raise Refused("checkpoint dir %r from trainer %d holds a NUL byte" % (d, m.trainer))
        path = os.path.realpath(os.path.join(self.checkpoint_root, d))
        if os.path.commonpath([path, self.checkpoint_root]) != self.checkpoint_root:
            raise Refused("pserver %s writes checkpoints only under %s (%s, or its working directory at start); "
                          "trainer %d asked for %r" % (self.endpoint, self.checkpoint_root, CHECKPOINT_ROOT_ENV,
                                                       m.trainer, d))
        return path


def parse_block_map(entries, what):
    """``["name:block_index", ...]`` (a ``listen_and_serv`` attr) as ``{name: block_index}``. An empty
    entry maps nothing (``layers.io.ListenAndServ`` writes ``[""]``: no gradient has a block of its own)."""
    out = {}
    for e in entries or []:
        if str(e) == "":
            continue
        name, sep, idx = str(e).rpartition(":")
        if not sep or not name:
            raise ValueError("listen_and_serv: %s entry %r must be 'name:block_index'" % (what, e))
        try:
            out[name] = int(idx)
        except ValueError:
            raise ValueError("listen_and_serv: %s entry %r: %r is not a block index" % (what, e, idx)) from None
    return out


def listen_and_serv_op(program, endpoint=None):
    """The program's ``listen_and_serv`` op (the op that ``serves``, as the registry says) on
    ``endpoint`` (the first one, if none names it), or None."""
    ops = [op for op in program.global_block().ops if registry.fact(op, "serves", False)]
    mine = [op for op in ops if op.attr("endpoint") == endpoint] or ops
    return mine[0] if mine else None


def serving_rules(program, endpoint=None):
    """The rules of the program's ``listen_and_serv`` op on ``endpoint`` (the only one, if none names it)."""
    op = listen_and_serv_op(program, endpoint)
    if op is None:
        raise ValueError("the program has no listen_and_serv op")
    return ServingRules(program, op.attr("endpoint"), op.input("X"),
                        parse_block_map(op.attr("grad_to_block_id"), "grad_to_block_id"),
                        parse_block_map(op.attr("prefetch_var_name_to_block_id"), "prefetch_var_name_to_block_id"))


def _some(names, n=8):
    shown = ", ".join(repr(x) for x in names[:n])
    return "[%s%s]" % (shown, ", ... (%d in all)" % len(names) if len(names) > n else "")


def _updated_rows(program, grad, grad_to_block):
    """Rows of the parameter whose optimize block reads ``grad`` (directly or through a sum), or None."""
    for idx in set(grad_to_block.values()):
        block = program.block(idx)
        if not any(grad in op.input_arg_names for op in block.ops):
            continue
        for op in block.ops:
            for p in op.input("Param"):
                var = block._find_var_recursive(p)
                if var is not None and var.shape and var.shape[0] is not None and var.shape[0] >= 0:
                    return int(var.shape[0])
    return None


def _prefetch_rule(program, ids, idx):
    """The table a prefetch block looks ids up in, how many ids it holds, and what the block writes."""
    block = program.block(idx)
    outputs = {n for op in block.ops for n in op.output_arg_names}
    table, rows = None, None
    for op in block.ops:
        if ids in op.input("Ids") and op.input("W"):
            table = op.input("W")[0]
            var = block._find_var_recursive(table)
            if var is not None and var.shape and var.shape[0] is not None and var.shape[0] >= 0:
                rows = int(var.shape[0]) * max(1, int(op.attr("shard_num") or 1))
            break
    return _Prefetch(ids, table, rows, outputs)
