"""Flow events of a merged trace: an arrow from each request a trainer sent to where its pserver received it.

A trainer's ``send <kind>`` span (category ``rpc``; ``send batch`` for a step's parts sent as one
message, its variable None) records the pserver endpoint, the request's kind, variable, trainer id and step; the pserver's ``recv <kind>`` span records its own endpoint and the same
four fields. In the merged trace, the k-th send and the k-th receive with the same (endpoint, kind,
variable, trainer, step) are one request: they get a Chrome flow (``ph: "s"`` in the sender's span,
``ph: "f"``, ``bp: "e"`` in the receiver's), drawn by chrome://tracing and Perfetto as an arrow between the
two processes' tracks. Requests whose other end is not in the merged traces (a pserver that was not
profiled) get no flow.
"""
import collections

__all__ = ["request_flows"]


def _key(args, endpoint):
    return (endpoint, args.get("kind"), args.get("var"), args.get("trainer"), args.get("step"))


def _middle(ev):
    return ev["ts"] + ev.get("dur", 0) / 2.0


def request_flows(events):
    """Flow events (a list of ``s`` / ``f`` pairs) for the merged ``events`` (spans with ``pid`` set)."""
    sends, recvs = collections.defaultdict(list), collections.defaultdict(list)
    for ev in events:
        if ev.get("ph") != "X" or ev.get("cat") != "rpc":
            continue
        args = ev.get("args") or {}
        if "kind" not in args:
            continue   # a trace from before the spans carried what a flow needs
        if ev["name"].startswith("send ") and args.get("peer"):
            sends[_key(args, args["peer"])].append(ev)
        elif ev["name"].startswith("recv ") and args.get("endpoint"):
            recvs[_key(args, args["endpoint"])].append(ev)
    out = []
    flow_id = 0
    for key, sent in sends.items():
        got = sorted(recvs.get(key, ()), key=lambda e: e["ts"])
        for s, r in zip(sorted(sent, key=lambda e: e["ts"]), got):
            flow_id += 1
            name = "%s %s" % (key[1], key[2]) if key[2] else key[1]
            common = {"name": name, "cat": "rpc flow", "id": flow_id}
            out.append(dict(common, ph="s", pid=s["pid"], tid=s["tid"], ts=_middle(s)))
            out.append(dict(common, ph="f", bp="e", pid=r["pid"], tid=r["tid"], ts=_middle(r)))
    return out
