"""The queue between a Python data source and the ``read`` op (Paddle's LoDTensorBlockingQueue).

A producer thread ``push``es batches (lists of ``(array, lod)``); the ``read`` op ``pop``s them.
``close()`` marks the end of a pass: once the queue is drained, ``pop`` raises
:class:`EOFException`. ``kill(error)`` ends the pass with the producer's error instead: once the
batches read before the failure are taken, every ``pop`` (waiting or later) raises that error, so a
data source that fails never leaves the training loop waiting. ``reset()`` makes the queue ready for the next pass.
"""
import threading
from collections import deque

import numpy as np

from .enforce import as_enforce_not_met
from .tensor import LoDTensor


class EOFException(Exception):
    """Raised by a ``read`` op when its reader's pass is over (``fluid.core.EOFException``).

    Catch it, call the reader's ``reset()``, and ``start()`` the next pass."""

    ends_a_pass = True     # not an op's failure: ``as_enforce_not_met`` leaves it as it is


class ReaderNotStartedError(RuntimeError):
    """A ``read`` op ran before the reader feeding it was started."""


def _as_item(value):
    """One value of a batch as ``(array, lod or None)``."""
    if isinstance(value, tuple) and len(value) == 2:
        return value
    if isinstance(value, LoDTensor):
        return value._get(), (value.lod() or None)
    return np.asarray(value), None


class BlockingQueue:
    """A bounded FIFO of batches with an end-of-pass mark and error propagation."""

    def __init__(self, capacity, name="queue"):
        capacity = int(capacity)
        if capacity <= 0:
            raise ValueError("the capacity of reader queue %r must be a positive number of batches, got %d"
                             % (name, capacity))
        self.capacity = capacity
        self.name = name
        self._items = deque()
        self._cond = threading.Condition()
        self._closed = False
        self._error = None
        self._started = False
        # As in Paddle, a reader runs from its creation until its first reset(): a first pass needs
        # no start() when the batches are pushed into the queue by hand. A reader given a data source
        # (decorate_* / set_*_generator) is only fed after start(), so reading before it is refused.
        self._fresh = True
        self._has_source = False

    # ---------------------------------------------------------------- producer side
    def expect_start(self):
        """A data source was attached: reading before ``start()`` is an error, not a wait."""
        with self._cond:
            self._has_source = True

    def start(self):
        """The pass begins: a producer is about to push."""
        with self._cond:
            self._started = True

    def push(self, batch):
        """Wait for room and enqueue ``batch``; False if the queue was closed meanwhile (the
        consumer reset the reader: the producer should stop). A batch is a list of ``(array, lod)``,
        or, as Paddle's ``queue.push`` takes, of LoDTensors or arrays (a ``LoDTensorArray``)."""
        batch = [_as_item(x) for x in batch]
        with self._cond:
            while len(self._items) >= self.capacity and not self._closed:
                self._cond.wait()
            if self._closed:
                return False
            self._items.append(batch)
            self._cond.notify_all()
            return True

    def close(self):
        """No more batches this pass: ``pop`` raises EOFException once the queue is empty."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def kill(self, error):
        """End the pass with ``error``: once the batches read before it are taken, waiting and
        later ``pop`` calls raise it."""
        with self._cond:
            self._error = error
            self._closed = True
            self._cond.notify_all()

    # ---------------------------------------------------------------- consumer side
    def pop(self):
        """The next batch; raises EOFException at the end of the pass, or the producer's error."""
        with self._cond:
            if not self._started and not self._items and not self._closed and (self._has_source or not self._fresh):
                raise ReaderNotStartedError(
                    "reader %r has not been started: call start() on the py_reader / non-iterable "
                    "DataLoader / PyReader before running the program (and reset() after EOFException)"
                    % self.name)
            while not self._items and not self._closed:
                self._cond.wait()
            if self._items:
                batch = self._items.popleft()
                self._cond.notify_all()
                return batch
            if self._error is not None:
                # as in Paddle, a killed queue fails its reader with core.EnforceNotMet (the producer's
                # error keeps its own class too)
                raise as_enforce_not_met(self._error).with_traceback(self._error.__traceback__)
            raise EOFException("reader %r: there is no next data in this pass (EOF); call reset() "
                               "and start() for the next pass" % self.name)

    def peek(self):
        """The batch the next ``pop`` returns, left in the queue, or None when none is queued yet: never
        waits (a trainer looks at its next batch's ids ahead of the step, see ``prefetch_ahead``)."""
        with self._cond:
            return self._items[0] if self._items else None

    def reset(self):
        """Drop what is left and make the queue ready for the next ``start``."""
        with self._cond:
            self._items.clear()
            self._closed = False
            self._error = None
            self._started = False
            self._fresh = False
            self._cond.notify_all()

    def size(self):
        with self._cond:
            return len(self._items)

    def is_closed(self):
        with self._cond:
            return self._closed


# ---------------------------------------------------------------- readers of this process, by name
# A program names its reader variables; the Python objects feeding them (py_reader, DataLoader,
# PyReader) register their queue here under the queue's name and every reader variable reading it.
_queues: dict = {}     # queue name -> BlockingQueue
_readers: dict = {}    # reader variable name -> (queue name, [(shape, dtype, lod_level)] of its outputs)
_lock = threading.Lock()


def register_reader(reader_name, queue, meta):
    """Reader variable ``reader_name`` reads ``queue``; ``meta``: (shape, dtype, lod_level) of
    each value a batch holds, in order."""
    with _lock:
        _queues[queue.name] = queue
        _readers[reader_name] = (queue.name, list(meta))


def queue_by_name(name, reader=None):
    q = _queues.get(name)
    if q is None:
        raise ValueError("reader %r: its queue %r does not exist in this process; the Python object that "
                         "feeds it (layers.py_reader, DataLoader.from_generator, io.PyReader) must be created in "
                         "the process that runs the program" % (reader, name))
    return q


def reader_queue(reader_name):
    entry = _readers.get(reader_name)
    if entry is None:
        raise ValueError("reader %r is fed by no Python reader in this process (create it with "
                         "layers.py_reader, DataLoader.from_generator or io.PyReader in this process)" % reader_name)
    return queue_by_name(entry[0], reader_name)


def reader_meta(reader_name):
    entry = _readers.get(reader_name)
    return None if entry is None else entry[1]
