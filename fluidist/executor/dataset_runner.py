"""``Executor.train_from_dataset`` / ``infer_from_dataset``: a program over every batch of a Dataset.

``thread`` workers (default: the dataset's ``set_thread``) each take their own stream of batches
from the dataset (see ``fluid.dataset``). On a local program they run at the same time, Hogwild
style as in Paddle: each thread runs the program in a scope of its own for its temporaries,
sharing the parameters and optimizer state (updates are made in place, so every thread sees the
others' updates; a variable an op replaces instead is published to the others after the step).
A program that talks to other processes (parameter-server send/recv, collectives) runs one step
at a time, the threads' batches taken in turn, so every step is one round with the servers: the
reading and parsing still overlap with it.

``fetch_list`` / ``fetch_info``: every ``print_period`` batches, thread 0 prints
``<info>: <value>`` for each. ``fetch_handler``: a :class:`FetchHandler` whose ``handler`` gets the
values of its ``var_dict`` (from thread 0's scope) every ``period_secs`` seconds while training
runs. ``infer_from_dataset`` runs the program without its backward and optimize ops.
"""
import logging
import sys
import threading
import time
import traceback

import numpy as np

from ..compat import refused_class
from ..device.places import to_host
from ..core.scope import Scope, global_scope
from ..core.tensor import LoDTensor, SelectedRows
from ..framework import registry
from ..framework.op_role import OP_ROLE_ATTR, OpRole
from ..framework.program import Program, Variable, default_main_program
from ..console.progress import Progress

_log = logging.getLogger(__name__)


class FetchHandler:
    """``handler(res_dict)`` is called with ``{key: numpy value or None}`` for the variables of
    ``var_dict`` every ``period_secs`` seconds while ``train_from_dataset`` runs."""

    def __init__(self, var_dict=None, period_secs=60):
        if var_dict is None:
            raise ValueError("FetchHandler: var_dict must be a dict of {key: Variable}")
        if isinstance(var_dict, (str, Variable)):      # one variable (Paddle takes it and its monitor fails)
            var_dict = [var_dict]
        if isinstance(var_dict, (list, tuple)):
            # Paddle's scripts also pass a list of Variables or names (Paddle's monitor thread then
            # failed quietly and training went on): each is fetched under its own name
            var_dict = {(v.name if isinstance(v, Variable) else v): v for v in var_dict}
        if not isinstance(var_dict, dict):
            raise TypeError("FetchHandler: var_dict must be a dict of {key: Variable} (or a list of Variables "
                            "or names), got %r" % type(var_dict).__name__)
        self.var_dict = var_dict
        self.period_secs = period_secs

    def handler(self, res_dict):
        for key, value in res_dict.items():
            if isinstance(value, np.ndarray):
                sys.stdout.write("%s[0]: %s " % (key, value.reshape(-1)[0] if value.size else value))
        sys.stdout.write("\n")

    @staticmethod
    def help():
        print("subclass FetchHandler, override handler(self, res_dict), and pass "
              "FetchHandler(var_dict={'auc': auc_var}, period_secs=60) as fetch_handler")


class FetchHandlerMonitor:
    """Calls a FetchHandler from a thread every ``period_secs`` while it runs."""

    def __init__(self, scope, handler):
        self.scope = scope
        self.handler = handler
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="fluidist-fetch-handler")
        self.error = None

    def _values(self):
        res = {}
        for key, var in self.handler.var_dict.items():
            name = var.name if isinstance(var, Variable) else var
            value = self.scope._find_value(name) if isinstance(name, str) else None
            if isinstance(value, SelectedRows):
                value = value.value
            res[key] = None if value is None else np.array(to_host(value), copy=True)
        return res

    def _run(self):
        period = float(self.handler.period_secs)
        while not self._stop.wait(period):
            try:
                self.handler.handler(self._values())
            except Exception as e:
                # as in Paddle, a failing handler ends its monitor, not the training: say so once
                self.error = e
                _log.warning("FetchHandler %s failed and is no longer called (training goes on): %s",
                             type(self.handler).__name__, "".join(traceback.format_exception_only(type(e), e)).strip(),
                             exc_info=True)
                return

    def start(self):
        self._thread.start()

    def stop(self):
        self._stop.set()
        self._thread.join()


def _talks_to_others(program):
    """True when the program has ops that act on other processes (rpc, collectives: the registry's
    ``communicates``, or an op tagged with the RPC / Collective role)."""
    for block in program.blocks:
        for op in block.ops:
            role = int(op.attr(OP_ROLE_ATTR) or 0)
            if role & (OpRole.RPC | OpRole.Collective) or registry.fact(op, "communicates", False):
                return True
    return bool(program._is_distributed)


class _ThreadScope:
    """A thread's scope: its own temporaries, the root scope's persistable values by reference."""

    def __init__(self, root, names):
        self.root = root
        self.names = names
        self.scope = Scope()
        self.seen = {}
        self.pull()

    def pull(self):
        vals, root = self.scope.vals, self.root.vals
        for n in self.names:
            v = root.get(n)
            if v is not None and vals.get(n) is not v:
                vals[n] = v
                self.seen[n] = v

    def push(self):
        """Publish persistables an op replaced (instead of updating in place)."""
        vals, root = self.scope.vals, self.root.vals
        for n in self.names:
            v = vals.get(n)
            if v is not None and v is not self.seen.get(n):
                root[n] = v
                self.seen[n] = v


def _program_of(program):
    if program is None:
        return default_main_program()
    inner = getattr(program, "_program", None)        # a CompiledProgram runs its program here
    if isinstance(inner, Program):
        return inner
    if not isinstance(program, Program):
        raise TypeError("train_from_dataset: program must be a Program or CompiledProgram, got %r"
                        % type(program).__name__)
    return program


def run_from_dataset(executor, program, dataset, scope, thread, is_infer, debug, fetch_list, fetch_info,
                     print_period, fetch_handler):
    from ..dataset import DatasetBase
    if dataset is None or not isinstance(dataset, DatasetBase):
        raise RuntimeError("train_from_dataset / infer_from_dataset: no dataset given (make one with "
                           "fluid.DatasetFactory().create_dataset(...) and pass it as dataset=)")
    program = _program_of(program)
    if is_infer:
        program = program.clone(for_test=True)
    scope = scope if scope is not None else global_scope()
    fetch_list = list(fetch_list or [])
    fetch_info = list(fetch_info or [])
    if fetch_info and len(fetch_info) != len(fetch_list):
        raise ValueError("fetch_info must have one entry per fetch_list variable: %d for %d"
                         % (len(fetch_info), len(fetch_list)))
    fetch_names = [f.name if isinstance(f, Variable) else f for f in fetch_list]
    fetch_info = fetch_info or fetch_names
    threads = int(thread) if thread and int(thread) > 0 else int(dataset.thread_num)
    if threads <= 0:
        raise RuntimeError("You should set thread num first, either in Dataset or in Executor.train_from_dataset")
    feed_names = [s.name for s in dataset.slots]
    block = program.global_block()
    for n in feed_names:
        if block._find_var_recursive(n) is None:
            raise ValueError("train_from_dataset: the dataset feeds %r, which is not a variable of the program" % n)
    dataset._prepare_to_run()
    streams = dataset._thread_batches(threads)
    names = sorted({v.name for v in program.list_vars() if v.persistable and v.type not in ("RAW", "READER")})
    tscopes = [_ThreadScope(scope, names) for _ in streams]
    serial = _talks_to_others(program) or len(streams) == 1
    # one step at a time: the caller's executor (its plans, its rpc clients) runs every step;
    # Hogwild threads each need an executor of their own (a plan is run by one thread at a time)
    executors = [executor] * len(streams) if serial else [type(executor)(executor.place) for _ in streams]
    counts = [0] * len(streams)
    started = time.time()
    progress = Progress("%s_from_dataset (%d thread(s))" % ("infer" if is_infer else "train", len(streams)))
    monitor = FetchHandlerMonitor(tscopes[0].scope, fetch_handler) if fetch_handler is not None else None

    def step(t, batch):
        ts = tscopes[t]
        ts.pull()
        feed = {}
        for name, (arr, lod) in zip(feed_names, batch):
            if lod:
                feed[name] = LoDTensor(arr, lod)
            else:
                feed[name] = arr
        want = fetch_names if (t == 0 and fetch_names and (counts[t] + 1) % print_period == 0) else []
        out = executors[t].run(program, feed=feed, fetch_list=want, scope=ts.scope)
        ts.push()
        counts[t] += 1
        progress.step()
        if want:
            sys.stdout.write(", ".join("%s: %s" % (info, np.array2string(np.asarray(v).reshape(-1)[:8]))
                                       for info, v in zip(fetch_info, out)) + "\n")
            sys.stdout.flush()

    if monitor is not None:
        monitor.start()
    try:
        if serial:
            _one_step_at_a_time(streams, step)
        else:
            _hogwild(streams, step)
    finally:
        if monitor is not None:
            monitor.stop()
        dataset._finish_to_run()
    spent, total = time.time() - started, sum(counts)
    _log.info("%s_from_dataset: a pass over the dataset, %d batch(es) by %d thread(s) in %.1f s",
                "infer" if is_infer else "train", total, len(streams), spent)
    if debug:
        sys.stdout.write("train_from_dataset: %d batches by %d threads in %.3f s (%.1f batches/s) %s\n"
                         % (total, len(streams), spent, total / spent if spent > 0 else 0.0, counts))
    return None


def _one_step_at_a_time(streams, step):
    """The threads' batches in turn (thread 0's first, then thread 1's, ...), one step at a time,
    while reader threads read ahead."""
    from ..reader.decorator import buffered
    readers = [buffered(lambda s=s: s, 4)() for s in streams]
    live = list(range(len(readers)))
    while live:
        for t in list(live):
            try:
                batch = next(readers[t])
            except StopIteration:
                live.remove(t)
                continue
            step(t, batch)


def _hogwild(streams, step):
    errors = []

    def work(t):
        try:
            for batch in streams[t]:
                if errors:
                    return
                step(t, batch)
        except BaseException as e:
            errors.append(e)
    workers = [threading.Thread(target=work, args=(t,), daemon=True) for t in range(len(streams))]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    if errors:
        raise errors[0]


# Paddle's ``fluid.trainer_factory`` is this module: its FetchHandler, and the factory of its C++ trainers
TrainerFactory = refused_class("fluid.trainer_factory.TrainerFactory",
                               "Executor.train_from_dataset(program, dataset, thread=n) chooses its trainer itself")

__all__ = ["FetchHandler", "run_from_dataset"]
