"""Records between the workers of a job, for ``InMemoryDataset.global_shuffle``.

The role maker says who the workers are (``worker_index``, ``worker_num`` and the workers'
endpoints, e.g. ``PADDLE_TRAINER_ENDPOINTS`` as the launcher sets it). For one exchange each worker
binds a ROUTER socket on its own endpoint, sends every other worker its part through a DEALER,
acknowledges each part it receives and waits until it has every part and every acknowledgement.
Parts are re-sent every second until acknowledged (a part sent while the peer was still between
two exchanges would otherwise be lost), duplicates are dropped, and a part of a later exchange
that arrives early is kept for it. Everything waits under one deadline and the error names the
workers still missing.

A message is a JSON header (exchange number, sender, what it carries) plus raw array buffers;
nothing is pickled, and a malformed message is an error naming its sender. The sockets are CURVE
sockets of the job, with heartbeats, like every socket of the runtime (``distributed.security``).
"""
import json
import os
import time

import numpy as np
import zmq

from .. import bounded_json
from ..distributed import liveness, security
from ..distributed.rpc import _tcp, context
from .records import Records

VERSION = 1
RESEND_S = 1.0


class ExchangeError(RuntimeError):
    pass


def exchange_timeout():
    return float(os.environ.get("FLUIDIST_SHUFFLE_TIMEOUT", "300"))


def workers_of(fleet_or_role_maker):
    """(this worker's index, the workers' endpoints) from a fleet or a role maker."""
    rm = fleet_or_role_maker._rm() if hasattr(fleet_or_role_maker, "_rm") else fleet_or_role_maker
    if not rm.is_worker():
        raise ExchangeError("global_shuffle runs on workers; this process is a server")
    eps = list(rm.get_trainer_endpoints() or [])
    n = rm.worker_num()
    if n > 1 and len(eps) != n:
        raise ExchangeError("global_shuffle across %d workers needs their endpoints, but %s gives %s (set "
                            "PADDLE_TRAINER_ENDPOINTS, as fluidist's launcher does)" % (n, type(rm).__name__, eps))
    return rm.worker_index(), eps


def records_payload(records):
    """(meta, arrays) of Records for ``all_to_all``."""
    meta = {"n": records.n, "slots": [[np.dtype(v.dtype).name, int(len(v))] for v in records.values]}
    for field in ("ins_ids", "contents"):       # (set_parse_ins_id / set_parse_content: a few short strings)
        if getattr(records, field) is not None:
            meta[field] = [str(t) for t in getattr(records, field)]
    arrays = []
    for v, off in zip(records.values, records.offsets):
        arrays += [np.ascontiguousarray(v), np.ascontiguousarray(off, dtype=np.int64)]
    return meta, arrays


def records_from_payload(payload, slots, sender):
    """Records from a received (meta, raw buffers), checked against the dataset's slots."""
    meta, frames = payload
    what = "global_shuffle: the records from worker %d" % sender
    if not isinstance(meta, dict) or not isinstance(meta.get("slots"), list) or len(meta["slots"]) != len(slots):
        raise ExchangeError("%s do not describe the %d slots of this dataset" % (what, len(slots)))
    n = meta.get("n")
    if type(n) is not int or n < 0 or len(frames) != 2 * len(slots):
        raise ExchangeError("%s are malformed (%d buffers for %d slots)" % (what, len(frames), len(slots)))
    values, offsets = [], []
    for j, slot in enumerate(slots):
        entry = meta["slots"][j]
        dtype, count = entry if isinstance(entry, list) and len(entry) == 2 else (None, None)
        if dtype != np.dtype(slot.dtype).name or type(count) is not int or count < 0:
            raise ExchangeError("%s: slot %r is %r, expected %s" % (what, slot.name, dtype, np.dtype(slot.dtype).name))
        v, off = frames[2 * j], frames[2 * j + 1]
        if len(v) != count * np.dtype(slot.dtype).itemsize or len(off) != (n + 1) * 8:
            raise ExchangeError("%s: slot %r has buffers of the wrong size" % (what, slot.name))
        off = np.frombuffer(off, np.int64).copy()
        if off[0] != 0 or off[-1] != count or np.any(np.diff(off) < 0):
            raise ExchangeError("%s: slot %r has invalid instance offsets" % (what, slot.name))
        values.append(np.frombuffer(v, slot.dtype).copy())
        offsets.append(off)
    texts = {}
    for field in ("ins_ids", "contents"):
        got = meta.get(field)
        if got is not None and (not isinstance(got, list) or len(got) != n or not all(isinstance(t, str) for t in got)):
            raise ExchangeError("%s: %s is not a list of %d strings" % (what, field, n))
        texts[field] = None if got is None else np.array(got, dtype=object)
    return Records(slots, values, offsets, **texts)


class WorkerExchange:
    """All-to-all of Records among the workers (one per process and role maker)."""

    def __init__(self, rank, endpoints):
        self.rank = rank
        self.endpoints = list(endpoints)
        self.round = 0
        self.early = {}        # (round, sender) -> (header, frames) that came before their exchange

    def all_gather(self, meta):
        """Every worker's ``meta`` (a JSON value), in worker order."""
        return [m for m, _ in self.all_to_all([(meta, [])] * len(self.endpoints))]

    def all_to_all(self, parts):
        """``parts[k]``: the (JSON meta, [arrays]) for worker k; returns the (meta, [bytes]) every
        worker sent here, in worker order (this worker's own part as given)."""
        n = len(self.endpoints)
        if len(parts) != n:
            raise ValueError("all_to_all: %d parts for %d workers" % (len(parts), n))
        self.round += 1
        rnd = self.round
        ctx = context()
        router = ctx.socket(zmq.ROUTER)
        router.setsockopt(zmq.LINGER, 5000)
        security.secure_server(router)
        liveness.configure(router)
        deadline = time.monotonic() + exchange_timeout()
        me = self.endpoints[self.rank]
        while True:
            try:
                router.bind(_tcp(me, for_bind=True))
                break
            except zmq.ZMQError as e:
                if time.monotonic() > deadline:
                    router.close(0)
                    raise ExchangeError("global_shuffle: worker %d cannot listen on its endpoint %s: %s"
                                        % (self.rank, me, e)) from None
                time.sleep(0.2)
        dealers = {}
        try:
            for k, ep in enumerate(self.endpoints):
                if k == self.rank:
                    continue
                d = ctx.socket(zmq.DEALER)
                d.setsockopt(zmq.LINGER, 5000)
                security.secure_client(d)
                liveness.configure(d)
                d.connect(_tcp(ep))
                dealers[k] = d
            got = {self.rank: parts[self.rank]}
            acked = set()
            sent_at = {}
            poller = zmq.Poller()
            poller.register(router, zmq.POLLIN)
            for d in dealers.values():
                poller.register(d, zmq.POLLIN)
            for key in [k for k in self.early if k[0] == rnd]:
                got[key[1]] = self.early.pop(key)
            while len(got) < n or len(acked) < len(dealers):
                now = time.monotonic()
                if now > deadline:
                    missing = sorted(set(range(n)) - set(got))
                    unacked = sorted(set(dealers) - acked)
                    raise ExchangeError(
                        "global_shuffle: worker %d timed out after %.0f s (FLUIDIST_SHUFFLE_TIMEOUT): no records "
                        "yet from workers %s, no acknowledgement from workers %s (endpoints %s)"
                        % (self.rank, exchange_timeout(), missing, unacked,
                           [self.endpoints[k] for k in sorted(set(missing) | set(unacked))]))
                for k, d in dealers.items():
                    if k not in acked and now - sent_at.get(k, -1e9) >= RESEND_S:
                        meta, arrays = parts[k]
                        head = {"v": VERSION, "kind": "part", "round": rnd, "from": self.rank, "meta": meta}
                        d.send_multipart([json.dumps(head).encode()] +
                                         [a.reshape(-1).view(np.uint8) for a in arrays], copy=False)
                        sent_at[k] = now
                for sock, _ in poller.poll(200):
                    try:   # never block after a poll: with CURVE and heartbeats a poll may wake without a message
                        frames = sock.recv_multipart(zmq.NOBLOCK)
                    except zmq.Again:
                        continue
                    if sock is router:
                        ident, *msg = frames
                        self._on_part(router, ident, msg, rnd, got)
                    else:
                        head = self._header(frames[0], "acknowledgement")
                        if head.get("kind") == "ack" and head.get("round") == rnd:
                            acked.add(head.get("from"))
            return [got[k] for k in range(n)]
        finally:
            for d in dealers.values():
                d.close()
            router.close()

    def _header(self, raw, what):
        try:
            raw = bytes(raw)
            head = bounded_json.loads(raw, what, len(raw), 16)
        except ValueError:
            raise ExchangeError("global_shuffle: worker %d received a malformed %s" % (self.rank, what)) from None
        if not isinstance(head, dict) or head.get("v") != VERSION:
            raise ExchangeError("global_shuffle: worker %d received a %s of an unknown version" % (self.rank, what))
        return head

    def _on_part(self, router, ident, msg, rnd, got):
        if not msg:
            return
        head = self._header(msg[0], "message")
        sender, r = head.get("from"), head.get("round")
        if head.get("kind") != "part" or type(sender) is not int or not 0 <= sender < len(self.endpoints) \
                or type(r) is not int:
            raise ExchangeError("global_shuffle: worker %d received a message that is not a part: %r"
                                % (self.rank, {k: head.get(k) for k in ("kind", "from", "round")}))
        router.send_multipart([ident, json.dumps({"v": VERSION, "kind": "ack", "round": r,
                                                  "from": self.rank}).encode()])
        if r == rnd and sender not in got:
            got[sender] = (head.get("meta"), msg[1:])
        elif r > rnd:
            self.early.setdefault((r, sender), (head.get("meta"), msg[1:]))


_exchanges: dict = {}


def exchange_for(rank, endpoints):
    key = (rank, tuple(endpoints))
    ex = _exchanges.get(key)
    if ex is None:
        ex = _exchanges[key] = WorkerExchange(rank, endpoints)
    return ex
