"""``python -m fluidist.examples [list | copy DIR | run NAME [ARGS...]]``: see the package's docstring."""
from __future__ import annotations

import os
import runpy
import sys
from typing import List, Optional

from . import copy_examples, examples_dir, list_examples, script_path

USAGE = "usage: python -m fluidist.examples [list | copy DIR | run NAME [ARGS...]]"


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    cmd = argv[0] if argv else "list"
    if cmd in ("-h", "--help"):
        print(USAGE)
        return 0
    if cmd == "list":
        print("fluidist's examples, in %s:" % examples_dir())
        for fname, summary in list_examples().items():
            print("  %-28s %s" % (fname, summary))
        print("copy them with: python -m fluidist.examples copy DIR")
        return 0
    if cmd == "copy" and len(argv) == 2:
        for path in copy_examples(argv[1]):
            print(path)
        return 0
    if cmd == "run" and len(argv) >= 2:
        path = script_path(argv[1])
        sys.argv = [path] + argv[2:]
        sys.path.insert(0, os.path.dirname(path))
        runpy.run_path(path, run_name="__main__")
        return 0
    raise SystemExit(USAGE)  # exit status 1, the usage on stderr


if __name__ == "__main__":
    sys.exit(main())
