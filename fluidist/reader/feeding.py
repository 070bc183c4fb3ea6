"""What every Python reader shares: turning what a generator yields into checked batches, and a
producer thread that pushes them into a :class:`~fluidist.core.blocking_queue.BlockingQueue`.

Three kinds of generator, as in Paddle:

- a *sample* generator yields one sample (a tuple, one field per feed variable) at a time; the
  reader groups ``batch_size`` of them;
- a *sample list* generator yields lists of samples (``fluid.io.batch`` of a sample generator);
- a *batch* generator yields one value per feed variable (arrays or LoDTensors), already batched.

Every batch is checked against the feed variables exactly as ``Executor.run`` checks a feed
(``check_feed_value``, here, which the executor imports: dtype, shape, LoD against rows), so a bad batch fails with the variable's name; the failure ends
the pass in the consumer with that error.
"""
import itertools
import logging
import threading
import time

import numpy as np

from ..core.blocking_queue import BlockingQueue
from ..device.places import is_device_array
from ..core.tensor import LoDTensor
from .data_feeder import DataFeeder
from .decorator import batch as batch_reader

logger = logging.getLogger(__name__)

_names = itertools.count()


_NP_DTYPES = {n: np.dtype(n) for n in ("float16", "float32", "float64", "int8", "uint8", "int16", "int32",
                                       "int64", "bool")}


def _shape_ok(want, shape):
    if want is None:
        return True
    if len(want) != len(shape):
        return False
    for w, d in zip(want, shape):
        if w != d and w >= 0:
            return False
    return True


def check_feed_value(var, name, value):
    """Turn a fed value into (array, lod), checked against the declared variable."""
    lod = None
    if isinstance(value, LoDTensor):
        lod = value.lod()
        raw = value._get()
        value = raw if is_device_array(raw) else np.asarray(value)   # already on a device: stays there
    elif np.isscalar(value) and not isinstance(value, (str, bytes)):
        # Paddle 1.8 feeds a Python or NumPy scalar as a [1] tensor of the variable's dtype (3.7 -> int64 3)
        dtype = _NP_DTYPES.get(var.dtype) if var is not None else None
        value = np.array([value]).astype(dtype) if dtype is not None else np.array([value])
    elif not isinstance(value, np.ndarray) and not is_device_array(value):
        value = np.asarray(value)
    if var is None:
        return value, lod
    want_dtype = _NP_DTYPES.get(var.dtype)
    if want_dtype is not None and value.dtype != want_dtype:
        if var.need_check_feed:
            raise ValueError("feed variable %r expects dtype %s but got %s"
                             % (name, var.dtype, value.dtype.name))
        value = value.astype(var.dtype)
    # Paddle checks the shape of what fluid.data declares (need_check_feed), not of fluid.layers.data:
    # scripts feed a layers.data variable of shape [-1, 3] with a [3] vector and the ops take it
    if var.shape is not None and var.need_check_feed:
        shape = value.shape
        want = var.shape
        if len(shape) != len(want) or any(w != s and w >= 0 for w, s in zip(want, shape)):
            raise ValueError("feed variable %r expects shape %s but got %s"
                             % (name, list(want), list(shape)))
    if var.lod_level and lod:
        if lod[-1][-1] != value.shape[0]:
            raise ValueError("feed variable %r: its LoD ends at %d but it has %d rows"
                             % (name, lod[-1][-1], value.shape[0]))
    return value, lod


def unique_reader_name(prefix):
    """A name no other reader of this process has (``unique_name.guard`` does not reset it)."""
    return "%s_%d" % (prefix, next(_names))


def as_array(item, var_name):
    """A batch value as (numpy array, lod)."""
    if isinstance(item, LoDTensor):
        return np.asarray(item), item.lod()
    arr = np.asarray(item)
    if arr.dtype == object:
        raise TypeError("the value given for %r cannot be turned into a regular array (nested lists of different "
                        "lengths?): give a numpy array, or a LoDTensor (fluid.create_lod_tensor) for sequences"
                        % var_name)
    return arr, None


def check_batch(values, feed_vars, what):
    """``values`` (one per feed variable) -> [(array, lod)], checked like an Executor feed."""
    if isinstance(values, dict):
        missing = [v.name for v in feed_vars if v.name not in values]
        if missing:
            raise ValueError("%s: the batch has no value for %s" % (what, missing))
        values = [values[v.name] for v in feed_vars]
    if not isinstance(values, (list, tuple)):
        values = [values]
    if len(values) != len(feed_vars):
        raise ValueError("%s: a batch holds %d values but the reader feeds %d variables %s"
                         % (what, len(values), len(feed_vars), [v.name for v in feed_vars]))
    out = []
    for var, item in zip(feed_vars, values):
        arr, lod = as_array(item, var.name)
        arr, lod2 = check_feed_value(var, var.name, LoDTensor(arr, lod) if lod else arr)
        out.append((arr, lod2 or None))
    return out


def sample_list_to_batches(reader, feed_vars):
    """A batch generator from a generator of sample lists, through a DataFeeder."""
    feeder = DataFeeder(feed_vars, None)

    def batches():
        for samples in reader():
            d = feeder.feed(samples)
            yield [d[v.name] for v in feed_vars]
    return batches


def sample_to_batches(reader, feed_vars, batch_size, drop_last):
    """A batch generator from a sample generator. As in Paddle 1.8, when no feed variable has a LoD a
    sample (list or tuple) may carry more fields than there are variables: the extra ones, at the
    end, are not fed (Paddle zips the fields with the variables there)."""
    if int(batch_size) <= 0:
        raise ValueError("batch_size must be larger than 0, got %r" % (batch_size,))
    if not any(v.lod_level for v in feed_vars):
        n, samples = len(feed_vars), reader

        def reader():
            for sample in samples():
                yield sample[:n] if isinstance(sample, (list, tuple)) and len(sample) > n else sample
    return sample_list_to_batches(batch_reader(reader, batch_size, drop_last), feed_vars)


class Producer:
    """Runs a batch generator in a daemon thread, pushing checked batches into a queue.

    The consumer sees the generator's own error if it fails; ``stop()`` (from the consumer) makes
    the thread quit at its next push and waits for it."""

    def __init__(self, queue, feed_vars, what):
        self.queue = queue
        self.feed_vars = feed_vars
        self.what = what
        self.thread = None
        self.passes = 0   # complete passes over the generator (logged: the story of a job, once a pass)

    def start(self, batch_generator):
        if self.thread is not None:
            raise RuntimeError("%s: start() was called twice without reset() in between" % self.what)
        q = self.queue
        q.start()

        def run():
            t0, batches = time.monotonic(), 0
            try:
                for values in batch_generator():
                    if not q.push(check_batch(values, self.feed_vars, self.what)):
                        return          # reset by the consumer
                    batches += 1
                q.close()
                self.passes += 1
                logger.info("%s: pass %d read, %d batch(es) in %.1f s", self.what, self.passes, batches,
                            time.monotonic() - t0)
            except BaseException as e:  # the consumer raises it in its read
                q.kill(e)
        self.thread = threading.Thread(target=run, name="fluidist-reader-%s" % q.name, daemon=True)
        self.thread.start()

    def stop(self):
        self.queue.close()
        t, self.thread = self.thread, None
        if t is not None:
            t.join()
        self.queue.reset()


def new_queue(capacity, name):
    if not capacity:
        raise ValueError("Please give value to capacity: the number of batches the reader may read ahead")
    return BlockingQueue(capacity, name)
