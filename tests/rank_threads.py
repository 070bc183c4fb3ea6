"""The ranks of a single-process ring run as one thread each (the thread and device rings' tests)."""
import contextlib
import threading


def on_each_rank(comms, fn, context=None, join_s=30):
    """``fn(rank, comm)`` in one thread per rank, each inside ``context(rank)`` when given (the
    stand-in ring's: that rank's device current); their results in rank order. The first error a
    rank raised is raised here, once every thread has ended (or ``join_s`` seconds each have passed)."""
    results, errors = [None] * len(comms), []

    def run(rank):
        try:
            with context(rank) if context is not None else contextlib.nullcontext():
                results[rank] = fn(rank, comms[rank])
        except BaseException as e:      # noqa: B902 (raised below, once the other ranks are done)
            errors.append(e)
    threads = [threading.Thread(target=run, args=(r,)) for r in range(len(comms))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(join_s)
    if errors:
        raise errors[0]
    return results
