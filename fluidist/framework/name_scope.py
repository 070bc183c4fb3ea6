"""Hierarchical op name scopes, as Paddle 1.8 keeps them: one tree per process (not per program).

``fluid.name_scope("encoder")`` enters the child ``encoder`` of the current scope; entering the same
prefix again under the same parent gives ``encoder_1``, ``encoder_2``, ... Every op appended records
the full path in its ``op_namescope`` attribute: ``/`` outside any scope, ``/encoder/``,
``/encoder/attention/`` inside (the optimizers' update ops of one program land in ``/optimizer/``,
``/optimizer_1/``, ...). The scopes are for reading programs (pictures, tools); they change no
variable name and no computation."""
import contextlib
from typing import Dict, Iterator, List, Optional


class NameScope:
    """One node of the tree: its ``name`` (with its ``_k`` suffix), its parent, how many times each
    prefix was entered under it, and its ``path`` (``/`` for the root, ``/a/b/`` below)."""

    def __init__(self, name: str = "", parent: Optional["NameScope"] = None) -> None:
        self._children: Dict[str, List["NameScope"]] = {}
        self._name = name
        self._parent = parent
        self.path: str = (parent.path if parent is not None else "") + name + "/"

    def child(self, prefix: str) -> "NameScope":
        """A new child for ``prefix``: named ``prefix`` the first time, ``prefix_<k>`` the k-th time after."""
        kept = self._children.setdefault(prefix, [])
        new = NameScope(prefix if not kept else "%s_%d" % (prefix, len(kept)), self)
        kept.append(new)
        return new

    def parent(self) -> Optional["NameScope"]:
        return self._parent

    def name(self) -> str:
        return self._name


_current = NameScope()


@contextlib.contextmanager
def name_scope(prefix: Optional[str] = None) -> Iterator[None]:
    """Ops built inside get this scope's path in their ``op_namescope`` attribute (nested scopes
    join with ``/``; it is written into Paddle-format program files); variable names do not change.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> with fluid.name_scope("encoder"):
        ...     h = fluid.layers.fc(x, size=2)
        >>> fluid.default_main_program().global_block().ops[-1].attr("op_namescope")  # doctest: +ELLIPSIS
        '/encoder.../'
    """
    # Paddle 1.8 asserts too (and with these words)
    assert prefix, "namescope prefix can not be empty."
    global _current
    outer = _current
    _current = outer.child(prefix)
    try:
        yield
    finally:
        _current = outer


def full_name_scope() -> str:
    """The path of the current scope: ``/`` at the top, ``/a/b/`` inside ``a`` then ``b``."""
    return _current.path
