"""Reader decorators with Paddle 1.x's names (``paddle.reader`` / ``fluid.io``).

A *reader* is a function of no arguments returning an iterable of samples; a decorator takes
readers and returns a new one. ``batch`` groups samples into lists; ``shuffle`` shuffles within a
buffer; ``buffered`` and ``xmap_readers`` read ahead in threads; ``multiprocess_reader`` reads in
child processes. Errors raised by a wrapped reader reach the consumer (a thread that fails never
leaves the consumer waiting).
"""
from __future__ import annotations

import itertools
import json
import logging
import os
import queue
import random
import struct
import threading
import time
from itertools import zip_longest
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from .. import bounded_json

logger = logging.getLogger(__name__)

#: A reader: a function of no arguments returning an iterable of samples.
Reader = Callable[[], Iterable[Any]]

__all__ = ["batch", "cache", "map_readers", "buffered", "compose", "chain", "shuffle", "ComposeNotAligned",
           "firstn", "xmap_readers", "multiprocess_reader"]


def batch(reader: Reader, batch_size: int, drop_last: bool = False) -> Reader:
    """A reader of lists of ``batch_size`` samples (the last one shorter unless ``drop_last``).

    Each pass is logged at INFO (at DEBUG inside a DataLoader, which logs its own).

    Args:
        reader: the sample reader.
        batch_size: samples per batch (> 0).
        drop_last: drop a last, shorter batch.

    Returns:
        The batch reader.

    Raises:
        ValueError: ``batch_size <= 0``.

    Examples:
        >>> list(fluid.io.batch(lambda: iter(range(5)), batch_size=2)())
        [[0, 1], [2, 3], [4]]
    """
    batch_size = int(batch_size)
    if batch_size <= 0:
        raise ValueError("batch_size should be a positive integer value, but got batch_size=%d" % batch_size)

    passes = [0]

    def batch_reader():
        b, batches, t0 = [], 0, time.monotonic()
        for sample in reader():
            b.append(sample)
            if len(b) == batch_size:
                yield b
                batches += 1
                b = []
        if b and not drop_last:
            yield b
            batches += 1
        passes[0] += 1
        # a pass of the training loop (inside a DataLoader, the loader tells it)
        level = logging.DEBUG if threading.current_thread().name.startswith("fluidist-reader") else logging.INFO
        logger.log(level, "batch reader: pass %d read, %d batch(es) of up to %d in %.1f s", passes[0], batches,
                   batch_size, time.monotonic() - t0)
    return batch_reader


def cache(reader: Reader) -> Reader:
    """Read ``reader`` once, into memory; the new reader replays it.

    Args:
        reader: the reader to read (now).

    Returns:
        A reader of the same samples, from memory.

    Examples:
        >>> cached = fluid.io.cache(lambda: iter([1, 2]))
        >>> list(cached()), list(cached())
        ([1, 2], [1, 2])
    """
    data = tuple(reader())

    def cached():
        return iter(data)
    return cached


def map_readers(func: Callable[..., Any], *readers: Reader) -> Reader:
    """A reader of ``func(a, b, ...)`` over samples of ``readers`` read side by side.

    Args:
        func: a function of one sample of each reader.
        *readers: the readers.

    Returns:
        The mapped reader (as long as the shortest reader).

    Examples:
        >>> list(fluid.io.map_readers(lambda a, b: a + b, lambda: iter([1, 2]), lambda: iter([10, 20]))())
        [11, 22]
    """
    def mapped():
        return map(func, *[r() for r in readers])
    return mapped


def shuffle(reader: Reader, buf_size: int) -> Reader:
    """Samples shuffled within consecutive windows of ``buf_size`` (Python's ``random``).

    Args:
        reader: the sample reader.
        buf_size: the window (a larger one shuffles more widely).

    Returns:
        The shuffled reader.

    Examples:
        >>> sorted(fluid.io.shuffle(lambda: iter(range(5)), buf_size=3)())
        [0, 1, 2, 3, 4]
    """
    def shuffled():
        buf = []
        for sample in reader():
            buf.append(sample)
            if len(buf) >= buf_size:
                random.shuffle(buf)
                yield from buf
                buf = []
        if buf:
            random.shuffle(buf)
            yield from buf
    return shuffled


def chain(*readers: Reader) -> Reader:
    """The samples of each reader in turn.

    Args:
        *readers: the readers.

    Returns:
        The chained reader.

    Examples:
        >>> list(fluid.io.chain(lambda: iter([1, 2]), lambda: iter([3]))())
        [1, 2, 3]
    """
    def chained():
        return itertools.chain(*[r() for r in readers])
    return chained


class ComposeNotAligned(ValueError):
    """``compose``'s readers have different lengths."""


def compose(*readers: Reader, **kwargs: Any) -> Reader:
    """Samples of the readers side by side, flattened into one tuple: ``(1, 2)``, ``3`` and
    ``(4, 5)`` give ``(1, 2, 3, 4, 5)``.

    Args:
        *readers: the readers.
        **kwargs: ``check_alignment`` (default True): readers of different lengths raise
            ``ComposeNotAligned``; with False, the longer ones are cut.

    Returns:
        The composed reader.

    Raises:
        TypeError: another keyword argument.

    Examples:
        >>> list(fluid.io.compose(lambda: iter([(1, 2)]), lambda: iter([3]))())
        [(1, 2, 3)]
    """
    check_alignment = kwargs.pop("check_alignment", True)
    if kwargs:
        raise TypeError("compose: unexpected keyword arguments %s" % sorted(kwargs))

    def as_tuple(x):
        return x if isinstance(x, tuple) else (x,)

    def composed():
        its = [r() for r in readers]
        if not check_alignment:
            for outs in zip(*its):
                yield sum(map(as_tuple, outs), ())
            return
        end = object()
        for outs in zip_longest(*its, fillvalue=end):
            if any(o is end for o in outs):
                raise ComposeNotAligned("outputs of readers are not aligned.")
            yield sum(map(as_tuple, outs), ())
    return composed


def firstn(reader: Reader, n: int) -> Reader:
    """At most the first ``n`` samples.

    Args:
        reader: the reader.
        n: how many samples.

    Returns:
        The shortened reader.

    Examples:
        >>> list(fluid.io.firstn(lambda: iter(range(10)), 3)())
        [0, 1, 2]
    """
    def first():
        return itertools.islice(reader(), n)
    return first


class _End:
    pass


class _Failed:
    def __init__(self, error):
        self.error = error


def _drain_into(q, iterable):
    """Put every item of ``iterable`` into ``q``, then an end mark (or the error that stopped it)."""
    try:
        for item in iterable:
            q.put(item)
    except BaseException as e:   # handed to the consumer, which raises it
        q.put(_Failed(e))
        return
    q.put(_End())


def buffered(reader: Reader, size: int) -> Reader:
    """Read ahead into a buffer of ``size`` samples in a thread; an error of the reader reaches the
    consumer.

    Args:
        reader: the reader.
        size: the buffer's size.

    Returns:
        The buffered reader.

    Examples:
        >>> list(fluid.io.buffered(lambda: iter(range(3)), size=2)())
        [0, 1, 2]
    """
    def buffered_reader():
        q = queue.Queue(maxsize=size)
        t = threading.Thread(target=_drain_into, args=(q, reader()), daemon=True)
        t.start()
        while True:
            item = q.get()
            if isinstance(item, _End):
                return
            if isinstance(item, _Failed):
                raise item.error
            yield item
    return buffered_reader


def xmap_readers(mapper: Callable[[Any], Any], reader: Reader, process_num: int, buffer_size: int,
                 order: bool = False) -> Reader:
    """``mapper`` applied to the samples of ``reader`` by ``process_num`` threads.

    Args:
        mapper: the function of one sample.
        reader: the reader.
        process_num: the number of threads.
        buffer_size: the size of the input and output queues.
        order: keep the samples' order (else results come as they are ready).

    Returns:
        The mapped reader.

    Examples:
        >>> list(fluid.io.xmap_readers(lambda v: v * v, lambda: iter(range(4)), 2, 4, order=True)())
        [0, 1, 4, 9]
    """
    def xreader():
        in_q = queue.Queue(buffer_size)
        out_q = queue.Queue(buffer_size)
        feeder = threading.Thread(target=_drain_into, args=(in_q, enumerate(reader())), daemon=True)
        feeder.start()

        def work():
            while True:
                item = in_q.get()
                if isinstance(item, (_End, _Failed)):
                    in_q.put(item)            # the other workers see it too
                    out_q.put(item if isinstance(item, _Failed) else _End())
                    return
                i, sample = item
                try:
                    out_q.put((i, mapper(sample)))
                except BaseException as e:
                    out_q.put(_Failed(e))
                    in_q.put(_End())
                    return
        workers = [threading.Thread(target=work, daemon=True) for _ in range(process_num)]
        for w in workers:
            w.start()
        ended, pending, next_i = 0, {}, 0
        while ended < process_num:
            item = out_q.get()
            if isinstance(item, _Failed):
                raise item.error
            if isinstance(item, _End):
                ended += 1
                continue
            if not order:
                yield item[1]
                continue
            pending[item[0]] = item[1]
            while next_i in pending:
                yield pending.pop(next_i)
                next_i += 1
        while next_i in pending:
            yield pending.pop(next_i)
            next_i += 1
    return xreader


# ---------------------------------------------------------------- multiprocess_reader
# Samples travel from the child processes through pipes as a JSON header plus raw array bytes,
# never pickled: a sample is a number, a string, bytes, a numpy array or a list/tuple/dict of those.
def _encode_sample(sample):
    blobs = []

    def enc(x):
        if isinstance(x, np.ndarray) and not x.dtype.hasobject:
            blobs.append(np.ascontiguousarray(x).tobytes())
            return {"a": [x.dtype.str, list(x.shape)]}
        if isinstance(x, (bytes, bytearray)):
            blobs.append(bytes(x))
            return {"b": 0}
        if isinstance(x, dict):
            return {"d": [[enc(k), enc(v)] for k, v in x.items()]}
        if isinstance(x, (np.integer, np.floating, np.bool_)):
            return enc(np.asarray(x))
        if isinstance(x, tuple):
            return {"t": [enc(v) for v in x]}
        if isinstance(x, list):
            return {"l": [enc(v) for v in x]}
        if isinstance(x, (bool, int, float, str)) or x is None:
            return {"v": x}
        raise TypeError("multiprocess_reader: a sample may hold numbers, strings, bytes, numpy arrays (not of "
                        "objects) and lists, tuples and dicts of them, got %r" % type(x).__name__)
    head = json.dumps(enc(sample)).encode()
    return head, blobs


def _decode_sample(head, blobs):
    it = iter(blobs)

    def dec(d):
        if "a" in d:
            dtype, shape = d["a"]
            return np.frombuffer(next(it), dtype=np.dtype(dtype)).reshape(shape).copy()
        if "t" in d:
            return tuple(dec(v) for v in d["t"])
        if "l" in d:
            return [dec(v) for v in d["l"]]
        if "b" in d:
            return next(it)
        if "d" in d:
            return {dec(k): dec(v) for k, v in d["d"]}
        return d["v"]
    return dec(bounded_json.loads(head, "a sample's header from a reader process", len(head), 128))


def _write_frame(fd, parts):
    data = struct.pack("<I", len(parts)) + b"".join(struct.pack("<Q", len(p)) + p for p in parts)
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _read_exact(f, n):
    data = f.read(n)
    if len(data) != n:
        raise EOFError("multiprocess_reader: a child process ended in the middle of a sample")
    return data


def _read_frame(f):
    head = f.read(4)
    if not head:
        return None
    if len(head) != 4:
        raise EOFError("multiprocess_reader: a child process ended in the middle of a sample")
    count, = struct.unpack("<I", head)
    parts = []
    for _ in range(count):
        size, = struct.unpack("<Q", _read_exact(f, 8))
        parts.append(_read_exact(f, size))
    return parts


def _child_main(reader, fd):
    try:
        for sample in reader():
            head, blobs = _encode_sample(sample)
            _write_frame(fd, [b"S", head] + blobs)
        _write_frame(fd, [b"E"])
    except BaseException as e:
        _write_frame(fd, [b"X", ("%s: %s" % (type(e).__name__, e)).encode()])
    finally:
        os.close(fd)


def _pump_child(rfd, proc, put):
    """Hand the samples a child writes to ``rfd`` to ``put``, then an end mark, or the failure
    (the child's reader raised, or the child died before finishing)."""
    with os.fdopen(rfd, "rb") as f:
        try:
            while True:
                parts = _read_frame(f)
                if parts is None:
                    raise EOFError("multiprocess_reader: child process %d exited without finishing "
                                   "(exit code %s)" % (proc.pid, proc.exitcode))
                kind = parts[0]
                if kind == b"S":
                    put(_decode_sample(parts[1], parts[2:]))
                elif kind == b"E":
                    put(_End())
                    return
                else:
                    put(_Failed(RuntimeError("multiprocess_reader: a reader failed in child process %d: %s"
                                             % (proc.pid, parts[1].decode()))))
                    return
        except BaseException as e:
            put(_Failed(e))


def multiprocess_reader(readers: Sequence[Reader], use_pipe: bool = True, queue_size: int = 1000) -> Reader:
    """Each reader of ``readers`` runs in a child process (forked, so the readers need not be
    importable); samples come back through pipes without pickle, in whatever order they arrive.

    Paddle 1.8 difference: pipes are always used (``use_pipe=False``, Paddle's queue, is the same
    here), and samples are NumPy arrays, numbers, strings, bytes and tuples / lists / dicts of them
    (no pickle: an instance of a class of one's own is a TypeError).

    Args:
        readers: the readers (a non-empty list).
        use_pipe: accepted for Paddle's signature.
        queue_size: the samples buffered in the parent.

    Returns:
        The merged reader.

    Raises:
        TypeError: ``readers`` is not a non-empty list.

    Examples:
        >>> merged = fluid.io.multiprocess_reader([lambda: iter([1, 2]), lambda: iter([3])])
        >>> sorted(merged())
        [1, 2, 3]
    """
    import multiprocessing
    if not isinstance(readers, (list, tuple)) or not readers:
        raise TypeError("multiprocess_reader: readers must be a non-empty list of readers")

    def mp_reader():
        ctx = multiprocessing.get_context("fork")
        out = queue.Queue(maxsize=max(1, int(queue_size)))
        stopped = threading.Event()

        def put(item):
            while not stopped.is_set():
                try:
                    out.put(item, timeout=0.1)
                    return
                except queue.Full:
                    pass
        procs, threads = [], []
        for r in readers:
            rfd, wfd = os.pipe()
            p = ctx.Process(target=_child_main, args=(r, wfd), daemon=True)
            p.start()
            os.close(wfd)
            procs.append(p)

            t = threading.Thread(target=_pump_child, args=(rfd, p, put), daemon=True)
            t.start()
            threads.append(t)
        try:
            ended = 0
            while ended < len(readers):
                item = out.get()
                if isinstance(item, _End):
                    ended += 1
                elif isinstance(item, _Failed):
                    raise item.error
                else:
                    yield item
        finally:
            stopped.set()
            for p in procs:
                if p.is_alive():
                    p.terminate()
                p.join(5)
    return mp_reader
