"""JSON from another process or a file is read with its size and nesting bounded before it is parsed:
200,000 ``[`` in a save's index, an inference model's program, a timeline trace or a program's JSON form
are refused with an error naming the file, never a RecursionError."""
import hashlib
import json
import os

import pytest

import fluidist as fluid
from fluidist import bounded_json

DEEP = "[" * 200000


@pytest.mark.parametrize("text,depth", [('{"a": [1, {"b": "[[[[{{"}]}', 3), ('"\\"[[["', 0), ("[[], [[]]]", 3),
                                        ('{"k\\\\": ["]"]}', 2)])
def test_nesting_is_counted_outside_strings(text, depth):
    assert bounded_json.nesting_depth(text, 100) == depth
    assert bounded_json.loads(text, "t", max_depth=depth) == json.loads(text)


def test_too_deep_too_long_and_not_json_are_refused_by_name():
    with pytest.raises(bounded_json.JSONBoundsError, match="the line nests arrays/objects more than 32 deep"):
        bounded_json.loads(DEEP, "the line")
    with pytest.raises(bounded_json.JSONBoundsError, match="x is 11 bytes long, more than the 10 allowed"):
        bounded_json.loads(b'"abcdefghi"', "x", max_bytes=10)
    with pytest.raises(bounded_json.JSONBoundsError, match="x is not valid JSON: not UTF-8"):
        bounded_json.loads(b"\xff", "x")
    with pytest.raises(bounded_json.JSONBoundsError, match="x is not valid JSON"):
        bounded_json.loads("{", "x")


def _saved(tmp_path):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        pred = fluid.layers.fc(x, 2)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    d = str(tmp_path / "m")
    fluid.io.save_inference_model(d, ["x"], [pred], exe, main_program=main, scope=scope)
    return d, exe


@pytest.mark.parametrize("which", ["__index__.json", "__model__"])
def test_a_deep_file_in_a_saved_model_is_refused_naming_it(tmp_path, which):
    d, exe = _saved(tmp_path)
    path = os.path.join(d, which)
    with open(path, "w") as f:
        f.write("{" + '"a":' + DEEP if which == "__model__" else DEEP)
    if which == "__model__":     # the index vouches for the model file: give it the new one's checksum
        index = json.load(open(os.path.join(d, "__index__.json")))
        index["files"]["__model__"] = hashlib.sha256(open(path, "rb").read()).hexdigest()
        json.dump(index, open(os.path.join(d, "__index__.json"), "w"))
    with pytest.raises(ValueError, match="nests arrays/objects"):
        fluid.io.load_inference_model(d, exe, scope=fluid.Scope())


def test_a_deep_trace_and_a_deep_program_form_are_refused(tmp_path):
    from fluidist import timeline
    path = str(tmp_path / "t.json")
    with open(path, "w") as f:
        f.write(DEEP)
    with pytest.raises(ValueError, match="cannot read the trace .*nests arrays/objects"):
        timeline._load(path)
    with pytest.raises(ValueError, match="not a program's JSON form: .*nests arrays/objects"):
        fluid.Program.from_json(DEEP)
