"""Run a test script with a lower limit on open files: ``limited_nofile.py N SCRIPT [ARGS...]`` (SCRIPT next to
this file, or a path)."""
import os
import resource
import runpy
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    n, script = int(sys.argv[1]), sys.argv[2]
    path = script if os.path.isabs(script) else os.path.join(HERE, script)
    resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))
    sys.argv = [path] + sys.argv[3:]
    sys.path.insert(0, os.path.dirname(path))
    runpy.run_path(path, run_name="__main__")


if __name__ == "__main__":
    main()
