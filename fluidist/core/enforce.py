"""Paddle's class of run-time check failures, ``core.EnforceNotMet``, and the twin of any error that is one
too: a script's ``except core.EnforceNotMet`` catches what an op raised while its own class still matches."""
from __future__ import annotations


class EnforceNotMet(RuntimeError):
    """Paddle's C++ check failures (fluidist raises Python's own exceptions with the same messages)."""


class InvalidArgumentError(ValueError, EnforceNotMet):
    """A value an op got at run time fails the op's check where Paddle 1.8 raised its
    InvalidArgumentError: a ValueError that a Paddle script's ``except core.EnforceNotMet`` catches too."""


def as_enforce_not_met(error: BaseException) -> BaseException:
    """``error`` as an instance of EnforceNotMet as well as of its own class: an op that fails while a
    program runs fails in Paddle with the C++ EnforceNotMet, so ``except core.EnforceNotMet`` catches
    it, while ``except ValueError`` (its fluidist class) still does. Returns ``error`` itself when it
    already is one, or is the end of a reader's pass (a class with ``ends_a_pass``: ``EOFException``) or
    no ``Exception``; else a new error of a subclass of both with the same name, args and attributes
    (raise it with ``error``'s traceback)."""
    cls = type(error)
    if isinstance(error, EnforceNotMet) or getattr(cls, "ends_a_pass", False) or not isinstance(error, Exception):
        return error
    key = cls.__name__ if cls.__module__ == "builtins" else \
        ("%s.%s" % (cls.__module__, cls.__qualname__)).replace(".", "_")
    # each kind is kept as an attribute of EnforceNotMet (``core.EnforceNotMet.ValueError``), so it pickles
    kind = EnforceNotMet.__dict__.get(key)
    if kind is None or not issubclass(kind, cls):
        # RuntimeError and Exception are EnforceNotMet's own bases: their kind is EnforceNotMet's subclass
        bases = (EnforceNotMet,) if issubclass(EnforceNotMet, cls) else (cls, EnforceNotMet)
        try:
            kind = type(cls.__name__, bases, {"__module__": "fluidist.core", "__qualname__": "EnforceNotMet." + key})
        except TypeError:       # a class that cannot be subclassed so (a layout conflict)
            return error
        setattr(EnforceNotMet, key, kind)
    try:
        twin = cls.__new__(kind, *error.args)
        twin.args = error.args
        twin.__dict__.update(getattr(error, "__dict__", {}))
    except Exception:  # noqa: BLE001  (an error class whose construction needs more: keep the original)
        return error
    return twin
