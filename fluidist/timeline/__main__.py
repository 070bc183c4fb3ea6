"""``python -m fluidist.timeline``: merge per-process Chrome traces into one, a track per process."""
import argparse
import json
import os
import sys

from . import _pairs, merge


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m fluidist.timeline",
                                 description="Merge per-process Chrome traces of fluidist into one, a track per "
                                             "process.")
    ap.add_argument("traces", nargs="*", help="trace files, or name=file pairs")
    ap.add_argument("--profile_path", default="", help="comma list of name=file pairs (Paddle's tools/timeline.py)")
    ap.add_argument("-o", "--timeline_path", default="timeline.json", help="the merged trace to write")
    args = ap.parse_args(argv)
    inputs = _pairs(args.profile_path) + [p for t in args.traces for p in _pairs(t)]
    if not inputs:
        ap.error("give trace files (or --profile_path name=file,...)")
    try:
        merged = merge(inputs)
    except ValueError as e:
        ap.exit(1, "python -m fluidist.timeline: error: %s\n" % e)
    folder = os.path.dirname(os.path.abspath(args.timeline_path))
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as e:
        ap.exit(1, "python -m fluidist.timeline: error: cannot create the folder of %s: %s\n" % (args.timeline_path, e))
    with open(args.timeline_path, "w") as f:
        json.dump(merged, f)
    print("%s: %d process(es), %d spans, %d flows" % (
        args.timeline_path, len(inputs), sum(1 for e in merged["traceEvents"] if e.get("ph") == "X"),
        merged["otherData"]["fluidist"]["flows"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
