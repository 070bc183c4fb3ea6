"""Bounds on what a program file (a fluidist JSON form or Paddle's ProgramDesc) may describe, checked
before the program is built: how many blocks, variables and ops, and that blocks nest as programs do.

A program's blocks form a tree: block 0 is the global block, every other block was made inside an
earlier one, so its ``parent_idx`` names an earlier block (Paddle's and fluidist's programs never do
otherwise; -1 names none). A file whose blocks name themselves or later blocks as parents would make
every walk up the parents loop for good, so it is refused, naming the block. The counts are bounded so
that a small file cannot make the loader spend minutes and gigabytes building millions of ops:

- ``FLUIDIST_MAX_PROGRAM_OPS`` (default 200,000 ops over all blocks),
- ``FLUIDIST_MAX_PROGRAM_VARS`` (default 200,000 variables over all blocks),
- ``FLUIDIST_MAX_PROGRAM_BLOCKS`` (default 10,000 blocks).

Real programs stay far below them (a large training program has tens of thousands of ops); a trusted
file past one is read after raising that variable.
"""
from __future__ import annotations

import os
import re

LIMITS = {"ops": ("FLUIDIST_MAX_PROGRAM_OPS", 200000),
          "vars": ("FLUIDIST_MAX_PROGRAM_VARS", 200000),
          "blocks": ("FLUIDIST_MAX_PROGRAM_BLOCKS", 10000)}

# In a program's JSON form, a key of each op, variable and block (a string followed by a colon is a key)
_JSON_KEYS = {"ops": re.compile(r'"outputs"\s*:'), "vars": re.compile(r'"need_check_feed"\s*:'),
              "blocks": re.compile(r'"parent_idx"\s*:')}


class ProgramTooLarge(ValueError):
    """A program file describes more ops, variables or blocks than allowed (see the module doc)."""


def limit(what: str, env=None) -> int:
    """The bound on ``what`` ("ops", "vars" or "blocks") per program file."""
    name, default = LIMITS[what]
    raw = (os.environ if env is None else env).get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError("%s must be a whole number, got %r" % (name, raw)) from None
    if value < 1:
        raise ValueError("%s must be at least 1, got %r" % (name, raw))
    return value


def too_large(where: str, what: str, count, bound: int) -> ProgramTooLarge:
    """The error for ``where`` holding ``count`` (a number, or a phrase such as "more than N") ``what``."""
    name = LIMITS[what][0]
    return ProgramTooLarge("%s describes %s %s; program files are read with at most %d (%s): raise %s if the file "
                           "is trusted" % (where, count, what, bound, name, name))


def check_count(where: str, what: str, count: int) -> None:
    bound = limit(what)
    if count > bound:
        raise too_large(where, what, count, bound)


def check_json_text(text, where: str) -> None:
    """Refuse a program's JSON text with too many ops, variables or blocks before it is parsed (the keys
    each of them has are counted: a bound from above, exact for the files fluidist writes)."""
    if isinstance(text, (bytes, bytearray, memoryview)):
        text = bytes(text).decode("utf-8", "replace")
    for what, key in _JSON_KEYS.items():
        bound = limit(what)
        seen = 0
        for seen, _ in enumerate(key.finditer(text), 1):
            if seen > bound:
                raise too_large(where, what, "more than %d" % bound, bound)


def check_parents(parents, where: str) -> None:
    """``parents[i]``: the ``parent_idx`` of block ``i``. Each must be -1 or an earlier block's index
    (which also rules out every cycle)."""
    for i, parent in enumerate(parents):
        if not isinstance(parent, int) or isinstance(parent, bool) or not (parent == -1 or 0 <= parent < i):
            raise ValueError("%s: block %d names %r as its parent block; a block's parent is an earlier block "
                             "(or -1 for none), so these blocks do not form a program"
                             % (where, i, parent))
