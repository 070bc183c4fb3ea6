"""Kernels never call NumPy on the arrays they are given, and never move data themselves.

On a device place a kernel's inputs are device arrays: ``np.<anything>(x)`` on one fails on a GPU
(or, where CuPy dispatches it, hides a copy), and a copy made by a kernel is a transfer the Executor
cannot see. Ops that must run on the host say so in their registry entry (``host``), and the plan
copies for them; their kernels are exempt.

The rule, read from the source with ``ast``: in a device kernel (a function ``(ctx, ins, ...)``
registered for an op that does not run on the host), a value is *device data* when it comes from
``ins`` (or from device data by assignment, iteration, indexing or arithmetic), except its
metadata (``.shape``, ``.dtype``, ``.ndim``, ``.size``, ``len()``) and scalars read from it
(``int()``, ``float()``, ``bool()``: counted transfers, allowed). A call of a NumPy function with
device data in its arguments fails the test, and so does any call of ``to_host``, ``.get()`` or
``asnumpy`` in a device kernel. Module functions a kernel hands device data to are checked the same
way, for the parameters that receive it. (Functions a kernel receives as arguments, such as the
activations' lambdas, are not followed: the stand-in device's suites catch those at run time.)
"""
import ast
import os

import fluidist
from fluidist.framework import registry

OPS = os.path.join(os.path.dirname(os.path.abspath(fluidist.__file__)), "ops")
METADATA = {"shape", "dtype", "ndim", "size", "itemsize", "nbytes", "height",
            "items", "ranked", "coarse_lod"}     # a SelectedRows' height, a LoDRankTable's host lists
SCALAR_READS = {"item", "tolist"}       # counted device-to-host reads, allowed like int()
HOST_READS = {"len", "int", "float", "bool", "isinstance", "type", "range", "enumerate", "zip", "str"}
MOVES = {"to_host", "get", "asnumpy", "to_host_value"}


def _numpy_names(tree):
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.asname or a.name for a in node.names if a.name == "numpy"}
        elif isinstance(node, ast.ImportFrom) and node.module == "numpy":
            names |= {a.asname or a.name for a in node.names}
    return names


def _kernel_facts():
    """(file, first line) of every registered kernel -> None for an op that runs on the host
    somewhere, else the input slots it reads on the host (``host_inputs``)."""
    out = {}
    for d in registry._REGISTRY.values():
        if d.kernel is not None and hasattr(d.kernel, "__code__"):
            code = d.kernel.__code__
            key = (os.path.abspath(code.co_filename), code.co_firstlineno)
            out[key] = None if registry.fact(d.type, "host") else \
                frozenset(registry.fact(d.type, "host_inputs")) | out.get(key, frozenset())
    return out


class _Module:
    """One ops module: its functions, NumPy's names in it, and the helpers it imports from siblings."""

    def __init__(self, path, source=None):
        self.path = path
        self.tree = ast.parse(source if source is not None else open(path).read(), path)
        self.np = _numpy_names(self.tree)
        self.fns = {n.name: n for n in self.tree.body if isinstance(n, ast.FunctionDef)}
        # every function, nested ones too (kernels made by factories)
        self.all_fns = [n for n in ast.walk(self.tree) if isinstance(n, ast.FunctionDef)]
        self.imported = {}                  # name -> sibling module name
        for n in self.tree.body:
            if isinstance(n, ast.ImportFrom) and n.level == 1 and n.module:
                for a in n.names:
                    self.imported[a.asname or a.name] = (n.module, a.name)


class _Analyzer:
    """Device data through the functions of the ops package: errors, and which results of a
    function are device data given which of its parameters are (memoised)."""

    def __init__(self, modules):
        self.modules = modules
        self.memo = {}
        self.errors = []

    def resolve(self, module, name):
        if name in module.fns:
            return module, module.fns[name]
        if name in module.imported:
            mod, real = module.imported[name]
            other = self.modules.get(mod)
            if other is not None and real in other.fns:
                return other, other.fns[real]
        return None

    def returns(self, module, fn, tainted, host_slots=frozenset()):
        """Whether ``fn`` returns device data (a tuple of answers for a tuple return)."""
        key = (module.path, fn.name, fn.lineno, tainted, host_slots)
        if key in self.memo:
            return self.memo[key]
        self.memo[key] = False              # a recursive call: assume host until known
        t = _Taint(self, module, fn, tainted, host_slots).run()
        self.errors += t.errors
        self.memo[key] = t.returned
        return t.returned


def _merge(a, b):
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        return tuple(x or y for x, y in zip(a, b))
    return _any(a) or _any(b)


def _any(r):
    return any(r) if isinstance(r, tuple) else bool(r)


class _Taint(ast.NodeVisitor):
    """Device data in one function, given its tainted parameters; collects violations."""

    def __init__(self, analyzer, module, fn, tainted, host_slots=frozenset()):
        self.an, self.mod, self.fn, self.np = analyzer, module, fn, module.np
        self.host_slots = host_slots
        self.tainted = set(tainted)
        self.errors = []
        self.returned = False

    def call_result(self, node):
        """Device-ness of a call's result: per element for a sibling helper returning a tuple."""
        f = node.func
        if isinstance(f, ast.Name) and f.id in HOST_READS:
            return False
        if isinstance(f, ast.Attribute) and f.attr in SCALAR_READS:
            return False
        if isinstance(f, ast.Attribute) and f.attr == "get" and self._host_slot(f.value, node.args):
            return False
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in self.np:
            return False         # reported by visit_Call; its result is host data
        dev = [self.is_device(a) for a in node.args]
        kw = {k.arg: self.is_device(k.value) for k in node.keywords if k.arg}
        if isinstance(f, ast.Name):
            target = self.an.resolve(self.mod, f.id)
            if target is not None:
                mod, fn = target
                params = _params(fn)
                names = frozenset([params[i] for i, d in enumerate(dev) if d and i < len(params)] +
                                  [k for k, d in kw.items() if d and k in params])
                return self.an.returns(mod, fn, names, self.host_slots) if names else False
        return self.is_device(f) or any(dev) or any(kw.values())

    def _host_slot(self, container, keys):
        """``ins["Slot"]`` / ``ins.get("Slot")`` for a slot the op reads on the host."""
        return isinstance(container, ast.Name) and container.id == "ins" and keys and \
            isinstance(keys[0], ast.Constant) and keys[0].value in self.host_slots

    def is_device(self, node):
        if isinstance(node, ast.Name):
            return node.id in self.tainted
        if isinstance(node, ast.Subscript) and self._host_slot(node.value, [node.slice]):
            return False
        if isinstance(node, ast.Attribute):
            return node.attr not in METADATA and self.is_device(node.value)
        if isinstance(node, ast.Call):
            return _any(self.call_result(node))
        if isinstance(node, (ast.Lambda, ast.FunctionDef)):
            return False
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            return self.is_device(node.elt)
        if isinstance(node, ast.DictComp):
            return self.is_device(node.key) or self.is_device(node.value)
        if isinstance(node, ast.IfExp):
            branches = _branches(node, self.np)
            return any(self.is_device(b) for b in branches)
        return any(self.is_device(c) for c in ast.iter_child_nodes(node))

    def run(self):
        for _ in range(8):          # assignments in any order: to a fixpoint
            before = len(self.tainted)
            for node in ast.walk(self.fn):
                self._assign(node)
            if len(self.tainted) == before:
                break
        self.visit(self.fn)
        return self

    def _targets(self, t):
        if isinstance(t, ast.Name):
            yield t.id
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                yield from self._targets(e)
        elif isinstance(t, ast.Starred):
            yield from self._targets(t.value)

    def _assign(self, node):
        if isinstance(node, ast.Assign):
            if isinstance(node.value, ast.Call):
                res = self.call_result(node.value)
                for t in node.targets:
                    if isinstance(res, tuple) and isinstance(t, ast.Tuple) and len(t.elts) == len(res):
                        for e, d in zip(t.elts, res):
                            if d:
                                self.tainted.update(self._targets(e))
                    elif _any(res):
                        self.tainted.update(self._targets(t))
            elif self.is_device(node.value):
                for t in node.targets:
                    self.tainted.update(self._targets(t))
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and node.value is not None and self.is_device(node.value):
            self.tainted.update(self._targets(node.target))
        elif isinstance(node, (ast.For, ast.comprehension)) and self.is_device(node.iter):
            self.tainted.update(self._targets(node.target))
        elif isinstance(node, ast.NamedExpr) and self.is_device(node.value):
            self.tainted.update(self._targets(node.target))

    def visit_Return(self, node):
        if node.value is not None:
            if isinstance(node.value, ast.Tuple):
                r = tuple(self.is_device(e) for e in node.value.elts)
            else:
                r = self.is_device(node.value)
            self.returned = r if self.returned is False else _merge(self.returned, r)
        self.generic_visit(node)

    def visit_If(self, node):
        self.visit(node.test)
        for b in _branches(node, self.np):
            for stmt in (b if isinstance(b, list) else [b]):
                self.visit(stmt)

    visit_IfExp = visit_If

    def visit_FunctionDef(self, node):
        if node is self.fn:
            self.generic_visit(node)      # nested functions are analysed on their own

    def visit_Call(self, node):
        f = node.func
        args = list(node.args) + [k.value for k in node.keywords]
        dev = [self.is_device(a) for a in args]
        where = "%s:%d in %s()" % (os.path.relpath(self.mod.path, os.path.dirname(OPS)), node.lineno, self.fn.name)
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in self.np and any(dev):
            self.errors.append("%s: %s.%s(...) on device data" % (where, f.value.id, f.attr))
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
        is_dict_get = name == "get" and node.args           # ins.get("X"): a dict, not an array
        if name in MOVES and not is_dict_get and (isinstance(f, ast.Name) or any(dev) or self.is_device(f)):
            self.errors.append("%s: %s() moves data inside a kernel" % (where, name))
        self.generic_visit(node)


def _host_test(test, np_names):
    """``xp is np`` -> True (the body runs on the host), ``xp is not np`` -> False, else None."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Is, ast.IsNot)):
        right = test.comparators[0]
        if isinstance(right, ast.Name) and right.id in np_names:
            return isinstance(test.ops[0], ast.Is)
    return None


def _branches(node, np_names):
    """The branches of an ``if`` / conditional expression that may run on device data: a branch
    under ``xp is np`` runs on the host only."""
    host = _host_test(node.test, np_names)
    if host is True:
        return [node.orelse]
    if host is False:
        return [node.body]
    return [node.body, node.orelse]


def _params(fn):
    return [a.arg for a in fn.args.posonlyargs + fn.args.args]


def _device_kernels(module, facts):
    """(kernel, the input slots it reads on the host) for each kernel of an op that runs on the device."""
    for fn in module.all_fns:
        if _params(fn)[:2] != ["ctx", "ins"]:
            continue
        first = min([fn.lineno] + [d.lineno for d in fn.decorator_list])
        path = os.path.abspath(module.path)
        key = (path, first) if (path, first) in facts else (path, fn.lineno)
        if key in facts and facts[key] is not None:
            yield fn, facts[key]


def _check(modules, facts):
    an = _Analyzer(modules)
    for module in modules.values():
        for fn, host_slots in _device_kernels(module, facts):
            an.returns(module, fn, frozenset(["ins"]), host_slots)
    return sorted(set(an.errors))


def _ops_modules():
    return {f[:-3]: _Module(os.path.join(OPS, f)) for f in sorted(os.listdir(OPS)) if f.endswith(".py")}


def test_device_kernels_call_no_numpy_on_their_inputs():
    errors = _check(_ops_modules(), _kernel_facts())
    assert not errors, "%d NumPy calls on device data (use ctx.xp, or mark the op host in its registry " \
                       "entry):\n  %s" % (len(errors), "\n  ".join(errors))


def test_the_rule_sees_a_numpy_call_on_an_input():
    src = ("import numpy as np\n"
           "def k(ctx, ins, attrs):\n"
           "    x = ins['X']\n"
           "    n = x.shape[0]\n"
           "    off, rows = helper_host(ctx, x)\n"
           "    y = np.zeros(n) + float(x.sum()) + np.diff(off)\n"    # metadata, a counted scalar read, host data
           "    z = helper(x * 2, rows)\n"
           "    return {'Out': np.asarray(x)}\n"
           "def helper(a, b):\n"
           "    return np.exp(a)\n"
           "def helper_host(ctx, x):\n"
           "    return np.asarray(ctx.lod('X')[-1]), x[:2]\n")
    path = os.path.join(OPS, "probe.py")
    errors = _check({"probe": _Module(path, source=src)}, {(os.path.abspath(path), 2): frozenset()})
    assert len(errors) == 2, errors
    assert any("np.asarray" in e and "k()" in e for e in errors)
    assert any("np.exp" in e and "helper()" in e for e in errors)
