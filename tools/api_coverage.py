"""How much of fluidist's public surface is annotated and documented.

Walks every importable module of ``fluidist`` (no module whose dotted name has a part starting
with ``_``), takes each public function defined there and each public method of each public class
defined there, and counts: annotated (every parameter but ``self``/``cls`` and the return), with a
docstring, and with an argument section (``Args:``). ``--missing PREFIX`` lists the unannotated
ones under a module prefix (``fluidist.layers``)."""
import argparse
import importlib
import inspect
import pkgutil
import sys
from typing import Callable, Iterator, List, Tuple


def public_modules(root: str = "fluidist") -> List[str]:
    """The dotted names of fluidist's public modules (its files: Paddle's other paths are the same modules)."""
    pkg = importlib.import_module(root)
    names = [root]
    for info in pkgutil.walk_packages(pkg.__path__, root + "."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        if ".examples" in info.name:
            continue
        names.append(info.name)
    return names


def public_callables(modname: str) -> Iterator[Tuple[str, Callable]]:
    """(qualified name, function) for each public function and method defined in ``modname``."""
    try:
        mod = importlib.import_module(modname)
    except Exception:  # optional dependencies (mpi4py, cupy) missing: not counted
        return
    for name, obj in vars(mod).items():
        if name.startswith("_") or getattr(obj, "__module__", None) != modname:
            continue
        if inspect.isfunction(obj):
            yield "%s.%s" % (modname, name), obj
        elif inspect.isclass(obj):
            for mname, meth in vars(obj).items():
                if mname.startswith("_") and mname != "__init__":
                    continue
                fn = meth.__func__ if isinstance(meth, (staticmethod, classmethod)) else meth
                if isinstance(fn, property):
                    fn = fn.fget
                if inspect.isfunction(fn) and fn.__module__ == modname:
                    yield "%s.%s.%s" % (modname, name, mname), fn


def is_annotated(fn: Callable) -> bool:
    """Every parameter but self/cls annotated, and the return (``__init__`` may leave it out)."""
    ann = getattr(fn, "__annotations__", {})
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    for i, (pname, p) in enumerate(params.items()):
        if i == 0 and pname in ("self", "cls"):
            continue
        if pname not in ann:
            return False
    return "return" in ann or fn.__name__ == "__init__"


def main(argv: List[str] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--missing", metavar="PREFIX", help="list the unannotated callables under this module prefix")
    args = ap.parse_args(argv)
    seen = {}
    for modname in public_modules():
        for qual, fn in public_callables(modname):
            seen.setdefault(id(fn), (qual, fn))
    rows = list(seen.values())
    annotated = [q for q, f in rows if is_annotated(f)]
    documented = [q for q, f in rows if inspect.getdoc(f)]
    with_args = [q for q, f in rows if "Args:" in (inspect.getdoc(f) or "")]
    print("public callables: %d, annotated: %d, with a docstring: %d, with an Args section: %d"
          % (len(rows), len(annotated), len(documented), len(with_args)))
    if args.missing:
        done = set(annotated)
        for q, _ in sorted(rows):
            if q.startswith(args.missing) and q not in done:
                print("  " + q)
    return 0


if __name__ == "__main__":
    sys.exit(main())
