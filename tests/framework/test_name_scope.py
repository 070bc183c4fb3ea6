"""fluid.name_scope as Paddle 1.8 keeps it: one tree per process, ``_k`` suffixes for a prefix entered
again, the full path with its trailing ``/`` in every op's ``op_namescope``."""
import secrets

import pytest

import fluidist as fluid


def scope_of_ops():
    return [(op.type, op.attr("op_namescope")) for op in fluid.default_main_program().global_block().ops]


def test_paths_nesting_and_suffixes_as_paddle_documents_them():
    p = "t" + secrets.token_hex(4)          # the tree lives for the process: a prefix no other test used
    x = fluid.data(name="x", shape=[None, 4], dtype="float32")
    with fluid.name_scope(p):
        a = x + 1
        with fluid.name_scope("s2"):
            c = a * 2
        with fluid.name_scope("s3"):
            d = c / 3
    with fluid.name_scope(p):
        f = fluid.layers.pow(d, 2.0)
    g = f - 1
    assert scope_of_ops() == [("scale", "/%s/" % p), ("scale", "/%s/s2/" % p), ("scale", "/%s/s3/" % p),
                              ("pow", "/%s_1/" % p), ("scale", "/")]
    assert g.name


def test_an_empty_prefix_is_refused_as_in_paddle():
    with pytest.raises(AssertionError, match="namescope prefix can not be empty."):
        with fluid.name_scope():
            pass


def test_the_optimizer_puts_each_update_in_a_scope_of_its_own():
    x = fluid.data(name="x", shape=[None, 4], dtype="float32")
    loss = fluid.layers.mean(fluid.layers.fc(fluid.layers.fc(x, 3), 1))
    fluid.optimizer.SGD(0.1).minimize(loss)
    scopes = [s for t, s in scope_of_ops() if t == "sgd"]
    assert len(scopes) == 4 and len(set(scopes)) == 4
    assert all(s.startswith("/optimizer") and s.endswith("/") for s in scopes)


def test_name_scope_tree_api():
    root = fluid.framework.NameScope()
    a, a1 = root.child("a"), root.child("a")
    assert (a.name(), a1.name(), a.parent() is root, root.parent()) == ("a", "a_1", True, None)
