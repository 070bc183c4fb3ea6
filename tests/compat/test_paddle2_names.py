"""A Paddle 2.x-era line met at fluid 1.x's face (``fluid.enable_static()``, ``fluid.static.nn.fc``,
``fluid.nn.Linear``, ``fluid.optimizer.AdamW``) fails with an AttributeError that says what fluidist is and
fluid 1.x's spelling; ``hasattr`` stays False; imports of such a path say the same; a typo stays Python's
plain message. The spellings the table gives exist in fluidist."""
import re
import subprocess
import sys

import pytest

import fluidist as fluid
from fluidist import compat

WHAT = "fluidist is Paddle fluid 1.x's static-graph API"
# the path after the missing name is read at the columns Python records for an instruction (3.11+)
needs_positions = pytest.mark.skipif(sys.version_info < (3, 11), reason="co_positions came with Python 3.11")


def _message(expression):
    """The AttributeError of ``expression``, evaluated on a line of its own in this file's frame."""
    with pytest.raises(AttributeError) as raised:
        eval(compile(expression, "<expression>", "eval"))   # no source line: the namespace's general text
    return str(raised.value)


@needs_positions
def test_a_2x_script_fails_at_its_first_2x_line_saying_what_to_write(tmp_path):
    """The whole script as a user runs it: the traceback's last line names the 1.x spelling of the very
    path the line spells (read from the line), and what fluidist is."""
    script = tmp_path / "train_2x.py"
    script.write_text("import fluidist as paddle\n"
                      "x = paddle.data(name='x', shape=[None, 4], dtype='float32')\n"
                      "y = paddle.static.nn.fc(x, size=3)\n")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("AttributeError: module 'fluidist' has no attribute 'static': "), last
    assert "paddle.static.nn.fc as fluid.layers.fc" in last and WHAT in last, last


@needs_positions
def test_the_spelling_follows_the_path_the_line_spells():
    def message_of(fn):
        with pytest.raises(AttributeError) as raised:
            fn()
        return str(raised.value)

    assert "paddle.static.data as fluid.data." in message_of(lambda: fluid.static.data("x", [None, 3]))
    assert "paddle.static.Executor as fluid.Executor." in message_of(lambda: fluid.static.Executor())
    assert "paddle.static.global_scope as fluid.global_scope." in message_of(lambda: fluid.static.global_scope())
    assert "paddle.nn.Linear as fluid.layers.fc." in message_of(lambda: fluid.nn.Linear(4, 3))
    assert "paddle.nn.functional.relu as fluid.layers.relu." in message_of(lambda: fluid.nn.functional.relu(0))
    assert "paddle.nn.initializer.XavierUniform as fluid.initializer.Xavier(uniform=True)." in message_of(
        lambda: fluid.nn.initializer.XavierUniform())
    assert "paddle.optimizer.lr.CosineAnnealingDecay as fluid.layers.cosine_decay." in message_of(
        lambda: fluid.optimizer.lr.CosineAnnealingDecay(0.1, 10))


@pytest.mark.parametrize("expression, says", [
    ("fluid.enable_static", "not needed (a fluidist program is always static): drop the call"),
    ("fluid.disable_static", "no dynamic mode"),
    ("fluid.to_tensor", "feed NumPy arrays to exe.run"),
    ("fluid.static", "static.nn.fc is fluid.layers.fc"),
    ("fluid.nn", "nn.Linear is fluid.layers.fc"),
    ("fluid.concat", "fluid 1.x spells paddle.concat as fluid.layers.concat"),
    ("fluid.full", "fluid 1.x spells paddle.full as fluid.layers.fill_constant"),
    ("fluid.optimizer.AdamW", "fluid.optimizer.Adam with regularization=fluid.regularizer.L2Decay(coeff)"),
])
def test_a_2x_name_says_what_fluidist_is_and_the_1x_spelling(expression, says):
    text = _message(expression)
    assert says in text and WHAT in text, text


def test_hasattr_stays_false_so_a_script_probing_for_2x_keeps_its_1x_path():
    for name in ("enable_static", "disable_static", "static", "nn", "to_tensor", "in_dynamic_mode", "concat"):
        assert not hasattr(fluid, name), name
    assert not hasattr(fluid.optimizer, "AdamW")


def test_a_typo_keeps_pythons_plain_message():
    assert _message("fluid.Programm") == "module 'fluidist' has no attribute 'Programm'"
    assert _message("fluid.optimizer.Adamm") == "module 'fluidist.optimizer' has no attribute 'Adamm'"


@pytest.mark.parametrize("statement", ["import fluidist.static", "from fluidist import static",
                                       "from fluidist.static import nn", "import fluidist.nn.functional as F",
                                       "from fluidist import enable_static"])
def test_importing_a_2x_path_says_the_same(statement):
    with pytest.raises(ModuleNotFoundError) as raised:
        exec(statement, {})
    assert WHAT in str(raised.value) and "is Paddle 2.x's" in str(raised.value), str(raised.value)
    assert "fluidist.static" not in sys.modules and "fluidist.nn" not in sys.modules


def test_no_name_of_the_table_hides_a_name_fluidist_has():
    """The table's first components are missing from fluidist's face, and its second ones from the 1.x
    module they are met in (fluid.optimizer): a hint never stands where fluidist answers."""
    for path in compat.PADDLE2_NAMES:
        head, _, rest = path.partition(".")
        if head == "optimizer":
            assert rest.split(".")[0] not in vars(fluid.optimizer), path
        else:
            assert head not in vars(fluid) and head not in fluid._FACE, path


def test_every_spelling_the_table_gives_exists_in_fluidist():
    code = re.compile(r"\bfluid\.([A-Za-z_][\w.]*\w)")
    checked = 0
    for path, told in compat.PADDLE2_NAMES.items():
        for dotted in code.findall(told):
            obj = fluid
            for part in dotted.split("."):
                obj = getattr(obj, part)
            assert not getattr(obj, "__fluidist_refused__", False), (path, dotted)
            checked += 1
    assert checked >= 60, checked
