"""``fluid.multiprocess_utils``: ``CleanupFuncRegistrar``, which runs registered clean-up functions
once when the process exits (normally or by one of the given signals)."""
import atexit
import signal
import sys

__all__ = []


class CleanupFuncRegistrar:
    """``register(function, signals=[])``: call ``function()`` once at exit and on each of ``signals``
    (after which the previous handler of that signal runs, or the process exits)."""
    _registered: set = set()
    _done: set = set()

    @classmethod
    def register(cls, function, signals=()):
        if not callable(function):
            raise TypeError("CleanupFuncRegistrar.register: %r is not callable" % (function,))
        if function in cls._registered:
            return

        def run_once():
            if function not in cls._done:
                cls._done.add(function)
                function()
        cls._registered.add(function)
        atexit.register(run_once)
        for sig in signals:
            previous = signal.getsignal(sig)

            def handler(signum, frame, previous=previous):
                run_once()
                if callable(previous):
                    previous(signum, frame)
                else:
                    sys.exit(128 + signum)
            signal.signal(sig, handler)
