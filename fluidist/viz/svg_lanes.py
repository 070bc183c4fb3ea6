"""The lanes picture (:mod:`fluidist.viz.draw_lanes`) drawn as SVG by fluidist itself, without Graphviz.

The default picture is simple enough to lay out by hand: each top-level cluster of the
:class:`fluidist.viz.graphviz.Graph` is a column (a lane), its nodes stacked in the order they were
added, the edges inside a lane short vertical arrows from a node to the next (the stacking shows the
order of the rest), the edges between lanes curves labelled beside their send or recv box. ``fluidist-draw`` writes this for an ``.svg`` output; ``--detail`` pictures and PNG / PDF go
through Graphviz's ``dot`` (:func:`fluidist.viz.graphviz.render`).
"""
from collections import Counter
from xml.sax.saxutils import escape

__all__ = ["lanes_svg", "write_lanes_svg"]

_CHAR_W, _LINE_H, _PAD = 6.6, 14, 8      # an estimate of Helvetica 11px: boxes fit their text
_LANE_GAP, _NODE_GAP, _TOP = 150, 26, 56
_FONT = 'font-family="Helvetica, Arial, sans-serif"'


def _lines(attrs, name):
    return str(attrs.get("label", name)).split("\n")


def _box_size(lines):
    return max(len(line) for line in lines) * _CHAR_W + 2 * _PAD, len(lines) * _LINE_H + 2 * _PAD - 4


def _layout(graph):
    """``({node: (x, y, w, h, attrs)}, [(lane, x, width, height)])``: the lanes left to right, each
    lane's nodes top to bottom, centred in it."""
    boxes, lanes, x = {}, [], 20.0
    for lane in graph.subgraphs:
        sizes = {name: _box_size(_lines(attrs, name)) for name, attrs in lane.nodes.items()}
        width = max([w for w, _ in sizes.values()] + [len(str(lane.graph_attr.get("label", ""))) * _CHAR_W]) + 24
        y = _TOP + 30.0
        for name, attrs in lane.nodes.items():
            w, h = sizes[name]
            boxes[name] = (x + (width - w) / 2, y, w, h, attrs)
            y += h + _NODE_GAP
        lanes.append((lane, x, width, y - _NODE_GAP + 14 - _TOP))
        x += width + _LANE_GAP
    return boxes, lanes


def _text(x, y, lines, size=11, anchor="middle", color="#000000", weight="normal"):
    spans = "".join('<tspan x="%.1f" dy="%d">%s</tspan>' % (x, 0 if i == 0 else _LINE_H, escape(line))
                    for i, line in enumerate(lines))
    return '<text x="%.1f" y="%.1f" %s font-size="%d" text-anchor="%s" fill="%s" font-weight="%s">%s</text>' % (
        x, y, _FONT, size, anchor, color, weight, spans)


def _edge(boxes, tail, head, attrs, label_at_head=False):
    """One edge: a vertical arrow inside a lane, a curve between lanes (both ways for ``dir=both``)."""
    tx, ty, tw, th, _ = boxes[tail]
    hx, hy, hw, hh, _ = boxes[head]
    color = attrs.get("color", "#7f7f7f")
    ends = ' marker-end="url(#arrow)"' + (' marker-start="url(#arrow)"' if attrs.get("dir") == "both" else "")
    dash = ' stroke-dasharray="4,3"' if attrs.get("style") == "dashed" else ""
    width = attrs.get("penwidth", "1")
    if abs((tx + tw / 2) - (hx + hw / 2)) < 1:      # same lane
        x = tx + tw / 2
        y1, y2 = (ty + th, hy) if hy > ty else (ty, hy + hh)
        return '<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="%s"%s%s/>' % (
            x, y1, x, y2, color, width, dash, ends)
    rightwards = hx > tx
    x1, x2 = (tx + tw, hx) if rightwards else (tx, hx + hw)
    y1, y2 = ty + th / 2, hy + hh / 2
    bend = (x2 - x1) / 2
    out = ['<path d="M%.1f,%.1f C%.1f,%.1f %.1f,%.1f %.1f,%.1f" fill="none" stroke="%s" stroke-width="%s"%s%s/>'
           % (x1, y1, x1 + bend, y1, x2 - bend, y2, x2, y2, color, width, dash, ends)]
    if attrs.get("label"):      # beside the end whose box has no other edge (a send or recv), in the gap
        outwards = rightwards != label_at_head      # the label's side of that box
        x, y = (x2, y2) if label_at_head else (x1, y1)
        out.append(_text(x + (6 if outwards else -6), y - 6, str(attrs["label"]).split("\n"), size=10,
                         anchor="start" if outwards else "end", color=attrs.get("fontcolor", color)))
    return "\n".join(out)


def lanes_svg(graph):
    """The SVG text of a lanes graph (:func:`fluidist.viz.draw_lanes.draw_lanes`)."""
    boxes, lanes = _layout(graph)
    width = max([x + w for _, x, w, _ in lanes] + [400]) + 20
    height = max([_TOP + h for *_, h in lanes] + [200]) + 20
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           '<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">' % (
               width, height, width, height),
           '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
           'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="context-stroke"/></marker></defs>',
           '<rect width="100%" height="100%" fill="#ffffff"/>',
           _text(width / 2, 24, [str(graph.graph_attr.get("label", ""))], size=15, weight="bold")]
    for lane, x, w, h in lanes:
        out.append('<g class="lane" id="%s"><title>cluster_%s</title>' % (escape(lane.name), escape(lane.name)))
        out.append('<rect x="%.1f" y="%d" width="%.1f" height="%.1f" rx="8" fill="none" stroke="%s"/>' % (
            x, _TOP, w, h, lane.graph_attr.get("color", "#555555")))
        out.append(_text(x + w / 2, _TOP + 18, [str(lane.graph_attr.get("label", lane.name))], size=12,
                         weight="bold"))
        for name in lane.nodes:
            bx, by, bw, bh, attrs = boxes[name]
            out.append('<g class="node"><title>%s</title>' % escape(name))
            out.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="5" fill="%s" stroke="#555555"/>' % (
                bx, by, bw, bh, attrs.get("fillcolor", "#ffffff")))
            out.append(_text(bx + bw / 2, by + _PAD + 9, _lines(attrs, name)))
            out.append("</g>")
        order = list(lane.nodes)     # stacked in this order: an arrow joins a node to the next one only
        out += [_edge(boxes, t, hd, a) for t, hd, a in lane.edges
                if t in lane.nodes and hd in lane.nodes and order.index(hd) == order.index(t) + 1]
        out.append("</g>")
    between = [(t, hd, a) for t, hd, a in graph.edges if t in boxes and hd in boxes]
    ends = Counter(n for t, hd, _ in between for n in (t, hd))     # a listen_and_serv box is the end of many
    out += [_edge(boxes, t, hd, a, label_at_head=ends[hd] < ends[t]) for t, hd, a in between]
    out.append("</svg>")
    return "\n".join(out) + "\n"


def write_lanes_svg(graph, path):
    """Write :func:`lanes_svg` of ``graph`` to ``path``; returns ``path``."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(lanes_svg(graph))
    return path
