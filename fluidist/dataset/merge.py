"""``InMemoryDataset.set_merge_by_lineid``: the instances that share an instance id (the ``1 <id>``
a line opens with under ``set_parse_ins_id``) become one instance, as Paddle 1.8 merges them.

The instances are grouped by id (in id order). With ``merge_size > 0`` a group of any other size is
dropped. A group's instances give one instance: a sparse slot takes its values from the one
instance of the group that has a non-zero value in it (two such instances are a conflict, and the
group is dropped); a dense slot takes the values of the group's last instance with a non-zero value
there. The merged instance keeps the id and the content of the group's first instance. Paddle
drops zero feature signs when it parses a line (a slot of zeros is empty there); fluidist keeps
them, so a slot no instance of the group fills with non-zeros takes the first instance's zeros.
The merged instances come out in random order (NumPy's global random state), as Paddle shuffles
them.
"""
import logging

import numpy as np

from .records import Records

_log = logging.getLogger(__name__)


def _filled(values, slot):
    """Whether an instance's values of ``slot`` hold a non-zero value (Paddle keeps only those)."""
    if slot.type == "float":
        return bool(np.any(np.abs(values) >= 1e-6))
    return bool(np.any(values != 0))


def _merge_group(records, members):
    """The per-slot values of the instance ``members`` (indices) merge into, or None on a conflict."""
    merged = []
    for j, slot in enumerate(records.slots):
        vals, off = records.values[j], records.offsets[j]
        parts = [vals[off[k]:off[k + 1]] for k in members]
        filled = [i for i, part in enumerate(parts) if _filled(part, slot)]
        if not slot.dense and len(filled) > 1:
            _log.warning("merge_by_lineid: dropped the %d instances of id %r: more than one fills slot %r",
                         len(members), _ids(records)[members[0]], slot.name)
            return None
        merged.append(parts[filled[-1]] if filled else parts[0])
    return merged


def _ids(records):
    return records.ins_ids if records.ins_ids is not None else np.full(records.n, "", dtype=object)


def merge_by_ins_id(records, merge_size):
    """The Records of ``records`` merged by instance id (see the module docstring)."""
    ids = _ids(records)
    order = np.argsort(ids.astype(str), kind="stable")
    groups, merged, dropped = [], [], 0
    start = 0
    while start < len(order):
        end = start + 1
        while end < len(order) and ids[order[end]] == ids[order[start]]:
            end += 1
        members = [int(k) for k in order[start:end]]
        one = None if merge_size > 0 and len(members) != merge_size else _merge_group(records, members)
        if one is None:
            dropped += len(members)
        else:
            groups.append(members[0])
            merged.append(one)
        start = end
    if dropped:
        _log.warning("merge_by_lineid: %d instances dropped (groups of another size than %d, or in conflict)",
                     dropped, merge_size)
    out = _assemble(records, groups, merged)
    return out.take(np.random.permutation(out.n))


def _assemble(records, firsts, merged):
    """Records of the ``merged`` per-slot values; ids and contents from the instances ``firsts``."""
    values, offsets = [], []
    for j, slot in enumerate(records.slots):
        parts = [m[j] for m in merged]
        values.append(np.concatenate(parts) if parts else np.zeros(0, slot.dtype))
        off = np.zeros(len(parts) + 1, np.int64)
        np.cumsum([len(p) for p in parts], out=off[1:])
        offsets.append(off)
    pick = np.asarray(firsts, np.int64)
    return Records(records.slots, values, offsets, ins_ids=_ids(records)[pick],
                   contents=None if records.contents is None else records.contents[pick])
