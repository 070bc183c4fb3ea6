"""Runs one of Paddle's test modules with unittest and writes one JSON line per test (the child side of
the conformance runner; ``python run_file.py MODULE OUT.jsonl [TEST_ID_PREFIX ...]``).

A line ``{"test", "outcome", "seconds", "error", "where"}`` is written when a test ends, and a line with
outcome ``started`` when it starts, so that the runner can name the test a killed file was in.
Outcomes: pass, fail (an assertion), error (any other exception), refused (fluidist's
NotImplementedError for a name it leaves out), skip, xfail, xpass.
"""
import importlib
import json
import os
import sys
import time
import traceback
import unittest

REFUSAL_MARK = "not implemented in fluidist"


def first_line(exc: BaseException) -> str:
    text = ("%s: %s" % (type(exc).__name__, exc)).strip()
    return " ".join(text.split())[:400]


def where(tb) -> str:
    """The innermost frame in fluidist, else the innermost frame of the test."""
    frames = traceback.extract_tb(tb)
    for frame in reversed(frames):
        if "/fluidist/" in frame.filename:
            return "fluidist/%s:%d" % (frame.filename.rsplit("/fluidist/", 1)[1], frame.lineno)
    if frames:
        return "%s:%d" % (os.path.basename(frames[-1].filename), frames[-1].lineno)
    return ""


def test_name(test) -> str:
    """unittest's id, except that a class made inside a function (Paddle's ``create_test_*_class``
    factories, which give each class its own ``__name__``) is named by its ``__name__``: its qualified
    name (``create_test_class.<locals>.Cls``) is the same for every class the factory made."""
    if not hasattr(test, "id"):
        return str(test)
    cls = type(test)
    if "<locals>" in getattr(cls, "__qualname__", ""):
        return "%s.%s.%s" % (cls.__module__, cls.__name__, getattr(test, "_testMethodName", ""))
    return test.id()


class JsonLinesResult(unittest.TestResult):
    """Writes each test's outcome as it ends."""

    def __init__(self, out):
        super().__init__()
        self.out = out
        self.started = {}

    def _write(self, test, outcome, error="", at=""):
        name = test_name(test)
        seconds = time.time() - self.started.pop(name, time.time())
        self.out.write(json.dumps({"test": name, "outcome": outcome, "seconds": round(seconds, 3),
                                   "error": error, "where": at}) + "\n")
        self.out.flush()

    def startTest(self, test):
        super().startTest(test)
        self.started[test_name(test)] = time.time()
        self.out.write(json.dumps({"test": test_name(test), "outcome": "started"}) + "\n")
        self.out.flush()

    def addSuccess(self, test):
        self._write(test, "pass")

    def _exc(self, test, err, default):
        exc_type, exc, tb = err
        outcome = default
        if isinstance(exc, NotImplementedError) and REFUSAL_MARK in str(exc):
            outcome = "refused"
        self._write(test, outcome, first_line(exc), where(tb))

    def addFailure(self, test, err):
        self._exc(test, err, "fail")

    def addError(self, test, err):
        self._exc(test, err, "error")

    def addSubTest(self, test, subtest, err):
        if err is not None:
            self._exc(subtest, err, "fail" if issubclass(err[0], AssertionError) else "error")

    def addSkip(self, test, reason):
        self._write(test, "skip", " ".join(str(reason).split())[:400])

    def addExpectedFailure(self, test, err):
        self._write(test, "xfail")

    def addUnexpectedSuccess(self, test):
        self._write(test, "xpass")


def main(argv) -> int:
    module, out_path, prefixes = argv[1], argv[2], argv[3:]
    with open(out_path, "a") as out:
        try:
            mod = importlib.import_module(module)
        except BaseException as exc:  # noqa: B902  (an import that fails is the file's one result)
            out.write(json.dumps({"test": module + ".<import>", "outcome":
                                  "refused" if REFUSAL_MARK in str(exc) else "error",
                                  "seconds": 0, "error": first_line(exc), "where": where(exc.__traceback__)}) + "\n")
            return 1
        suite = unittest.defaultTestLoader.loadTestsFromModule(mod)
        if prefixes:
            strip = len(module) + 1
            suite = unittest.TestSuite(t for t in _flatten(suite)
                                       if any(t.id()[strip:].startswith(p) for p in prefixes))
        suite.run(JsonLinesResult(out))
    return 0


def _flatten(suite):
    for item in suite:
        if isinstance(item, unittest.TestSuite):
            yield from _flatten(item)
        else:
            yield item


if __name__ == "__main__":
    sys.exit(main(sys.argv))
