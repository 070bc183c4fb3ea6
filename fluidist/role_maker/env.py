"""Reading the launcher's environment variables, with errors that name the variable, show its value
and say who sets it.

Paddle 1.8 raised a bare ``KeyError`` for a missing variable and ``ValueError("something wrong with
PaddleCloud, please check environment")`` for a bad one; fluidist raises :class:`EnvVarError`,
which is both a ``KeyError`` and a ``ValueError`` (so Paddle-era ``except`` clauses still catch it)
and says exactly what is wrong.
"""
import os

from ..distributed import ports

LAUNCHER = "python -m fluidist.distributed.launch"


class EnvVarError(KeyError, ValueError):
    """A launcher environment variable is missing or malformed."""

    def __init__(self, message, name=None, value=None):
        super().__init__(message)
        self.message = message
        self.name = name
        self.value = value

    def __str__(self):
        return self.message


def env_error(owner, name, value, expected, hint=None):
    """The error for variable ``name`` holding ``value`` (``None``: unset) when ``expected`` was wanted."""
    state = "is missing" if value is None else "is malformed"
    shown = "unset" if value is None else repr(value)
    msg = ("%s: environment variable %s %s (value: %s); expected %s. `%s` sets it for every process it "
           "starts; when you start the processes yourself, export it."
           % (owner, name, state, shown, expected, LAUNCHER))
    if hint:
        msg += " " + hint
    return EnvVarError(msg, name, value)


class EnvReader:
    """Reads variables of one environment (``os.environ`` by default) on behalf of ``owner``."""

    def __init__(self, owner, environ=None):
        self.owner = owner
        self.environ = os.environ if environ is None else environ

    def raw(self, name):
        return self.environ.get(name)

    def has(self, name):
        return self.environ.get(name) is not None

    def error(self, name, expected, hint=None, value=None):
        return env_error(self.owner, name, self.raw(name) if value is None else value, expected, hint)

    def string(self, name, expected="a non-empty string", default=None):
        value = self.raw(name)
        if value is None:
            if default is not None:
                return default
            raise self.error(name, expected)
        if not value.strip():
            raise self.error(name, expected)
        return value.strip()

    def integer(self, name, low=None, high=None, default=None, expected=None):
        """An int in [low, high] (both inclusive, either may be None)."""
        if expected is None:
            if low is not None and high is not None:
                expected = "an integer in [%d, %d]" % (low, high)
            elif low is not None:
                expected = "an integer >= %d" % low
            else:
                expected = "an integer"
        value = self.raw(name)
        if value is None:
            if default is not None:
                return default
            raise self.error(name, expected)
        try:
            n = int(value.strip())
        except ValueError:
            raise self.error(name, expected) from None
        if (low is not None and n < low) or (high is not None and n > high):
            raise self.error(name, expected)
        return n

    def choice(self, name, choices, default=None):
        expected = "one of " + ", ".join(choices)
        value = self.raw(name)
        if value is None and default is not None:
            return default
        if value is None or value.strip() not in choices:
            raise self.error(name, expected)
        return value.strip()

    def endpoints(self, name, allow_empty=False):
        """A comma-separated list of distinct ``ip:port`` endpoints."""
        expected = "a comma-separated list of distinct ip:port endpoints%s" % (
            " (may be empty)" if allow_empty else "")
        value = self.raw(name)
        if value is None:
            raise self.error(name, expected)
        eps = [e.strip() for e in value.split(",")]
        if eps == [""]:
            if allow_empty:
                return []
            raise self.error(name, expected)
        for ep in eps:
            if not is_endpoint(ep):
                raise self.error(name, expected, "%r is not an ip:port endpoint." % ep)
        dups = sorted({e for e in eps if eps.count(e) > 1})
        if dups:
            raise self.error(name, expected, "It lists %s more than once." % ", ".join(dups))
        return eps


def is_endpoint(ep):
    """Whether ``ep`` is ``host:port`` (fluidist's one parser: :mod:`fluidist.distributed.ports`)."""
    return ports.is_endpoint(ep)
