"""Which iterable loader yielded a feed, so that a run fed with it can look at the batch queued after
it (``distributed.prefetch_ahead``: a trainer asks the pservers for the next batch's table rows with
the current step's message).

``for data in loader(): exe.run(prog, feed=data)`` hands the executor a dict the loader made; the
loader notes it here with its queue, and ``after(feed)`` gives the batch waiting in that queue, without
taking it and without waiting (None when none is queued yet, or when ``feed`` is no loader's latest).
What it gives is a guess that the next step may not confirm (the loop may skip a batch, a new pass
start): its users check what the next step really computes before using anything made from it."""
from __future__ import annotations

import weakref
from typing import Any, Dict, Optional, Sequence, Tuple

_yielded: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()   # queue -> (its latest feed, value names)


def note(queue: Any, feed: dict, names: Sequence[str]) -> None:
    """``feed`` is the batch a loader reading ``queue`` just yielded (its values named ``names``)."""
    _yielded[queue] = (feed, tuple(names))


def after(feed: Any) -> Optional[Dict[str, Tuple[Any, Any]]]:
    """``{name: (array, lod)}`` of the batch queued after ``feed``, or None."""
    if not feed:
        return None
    for queue, (last, names) in list(_yielded.items()):
        if last is feed:
            item = queue.peek()
            return None if item is None else dict(zip(names, item))
    return None
