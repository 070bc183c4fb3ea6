"""The conformance table: rows keyed ``file::Class.test``, known gaps applied, printed, saved as JSON,
compared with an earlier run, and written as the Markdown page ``docs/conformance.md``."""
import datetime
import fnmatch
import json
import os
from collections import Counter, OrderedDict
from typing import Dict, Iterable, List, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
KNOWN_GAPS = os.path.join(HERE, "known_gaps.txt")
# each test's outcome under Paddle 1.8.5 itself (``--reference``): {key: [outcome, exception type]}
REFERENCE = os.path.join(HERE, "paddle18_outcomes.json")
OUTCOMES = ("pass", "fail", "error", "timeout", "gap", "refused", "skip", "xfail", "xpass")
NOT_PASSING = ("fail", "error", "timeout")


def read_gaps(path: str = KNOWN_GAPS) -> List[Tuple[str, str]]:
    """``[(pattern, cause), ...]``: each line ``PATTERN  CAUSE`` (two spaces or more between)."""
    gaps = []
    if not os.path.exists(path):
        return gaps
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            pattern, _, cause = line.strip().partition("  ")
            gaps.append((pattern.strip(), cause.strip()))
    return gaps


def row_key(rel: str, test: str) -> str:
    """``sequence/test_x.py::Class.test`` from the file and unittest's id (its module part dropped)."""
    module = os.path.splitext(os.path.basename(rel))[0]
    name = test[len(module) + 1:] if test.startswith(module + ".") else test
    return "%s::%s" % (rel, name)


def gap_for(key: str, gaps: Iterable[Tuple[str, str]]) -> str:
    for pattern, cause in gaps:
        if fnmatch.fnmatchcase(key, pattern):
            return cause or "listed in known_gaps.txt"
    return ""


def read_reference(path: str = REFERENCE) -> Dict[str, List[str]]:
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return json.load(f)


def _exception_name(error: str) -> str:
    """The exception's type only: Paddle's messages are Paddle's text, which this repository does not keep."""
    head = error.split(":", 1)[0].strip()
    return head if head.replace(".", "").replace("_", "").isalnum() else ("timeout" if "time limit" in error else "")


def save_reference(runs, path: str = REFERENCE) -> None:
    """Merge the outcomes of a reference run (Paddle 1.8.5 itself) into ``path``: each test's outcome and
    the type of its exception."""
    data = read_reference(path)
    for run in runs:
        for r in run.rows:
            data[row_key(run.path, r["test"])] = [r["outcome"], _exception_name(r.get("error", ""))]
    with open(path, "w") as f:
        json.dump(data, f, indent=0, sort_keys=True)
        f.write("\n")


def reference_cause(key: str, reference: Dict[str, List[str]]) -> str:
    """A failure Paddle 1.8.5 shows too is explained by it (these are Paddle 1.7-line tests)."""
    ref = reference.get(key)
    if ref and ref[0] in NOT_PASSING:
        return "fails under Paddle 1.8.5 too (%s%s)" % (ref[0], (": " + ref[1]) if ref[1] else "")
    return ""


def build_rows(runs, gaps, reference=None) -> List[Dict]:
    """One dict per test: family, key, outcome (a failure listed in the known gaps, or one Paddle 1.8.5
    shows too, becomes ``gap``), seconds, error, where, gap, and Paddle 1.8.5's outcome."""
    rows = []
    reference = reference or {}
    for run in runs:
        for r in run.rows:
            key = row_key(run.path, r["test"])
            cause = gap_for(key, gaps) or reference_cause(key, reference)
            outcome = r["outcome"]
            if outcome in NOT_PASSING and cause:
                outcome = "gap"
            rows.append({"family": run.family, "key": key, "outcome": outcome, "raw": r["outcome"],
                         "seconds": r.get("seconds", 0), "error": r.get("error", ""), "where": r.get("where", ""),
                         "gap": cause if outcome == "gap" else "", "paddle18": (reference.get(key) or ["?"])[0],
                         "stale_gap": bool(gap_for(key, gaps)) and outcome == "pass"})
    rows.sort(key=lambda row: (row["family"], row["key"]))
    return rows


def rows_from_saved(paths: Iterable[str], gaps, reference=None) -> Tuple[List[Dict], Dict]:
    """The rows of saved runs (``--json`` files; a later run of a test file replaces an earlier one's rows),
    their gaps decided again from ``gaps`` and ``reference``; and the meta of the runs together."""
    by_file: Dict[str, List[Dict]] = {}
    meta: Dict = {"families": [], "fluidist_commit": [], "seconds": 0.0}
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        for key in ("python", "paddle_commit", "date"):
            meta[key] = data.get(key, meta.get(key))
        meta["families"] += [fam for fam in data.get("families", []) if fam not in meta["families"]]
        if data.get("fluidist_commit") not in meta["fluidist_commit"]:
            meta["fluidist_commit"].append(data.get("fluidist_commit"))
        meta["seconds"] += data.get("seconds", 0.0)
        files: Dict[str, List[Dict]] = {}
        for row in data["results"]:
            files.setdefault(row["key"].partition("::")[0], []).append(row)
        by_file.update(files)        # a file run again replaces its earlier rows, an <import> error's too
    runs = {}
    for row in (row for rows in by_file.values() for row in rows):
        path, _, test = row["key"].partition("::")
        run = runs.setdefault(path, _SavedRun(row["family"], path))
        run.rows.append({"test": test, "outcome": row["raw"], "seconds": row.get("seconds", 0),
                         "error": row.get("error", ""), "where": row.get("where", "")})
    meta["fluidist_commit"] = ", ".join(str(c) for c in meta["fluidist_commit"])
    return build_rows(runs.values(), gaps, reference), meta


class _SavedRun:
    """A file's run as a saved JSON gives it (its rows keyed by ``test`` without the module prefix)."""

    def __init__(self, family: str, path: str):
        self.family, self.path, self.rows = family, path, []


def summary(rows: List[Dict]) -> "OrderedDict[str, Counter]":
    out: "OrderedDict[str, Counter]" = OrderedDict()
    for row in rows:
        out.setdefault(row["family"], Counter())[row["outcome"]] += 1
    total = Counter()
    for counts in out.values():
        total.update(counts)
    out["all"] = total
    return out


def pass_rate(counts: Counter) -> str:
    ran = sum(counts[o] for o in ("pass", "fail", "error", "timeout", "gap", "refused"))
    return "%.1f%%" % (100.0 * counts["pass"] / ran) if ran else "-"


def summary_table(rows: List[Dict]) -> str:
    head = "| family | tests | " + " | ".join(OUTCOMES) + " | pass rate (of those run) |"
    lines = [head, "|" + "---|" * (len(OUTCOMES) + 3)]
    for family, counts in summary(rows).items():
        lines.append("| %s | %d | %s | %s |" % (family, sum(counts.values()),
                                               " | ".join(str(counts[o]) for o in OUTCOMES), pass_rate(counts)))
    return "\n".join(lines)


def detail_lines(rows: List[Dict], show: Iterable[str] = NOT_PASSING + ("gap", "refused")) -> List[str]:
    keep = set(show)
    out = []
    for row in rows:
        if row["outcome"] in keep or row["stale_gap"]:
            note = row["gap"] if row["outcome"] == "gap" else row["error"]
            if row["stale_gap"]:
                note = "passes now: remove its known_gaps.txt line"
            out.append("%-8s %-70s %s%s" % (row["outcome"], row["key"], note[:220],
                                           (" [%s]" % row["where"]) if row["where"] and row["outcome"] != "gap"
                                           else ""))
    return out


def save_json(rows: List[Dict], path: str, meta: Dict) -> None:
    data = dict(meta, summary={f: dict(c) for f, c in summary(rows).items()}, results=rows)
    with open(path, "w") as f:
        json.dump(data, f, indent=1, sort_keys=True)


def compare(rows: List[Dict], old_path: str) -> List[str]:
    """The tests whose outcome changed since the run saved at ``old_path``."""
    with open(old_path) as f:
        old = {r["key"]: r["outcome"] for r in json.load(f)["results"]}
    new = {r["key"]: r["outcome"] for r in rows}
    lines = []
    for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key):
            lines.append("%-10s -> %-10s %s" % (old.get(key, "(absent)"), new.get(key, "(absent)"), key))
    return lines


def markdown(rows: List[Dict], meta: Dict) -> str:
    """The docs page: the summary, then each test that does not pass with its cause."""
    date = meta.get("date") or datetime.date.today().isoformat()
    out = ["# Conformance: Paddle's own unit tests", "",
           "Generated by `python tools/paddle_tests.py --markdown docs/conformance.md` on %s, fluidist %s, "
           "Paddle tree %s (families: %s). Do not edit by hand." % (date, meta.get("fluidist_commit", "?"),
                                                                   meta.get("paddle_commit", "?"),
                                                                   ", ".join(meta.get("families", []))),
           "", "Each of Paddle's test files runs with `paddle.fluid` renamed to fluidist, nothing else changed, "
           "except that tests built on `OpTest` run on fluidist's own `op_test` (static checks only: the "
           "dygraph half is skipped, saying why) and `paddle.dataset` is offline synthetic data of the same "
           "shapes. *gap*: a failure listed in `tools/paddle_conformance/known_gaps.txt` with its cause; "
           "*refused*: a name fluidist leaves out on purpose (it raises `NotImplementedError` saying what to "
           "use instead); *skip*: the test skipped itself (GPU-only, ...).", "", summary_table(rows), ""]
    shown = [r for r in rows if r["outcome"] in ("fail", "error", "timeout", "gap", "refused")]
    if shown:
        out += ["## Tests that do not pass", "", "| test | outcome | cause or first error |", "|---|---|---|"]
        for r in shown:
            cause = (r["gap"] or r["error"]).replace("|", "\\|")
            out.append("| `%s` | %s | %s |" % (r["key"], r["outcome"], cause[:300]))
    return "\n".join(out) + "\n"
