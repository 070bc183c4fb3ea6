"""The transpiler's calls pause Python's garbage collector and hand what they built to its oldest
generation (``transpiler.details.gc_paused``); the process's own collector settings survive them."""
import gc

import pytest

from models import fc_model, transpile


@pytest.fixture
def collector_restored():
    was_on = gc.isenabled()
    yield
    gc.unfreeze()
    if was_on:
        gc.enable()
    else:
        gc.disable()


def _in_generation(obj, generation):
    return any(o is obj for o in gc.get_objects(generation))


def test_what_a_call_built_goes_to_the_oldest_generation_and_the_collector_stays_on(collector_restored):
    gc.enable()
    main, startup, _ = fc_model(size=64)
    t = transpile(main, startup)
    prog = t.get_pserver_program("127.0.0.1:6174")
    assert gc.isenabled()
    # the pserver program is long-lived: no young collection has to scan it first
    op, var = prog.global_block().ops[0], next(iter(prog.global_block().vars.values()))
    assert _in_generation(op, 2) and _in_generation(var, 2) and not _in_generation(op, 0)


def test_objects_the_process_froze_stay_frozen_and_a_disabled_collector_stays_off(collector_restored):
    gc.enable()
    main, startup, _ = fc_model(size=64)
    kept = [[i] for i in range(10)]
    gc.freeze()
    transpile(main, startup).get_pserver_program("127.0.0.1:6174")
    assert gc.isenabled() and gc.get_freeze_count() > 0
    assert not any(_in_generation(kept[0], g) for g in range(3))     # still in the permanent generation
    gc.unfreeze()
    gc.disable()
    main, startup, _ = fc_model(size=64)
    prog = transpile(main, startup).get_pserver_program("127.0.0.1:6174")
    assert not gc.isenabled() and not _in_generation(prog.global_block().ops[0], 2)
