"""A small Graphviz DOT model (nodes, edges, nested clusters) and rendering through the real ``dot``.

The pictures of :mod:`fluidist.viz.debugger`, :mod:`fluidist.viz.net_drawer`, :mod:`fluidist.viz.draw` and
``BuildStrategy.debug_graphviz_path`` are built with it. ``dot`` is Graphviz's program (Debian's
``graphviz`` package); without it the DOT text is still written and :func:`render` says how to get it.
"""
from ..compat import refused, refused_class  # noqa: E402
import os
import shutil
import subprocess

__all__ = ["Graph", "quote", "render", "DotNotFound"]


class DotNotFound(RuntimeError):
    """Graphviz's ``dot`` is not installed."""


def quote(text):
    """A DOT string literal."""
    return '"%s"' % str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _attrs(attrs):
    items = ["%s=%s" % (k, quote(v)) for k, v in attrs.items() if v is not None]
    return " [%s]" % ", ".join(items) if items else ""


class Graph:
    """A directed graph, or (``cluster=True``) a cluster inside one: ``node``, ``edge``, ``subgraph``, and
    ``source`` / ``save`` / ``render`` as the ``graphviz`` package's ``Digraph`` has them."""

    def __init__(self, name="G", label=None, cluster=False, graph_attr=None, node_attr=None, edge_attr=None,
                 filename=None):
        self.name = name
        self.cluster = cluster
        self.graph_attr = dict(graph_attr or {})
        if label is not None:
            self.graph_attr["label"] = label
        self.node_attr = dict(node_attr or {})
        self.edge_attr = dict(edge_attr or {})
        self.filename = filename
        self.nodes = {}       # id -> attrs, in insertion order
        self.edges = []       # (tail, head, attrs)
        self.subgraphs = []

    # -- building -----------------------------------------------------------------------------
    def node(self, name, label=None, **attrs):
        self.nodes[name] = dict({"label": label}, **attrs) if label is not None else attrs
        return name

    def edge(self, tail, head, label=None, **attrs):
        if label is not None:
            attrs["label"] = label
        self.edges.append((tail, head, attrs))

    def subgraph(self, name, label=None, **graph_attr):
        """A cluster (drawn as a box around its nodes) inside this graph; returned for filling."""
        sub = Graph(name, label=label, cluster=True, graph_attr=graph_attr)
        self.subgraphs.append(sub)
        return sub

    def _lines(self, indent):
        pad = "  " * indent
        lines = []
        for kind, attrs in (("graph", self.graph_attr), ("node", self.node_attr), ("edge", self.edge_attr)):
            if attrs:
                lines.append(pad + kind + _attrs(attrs) + ";")
        for s in self.subgraphs:
            lines.append(pad + "subgraph %s {" % quote("cluster_" + s.name))
            lines.extend(s._lines(indent + 1))
            lines.append(pad + "}")
        for name, attrs in self.nodes.items():
            lines.append(pad + quote(name) + _attrs(attrs) + ";")
        for tail, head, attrs in self.edges:
            lines.append(pad + "%s -> %s%s;" % (quote(tail), quote(head), _attrs(attrs)))
        return lines

    @property
    def source(self):
        """The DOT text."""
        return "\n".join(["digraph %s {" % quote(self.name)] + self._lines(1) + ["}"]) + "\n"

    def __str__(self):
        return self.source

    def save(self, filename=None):
        """Write the DOT text to ``filename`` (default: the ``filename`` given at construction)."""
        path = filename or self.filename or (self.name + ".gv")
        d = os.path.dirname(os.path.abspath(path))
        os.makedirs(d, exist_ok=True)
        with open(path, "w") as f:
            f.write(self.source)
        return path

    def render(self, filename=None, format="svg"):
        """Save the DOT text and render it with ``dot`` beside it (``<filename>.<format>``); the image path."""
        path = self.save(filename)
        return render(path, os.path.splitext(path)[0] + "." + format, format)


def render(dot_path, out_path=None, format=None):
    """Run ``dot -T<format> dot_path -o out_path`` (format from ``out_path``'s extension, else svg);
    returns ``out_path``. Raises :class:`DotNotFound` without Graphviz, RuntimeError when ``dot``
    refuses the file (its message included)."""
    if format is None:
        format = os.path.splitext(out_path)[1].lstrip(".") if out_path else "svg"
    out_path = out_path or os.path.splitext(dot_path)[0] + "." + format
    exe = shutil.which("dot")
    if exe is None:
        raise DotNotFound("cannot render %s: Graphviz's `dot` is not installed (Debian/Ubuntu: apt-get install "
                          "graphviz); the DOT file is there to render elsewhere" % dot_path)
    r = subprocess.run([exe, "-T" + format, dot_path, "-o", out_path], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError("dot -T%s %s failed (exit %d): %s" % (format, dot_path, r.returncode, r.stderr.strip()))
    return out_path


_GRAPH = "build pictures with fluidist.graphviz.Graph (node / edge / save / render) or fluid.debugger.draw_block_graphviz"
crepr = refused("fluid.graphviz.crepr", _GRAPH)
Rank = refused_class("fluid.graphviz.Rank", _GRAPH)
Node = refused_class("fluid.graphviz.Node", _GRAPH)
Edge = refused_class("fluid.graphviz.Edge", _GRAPH)
GraphPreviewGenerator = refused_class("fluid.graphviz.GraphPreviewGenerator", _GRAPH)
