"""Slicing parameters and gradients into blocks of whole rows (Paddle's ``slice_variable``)."""
import math
from dataclasses import dataclass
from functools import reduce


@dataclass(frozen=True)
class VarBlock:
    """Block ``index`` of variable ``varname``: ``size`` elements starting at row ``row_begin``."""
    varname: str
    index: int
    size: int
    rows: int
    row_begin: int

    def __str__(self):
        return "%s:%d:%d" % (self.varname, self.index, self.size)

    def split(self, sep=None, maxsplit=-1):
        """``str(block).split(...)``: Paddle's ``slice_variable`` gives each block as its text
        ``"<varname>:<index>:<size>"``, which scripts split."""
        return str(self).split(sep, maxsplit)


def _numel(shape):
    return reduce(lambda a, b: a * b, shape, 1)


def slice_variable(var_list, slice_count, min_block_size):
    """Blocks for each var: at most ``slice_count``, each at least ``min_block_size`` elements
    (one block if the var is smaller), whole rows of dim 0 for vars of rank >= 2."""
    blocks = []
    for var in var_list:
        shape = list(var.shape)
        if any(d < 0 for d in shape):
            raise ValueError("cannot slice %r: its shape %s has unknown dimensions" % (var.name, shape))
        numel = _numel(shape)
        split_count = slice_count
        max_count = max(int(math.floor(numel / float(min_block_size))), 1)
        if max_count < slice_count:
            split_count = max_count
        block_size = int(math.ceil(numel / float(split_count)))
        row_width = _numel(shape[1:]) if len(shape) >= 2 else 1
        if len(shape) >= 2 and block_size % row_width:
            block_size += row_width - block_size % row_width
        split_count = int(math.ceil(numel / float(block_size)))
        row = 0
        for i in range(split_count):
            size = min(block_size, numel - i * block_size)
            rows = size // row_width
            blocks.append(VarBlock(var.name, i, size, rows, row))
            row += rows
    return blocks


def block_shape(var, block):
    shape = list(var.shape)
    if len(shape) >= 2:
        return [block.rows] + shape[1:]
    return [block.size]


def orig_varname(name):
    """``fc_w.block1`` / ``fc_w@GRAD.trainer_0`` / ``fc_w@GRAD.block0.trainer_1`` -> the var's own name."""
    cut = len(name)
    for marker in (".block", ".trainer_"):
        i = name.find(marker)
        if i != -1:
            cut = min(cut, i)
    return name[:cut]
