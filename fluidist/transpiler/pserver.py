"""pserver mode as functions over Programs.

``plan_pserver(...)`` reads the origin programs and decides everything once: which parameters and
gradients are split into which blocks, and which pserver holds each block. ``rewrite_trainer``
applies that plan to the trainer's main and startup programs (in place, as Paddle did);
``build_pserver_program`` and ``build_pserver_startup`` compute a pserver's programs from it.

The three parts live in ``pserver_plan.py``, ``pserver_trainer.py`` and ``pserver_build.py``; this
module is their face (``DistributeTranspiler`` calls it).
"""
from .pserver_build import build_pserver_program, build_pserver_startup
from .pserver_plan import (DistributedTable, PServerPlan, RowSlice, find_distributed_table, find_optimize_ops,
                           keep_placement_only, lr_op_indices, plan_pserver, vars_overview)
from .pserver_trainer import async_lr_counter, finish_trainer, rewrite_trainer, trainer_counter_names

__all__ = ["plan_pserver", "rewrite_trainer", "finish_trainer", "build_pserver_program", "build_pserver_startup",
           "PServerPlan", "RowSlice", "DistributedTable", "find_distributed_table", "lr_op_indices",
           "find_optimize_ops", "async_lr_counter", "trainer_counter_names", "vars_overview",
           "keep_placement_only"]
