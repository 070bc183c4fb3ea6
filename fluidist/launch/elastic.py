"""Elastic collective jobs: membership in etcd, a full restart of every node's trainers on change.

Layout under ``/fluidist/elastic/<job_id>/`` (the job id percent-encoded, so no job's keys lie under
another's: job ``a/nodes`` is ``a%2Fnodes``):

- ``nodes/<uid>`` -- one key per live launcher, attached to a lease of ``--elastic_ttl`` seconds that a
  thread refreshes every ttl/3 s. The value (JSON) says the node's host, process count and endpoints.
  A launcher that dies stops refreshing, so its key disappears when the lease expires.
- ``plan`` -- the generation every node runs: ``{"gen": g, "members": [uid, ...], "nodes": {...}}``.
  Rank k of the plan is node k. A plan is only ever replaced by compare-and-swap on its mod_revision,
  so when several nodes see the same change at once exactly one new generation is written and all
  nodes adopt it.
- ``status`` -- ``completed`` once a node's trainers all finished with exit code 0.

Each launcher loops: wait (with a deadline) for a plan newer than the one it last ran that holds it
and whose members are all alive -- writing one itself when the live nodes call for it -- then start
its trainers with the plan's ranks and endpoints, and watch. A member leaving, a join that changes the
wanted membership, a newer plan written by another node, or a local trainer failing stops the local
trainers (SIGTERM, grace, SIGKILL) and goes back to waiting; after ``--max_restarts`` restarts the
launcher gives up. ``--np N`` wants exactly N nodes (others wait as spares); ``--np MIN:MAX`` starts
with any count in range once the live set has been stable for a few seconds (or reached MAX).

Ranks are stable: survivors keep their rank where it still exists, newcomers fill the holes in
registration order, then are appended.

What etcd holds is checked before use: a plan or a node entry that is not what a launcher writes
(``[]``, a member without its node, a bad endpoint) is ignored with a warning, and a plan that is
ignored is replaced like a missing one. etcd is reached directly (no proxy), over TLS with
``--elastic_ca`` (and ``--elastic_cert`` / ``--elastic_key`` for a client certificate), logged in with
``--elastic_user`` and ``--elastic_password_file``.
"""
import json
import os
import re
import socket
import sys
import time
import urllib.parse
import uuid

from .. import bounded_json
from .etcd_client import EtcdClient, EtcdError, Lease
from .cluster import Cluster, Pod, Trainer, check_ports_free, find_free_ports, split_endpoint
from .common import LaunchError, LaunchInterrupted, logger
from .procs import LocalJob, describe_exit, exit_code_of, write_endpoints_log

__all__ = ["run_elastic", "parse_np", "assign_ranks", "desired_members", "ElasticNode", "job_prefix", "check_plan",
           "check_node_info"]

PREFIX = "/fluidist/elastic/"
MAX_VALUE_BYTES = 1 << 20      # a node's entry or the plan, as another launcher wrote it into etcd
MAX_VALUE_DEPTH = 8
_ENDPOINT = re.compile(r"(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_.-]+):[0-9]{1,5}\Z")


def job_prefix(job_id):
    """The etcd prefix of a job: the id percent-encoded (``/`` included), so jobs never nest."""
    if not str(job_id).strip():
        raise LaunchError("--job_id must not be empty")
    return PREFIX + urllib.parse.quote(str(job_id), safe="") + "/"


def check_node_info(info):
    """The reason a node entry is not what a launcher writes, or None."""
    if not isinstance(info, dict):
        return "not an object"
    if not isinstance(info.get("host"), str) or not info["host"]:
        return "no host"
    n = info.get("nproc")
    if type(n) is not int or n < 1:
        return "nproc %r is not a process count" % (n,)
    eps = info.get("endpoints")
    if not isinstance(eps, list) or len(eps) != n or not all(isinstance(e, str) and _ENDPOINT.match(e) for e in eps):
        return "endpoints %r are not %d ip:port" % (eps, n)
    if "gpu" in info and not isinstance(info["gpu"], bool):
        return "gpu %r is not a boolean" % (info["gpu"],)
    return None


def check_plan(plan):
    """The reason a plan is not what a launcher writes, or None."""
    if not isinstance(plan, dict):
        return "not an object"
    gen, members, nodes = plan.get("gen"), plan.get("members"), plan.get("nodes")
    if type(gen) is not int or gen < 1:
        return "gen %r is not a generation" % (gen,)
    if not isinstance(members, list) or not members or not all(isinstance(m, str) for m in members) \
            or len(set(members)) != len(members):
        return "members %r are not distinct node ids" % (members,)
    if not isinstance(nodes, dict) or any(m not in nodes for m in members):
        return "a member has no node entry"
    for m in members:
        why = check_node_info(nodes[m])
        if why:
            return "node %s: %s" % (m, why)
    return None


def parse_np(text):
    """``"N"`` -> (N, N); ``"MIN:MAX"`` -> (MIN, MAX)."""
    text = str(text).strip()
    try:
        if ":" in text:
            lo, hi = (int(x) for x in text.split(":", 1))
        else:
            lo = hi = int(text)
    except ValueError:
        raise LaunchError("--np must be N or MIN:MAX, got %r" % text) from None
    if lo < 1 or hi < lo:
        raise LaunchError("--np %s: need 1 <= MIN <= MAX" % text)
    return lo, hi


def assign_ranks(prev, alive, size):
    """The members (rank order) of the next generation: ``size`` nodes out of ``alive`` (uids in
    registration order), survivors of ``prev`` first and at their old rank when it still exists,
    newcomers filling the holes in registration order."""
    alive_set = set(alive)
    survivors = [m for m in prev if m in alive_set]
    newcomers = [m for m in alive if m not in set(prev)]
    chosen = (survivors + newcomers)[:size]
    chosen_set = set(chosen)
    slots = [None] * size
    for i, m in enumerate(prev):
        if i < size and m in chosen_set:
            slots[i] = m
    rest = iter([m for m in chosen if m not in set(slots)])
    return [s if s is not None else next(rest) for s in slots]


def desired_members(alive, prev, np_min, np_max):
    """The membership the live nodes call for, or None while there are fewer than ``np_min``."""
    if len(alive) < np_min:
        return None
    return assign_ranks(prev, alive, min(len(alive), np_max))


def _ip_towards(host, port):
    """The local address this machine uses to reach ``host`` (no packet is sent)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect((host, port))
            return s.getsockname()[0]
    except OSError:
        return socket.gethostbyname(socket.gethostname())


class ElasticNode:
    """One launcher's part in an elastic job."""

    def __init__(self, args, catcher, collective_devices, collective_specs):
        """``collective_devices(args)`` and ``collective_specs(args, cluster, pod, use_gpu, extra_env)``
        are the launcher's (passed in: the launcher imports this module, not the other way)."""
        self.args = args
        self.catcher = catcher
        self.collective_specs = collective_specs
        server = args.elastic_server.strip()
        if server.startswith(("http://", "https://")):
            server = server.split("://", 1)[1]
        try:
            host, port = split_endpoint(server.rstrip("/"), "--elastic_server")
        except LaunchError:
            raise LaunchError("--elastic_server must be host:port, got %r" % args.elastic_server) from None
        self.client = _client(args)
        self.prefix = job_prefix(args.job_id)
        self.nodes_prefix = self.prefix + "nodes/"
        self.plan_key = self.prefix + "plan"
        self.status_key = self.prefix + "status"
        self.np_min, self.np_max = parse_np(args.np)
        given = args.max_restarts if args.max_restarts is not None else os.environ.get("PADDLE_ELASTIC_MAX_RESTARTS")
        try:
            self.max_restarts = 3 if given in (None, "") else int(given)
        except ValueError:
            raise LaunchError("PADDLE_ELASTIC_MAX_RESTARTS must be a number, got %r" % given) from None
        self.timeout = float(args.elastic_timeout)
        self.ttl = int(args.elastic_ttl)
        self.poll = float(os.environ.get("FLUIDIST_ELASTIC_POLL", "0.5"))
        self.settle = float(os.environ.get("FLUIDIST_ELASTIC_SETTLE", "3"))
        self.host = args.host or _ip_towards(host, port)
        self.use_gpu, self.devices = collective_devices(args)
        nproc = len(self.devices)
        if args.started_port is not None:
            ports = list(range(args.started_port, args.started_port + nproc))
        else:
            ports = find_free_ports(nproc, self.host)
        self.endpoints = ["%s:%d" % (self.host, p) for p in ports]
        self.uid = "%020d-%s" % (time.time_ns(), uuid.uuid4().hex[:8])
        self.info = {"uid": self.uid, "host": self.host, "nproc": nproc, "endpoints": self.endpoints,
                     "gpu": self.use_gpu}
        self.lease = None
        if args.ips:
            logger.warning("--ips %s is ignored in elastic mode: membership comes from etcd", args.ips)

    # -- etcd -------------------------------------------------------------------------------------
    def register(self):
        try:
            self.client.wait_ready(timeout=min(30.0, self.timeout))
            alive = self.client.get_prefix(self.nodes_prefix)
            if not alive and self.client.get_value(self.status_key) == "completed":
                logger.info("elastic job %s: clearing the state of its earlier, completed run", self.args.job_id)
                self.client.delete_prefix(self.prefix)
            self.lease = Lease(self.client, self.ttl)
            self.client.put(self.nodes_prefix + self.uid, json.dumps(self.info), lease=self.lease.id)
        except EtcdError as e:
            raise LaunchError("elastic job %s: cannot register in etcd: %s" % (self.args.job_id, e)) from None
        logger.info("elastic job %s: registered node %s (%s, endpoints %s)", self.args.job_id, self.uid,
                    self.host, ",".join(self.endpoints))

    def _reregister_if_lost(self):
        if self.lease is not None and self.lease.lost.is_set():
            logger.warning("elastic job %s: this node's lease expired; registering again", self.args.job_id)
            self.lease = Lease(self.client, self.ttl)
            self.client.put(self.nodes_prefix + self.uid, json.dumps(self.info), lease=self.lease.id)

    def leave(self):
        if self.lease is None:
            return
        try:
            self.lease.revoke()
        except EtcdError as e:
            logger.warning("elastic job %s: could not leave etcd cleanly: %s", self.args.job_id, e)
        self.lease = None

    def alive(self):
        """Live node uids in registration order, and their info."""
        kvs = sorted(self.client.get_prefix(self.nodes_prefix), key=lambda kv: kv.create_revision)
        infos = {}
        for kv in kvs:
            uid = kv.key[len(self.nodes_prefix):]
            try:
                info = bounded_json.loads(kv.value, "its value", MAX_VALUE_BYTES, MAX_VALUE_DEPTH)
                why = check_node_info(info)
            except ValueError as e:
                why = str(e)
            if why:
                self._warn_once("node " + uid, "ignoring the node entry %s in etcd: %s" % (kv.key, why))
                continue
            infos[uid] = info
        return list(infos), infos

    def _warn_once(self, key, text):
        seen = self.__dict__.setdefault("_warned", set())
        if key not in seen:
            seen.add(key)
            logger.warning("elastic job %s: %s", self.args.job_id, text)

    def read_plan(self):
        kv = self.client.get(self.plan_key)
        if kv is None:
            return None, 0
        try:
            plan = bounded_json.loads(kv.value, "its value", MAX_VALUE_BYTES, MAX_VALUE_DEPTH)
            why = check_plan(plan)
        except ValueError as e:
            why = str(e)
        if why:   # replaced like a missing plan (the compare-and-swap keeps its revision)
            self._warn_once("plan %d" % kv.mod_revision, "ignoring the plan in etcd (%s): %s" % (self.plan_key, why))
            return None, kv.mod_revision
        return plan, kv.mod_revision

    def completed(self):
        return self.client.get_value(self.status_key) == "completed"

    # -- the loop ---------------------------------------------------------------------------------
    def wait_for_plan(self, after_gen):
        """A plan newer than ``after_gen`` that holds this node and whose members are all alive;
        None if the job has completed meanwhile."""
        deadline = time.monotonic() + self.timeout
        last_alive, changed_at = None, time.monotonic()
        last_log = 0.0
        while True:
            self.catcher.check()
            try:
                self._reregister_if_lost()
                alive, infos = self.alive()
                plan, rev = self.read_plan()
                if self.completed():
                    return None
            except EtcdError as e:
                logger.warning("elastic job %s: %s", self.args.job_id, e)
                alive, plan = None, None
            if alive is not None:
                if (plan and plan["gen"] > after_gen and self.uid in plan["members"]
                        and set(plan["members"]) <= set(alive)):
                    return plan
                now = time.monotonic()
                if alive != last_alive:
                    last_alive, changed_at = alive, now
                prev = plan["members"] if plan else []
                want = desired_members(alive, prev, self.np_min, self.np_max)
                settled = len(alive) >= self.np_max or now - changed_at >= self.settle
                plan_ok = (plan is not None and plan["gen"] > after_gen and plan["members"] == want
                           and set(plan["members"]) <= set(alive))
                if want is not None and settled and not plan_ok:
                    new = {"gen": max(plan["gen"] if plan else 0, after_gen) + 1, "members": want,
                           "nodes": {u: infos[u] for u in want}}
                    try:
                        if self.client.compare_and_put(self.plan_key, json.dumps(new), rev):
                            logger.info("elastic job %s: wrote generation %d with %d node(s): %s", self.args.job_id,
                                        new["gen"], len(want), ",".join(infos[u]["host"] for u in want))
                        continue  # written, or another node wrote first: read the plan again now
                    except EtcdError as e:
                        logger.warning("elastic job %s: %s", self.args.job_id, e)
                if now - last_log > 10:
                    last_log = now
                    logger.info("elastic job %s: %d node(s) registered, waiting for %s", self.args.job_id,
                                len(alive), self.args.np)
            if time.monotonic() > deadline:
                have = "unknown (etcd unreachable)" if alive is None else "%d" % len(alive)
                raise LaunchError("elastic job %s: waited %.0f s (--elastic_timeout) for a membership with this "
                                  "node; --np %s, nodes registered: %s" % (self.args.job_id, self.timeout,
                                                                          self.args.np, have))
            time.sleep(self.poll)

    def cluster_of(self, plan):
        cluster = Cluster()
        rank = 0
        for k, uid in enumerate(plan["members"]):
            info = plan["nodes"][uid]
            if info["nproc"] != len(self.devices):
                raise LaunchError("elastic job %s: node %s (%s) runs %d processes but this node runs %d; every node "
                                  "must use the same number of GPUs (--gpus) or --nproc_per_node"
                                  % (self.args.job_id, info["host"], uid, info["nproc"], len(self.devices)))
            pod = Pod(rank=k, addr=info["host"])
            for i, ep in enumerate(info["endpoints"]):
                gpus = self.devices[i] if uid == self.uid else []
                pod.trainers.append(Trainer(gpus=gpus, endpoint=ep, rank=rank))
                rank += 1
            cluster.pods.append(pod)
        return cluster, cluster.pods[plan["members"].index(self.uid)]

    def make_check(self, plan):
        """The watch's etcd check: a reason to restart, or None."""
        state = {"next": 0.0}

        def check():
            now = time.monotonic()
            if now < state["next"]:
                return None
            state["next"] = now + self.poll
            try:
                self._reregister_if_lost()
                alive, _ = self.alive()  # read the nodes before the status: see the ordering in run()
                cur, _ = self.read_plan()
                if self.completed():
                    return None  # nodes leave as they finish; that is no reason to restart
            except EtcdError as e:
                logger.warning("elastic job %s: %s", self.args.job_id, e)
                return None
            if cur is None or cur.get("gen") != plan["gen"]:
                return "generation %s replaced generation %d" % (cur and cur.get("gen"), plan["gen"])
            gone = [plan["nodes"][m]["host"] + " (" + m + ")" for m in plan["members"] if m not in alive]
            if gone:
                return "node(s) left: %s" % ", ".join(gone)
            want = desired_members(alive, plan["members"], self.np_min, self.np_max)
            if want != plan["members"]:
                return "membership changed: %d node(s) alive" % len(alive)
            return None
        return check

    def run(self):
        args = self.args
        self.register()
        restarts, gen = 0, 0
        job = None
        try:
            while True:
                plan = self.wait_for_plan(gen)
                if plan is None:
                    logger.info("elastic job %s has completed", args.job_id)
                    return 0
                gen = plan["gen"]
                cluster, pod = self.cluster_of(plan)
                logger.info("elastic job %s: generation %d, node rank %d of %d, %d trainers", args.job_id, gen,
                            pod.rank, len(cluster.pods), cluster.trainers_nranks())
                check_ports_free([(self.host, split_endpoint(t.endpoint)[1],
                                   "trainer rank %d, endpoint %s" % (t.rank, t.endpoint)) for t in pod.trainers])
                extra = {"FLUIDIST_ELASTIC_GENERATION": str(gen), "PADDLE_ELASTIC_JOB_ID": args.job_id,
                         "PADDLE_TRAINERS": ",".join(p.addr for p in cluster.pods)}
                specs = self.collective_specs(args, cluster, pod, self.use_gpu, extra_env=extra)
                if args.log_dir:
                    os.makedirs(args.log_dir, exist_ok=True)
                    write_endpoints_log(args.log_dir, [("PADDLE_TRAINER_ENDPOINTS", cluster.trainers_endpoints())])
                job = LocalJob(self.catcher, grace=args.grace_period)
                job.start(specs, log_mode="w" if restarts == 0 else "a")
                kind, value = job.watch(check=self.make_check(plan))
                if kind == "done":
                    # the status goes in before this node leaves: a peer that sees this node gone
                    # reads the status after the nodes and so knows it is no reason to restart
                    try:
                        self.client.put(self.status_key, "completed")
                    except EtcdError as e:
                        logger.warning("elastic job %s: could not mark it completed: %s", args.job_id, e)
                    logger.info("elastic job %s: this node's trainers finished (generation %d)", args.job_id, gen)
                    job.close()
                    return 0
                job.terminate()
                restarts += 1
                if kind == "failed":
                    report = job.failure_report(value)
                    sys.stdout.flush()
                    logger.error(report)
                    if restarts > self.max_restarts:
                        logger.error("elastic job %s: giving up after %d restart(s) (--max_restarts %d)",
                                     args.job_id, restarts - 1, self.max_restarts)
                        return exit_code_of(value.popen.returncode)
                    logger.warning("elastic job %s: %s %s; restarting all nodes (restart %d of %d)", args.job_id,
                                   value.spec.describe(), describe_exit(value.popen.returncode), restarts,
                                   self.max_restarts)
                else:
                    if restarts > self.max_restarts:
                        raise LaunchError("elastic job %s: %s after %d restart(s); --max_restarts %d reached"
                                          % (args.job_id, value, restarts - 1, self.max_restarts))
                    logger.warning("elastic job %s: %s; stopped generation %d, restarting (restart %d of %d)",
                                   args.job_id, value, gen, restarts, self.max_restarts)
        except LaunchInterrupted as e:
            n = sum(1 for p in job.procs if p.check() is None) if job is not None else 0
            logger.warning("got %s: stopping %d local process(es) and leaving elastic job %s", e, n, args.job_id)
            if job is not None:
                job.terminate(sig=e.signum)
            return 128 + e.signum
        finally:
            if job is not None:
                job.close()
            self.leave()


def _client(args):
    """The etcd client of the launcher's --elastic_* options."""
    password = None
    path = getattr(args, "elastic_password_file", None)
    if path:
        try:
            with open(path) as f:
                password = f.read().strip()
        except OSError as e:
            raise LaunchError("--elastic_password_file %s: %s" % (path, e.strerror or e)) from None
    user = getattr(args, "elastic_user", None)
    if bool(user) != bool(path):
        raise LaunchError("--elastic_user and --elastic_password_file go together")
    try:
        return EtcdClient(args.elastic_server, timeout=5.0, ca_file=getattr(args, "elastic_ca", None),
                          cert_file=getattr(args, "elastic_cert", None), key_file=getattr(args, "elastic_key", None),
                          user=user, password=password)
    except EtcdError as e:
        raise LaunchError(str(e)) from None


def run_elastic(args, catcher, collective_devices, collective_specs):
    """Run this node's part of an elastic job; returns the launcher's exit code."""
    return ElasticNode(args, catcher, collective_devices, collective_specs).run()
