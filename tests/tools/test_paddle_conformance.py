"""The conformance runner (tools/paddle_tests.py) on a small tree laid out as Paddle's: its rename, its
OpTest stand-in (outputs, LoD and gradients against NumPy, and that wrong ones fail), the outcomes it
records (pass, fail, error, refused, skip, timeout), known gaps, the JSON and the comparison.

No Paddle tree is needed: the tree here is written by the test, with Paddle's layout and files of our own."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUNNER = os.path.join(ROOT, "tools", "paddle_tests.py")

SAMPLE = '''
import time
import unittest

import numpy as np

import fluidist
import paddle
import paddle.fluid as fluid
import paddle.fluid.core as core
from op_test import OpTest


class TestRename(unittest.TestCase):
    def test_paddle_fluid_is_fluidist(self):
        import paddle.fluid.layers as layers
        from paddle.fluid.framework import Program
        self.assertIs(fluid, fluidist)
        self.assertIs(layers, fluidist.layers)
        self.assertIs(Program, fluidist.Program)
        self.assertIs(core, fluidist.core)
        self.assertEqual(paddle.batch(lambda: iter(range(5)), 2)().__next__(), [0, 1])

    def test_tests_package_is_the_copy(self):
        import paddle.fluid.tests.unittests.helper_module as helper
        self.assertEqual(helper.WHERE, "copied tree")

    def test_data_home_is_paddles_under_a_home_in_the_scratch_folder(self):
        import os
        import subprocess
        import sys
        import paddle.dataset.common as common
        self.assertEqual(common.DATA_HOME, os.path.expanduser("~/.cache/paddle/dataset"))
        scratch = os.path.dirname(os.environ["FLUIDIST_PADDLE_TESTS_DIR"])
        self.assertEqual(os.path.expanduser("~"), os.path.join(scratch, "home"))
        # a child started as Paddle's distributed tests start theirs: neither HOME nor the dataset home
        code = "import os, paddle.dataset.common as c; print(c.DATA_HOME); print(os.path.expanduser('~'))"
        env = {"PYTHONPATH": os.environ["PYTHONPATH"], "PATH": os.environ.get("PATH", "")}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        self.assertEqual(out.stdout.split(), [common.DATA_HOME, os.path.join(scratch, "home")])

    def test_fails(self):
        self.assertEqual(1, 2)

    def test_refused(self):
        fluid.enable_dygraph()

    @unittest.skip("needs a GPU")
    def test_skipped(self):
        pass


class TestMul(OpTest):
    def setUp(self):
        self.op_type = "mul"
        x = np.random.random((4, 3)).astype("float64")
        y = np.random.random((3, 5)).astype("float64")
        self.inputs = {"X": x, "Y": y, "NotASlotOfMul": x}
        self.outputs = {"Out": x.dot(y)}

    def test_check_output(self):
        self.check_output()

    def test_check_grad(self):
        self.check_grad(["X", "Y"], "Out")


class TestMulWrongOutput(TestMul):
    def setUp(self):
        TestMul.setUp(self)
        self.outputs = {"Out": self.outputs["Out"] + 0.01}

    def test_check_grad(self):
        pass


class TestMulWrongGradient(TestMul):
    def test_check_output(self):
        pass

    def test_check_grad(self):
        x, y = self.inputs["X"], self.inputs["Y"]
        wrong = np.ones_like(x) * 2
        self.check_grad(["X"], "Out", user_defined_grads=[wrong])


class TestSequencePool(OpTest):
    def setUp(self):
        self.op_type = "sequence_pool"
        x = np.random.random((5, 2)).astype("float64")
        self.inputs = {"X": (x, [[2, 3]])}
        self.attrs = {"pooltype": "SUM"}
        self.outputs = {"Out": np.stack([x[:2].sum(0), x[2:].sum(0)])}

    def test_check_output(self):
        self.check_output()

    def test_check_grad(self):
        self.check_grad(["X"], "Out")


def create_test_class(name, value):
    class Cls(unittest.TestCase):          # as Paddle's create_test_*_class factories make them
        def test_value(self):
            self.assertEqual(value, 1)
    Cls.__name__ = name
    globals()[name] = Cls


create_test_class("TestMadeOne", 1)
create_test_class("TestMadeTwo", 2)


class TestSlow(unittest.TestCase):
    def test_a_passes(self):
        pass

    def test_b_hangs(self):
        if "HANG" in __import__("os").environ.get("SAMPLE_MODE", ""):
            time.sleep(60)
'''


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(textwrap.dedent(text))


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """A tree with Paddle's layout: python/paddle/{reader,batch.py,compat.py,...} and fluid/tests/unittests."""
    root = tmp_path_factory.mktemp("paddle_tree")
    pkg = os.path.join(str(root), "python", "paddle")
    _write(os.path.join(pkg, "batch.py"), '''
        def batch(reader, batch_size, drop_last=False):
            def batched():
                out = []
                for item in reader():
                    out.append(item)
                    if len(out) == batch_size:
                        yield out
                        out = []
            return batched
    ''')
    for name in ("reader/__init__.py", "compat.py", "distributed/__init__.py", "utils/__init__.py",
                 "fluid/tests/__init__.py", "fluid/tests/unittests/__init__.py", "fluid/tests/unittests/op_test.py"):
        _write(os.path.join(pkg, name), "")
    _write(os.path.join(pkg, "fluid/tests/unittests/helper_module.py"), "WHERE = 'copied tree'\n")
    _write(os.path.join(pkg, "fluid/tests/unittests/test_sample.py"), SAMPLE)
    return str(root)


def _run(tree, tmp_path, *extra, env=None):
    out = os.path.join(str(tmp_path), "result.json")
    cmd = [sys.executable, RUNNER, "--paddle", tree, "--python", sys.executable, "--files", "test_sample.py",
           "--scratch", os.path.join(str(tmp_path), "scratch"), "--json", out, "--quiet"] + list(extra)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=dict(os.environ, **(env or {})))
    with open(out) as f:
        data = json.load(f)
    return proc, {r["key"].split("::")[1]: r for r in data["results"]}, data


@pytest.fixture(scope="module")
def whole_file(tree, tmp_path_factory):
    """One run of the whole sample file."""
    return _run(tree, tmp_path_factory.mktemp("whole"))


def test_runner_renames_paddle_fluid_and_records_each_outcome(whole_file):
    proc, rows, data = whole_file
    outcome = {k: r["outcome"] for k, r in rows.items()}
    assert outcome["TestRename.test_paddle_fluid_is_fluidist"] == "pass", rows
    assert outcome["TestRename.test_tests_package_is_the_copy"] == "pass", rows
    assert outcome["TestRename.test_data_home_is_paddles_under_a_home_in_the_scratch_folder"] == "pass", rows
    assert outcome["TestRename.test_fails"] == "fail"
    assert "1 != 2" in rows["TestRename.test_fails"]["error"]
    assert outcome["TestRename.test_refused"] == "refused"
    assert outcome["TestRename.test_skipped"] == "skip" and rows["TestRename.test_skipped"]["error"] == "needs a GPU"
    assert proc.returncode == 1, "a failure that is not a listed gap makes the exit status 1"
    assert data["summary"]["other"]["fail"] >= 3


def test_op_test_checks_outputs_lod_and_gradients_and_fails_wrong_ones(whole_file):
    _, rows, _ = whole_file
    outcome = {k: r["outcome"] for k, r in rows.items()}
    assert outcome["TestMul.test_check_output"] == "pass"
    assert outcome["TestMul.test_check_grad"] == "pass"
    assert outcome["TestSequencePool.test_check_output"] == "pass"
    assert outcome["TestSequencePool.test_check_grad"] == "pass"
    assert outcome["TestMulWrongOutput.test_check_output"] == "fail"
    assert "Output (Out) of mul has diff" in rows["TestMulWrongOutput.test_check_output"]["error"]
    assert outcome["TestMulWrongGradient.test_check_grad"] == "fail"
    assert "gradient of X (op mul)" in rows["TestMulWrongGradient.test_check_grad"]["error"]


def test_classes_a_factory_made_are_told_apart(whole_file):
    _, rows, _ = whole_file
    assert rows["TestMadeOne.test_value"]["outcome"] == "pass"
    assert rows["TestMadeTwo.test_value"]["outcome"] == "fail"
    assert not [k for k in rows if "<locals>" in k]


def test_a_hung_file_is_killed_and_the_test_it_was_in_named(tree, tmp_path):
    _, rows, _ = _run(tree, tmp_path, "--tests", "TestSlow", "--time-limit", "20", env={"SAMPLE_MODE": "HANG"})
    assert rows["TestSlow.test_a_passes"]["outcome"] == "pass"
    assert rows["TestSlow.test_b_hangs"]["outcome"] == "timeout"


def test_known_gaps_turn_listed_failures_into_gaps_and_flag_stale_lines(tree, tmp_path):
    gaps = os.path.join(str(tmp_path), "gaps.txt")
    with open(gaps, "w") as f:
        f.write("# pattern  cause\n"
                "unittests/test_sample.py::TestRename.test_fails  the sample's own arithmetic\n"
                "unittests/test_sample.py::TestRename.test_paddle_fluid_is_fluidist  listed, but it passes\n")
    proc, rows, _ = _run(tree, tmp_path, "--tests", "TestRename", "--known-gaps", gaps)
    assert rows["TestRename.test_fails"]["outcome"] == "gap"
    assert rows["TestRename.test_fails"]["gap"] == "the sample's own arithmetic"
    assert rows["TestRename.test_paddle_fluid_is_fluidist"]["stale_gap"] is True
    assert "passes now: remove its known_gaps.txt line" in proc.stdout
    assert proc.returncode == 0, proc.stdout[-2000:]


def test_compare_names_the_tests_whose_outcome_changed(tree, tmp_path):
    _, _, _ = _run(tree, tmp_path, "--tests", "TestRename")
    old = os.path.join(str(tmp_path), "old.json")
    os.rename(os.path.join(str(tmp_path), "result.json"), old)
    with open(old) as f:
        data = json.load(f)
    for row in data["results"]:
        if row["key"].endswith("TestRename.test_fails"):
            row["outcome"] = "pass"
    with open(old, "w") as f:
        json.dump(data, f)
    proc, _, _ = _run(tree, tmp_path, "--tests", "TestRename", "--compare", old)
    assert "pass       -> fail       unittests/test_sample.py::TestRename.test_fails" in proc.stdout


def test_saved_runs_are_reported_again_with_the_gaps_of_now(tree, tmp_path):
    """--from-json runs nothing: it merges saved runs (a later run of a test file replaces its earlier rows) and
    decides the gaps from the known-gaps file given now; --markdown writes the docs page from them."""
    _run(tree, tmp_path, "--tests", "TestSlow")
    first = os.path.join(str(tmp_path), "first.json")
    os.rename(os.path.join(str(tmp_path), "result.json"), first)
    _run(tree, tmp_path, "--tests", "TestRename")
    gaps = os.path.join(str(tmp_path), "gaps.txt")
    with open(gaps, "w") as f:
        f.write("unittests/test_sample.py::TestRename.test_fails  the sample's own arithmetic\n")
    page, merged = os.path.join(str(tmp_path), "page.md"), os.path.join(str(tmp_path), "merged.json")
    proc = subprocess.run([sys.executable, RUNNER, "--from-json", first, os.path.join(str(tmp_path), "result.json"),
                           "--known-gaps", gaps, "--markdown", page, "--json", merged],
                          capture_output=True, text=True, timeout=60)
    with open(merged) as f:
        rows = {r["key"].split("::")[1]: r for r in json.load(f)["results"]}
    assert rows["TestRename.test_fails"]["outcome"] == "gap"
    assert rows["TestRename.test_refused"]["outcome"] == "refused"
    assert "TestSlow.test_a_passes" not in rows       # the file's later run replaced the earlier one
    with open(page) as f:
        text = f.read()
    assert "| `unittests/test_sample.py::TestRename.test_fails` | gap | the sample's own arithmetic |" in text
    assert proc.returncode == 0, proc.stdout[-2000:]     # its one failure is a listed gap now
