"""The fluid 1.x compatibility table: for each module of Paddle 1.8's fluid API, how many of its
public names work in fluidist, how many are refused (they raise NotImplementedError saying what to
use instead) and how many are still pending. The names are ``tests/compat/fluid18_names.txt``;
``tests/compat/fluid18_pending.txt`` lists those another piece of work is adding.

    python tools/compat_table.py              # the table, by module (Markdown)
    python tools/compat_table.py --refused    # every refused name with its "instead"
    python tools/compat_table.py --missing    # names neither working nor refused
"""
import argparse
import importlib
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAMES = os.path.join(ROOT, "tests", "compat", "fluid18_names.txt")
PENDING = os.path.join(ROOT, "tests", "compat", "fluid18_pending.txt")

# Paddle's fluid/__init__ re-exports these modules' names: users reach them as fluid.<name>
TOP_LEVEL = ("framework", "executor", "parallel_executor")


def read_rows(path):
    """The ``module name [...]`` rows of a names file (comments and blank lines skipped)."""
    rows = []
    if not os.path.exists(path):
        return rows
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                rows.append(tuple(line.split()))
    return rows


def where(module):
    """The fluidist module path where a name of Paddle's ``paddle.fluid.<module>`` must be found."""
    if module.startswith("layers."):
        return "fluidist.layers"
    if module in TOP_LEVEL:
        return "fluidist"
    return "fluidist." + module


def lookup(module, name):
    """The fluidist object for ``paddle.fluid.<module>.<name>``, or None."""
    try:
        mod = importlib.import_module(where(module))
    except ImportError:
        return None
    return getattr(mod, name, None)


def status(module, name):
    """'working', 'refused' or 'missing'."""
    from fluidist.compat import is_refused
    obj = lookup(module, name)
    if obj is None:
        return "missing"
    return "refused" if is_refused(obj) else "working"


def table():
    """[(module, total, working, refused, pending, missing)] in inventory order, and the totals."""
    pending = {(m, n) for m, n, *_ in read_rows(PENDING)}
    rows, order = {}, []
    for module, name in read_rows(NAMES):
        if module not in rows:
            rows[module] = [0, 0, 0, 0, 0]
            order.append(module)
        r = rows[module]
        r[0] += 1
        s = status(module, name)
        if s == "working":
            r[1] += 1
        elif s == "refused":
            r[2] += 1
        elif (module, name) in pending:
            r[3] += 1
        else:
            r[4] += 1
    out = [(m,) + tuple(rows[m]) for m in order]
    totals = tuple(sum(r[i] for r in rows.values()) for i in range(5))
    return out, totals


def refusals():
    """[(module, name, message)] of the refused names, the message being what calling them says."""
    out = []
    for module, name in read_rows(NAMES):
        if status(module, name) == "refused":
            doc = (getattr(lookup(module, name), "__doc__", "") or "").replace("Not implemented in fluidist. ", "")
            out.append((module, name, doc.strip()))
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--refused", action="store_true", help="list the refused names with what to use instead")
    p.add_argument("--missing", action="store_true", help="list the names neither working nor refused")
    args = p.parse_args(argv)
    sys.path.insert(0, ROOT)
    if args.refused:
        for module, name, instead in refusals():
            print("paddle.fluid.%s.%s: %s" % (module, name, instead))
        return 0
    if args.missing:
        for module, name in read_rows(NAMES):
            if status(module, name) == "missing":
                print(module, name)
        return 0
    rows, (total, working, refused, pending, missing) = table()
    print("| module | names | working | refused | pending | missing | working share |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for m, t, w, r, pe, mi in rows:
        print("| %s | %d | %d | %d | %d | %d | %.0f%% |" % (m, t, w, r, pe, mi, 100.0 * w / t))
    print("| **all** | %d | %d | %d | %d | %d | **%.1f%%** |" % (total, working, refused, pending, missing,
                                                                   100.0 * working / total))
    return 0


if __name__ == "__main__":
    sys.exit(main())
