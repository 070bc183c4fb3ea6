"""Knowledge of op types lives in the op registry and in the passes' output, not in tests of op types.

Outside ``fluidist/ops/`` (where each op is defined) and ``fluidist/framework/registry.py``, no module
of ``fluidist`` asks what type an op has: a question about an op is a fact of its registry entry
(``keeps_rows``, ``communicates``, ``serves``, ``to_peers``, ``reversible``, ``init``, ``update``, ...)
or something the pass that wrote the program says in an attr (``recv``'s ``batch_*`` / ``row_block_*``,
``listen_and_serv``'s ``sum_on_arrival``). A second list of op types drifts from the registry.

The rule, read from the source (an AST walk): an *op-type test* is

- a comparison (``==``, ``!=``, ``in``, ``not in``) of an attribute (``<expr>.type``, or any other:
  ``plan.optimizer``, a field that holds an op type) with a string literal, a tuple / list / set of
  them, a dict literal's keys, or a module-level name bound to one of those (``A = ...``, or
  ``A, B = "x", "y"``), when one of those strings is a registered op type;
- a call ``<expr>.type.startswith(s)`` / ``.endswith(s)`` where ``s`` begins / ends some registered
  op type.

Not op-type tests, and left alone: variable types (``var.type == VarType.SELECTED_ROWS``,
``v.type != "RAW"``: no op is called that), the op descs of Paddle's file format compared with its
``feed`` / ``fetch`` ops (``paddle_format/``: ops a fluidist Program never holds, so unregistered),
comparisons of two ops' types with each other, and the attributes of ``OTHER_VOCABULARIES``, whose
words only sound like op types.
"""
import ast
import os

import fluidist
from fluidist.framework import registry

ROOT = os.path.dirname(os.path.abspath(fluidist.__file__))
ALLOWED = ("fluidist/ops/", "fluidist/framework/registry.py")
# attributes whose values are words of another vocabulary that some op types share, with why
OTHER_VOCABULARIES = {
    "kind": "an RPC message's kind (send, get, prefetch, fetch_barrier, ...): the wire protocol's words, "
            "which name the requests the rpc ops make, not op types",
}


def _strings(node, constants):
    """The strings ``node`` stands for (a literal, a collection of literals, a dict's keys, a
    module constant), or None when it is anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)) or isinstance(node, ast.Dict):
        elts = node.keys if isinstance(node, ast.Dict) else node.elts
        out = set()
        for e in elts:
            got = _strings(e, constants) if e is not None else None
            if got is None:
                return None
            out |= got
        return out
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    return None


def _bindings(target, value):
    """(name, value node) for each name an assignment binds: ``A = v``, ``A, B = v, w``."""
    if isinstance(target, ast.Name):
        return [(target.id, value)]
    if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) and \
            len(target.elts) == len(value.elts):
        return [b for t, v in zip(target.elts, value.elts) for b in _bindings(t, v)]
    return []


def _module_constants(tree):
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        for name, v in _bindings(target, value):
            got = _strings(v, out)
            if got is not None:
                out[name] = got
    return out


def _is_type_attr(node):
    return isinstance(node, ast.Attribute) and node.attr == "type"


def _may_hold_op_type(node):
    return isinstance(node, ast.Attribute) and node.attr not in OTHER_VOCABULARIES


def _compared(node):
    """(holder, other) for each comparison of ``node`` that may test an op type: an attribute on
    either side of ``==`` / ``!=``, an attribute left of ``in`` / ``not in`` (``"seed" in d.attrs``
    asks a collection, not what an attribute holds)."""
    sides = [node.left] + node.comparators
    pairs = []
    for left, op, right in zip(sides, node.ops, sides[1:]):
        if isinstance(op, (ast.Eq, ast.NotEq)):
            pairs += [(left, right), (right, left)]
        elif isinstance(op, (ast.In, ast.NotIn)):
            pairs.append((left, right))
    return [(h, o) for h, o in pairs if _may_hold_op_type(h)]


def op_type_tests(source, op_types, where="<source>"):
    """``["where:line: what"]`` for every op-type test in ``source``."""
    tree = ast.parse(source, where)
    constants = _module_constants(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for holder, other in _compared(node):
                named = (_strings(other, constants) or set()) & op_types
                if named:
                    found.append("%s:%d: .%s compared with %s" % (where, node.lineno, holder.attr, sorted(named)))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in ("startswith", "endswith") and _is_type_attr(node.func.value) and node.args:
            affixes = _strings(node.args[0], constants) or set()
            test = str.startswith if node.func.attr == "startswith" else str.endswith
            if any(test(t, a) for t in op_types for a in affixes):
                found.append("%s:%d: .type.%s(%s)" % (where, node.lineno, node.func.attr, sorted(affixes)))
    return found


def _sources():
    for dirpath, _, files in os.walk(ROOT):
        for f in sorted(files):
            if f.endswith(".py"):
                path = os.path.join(dirpath, f)
                yield os.path.relpath(path, os.path.dirname(ROOT)).replace(os.sep, "/"), path


def test_no_op_type_tests_outside_the_ops_and_the_registry():
    op_types = set(registry.all_op_types())
    found = []
    for rel, path in _sources():
        if rel.startswith(ALLOWED):
            continue
        with open(path) as f:
            found += op_type_tests(f.read(), op_types, rel)
    assert not found, ("op-type tests outside fluidist/ops/ and the registry (make each a registry fact, or "
                       "an attr the pass that writes the program sets):\n" + "\n".join(found))


def test_the_rule_finds_op_type_tests_and_leaves_variable_types_alone():
    op_types = {"sum", "send", "recv", "c_allreduce_sum", "mul_grad", "concat"}
    flagged = '''
RPC_OPS = ("send", "recv")
KEEPS = {"sum": 1}
FORWARD, BACKWARD = "concat", "mul_grad"
GATHERS: tuple = ("concat",)
def f(op, ops, plan):
    a = op.type == "sum"
    b = ops[0].type != "concat"
    c = op.type in ("send", "recv")
    d = op.type in RPC_OPS
    e = op.type.startswith("c_")
    g = op.type.endswith("_grad")
    h = op.type not in KEEPS
    i = op.type in (FORWARD, BACKWARD)
    j = op.type == BACKWARD
    k = plan.optimizer != "sum"
    m = plan.table.update_op in GATHERS
'''
    assert [x.split(": ", 1)[0] for x in op_type_tests(flagged, op_types)] == \
        ["<source>:%d" % n for n in range(7, 18)]
    clean = '''
FEED_OP = "feed"
def f(op, var, v, od, other):
    a = var.type == VarType.SELECTED_ROWS
    b = v.type not in ("RAW", "READER")
    c = od.type in (FEED_OP, "fetch")
    d = op.type == other.type
    e = str(v.type).upper().endswith("SELECTED_ROWS")
    g = op.attr("op_role") == "sum"
    h = msg.kind == "send"
    i = plan.optimizer == other.optimizer
    j = plan.mode in ("RAW", "sorted")
    k = "sum" in op.attrs
'''
    assert op_type_tests(clean, op_types) == []
