"""``paddle.fluid.net_drawer``: :func:`draw_graph` draws a startup and a main program together.

The result is a :class:`fluidist.viz.graphviz.Graph` (``source``, ``save()``, ``render()``, as the ``graphviz``
package's ``Digraph`` that Paddle returned); the DOT text is saved to ``filename``.
"""
from ..compat import refused, refused_class  # noqa: E402
import itertools

from .debugger import add_block
from .graphviz import Graph

__all__ = ["draw_graph", "GRAPH_STYLE", "OP_STYLE", "VAR_STYLE"]

GRAPH_STYLE = {"rankdir": "TB", "fontname": "Helvetica"}
"""Graphviz attributes of the whole picture (edit it to restyle every later picture)."""
OP_STYLE = {"fontname": "Helvetica"}
"""Graphviz attributes of an op's node."""
VAR_STYLE: dict = {}
"""Graphviz attributes of a variable's node."""

_ids = itertools.count()


def draw_graph(startup_program, main_program, **kwargs):
    """A graph of both programs' global blocks, each in its own box ("startup", "main").

    kwargs: ``graph_attr``, ``node_attr``, ``edge_attr`` (Graphviz attributes added to the defaults),
    ``filename`` (where the DOT text is saved; default ``<n>.gv``, n counting the graphs drawn)."""
    graph_id = next(_ids)
    g = Graph(str(graph_id), graph_attr=dict(GRAPH_STYLE, **kwargs.get("graph_attr", {})),
              node_attr=dict(OP_STYLE, **kwargs.get("node_attr", {})),
              edge_attr=dict(VAR_STYLE, **kwargs.get("edge_attr", {})),
              filename=kwargs.get("filename") or "%d.gv" % graph_id)
    for name, program in (("startup", startup_program), ("main", main_program)):
        if program is None:
            continue
        sub = g.subgraph(name, label=name + " program")
        add_block(sub, program.global_block(), prefix=name + ":")
    g.save()
    return g


_DRAW = "use fluid.net_drawer.draw_graph(startup_program, main_program) for the whole picture"
unique_id = refused("fluid.net_drawer.unique_id", _DRAW)
draw_node = refused("fluid.net_drawer.draw_node", _DRAW)
draw_edge = refused("fluid.net_drawer.draw_edge", _DRAW)
parse_graph = refused("fluid.net_drawer.parse_graph", _DRAW)
