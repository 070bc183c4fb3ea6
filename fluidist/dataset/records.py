"""Instances of a MultiSlot data feed, stored by column, and the text format they are parsed from.

The text format (what ``MultiSlotDataGenerator`` writes, one instance per line) gives, for every
slot of ``set_use_var`` in that order, the number of values and then the values::

    3 1024 77 5  1 0.5  1 1        # slot "ids": 3 ids; slot "dense": 1 float; slot "label": 1 id

An int64 variable is a ``uint64`` slot (feature signs; values above 2**63 wrap to negative int64, as
Paddle read them), a float32 variable a ``float`` slot. A variable with ``lod_level`` 0 is a dense
slot: every instance holds exactly as many values as one row of the variable (``shape[1:]``); a
variable with LoD is a sparse slot of any number (> 0) of values per instance, batched as a LoD
tensor of shape ``[total, 1]``. A line that breaks these rules fails with the file, the line and
the slot named.

:class:`Records` keeps each slot as one flat value array plus instance offsets, so shuffling,
splitting and batching are array operations, and records travel between workers as raw buffers.
"""
import warnings

import numpy as np


class DataFormatError(ValueError):
    """A line of a data file that is not a valid instance."""


class Slot:
    """One variable of ``set_use_var``: its name, slot type and whether it is dense."""

    def __init__(self, var):
        if var.dtype == "int64":
            self.type, self.dtype = "uint64", np.int64
        elif var.dtype == "float32":
            self.type, self.dtype = "float", np.float32
        else:
            raise ValueError("dataset: variable %r has dtype %s; fluid.dataset only supports float32 and int64 "
                             "variables" % (var.name, var.dtype))
        self.name = var.name
        self.dense = var.lod_level == 0
        shape = list(var.shape or [-1])
        self.shape = shape
        self.dims = tuple(shape[1:])
        known = all(d >= 0 for d in self.dims)
        self.per_instance = int(np.prod(self.dims)) if self.dense and known else None

    def desc(self):
        lines = ['  slots {', '    name: "%s"' % self.name, '    type: "%s"' % self.type,
                 '    is_dense: %s' % ("true" if self.dense else "false"), '    is_used: true']
        if self.dense:
            lines += ["    shape: %d" % d for d in self.shape]
        lines.append("  }")
        return "\n".join(lines)


class Records:
    """``n`` instances: per slot a flat ``values`` array and ``offsets`` (n + 1 int64); with
    ``set_parse_ins_id`` / ``set_parse_content``, each instance's id and content (str arrays)."""

    def __init__(self, slots, values, offsets, ins_ids=None, contents=None):
        self.slots = slots
        self.values = values
        self.offsets = offsets
        self.ins_ids = ins_ids
        self.contents = contents

    def _texts(self, pick):
        """The ids and contents of the instances ``pick`` selects (an index or a slice)."""
        return {"ins_ids": None if self.ins_ids is None else self.ins_ids[pick],
                "contents": None if self.contents is None else self.contents[pick]}

    @property
    def n(self):
        return len(self.offsets[0]) - 1 if self.offsets else 0

    def __len__(self):
        return self.n

    @staticmethod
    def empty(slots):
        return Records(slots, [np.zeros(0, s.dtype) for s in slots], [np.zeros(1, np.int64) for _ in slots])

    @staticmethod
    def concat(slots, parts):
        parts = [p for p in parts if p.n]
        if not parts:
            return Records.empty(slots)
        if len(parts) == 1:
            return parts[0]
        values, offsets = [], []
        for j in range(len(slots)):
            values.append(np.concatenate([p.values[j] for p in parts]))
            offs, base = [np.zeros(1, np.int64)], 0
            for p in parts:
                offs.append(p.offsets[j][1:] + base)
                base += int(p.offsets[j][-1])
            offsets.append(np.concatenate(offs))
        texts = {k: np.concatenate([getattr(p, k) for p in parts]) if all(getattr(p, k) is not None for p in parts)
                 else None for k in ("ins_ids", "contents")}
        return Records(slots, values, offsets, **texts)

    def take(self, index):
        """The instances at ``index`` (an int array), in that order."""
        index = np.asarray(index, np.int64)
        values, offsets = [], []
        for vals, off in zip(self.values, self.offsets):
            starts, lens = off[index], off[index + 1] - off[index]
            new_off = np.zeros(len(index) + 1, np.int64)
            np.cumsum(lens, out=new_off[1:])
            # position of every taken value in the source: its instance's start + its rank inside
            pos = np.repeat(starts - new_off[:-1], lens) + np.arange(new_off[-1], dtype=np.int64)
            values.append(vals[pos])
            offsets.append(new_off)
        return Records(self.slots, values, offsets, **self._texts(index))

    def slice(self, begin, end):
        values, offsets = [], []
        for vals, off in zip(self.values, self.offsets):
            a, b = int(off[begin]), int(off[end])
            values.append(vals[a:b])
            offsets.append(off[begin:end + 1] - a)
        return Records(self.slots, values, offsets, **self._texts(slice(begin, end)))

    def batch(self, begin, end):
        """Instances [begin, end) as feed values: [(array, lod or None)] in slot order."""
        out = []
        n = end - begin
        for slot, vals, off in zip(self.slots, self.values, self.offsets):
            a, b = int(off[begin]), int(off[end])
            v = vals[a:b]
            if slot.dense:
                out.append((v.reshape((n,) + tuple(d if d >= 0 else -1 for d in slot.dims)), None))
            else:
                out.append((v.reshape(-1, 1), [(off[begin:end + 1] - a).tolist()]))
        return out

    def shuffle_slots(self, names, rng):
        """Permute the values of the named slots across instances (the other slots stay)."""
        values, offsets = list(self.values), list(self.offsets)
        perm = rng.permutation(self.n)
        moved = self.take(perm) if any(slot.name in names for slot in self.slots) else None
        for j, slot in enumerate(self.slots):
            if slot.name in names:
                values[j], offsets[j] = moved.values[j], moved.offsets[j]
        return Records(self.slots, values, offsets, ins_ids=self.ins_ids, contents=self.contents)


# ------------------------------------------------------------------------------------------ parsing
def _to_numbers(tokens, slot):
    arr = np.array(tokens)
    if slot.type == "float":
        return arr.astype(np.float32)
    try:
        return arr.astype(np.int64)
    except (ValueError, OverflowError):
        return arr.astype(np.uint64).view(np.int64)    # feature signs above 2**63


def _bad_token(tokens, slot):
    """The first token of ``tokens`` that is not a value of ``slot``'s type, or None."""
    for t in tokens:
        try:
            if slot.type == "float":
                float(t)
            else:
                v = int(t)
                if not -(1 << 63) <= v < (1 << 64):
                    return t
        except ValueError:
            return t
    return None


def _leading_texts(toks, prefixes, texts, source, line_no):
    """Read the ``1 <text>`` fields ``prefixes`` names (``ins_id``, ``content``) that open a line
    before its slots (``set_parse_ins_id`` / ``set_parse_content``); returns the next position."""
    p = 0
    for field in prefixes:
        if p + 1 >= len(toks) or toks[p] != "1":
            raise DataFormatError("%s, line %d: expected the %s as '1 <%s>' before the slots (the dataset parses "
                                  "%ss), got %r" % (source, line_no, field, field, field, " ".join(toks[p:p + 2])))
        texts[field].append(toks[p + 1])
        p += 2
    return p


def parse_lines(lines, slots, source, first_line=1, prefixes=()):
    """Records from text ``lines`` (an iterable of str); ``source`` names the file in errors;
    ``prefixes``: the text fields (``"ins_id"``, ``"content"``) each line opens with."""
    tokens = [[] for _ in slots]
    counts = [[] for _ in slots]
    texts = {field: [] for field in prefixes}
    line_no = first_line - 1
    first_extra = None
    nslots = len(slots)
    for line_no, line in enumerate(lines, first_line):
        toks = line.split()
        if not toks:
            continue
        p = _leading_texts(toks, prefixes, texts, source, line_no)
        for j in range(nslots):
            slot = slots[j]
            if p >= len(toks):
                raise DataFormatError("%s, line %d: the line ends before slot %r (slot %d of %d): every instance "
                                      "gives each slot of set_use_var as '<count> <values...>'"
                                      % (source, line_no, slot.name, j + 1, nslots))
            try:
                num = int(toks[p])
            except ValueError:
                raise DataFormatError("%s, line %d: expected the number of values of slot %r, got %r"
                                      % (source, line_no, slot.name, toks[p])) from None
            if num <= 0:
                raise DataFormatError("%s, line %d: slot %r has %d values: the number of values must be positive "
                                      "(pad empty slots in the data generator)" % (source, line_no, slot.name, num))
            if slot.per_instance is not None and num != slot.per_instance:
                raise DataFormatError("%s, line %d: dense slot %r needs %d values (variable shape %s) but the line "
                                      "gives %d" % (source, line_no, slot.name, slot.per_instance, slot.shape, num))
            vals = toks[p + 1:p + 1 + num]
            if len(vals) != num:
                raise DataFormatError("%s, line %d: slot %r announces %d values but the line holds only %d more "
                                      "tokens" % (source, line_no, slot.name, num, len(vals)))
            tokens[j].extend(vals)
            counts[j].append((num, line_no))
            p += 1 + num
        if p != len(toks) and first_extra is None:
            first_extra = (line_no, len(toks) - p)
    if first_extra is not None:
        # Paddle 1.8's MultiSlot parser reads the slots of set_use_var and passes over what follows them
        warnings.warn("%s, line %d (the first such line): %d tokens after the %d slots of set_use_var %s are not "
                      "read, as in Paddle (does the data have more slots than the variables given?)"
                      % (source, first_extra[0], first_extra[1], nslots, [s.name for s in slots]), stacklevel=2)
    values, offsets = [], []
    for j, slot in enumerate(slots):
        try:
            values.append(_to_numbers(tokens[j], slot))
        except (ValueError, OverflowError):
            pos = 0
            for num, ln in counts[j]:
                bad = _bad_token(tokens[j][pos:pos + num], slot)
                if bad is not None:
                    raise DataFormatError("%s, line %d: %r is not a %s value (slot %r)"
                                          % (source, ln, bad, slot.type, slot.name)) from None
                pos += num
            raise
        off = np.zeros(len(counts[j]) + 1, np.int64)
        if counts[j]:
            np.cumsum([c for c, _ in counts[j]], out=off[1:])
        offsets.append(off)
    return Records(slots, values, offsets, **{field + "s": np.array(texts[field], dtype=object) for field in prefixes})
