"""Every public name of Paddle 1.8's fluid modules (``fluid18_names.txt``, from their ``__all__``) exists
in fluidist where Paddle users reach it: working, or refused (NotImplementedError naming it and what
to use instead), never an AttributeError; except the names listed in ``fluid18_pending.txt``, which
other work in progress adds, and which must not exist yet (a stale line fails)."""
import inspect
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools"))
import compat_table as ct  # noqa: E402

from fluidist.compat import is_refused  # noqa: E402

NAMES = ct.read_rows(ct.NAMES)
PENDING = {(r[0], r[1]): r[2] for r in ct.read_rows(ct.PENDING)}


def test_inventory_is_paddle18s_public_names():
    assert len(NAMES) == 456 and len(set(NAMES)) == len(NAMES)
    assert ("layers.nn", "fc") in NAMES and ("nets", "simple_img_conv_pool") in NAMES
    assert set(PENDING) <= set(NAMES), "pending names that are not in the inventory: %s" % (set(PENDING) - set(NAMES))


def test_every_name_exists_or_is_pending():
    missing = [(m, n) for m, n in NAMES if ct.status(m, n) == "missing" and (m, n) not in PENDING]
    assert not missing, "fluid 1.8 names missing in fluidist (implement or refuse them): %s" % missing


def test_pending_names_do_not_exist_yet():
    landed = [(m, n) for (m, n) in PENDING if ct.status(m, n) != "missing"]
    assert not landed, "these names exist now: delete their lines from fluid18_pending.txt: %s" % landed


@pytest.mark.parametrize("module,name", [r for r in NAMES if ct.status(*r) == "refused"])
def test_refused_names_say_what_instead(module, name):
    obj = ct.lookup(module, name)
    assert obj.__fluidist_refused__ is True and is_refused(obj)
    with pytest.raises(NotImplementedError) as e:
        obj()
    msg = str(e.value)
    assert name in msg and "not implemented in fluidist: " in msg and len(msg.split(": ", 1)[1]) > 15, msg


def test_working_share_reaches_the_goal_once_pending_names_land():
    rows, (total, working, refused, pending, missing) = ct.table()
    share = working / total
    print("fluid 1.8 names: %d, working %d (%.1f%%), refused %d, pending %d"
          % (total, working, 100 * share, refused, pending))
    assert missing == 0
    # refusals are the only names that can never count: keep them under the 10%
    assert (working + pending) / total >= 0.90, "too many refusals: %d of %d" % (refused, total)


def test_callables_are_callables():
    """A working name is a real function, class or module attribute, not a placeholder."""
    for m, n in NAMES:
        obj = ct.lookup(m, n)
        if obj is not None and not is_refused(obj):
            assert callable(obj) or inspect.ismodule(obj), "%s.%s is %r" % (m, n, obj)


def test_fluid_io_has_the_dataloader_names_paddle18_star_imports():
    """Paddle 1.8's fluid/io.py star-imports its dataloader: fluid.io.Dataset and fluid.io.BatchSampler
    exist there though io's __all__ does not list them."""
    import fluidist as fluid
    import fluidist.dataloader as dataloader

    assert fluid.io.Dataset is dataloader.Dataset and fluid.io.BatchSampler is dataloader.BatchSampler

    class Squares(fluid.io.Dataset):
        def __getitem__(self, i):
            return i * i

        def __len__(self):
            return 5

    batches = list(fluid.io.BatchSampler(Squares(), batch_size=2, drop_last=False))
    assert batches == [[0, 1], [2, 3], [4]]
