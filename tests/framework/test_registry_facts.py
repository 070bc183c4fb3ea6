"""An op type's facts: declared one way (keywords of ``register_op`` / ``register_grad``), kept in frozen
records by concern, read one way (``registry.fact``), and each described in the registry's docstring."""
import dataclasses
import re

import pytest

import fluidist  # noqa: F401  (fills the registry)
from fluidist.framework import registry

PREFIX = "test_registry_facts_"


@pytest.fixture
def scratch_types():
    """Op types this test registers, taken out of the registry again afterwards."""
    made = []
    yield made
    for t in made:
        dict.pop(registry._REGISTRY, t, None)


def _kernel(ctx, ins, attrs):
    return {"Out": ins["X"]}


def _register(scratch_types, name, **facts):
    t = PREFIX + name
    scratch_types.append(t)
    registry.register_op(t, inputs=["X"], outputs=["Out"], **facts)(_kernel)
    return t


def _record_fields():
    return [f.name for record in registry.RECORDS.values() for f in dataclasses.fields(record)]


def test_facts_of_every_concern_are_keywords_read_back_by_name(scratch_types):
    t = _register(scratch_types, "many", side_effect=True, host="a test", host_inputs=["X"],
                  to_peers="X", counter=True, keeps_rows=True, share_lod=("X", "Out"), valueless_inputs=["X"])
    read = {name: registry.fact(t, name) for name in ("side_effect", "host", "host_inputs", "to_peers",
                                                     "counter", "keeps_rows", "share_lod", "valueless_inputs")}
    assert read == {"side_effect": True, "host": "a test", "host_inputs": ("X",), "to_peers": "X",
                    "counter": True, "keeps_rows": True, "share_lod": ("X", "Out"), "valueless_inputs": ("X",)}
    d = registry.get(t)
    assert (d.graph.side_effect, d.placement.host, d.peers.to_peers, d.optimize.counter, d.rows.keeps_rows,
            d.call.share_lod) == (True, "a test", "X", True, True, ("X", "Out"))
    assert registry.fact(t, "communicates") is False and registry.fact(t, "update") is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.placement.host = "elsewhere"      # type: ignore[misc]


def test_an_unknown_fact_is_refused_where_it_is_declared_and_where_it_is_read(scratch_types):
    with pytest.raises(TypeError, match=r"unknown facts \['needs_lod'\]"):
        _register(scratch_types, "unknown", needs_lod=True)
    assert PREFIX + "unknown" not in registry.all_op_types()
    with pytest.raises(KeyError, match="no registry fact 'hots'"):
        registry.fact("relu", "hots")


def test_an_unregistered_type_reads_the_default():
    assert registry.fact("no_such_op_type", "communicates", False) is False
    assert registry.fact("no_such_op_type", "host") is None


def test_a_gradient_op_takes_its_forward_ops_placement_unless_it_declares_its_own(scratch_types):
    inherits, own = _register(scratch_types, "inherits", host="why"), _register(scratch_types, "own", host="why")
    for fwd, facts in ((inherits, {}), (own, {"host": "its own reason"})):
        scratch_types.append(fwd + "_grad")
        registry.register_grad(fwd, inputs=["Out@GRAD"], **facts)(_kernel)
    assert registry.fact(inherits + "_grad", "host") == "why"
    assert registry.fact(own + "_grad", "host") == "its own reason"
    assert registry.fact(own + "_grad", "forward") == own and registry.fact(own, "forward") is None


def test_the_registry_facts_seen_by_passes():
    assert registry.fact("while", "takes_backward") and not registry.fact("relu", "takes_backward")
    assert registry.fact("batch_norm", "synced") == "sync_batch_norm"
    assert registry.fact("batch_norm_grad", "synced") == "sync_batch_norm_grad"
    assert registry.fact("sync_batch_norm", "synced") is None
    synced = {registry.fact(t, "synced") for t in registry.all_op_types()} - {None}
    assert synced <= set(registry.all_op_types())


def test_each_fact_is_a_field_of_one_record_and_described_in_the_docstring():
    names = _record_fields()
    assert len(names) == len(set(names)), "a fact name in two records: the name must say which"
    described = set(re.findall(r"^- ``(\w+)``(?: / ``(\w+)``)?:", registry.__doc__, re.M))
    described = {n for pair in described for n in pair if n}
    assert set(names) == described
