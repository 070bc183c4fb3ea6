"""How long an Executor's plans, and the programs they are plans of, live: a program the user drops
is freed (with its plans) even while the executor that ran it lives, and a dropped executor is freed
while the programs it ran live. Shown as a user would see it: weak references dead after
``gc.collect()``; and the runs that follow give the numbers a fresh executor gives, planning each
block once."""
import gc
import weakref

import numpy as np
import pytest

import fluidist as fluid
from fluidist.executor import executor as executor_mod
from fluidist.executor import plan as plan_mod

from kernel_wrappers import wrapped_kernels  # tests/kernel_wrappers.py

X = np.arange(8, dtype="float32").reshape(2, 4) / 8


def _trained_program(loop=False):
    """(main, startup, loss name): fc + mean, SGD; with ``loop``, a While that doubles the fc output
    three times."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 7
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        y = fluid.layers.fc(x, size=3)
        if loop:
            i = fluid.layers.fill_constant([1], "int64", 0)
            n = fluid.layers.fill_constant([1], "int64", 3)
            cond = fluid.layers.less_than(i, n)
            w = fluid.layers.While(cond)
            with w.block():
                fluid.layers.assign(fluid.layers.scale(y, 2.0), y)
                fluid.layers.increment(i, in_place=True)
                fluid.layers.less_than(i, n, cond=cond)
        loss = fluid.layers.mean(y)
        fluid.optimizer.SGD(0.1).minimize(loss)
    return main, startup, loss.name


def _losses(exe, main, startup, loss, steps=3, how="program"):
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    program = main
    if how == "compiled":
        program = fluid.CompiledProgram(main).with_data_parallel(loss_name=loss, places=[fluid.CPUPlace()])
    return [float(exe.run(program, feed={"x": X}, fetch_list=[loss], scope=scope,
                          use_prune=how == "pruned")[0].ravel()[0]) for _ in range(steps)]


def _dead(*refs):
    gc.collect()
    return [r() is None for r in refs]


@pytest.mark.parametrize("how", ["program", "loop", "pruned", "compiled"])
def test_a_program_the_user_drops_is_freed_while_its_executor_lives(how):
    exe = fluid.Executor(fluid.CPUPlace())
    main, startup, loss = _trained_program(loop=how == "loop")
    first = _losses(exe, main, startup, loss, how=how)
    refs = weakref.ref(main), weakref.ref(startup)
    del main, startup
    assert _dead(*refs) == [True, True]
    # the executor runs on: a new program of the same model trains as it did, and as a new executor
    again = _losses(exe, *_trained_program(loop=how == "loop"), how=how)
    fresh = _losses(fluid.Executor(fluid.CPUPlace()), *_trained_program(loop=how == "loop"), how=how)
    assert again == first == fresh and first[0] != first[-1]


def test_the_last_program_run_is_freed_without_a_run_of_another():
    """The executor's guess for its next run (the plan of the last program it ran) keeps nothing alive."""
    exe = fluid.Executor(fluid.CPUPlace())
    main, startup, loss = _trained_program()
    _losses(exe, main, startup, loss, steps=1)
    ref = weakref.ref(main)
    del main
    assert _dead(ref) == [True]


def test_a_dropped_executor_is_freed_while_the_program_it_ran_lives():
    main, startup, loss = _trained_program()
    exe = fluid.Executor(fluid.CPUPlace())
    first = _losses(exe, main, startup, loss)
    ref = weakref.ref(exe)
    del exe
    assert _dead(ref) == [True]
    assert _losses(fluid.Executor(fluid.CPUPlace()), main, startup, loss) == first


def test_each_block_is_planned_once_for_each_executor_while_the_program_is_unchanged(monkeypatch):
    made = []

    class CountedPlan(plan_mod.Plan):
        def __init__(self, executor, program, block_idx):
            made.append((executor, block_idx))
            super().__init__(executor, program, block_idx)
    monkeypatch.setattr(executor_mod, "Plan", CountedPlan)
    main, startup, loss = _trained_program(loop=True)
    a, b = fluid.Executor(fluid.CPUPlace()), fluid.Executor(fluid.CPUPlace())
    assert _losses(a, main, startup, loss, steps=4) == _losses(b, main, startup, loss, steps=4)
    # startup's block 0 and each block of main (the While's and its gradient's), for each executor
    blocks = sorted([0] + list(range(main.num_blocks)))
    assert main.num_blocks == 3
    assert sorted(idx for exe, idx in made if exe is a) == sorted(idx for exe, idx in made if exe is b) == blocks


def test_kernels_see_the_executor_running_them():
    main, startup, loss = _trained_program()
    seen = []
    a, b = fluid.Executor(fluid.CPUPlace()), fluid.Executor(fluid.CPUPlace())
    with wrapped_kernels(lambda ctx, op: seen.append(ctx.executor)):
        _losses(a, main, startup, loss, steps=1)
        count = len(seen)
        _losses(b, main, startup, loss, steps=1)
    assert count > 0 and seen[:count] == [a] * count and seen[count:] == [b] * count
