"""Runs Paddle's own Python unit tests (and its book tests) against fluidist: the conformance suite.

    python tools/paddle_tests.py --families dist                  # Paddle's distributed tests
    python tools/paddle_tests.py --families ops --json ops.json   # every OpTest file, results saved
    python tools/paddle_tests.py --files test_mul_op.py test_layers.py
    python tools/paddle_tests.py --families all --markdown docs/conformance.md --json all.json
    python tools/paddle_tests.py --families ops --compare ops.json   # what changed since a saved run

Paddle's tree is read at run time (``--paddle``: a checkout holding ``python/paddle``, or a git
directory at ``--commit``; by default ``$PADDLE_SRC`` or the library's fetched
``wangxicoding/Paddle``) and copied into a scratch folder with a ``paddle`` package in front whose
``paddle.fluid`` is fluidist: a rename, nothing else (``tools/paddle_conformance/paddle_shim.py``).
Tests built on Paddle's ``OpTest`` run on fluidist's own ``op_test`` with OpTest's API
(``tools/paddle_conformance/op_test.py``): the static checks run, the dygraph half is skipped, saying
why. ``paddle.dataset`` is offline synthetic data of the same shapes (no network here).

Paddle's tests of 2020 were written for NumPy < 1.24 (``np.float``, ``np.int``, ``np.product``,
ragged ``np.array``): the test processes run under ``--python``, by default the venv that
``--make-venv [BASE_PYTHON]`` makes once (``$FLUIDIST_PADDLE_TESTS_VENV``,
``/tmp/fluidist-paddle-tests``: NumPy 1.23, SciPy, six and fluidist's dependencies; from Python 3.9
ideally, since 3.11 refuses ``random.sample`` of a set, which some call), else this interpreter, and
then those tests fail on NumPy's removed names.

Each test ends as pass, fail, error, timeout, refused (a name fluidist leaves out, raising
``NotImplementedError``), skip, or gap (a failure listed with its cause in
``tools/paddle_conformance/known_gaps.txt``). The table lists every test that does not pass with its
first error and the innermost fluidist frame; the exit status is 1 when any test fails that is not a
listed gap. Families: book, dist, fleet, dygraph, layers, optimizer, program, ops, mkldnn, ngraph,
other (``tools/paddle_conformance/families.py``).
"""
import argparse
import datetime
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from paddle_conformance import execute, families, report, scratch  # noqa: E402

# per-file time limits (seconds): the distributed harness starts pservers and trainers per case
LIMITS = {"dist": 900, "book": 600, "fleet": 300}
DEFAULT_LIMIT = 240


VENV = os.environ.get("FLUIDIST_PADDLE_TESTS_VENV",
                      os.path.join(os.environ.get("TMPDIR", "/tmp"), "fluidist-paddle-tests"))
VENV_PACKAGES = ["numpy>=1.21,<1.24", "scipy<1.12", "six", "pyzmq>=22", "protobuf>=3.20", "typing_extensions>=4.0"]


def default_python():
    python = os.path.join(VENV, "bin", "python")
    return python if os.access(python, os.X_OK) else sys.executable


def make_venv(base=None):
    """The test processes' interpreter: ``base`` (default this Python) with NumPy < 1.24 (Paddle's tests
    use its removed names). Python 3.9 suits Paddle's 2020 test code best (3.11 refuses ``random.sample``
    of a set, which some of them call)."""
    subprocess.run([base or sys.executable, "-m", "venv", VENV], check=True)
    subprocess.run([os.path.join(VENV, "bin", "pip"), "install", "-q"] + VENV_PACKAGES, check=True)
    return os.path.join(VENV, "bin", "python")


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--paddle", help="Paddle tree: a checkout holding python/paddle, or a git directory")
    ap.add_argument("--commit", default=scratch.DEFAULT_COMMIT, help="commit to read from a git directory")
    ap.add_argument("--families", nargs="*", default=["all"], help="families to run (default: all)")
    ap.add_argument("--files", nargs="*", default=[], help="test files (names or paths under tests/)")
    ap.add_argument("--tests", nargs="*", default=[], help="only tests whose id starts with these (Class or Class.test)")
    ap.add_argument("-j", "--jobs", type=int, default=max(1, min(2, os.cpu_count() or 1)))
    ap.add_argument("--scratch", help="scratch folder (rebuilt; default: a new temporary folder)")
    ap.add_argument("--json", help="write the results as JSON")
    ap.add_argument("--compare", help="a JSON of an earlier run: print the tests whose outcome changed")
    ap.add_argument("--markdown", help="write the docs page (summary and every test that does not pass)")
    ap.add_argument("--python", default=None,
                    help="interpreter of the test processes (default: the --make-venv venv if present)")
    ap.add_argument("--make-venv", nargs="?", const="", metavar="BASE_PYTHON",
                    help="make the test processes' venv (%s) first, from BASE_PYTHON (default: this one; "
                         "Python 3.9 suits Paddle's 2020 tests best)" % VENV)
    ap.add_argument("--fluidist", default=ROOT, help="the fluidist checkout to test (default: this one)")
    ap.add_argument("--known-gaps", default=report.KNOWN_GAPS, help="the known-gaps file (default: the runner's)")
    ap.add_argument("--time-limit", type=float, help="seconds per file (default: by family, %s, else %d)" % (
        ", ".join("%s %d" % kv for kv in sorted(LIMITS.items())), DEFAULT_LIMIT))
    ap.add_argument("--include-excluded", action="store_true",
                    help="also run the files Paddle's own CPU build does not run (GPU-only, MKL-only, disabled)")
    ap.add_argument("--reference", metavar="PYTHON",
                    help="run the picked files under Paddle 1.8.5 itself (an interpreter with paddlepaddle 1.8.5) "
                         "and record each test's outcome in paddle18_outcomes.json")
    ap.add_argument("--quiet", action="store_true", help="no per-file progress lines")
    ap.add_argument("--from-json", nargs="+", metavar="JSON",
                    help="run nothing: report saved runs (--json files, a later run of a test file replacing an "
                         "earlier one's) with the known gaps of now, e.g. to write --markdown from the families' runs")
    return ap.parse_args(argv)


def pick_files(layout, args):
    """``[(family, rel path)]`` to run, from --files or --families."""
    by_family = families.classify(layout.tests)
    if args.files:
        wanted = {os.path.basename(f) if "/" not in f else f for f in args.files}
        return [(fam, rel) for fam, rels in by_family.items() for rel in rels
                if rel in wanted or os.path.basename(rel) in wanted]
    chosen = families.FAMILIES if "all" in args.families else args.families
    unknown = [f for f in chosen if f not in families.FAMILIES]
    if unknown:
        raise SystemExit("unknown families %s: the families are %s" % (unknown, ", ".join(families.FAMILIES)))
    return [(fam, rel) for fam in chosen for rel in by_family.get(fam, [])]


def fluidist_commit(root=ROOT):
    try:
        out = subprocess.run(["git", "-C", root, "describe", "--always", "--dirty"], capture_output=True, text=True)
        return out.stdout.strip() or "?"
    except OSError:
        return "?"


def main(argv=None):
    args = parse_args(argv if argv is not None else sys.argv[1:])
    if args.from_json:
        rows, meta = report.rows_from_saved(args.from_json, report.read_gaps(args.known_gaps),
                                            report.read_reference())
        return finish(args, rows, meta)
    args.python = args.python or (make_venv(args.make_venv or None) if args.make_venv is not None
                                  else default_python())
    if args.reference:
        args.python = args.reference
    layout = scratch.prepare(scratch.find_source(args.paddle), args.scratch, args.commit, bool(args.reference))
    files = pick_files(layout, args)
    if not files:
        raise SystemExit("no test files picked")
    print("%d files from Paddle %s, scratch %s, Python %s" % (len(files), layout.commit[:10], layout.root,
                                                             args.python), flush=True)
    only = {rel: args.tests for _, rel in files} if args.tests else None
    done = [0]

    def progress(run):
        done[0] += 1
        if not args.quiet:
            counts = report.Counter(r["outcome"] for r in run.rows)
            print("[%d/%d] %-8s %-55s %5.1fs  %s" % (done[0], len(files), run.family, run.path, run.seconds,
                                                     " ".join("%s=%d" % kv for kv in sorted(counts.items()))),
                  flush=True)

    start = time.time()
    excluded = [] if args.include_excluded else [
        execute.FileRun(fam, rel, [{"test": os.path.splitext(os.path.basename(rel))[0] + ".<file>",
                                    "outcome": "skip", "error": "Paddle's CPU build does not run it: " +
                                    families.excluded_reason(rel)}])
        for fam, rel in files if families.excluded_reason(rel)]
    files = [(fam, rel) for fam, rel in files if args.include_excluded or not families.excluded_reason(rel)]
    under_test = "" if args.reference else os.path.abspath(args.fluidist)
    runs = excluded + execute.run_all(files, layout.tests, layout.site, under_test, args.jobs,
                           lambda fam, rel: args.time_limit or LIMITS.get(fam, DEFAULT_LIMIT), progress, only,
                           args.python)
    if args.reference:
        report.save_reference(runs)
        rows = report.build_rows(runs, [])
    else:
        rows = report.build_rows(runs, report.read_gaps(args.known_gaps), report.read_reference())
    meta = {"python": args.python, "paddle_commit": layout.commit, "fluidist_commit": fluidist_commit(args.fluidist), "families": args.families,
            "date": datetime.date.today().isoformat(), "seconds": round(time.time() - start, 1)}
    return finish(args, rows, meta)


def finish(args, rows, meta):
    """Print the report of ``rows``; write the JSON and the docs page asked for; 1 if any test fails."""
    print("\n".join(report.detail_lines(rows)))
    print("\n" + report.summary_table(rows))
    print("%.0f s" % meta["seconds"])
    if args.json:
        report.save_json(rows, args.json, meta)
    if args.compare:
        print("\nchanged since %s:\n%s" % (args.compare, "\n".join(report.compare(rows, args.compare)) or "(none)"))
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(report.markdown(rows, meta))
    return 1 if any(r["outcome"] in report.NOT_PASSING for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
