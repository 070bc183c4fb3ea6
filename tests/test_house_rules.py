"""House rules every source file of ``fluidist/`` keeps: no file over 600 lines, no function over 80.

A function's length counts from its ``def`` (decorators excluded) to its last line, docstring and
nested functions included; a nested function is checked on its own too."""
import ast
import os

import fluidist

ROOT = os.path.dirname(os.path.abspath(fluidist.__file__))
MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 80


def _sources():
    for dirpath, _, files in os.walk(ROOT):
        for f in sorted(files):
            if f.endswith(".py"):
                path = os.path.join(dirpath, f)
                yield os.path.relpath(path, os.path.dirname(ROOT)), path


def test_no_source_file_over_600_lines():
    long = []
    for rel, path in _sources():
        with open(path) as f:
            n = sum(1 for _ in f)
        if n > MAX_FILE_LINES:
            long.append("%s: %d lines" % (rel, n))
    assert not long, "files over %d lines (split them at a seam):\n%s" % (MAX_FILE_LINES, "\n".join(long))


def test_no_function_over_80_lines():
    long = []
    for rel, path in _sources():
        with open(path) as f:
            tree = ast.parse(f.read(), path)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long.append("%s:%d %s: %d lines" % (rel, node.lineno, node.name, n))
    assert not long, "functions over %d lines:\n%s" % (MAX_FUNCTION_LINES, "\n".join(long))
