"""The op types fluidist leaves out (``fluidist/ops/refused_ops.py``): each is refused by name with its
reason wherever an op of that type turns up (appended to a program, read from a Paddle program,
run, linted), and none is also registered."""
import os

import numpy as np
import pytest

import fluidist as fluid
from fluidist.framework import registry
from fluidist.ops.refused_ops import REFUSED_OPS
from fluidist.paddle_format import MissingOpsError
from fluidist.paddle_format import framework_pb2 as pb
from fluidist.paddle_format import program_desc

MLP_MODEL = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "paddle18", "mlp",
                         "infer", "__model__")
MARK = "is not implemented in fluidist"


def test_the_table_is_what_the_registry_refuses():
    assert registry.refused_op_types() == sorted(REFUSED_OPS)
    for op_type, reason in REFUSED_OPS.items():
        assert registry.refusal(op_type) == reason
        assert registry.lookup(op_type) is None, "%s is both registered and refused" % op_type
        assert len(reason) > 20 and ";" in reason, "%s: say why and what to use instead" % op_type


@pytest.mark.parametrize("op_type", sorted(REFUSED_OPS))
def test_appending_a_refused_op_says_why(op_type):
    prog = fluid.Program()
    x = prog.global_block().create_var(name="x", shape=(2, 3), dtype="float32")
    with pytest.raises(NotImplementedError) as e:
        prog.global_block().append_op(op_type, inputs={"X": [x]}, outputs={"Out": [x]})
    msg = str(e.value)
    assert "op type %r %s" % (op_type, MARK) in msg and REFUSED_OPS[op_type] in msg
    with pytest.raises(NotImplementedError, match=MARK):
        registry.get(op_type)


def _mlp_with(op_type):
    with open(MLP_MODEL, "rb") as f:
        desc = pb.ProgramDesc.FromString(f.read())
    desc.blocks[0].ops[1].type = op_type
    return desc


def test_loading_a_program_with_refused_ops_names_each_reason():
    desc = _mlp_with("pull_box_sparse")
    desc.blocks[0].ops[2].type = "my_custom_op"
    with pytest.raises(MissingOpsError) as e:
        program_desc.read_program(desc.SerializeToString(), "model.bin")
    assert isinstance(e.value, NotImplementedError)
    msg = str(e.value)
    assert "my_custom_op (1 op)" in msg and "pull_box_sparse (1 op)" in msg
    assert "op type 'pull_box_sparse' %s: %s" % (MARK, REFUSED_OPS["pull_box_sparse"]) in msg
    assert "'my_custom_op' %s" % MARK not in msg      # an unknown type is named, with no made-up reason


def test_running_or_linting_a_program_with_a_refused_op_says_why():
    desc = _mlp_with("deformable_psroi_pooling")
    prog, feeds, fetches = program_desc.read_program(desc.SerializeToString(), "model.bin", check_ops=False)
    with pytest.raises(NotImplementedError, match="'deformable_psroi_pooling' %s: deformable position" % MARK):
        fluid.Executor(fluid.CPUPlace()).run(prog, feed={n: np.zeros((1, 13), "float32") for n in feeds},
                                             fetch_list=fetches, scope=fluid.Scope())
    with pytest.raises(Exception, match="'deformable_psroi_pooling' %s" % MARK):
        prog.lint()


def test_a_type_is_registered_or_refused_never_both():
    with pytest.raises(ValueError, match="also registered"):
        registry.refuse_op("relu", "a reason; use something else")
    with pytest.raises(ValueError, match="also refused"):
        registry.define_op("pull_box_sparse", inputs=["X"], outputs=["Out"])
    with pytest.raises(ValueError, match="refused twice"):
        registry.refuse_op("pull_box_sparse", "again; no")
    assert registry.refusal("pull_box_sparse") == REFUSED_OPS["pull_box_sparse"]
    with pytest.raises(ValueError, match="unknown op type 'no_such_op'"):
        registry.get("no_such_op")
