"""Pservers of a real 2x2 job (the transpiler's programs, distributed lookup table included) take
thousands of malformed and forged messages: each is refused with an error reply naming what is
wrong, nothing crashes, the pserver's memory stays bounded, and the training run that follows still
equals local training."""
import json
import random

import numpy as np
import pytest

import fluidist as fluid
from cluster import Cluster, free_ports
from dist_models import build, local_history
from fluidist.core.tensor import SelectedRows
from fluidist.distributed import wire
from fluidist.distributed.authorize import serving_rules
from fluidist.distributed.ports import wait_server_ready
from raw_peer import RawPeer

pytestmark = pytest.mark.timeout(240)


def pserver_programs(eps, model="dtable"):
    main, startup, _, _ = build(model, "sgd")
    t = fluid.DistributeTranspiler()
    t.transpile(0, program=main, pservers=",".join(eps), trainers=2, sync_mode=True, startup_program=startup)
    return {ep: t.get_pserver_program(ep) for ep in eps}


def _serving_facts(prog):
    op = [o for o in prog.global_block().ops if o.type == "listen_and_serv"][0]
    gb = prog.global_block()
    recv = op.input("X")
    dense = [n for n in recv if gb.var(n).type != "SELECTED_ROWS"]
    sparse = [n for n in recv if gb.var(n).type == "SELECTED_ROWS"]
    ids = [e.rpartition(":")[0] for e in op.attr("prefetch_var_name_to_block_id")]
    return gb, dense, sparse, ids


def forged_requests(prog):
    """(label, frames, text the error reply must hold) for every forgery the program rules out."""
    gb, dense, sparse, ids = _serving_facts(prog)
    d0 = [n for n in dense if n.endswith(".trainer_0")][0]
    d1 = d0.replace(".trainer_0", ".trainer_1")
    s0 = [n for n in sparse if ".trainer_0" in n][0]
    shape = list(gb.var(d0).shape)
    good = np.zeros(shape, np.float32)
    rows = SelectedRows(np.array([0, 1], np.int64), np.zeros((2, 8), np.float32), 5)
    out = ids[0].replace("_in_", "_out_")
    return [
        ("learning rate overwritten", wire.encode("send", 1, "learning_rate_0", np.full([1], 1000.0, np.float32),
                                                  trainer=0, step=1), "does not receive 'learning_rate_0'"),
        ("a parameter overwritten", wire.encode("send", 1, "emb_w", np.zeros((1024, 8), np.float32), step=1),
         "does not receive 'emb_w'"),
        ("another trainer's gradient", wire.encode("send", 1, d1, good, trainer=0, step=1),
         "is trainer 1's gradient, but trainer 0 sent it"),
        ("row-sparse for a dense gradient", wire.encode("send", 1, d0, SelectedRows(
            np.array([0]), np.zeros([1] + shape[1:], np.float32), shape[0] or 1), trainer=0, step=1),
         "is a dense gradient, trainer 0 sent a row-sparse one"),
        ("dense for a row-sparse gradient", wire.encode("send", 1, s0, np.zeros((1024, 8), np.float32), step=1),
         "is a row-sparse gradient, trainer 0 sent a dense one"),
        ("wrong sparse height", wire.encode("send", 1, s0, rows, trainer=0, step=1),
         "has 1024 rows, trainer 0 sent a row-sparse value of height 5"),
        ("wrong dtype", wire.encode("send", 1, d0, good.astype(np.float64), step=1), "must be float32"),
        ("wrong shape", wire.encode("send", 1, d0, np.zeros([7], np.float32), step=1), "trainer 0 sent [7]"),
        ("gradient for a future step", wire.encode("send", 1, d0, good, step=4), "its next step here is 1"),
        ("extra send_barrier", wire.encode("send_barrier", 1, trainer=1, step=2), "its next step here is 1"),
        ("barrier with a payload", wire.encode("send_barrier", 1, None, np.zeros(3), step=1), "carries no value"),
        ("complete with a payload", wire.encode("complete", 1, None, np.zeros(3)), "carries no value"),
        ("trainer id out of range", wire.encode("get", 1, "emb_w", trainer=9), "trainer id 9 is out of range"),
        ("get of a gradient", wire.encode("get", 1, d0), "a gradient it receives"),
        ("get of something it does not hold", wire.encode("get", 1, "/etc/passwd"), "not a variable it holds"),
        ("get parking a payload", wire.encode("get", 1, "emb_w", np.zeros(1000, np.float32)), "carries no value"),
        ("prefetch id out of range", wire.encode("prefetch", 1, ids[0], np.array([[2048]], np.int64), out=out),
         "ids [2048] are outside table 'emb_w'"),
        ("negative prefetch id", wire.encode("prefetch", 1, ids[0], np.array([[-3]], np.int64), out=out),
         "ids [-3] are outside"),
        ("prefetch into another variable", wire.encode("prefetch", 1, ids[0], np.array([[1]], np.int64),
                                                       out="learning_rate_0"), "asks for 'learning_rate_0'"),
        ("prefetch of float ids", wire.encode("prefetch", 1, ids[0], np.array([[1.5]]), out=out), "ids must be int64"),
        ("prefetch of an unknown table", wire.encode("prefetch", 1, "nope", np.array([1]), out=out),
         "has no prefetch block for 'nope'"),
        ("checkpoint outside the root", wire.encode("checkpoint", 1, dir="/tmp/elsewhere"),
         "writes checkpoints only under"),
        ("checkpoint escaping with ..", wire.encode("checkpoint", 1, dir="../../x"), "writes checkpoints only under"),
        ("a reply sent as a request", wire.encode("ok", 1), "malformed request rejected"),
        ("a kind given as a list", [json.dumps({"v": 1, "kind": ["get"], "id": 1, "trainer": 0, "step": 0}).encode()],
         "unknown message kind"),
        ("a dtype given as a list", [json.dumps({"v": 1, "kind": "send", "id": 1, "name": d0, "trainer": 0, "step": 1,
                                                 "value": {"t": "dense", "dtype": ["float32"], "shape": [1]}}).encode(),
                                     b"\0" * 4], "is not allowed"),
        ("an impossible shape", [json.dumps({"v": 1, "kind": "send", "id": 1, "name": d0, "trainer": 0, "step": 1,
                                             "value": {"t": "dense", "dtype": "float32", "shape": [0, 2 ** 62]}}).encode(),
                                 b""], "larger than any array"),
    ]


def random_bad_messages(prog, n, seed=0):
    """``n`` messages a pserver must refuse: garbage, headers with a field of the wrong type or range,
    and the forgeries above with random payloads."""
    rnd = random.Random(seed)
    forged = forged_requests(prog)
    junk = [None, True, -1, 2 ** 64, 1.5, "x", [], {}, [1, [2]], {"a": 1}, "\u2603" * 3]
    fields = ["v", "kind", "id", "trainer", "step", "name", "value", "lod", "out", "dir", "msg"]
    out = []
    for i in range(n):
        r = rnd.random()
        if r < 0.25:
            frames = [bytes(rnd.getrandbits(8) for _ in range(rnd.randint(0, 40)))]
            frames += [bytes(rnd.randint(0, 16)) for _ in range(rnd.randint(0, 2))]
            out.append(("garbage", frames))
        elif r < 0.6:
            h = {"v": 1, "kind": rnd.choice(sorted(wire.KINDS - {"ok", "error"})), "id": i, "trainer": 0, "step": 0,
                 "name": "x", "value": {"t": "dense", "dtype": "float32", "shape": [2]}}
            key = rnd.choice(fields)
            choices = [j for j in junk if not (key in ("lod", "name") and j is None)]   # None is valid there
            h[key] = rnd.choice(choices) if key != "value" else rnd.choice(choices + [{"t": "rows", "dtype": "float32",
                                                                                        "shape": [2]}])
            if key in ("out", "dir", "msg", "name") and isinstance(h[key], str):
                h["kind"] = "ok"          # a reply kind: refused whatever its strings are
            out.append(("bad field " + key, [json.dumps(h).encode(), np.zeros(2, np.float32).tobytes()]))
        else:
            label, frames, _ = rnd.choice(forged)
            out.append(("forged: " + label, frames))
    return out


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS for pid %d" % pid)


def test_forged_and_malformed_requests_are_refused_and_training_still_equals_local(tmp_path, capsys):
    eps = ["127.0.0.1:%d" % p for p in free_ports(2)]
    progs = pserver_programs(eps)
    steps, batch = 2, 4
    common = ["--endpoints", ",".join(eps), "--trainers", 2, "--model", "dtable", "--optimizer", "sgd",
              "--steps", steps, "--batch", batch]
    counts = {}
    with Cluster(tmp_path) as c:
        procs = [c.start("ps%d" % i, "pserver_model.py", ["--role", "pserver", "--current_endpoint", ep] + common)
                 for i, ep in enumerate(eps)]
        wait_server_ready(eps, timeout=60)
        for ep, proc in zip(eps, procs):
            with RawPeer(ep) as peer:
                for label, frames, why in forged_requests(progs[ep]):
                    reply = peer.ask(frames)
                    assert reply is not None, "%s: no reply from %s" % (label, ep)
                    assert reply.kind == "error" and why in reply.get("msg"), (label, reply.get("msg"))
                rss0 = rss_kib(proc.pid)
                bad = random_bad_messages(progs[ep], 1500, seed=eps.index(ep))
                for label, frames in bad:
                    peer.send(frames)
                for label, _ in bad:
                    reply = peer.reply(10)
                    assert reply is not None and reply.kind == "error", "no error reply to %s" % label
                    kind = label.split(":")[0].split(" ")[0]
                    counts[kind] = counts.get(kind, 0) + 1
                counts["explicit forgeries"] = counts.get("explicit forgeries", 0) + len(forged_requests(progs[ep]))
                # a frame larger than anything the program sends: dropped before it is buffered
                limit = serving_rules(progs[ep], ep).max_message_bytes
                peer.send([wire.encode("send", 1, "x")[0], b"\0" * (limit + 1)])
                assert peer.reply(2) is None
                grown = rss_kib(proc.pid) - rss0
                counts["KiB grown on %s" % ep.rsplit(":", 1)[1]] = grown
                assert grown < 24 * 1024, "pserver %s grew by %d KiB under the fuzz" % (ep, grown)
            assert proc.poll() is None, c.log("ps%d" % eps.index(ep))
        outs = []
        for k in range(2):
            outs.append(str(tmp_path / ("trainer%d.npz" % k)))
            c.start("tr%d" % k, "pserver_model.py", ["--role", "trainer", "--trainer_id", k, "--out", outs[-1]] + common)
        c.check(timeout=150)
    with capsys.disabled():
        refused = {k: v for k, v in counts.items() if not k.startswith("KiB")}
        print("\nlive pserver fuzz: %d refused, by kind: %s; memory: %s" % (
            sum(refused.values()), refused, {k: v for k, v in counts.items() if k.startswith("KiB")}))
    results = [dict(np.load(o)) for o in outs]
    ref, params = local_history("dtable", "sgd", False, steps, batch * 2)
    for step in range(steps):
        for name in params:
            want = ref["%s_%d" % (name, step)]
            for r in results:
                np.testing.assert_allclose(r["%s_%d" % (name, step)], want, rtol=1e-5, atol=1e-7)
