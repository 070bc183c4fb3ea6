"""A tiny client for etcd's v3 JSON/HTTP gateway (``/v3/...``), written on ``urllib`` only.

The gateway speaks the gRPC API as JSON: keys and values are base64 strings, 64-bit integers come
back as decimal strings, and streaming calls (lease keep-alive, watch) answer with one JSON object
per line, each wrapped as ``{"result": ...}``. This client covers what the elastic launcher needs:
put / get / range / delete, transactions (compare-and-swap), leases with a keep-alive thread, and
watching a key or a prefix either by polling or through the watch stream.

Every call has a deadline (``timeout`` seconds); a failure raises :class:`EtcdError` naming the
server and the call. The client talks to the server directly, whatever ``http_proxy`` says. For a real
cluster it speaks TLS (``ca_file``: the CA that signed the server's certificate; ``cert_file`` and
``key_file``: this client's certificate, when the server asks for one) and logs in with ``user`` and
``password`` (etcd's auth: a token sent with every call, renewed when the server says it expired).
"""
import base64
import http.client
import json
import socket
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

from .. import bounded_json

__all__ = ["EtcdClient", "EtcdError", "KeyValue", "Lease", "prefix_range_end"]

MAX_ANSWER_BYTES = 64 << 20     # one answer or watch event of etcd (the job's keys are small)
MAX_ANSWER_DEPTH = 16           # etcd's JSON nests about 5 deep (result, kvs / events, kv)


class EtcdError(RuntimeError):
    """A call to etcd failed (server unreachable, timed out, or answered with an error)."""


def _b64(data):
    if isinstance(data, str):
        data = data.encode("utf-8")
    return base64.b64encode(data).decode("ascii")


def _unb64(text):
    return base64.b64decode(text or "")


def prefix_range_end(prefix):
    """The ``range_end`` that makes a range cover every key starting with ``prefix`` (etcd's rule:
    the prefix with its last byte below 0xff incremented and what follows dropped)."""
    key = prefix.encode("utf-8") if isinstance(prefix, str) else bytes(prefix)
    for i in range(len(key) - 1, -1, -1):
        if key[i] < 0xFF:
            return key[:i] + bytes([key[i] + 1])
    return b"\0"  # every key


class KeyValue:
    """One stored key: ``key`` and ``value`` as str, plus etcd's revisions and lease id."""

    __slots__ = ("key", "value", "create_revision", "mod_revision", "version", "lease")

    def __init__(self, raw):
        self.key = _unb64(raw.get("key")).decode("utf-8")
        self.value = _unb64(raw.get("value")).decode("utf-8")
        self.create_revision = int(raw.get("create_revision", 0))
        self.mod_revision = int(raw.get("mod_revision", 0))
        self.version = int(raw.get("version", 0))
        self.lease = int(raw.get("lease", 0))

    def __repr__(self):
        return "KeyValue(%r=%r, create_revision=%d, mod_revision=%d, lease=%d)" % (
            self.key, self.value, self.create_revision, self.mod_revision, self.lease)


class EtcdClient:
    """Client for one etcd server, given as ``"host:port"``, ``"http://host:port"`` or
    ``"https://host:port"`` (https when any of the TLS files is given)."""

    def __init__(self, endpoint, timeout=5.0, ca_file=None, cert_file=None, key_file=None, user=None, password=None):
        endpoint = endpoint.strip().rstrip("/")
        tls = bool(ca_file or cert_file or key_file)
        if not endpoint.startswith(("http://", "https://")):
            endpoint = ("https://" if tls else "http://") + endpoint
        elif tls and endpoint.startswith("http://"):
            raise EtcdError("etcd at %s: TLS files given for an http:// address; write https://" % endpoint)
        if bool(cert_file) != bool(key_file):
            raise EtcdError("etcd at %s: a client certificate needs both its file and its key file" % endpoint)
        if bool(user) != (password is not None):
            raise EtcdError("etcd at %s: a login needs both a user and a password" % endpoint)
        self.endpoint = endpoint
        self.timeout = float(timeout)
        self._ssl = None
        if endpoint.startswith("https://"):
            try:
                self._ssl = ssl.create_default_context(cafile=ca_file)
                if cert_file:
                    self._ssl.load_cert_chain(cert_file, key_file)
            except (OSError, ssl.SSLError) as e:
                raise EtcdError("etcd at %s: cannot load the TLS files: %s" % (endpoint, e)) from None
        # no proxy handler: etcd is reached directly whatever http_proxy / https_proxy say
        handlers = [urllib.request.ProxyHandler({})]
        if self._ssl is not None:
            handlers.append(urllib.request.HTTPSHandler(context=self._ssl))
        self._opener = urllib.request.build_opener(*handlers)
        self._user, self._password = user, password
        self._token = None

    # -- plumbing -----------------------------------------------------------------------------
    def _headers(self):
        h = {"Content-Type": "application/json"}
        if self._token:
            h["Authorization"] = self._token
        return h

    def _login(self):
        self._token = None
        out = self._post("/v3/auth/authenticate", {"name": self._user, "password": self._password}, None)
        token = out.get("token")
        if not token:
            raise EtcdError("etcd at %s: logging in as %r gave no token" % (self.endpoint, self._user))
        self._token = token

    def _call(self, path, body, timeout=None):
        if self._user and self._token is None:
            self._login()
        try:
            return self._post(path, body, timeout)
        except EtcdError as e:
            if not (self._user and ("invalid auth token" in str(e) or "HTTP 401" in str(e))):
                raise
        self._login()          # the token expired: log in again, once
        return self._post(path, body, timeout)

    def _post(self, path, body, timeout):
        url = self.endpoint + path
        data = json.dumps(body).encode("utf-8")
        req = urllib.request.Request(url, data=data, method="POST", headers=self._headers())
        try:
            with self._opener.open(req, timeout=self.timeout if timeout is None else timeout) as resp:
                text = resp.read(MAX_ANSWER_BYTES + 1).decode("utf-8", "replace")
        except urllib.error.HTTPError as e:
            detail = e.read().decode("utf-8", "replace")[:500]
            raise EtcdError("etcd at %s: %s answered HTTP %d: %s" % (self.endpoint, path, e.code, detail)) from None
        except (urllib.error.URLError, socket.timeout, OSError) as e:
            reason = getattr(e, "reason", e)
            raise EtcdError("etcd at %s: %s failed: %s" % (self.endpoint, path, reason)) from None
        # A stream call (keepalive) answers {"result": ...} lines; plain calls answer one object.
        line = text.strip().splitlines()[0] if text.strip() else "{}"
        try:
            out = bounded_json.loads(line, "etcd's answer", MAX_ANSWER_BYTES, MAX_ANSWER_DEPTH)
        except ValueError:
            out = None
        if not isinstance(out, dict):
            raise EtcdError("etcd at %s: %s answered something that is not a JSON object: %r"
                            % (self.endpoint, path, line[:200]))
        if "error" in out:
            raise EtcdError("etcd at %s: %s error: %s" % (self.endpoint, path, out["error"]))
        return out.get("result", out)

    def version(self, timeout=None):
        """The server's version info (a GET on ``/version``); also a cheap health check."""
        try:
            with self._opener.open(self.endpoint + "/version", timeout=self.timeout if timeout is None else timeout) \
                    as resp:
                return bounded_json.loads(resp.read(MAX_ANSWER_BYTES + 1), "etcd's /version", MAX_ANSWER_BYTES,
                                          MAX_ANSWER_DEPTH)
        except (urllib.error.URLError, socket.timeout, OSError, ValueError) as e:
            raise EtcdError("etcd at %s: /version failed: %s" % (self.endpoint, getattr(e, "reason", e))) from None

    def wait_ready(self, timeout=30.0):
        """Poll ``/version`` until the server answers; raise EtcdError after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                return self.version(timeout=2.0)
            except EtcdError:
                if time.monotonic() > deadline:
                    raise EtcdError("etcd at %s did not answer within %.0f s" % (self.endpoint, timeout)) from None
                time.sleep(0.1)

    # -- key/value ------------------------------------------------------------------------------
    def put(self, key, value, lease=None):
        body = {"key": _b64(key), "value": _b64(value)}
        if lease:
            body["lease"] = str(lease)
        return int(self._call("/v3/kv/put", body)["header"]["revision"])

    def get(self, key):
        """The :class:`KeyValue` stored at ``key``, or None."""
        kvs = self.range(key)
        return kvs[0] if kvs else None

    def get_value(self, key, default=None):
        kv = self.get(key)
        return default if kv is None else kv.value

    def range(self, key, range_end=None, prefix=False):
        """Keys in ``[key, range_end)`` (or every key under ``key`` with ``prefix=True``), sorted by key."""
        body = {"key": _b64(key)}
        if prefix:
            range_end = prefix_range_end(key)
        if range_end is not None:
            body["range_end"] = _b64(range_end)
        out = self._call("/v3/kv/range", body)
        return [KeyValue(kv) for kv in out.get("kvs", [])]

    def get_prefix(self, prefix):
        return self.range(prefix, prefix=True)

    def delete(self, key, prefix=False):
        """Delete ``key`` (or every key under it with ``prefix=True``); returns how many went."""
        body = {"key": _b64(key)}
        if prefix:
            body["range_end"] = _b64(prefix_range_end(key))
        return int(self._call("/v3/kv/deleterange", body).get("deleted", 0))

    def delete_prefix(self, prefix):
        return self.delete(prefix, prefix=True)

    def txn(self, compare, success, failure=()):
        """A raw transaction: lists of gateway-form compare / request-op dicts (keys already base64).
        Returns ``(succeeded, responses)``. Most callers want :meth:`put_if_absent` or :meth:`compare_and_put`."""
        out = self._call("/v3/kv/txn", {"compare": list(compare), "success": list(success),
                                        "failure": list(failure)})
        return bool(out.get("succeeded", False)), out.get("responses", [])

    def put_if_absent(self, key, value, lease=None):
        """Create ``key`` only if it does not exist; True when this call created it."""
        put = {"key": _b64(key), "value": _b64(value)}
        if lease:
            put["lease"] = str(lease)
        ok, _ = self.txn([{"key": _b64(key), "target": "CREATE", "result": "EQUAL", "create_revision": "0"}],
                         [{"request_put": put}])
        return ok

    def compare_and_put(self, key, value, mod_revision, lease=None):
        """Write ``key`` only if its ``mod_revision`` is still ``mod_revision`` (0: the key must not
        exist). True when the write happened: the compare-and-swap every agreement builds on."""
        put = {"key": _b64(key), "value": _b64(value)}
        if lease:
            put["lease"] = str(lease)
        ok, _ = self.txn([{"key": _b64(key), "target": "MOD", "result": "EQUAL",
                           "mod_revision": str(int(mod_revision))}],
                         [{"request_put": put}])
        return ok

    # -- leases ---------------------------------------------------------------------------------
    def lease_grant(self, ttl):
        """A new lease of ``ttl`` seconds; returns its id (int)."""
        return int(self._call("/v3/lease/grant", {"TTL": str(int(ttl))})["ID"])

    def lease_keepalive(self, lease_id):
        """Refresh a lease once; returns the TTL it now has (0 or less: the lease is gone)."""
        out = self._call("/v3/lease/keepalive", {"ID": str(lease_id)})
        return int(out.get("TTL", 0))

    def lease_time_to_live(self, lease_id):
        """Seconds left on a lease (-1 when it does not exist)."""
        return int(self._call("/v3/lease/timetolive", {"ID": str(lease_id)}).get("TTL", -1))

    def lease_revoke(self, lease_id):
        """Revoke a lease, deleting every key attached to it. A lease already gone is not an error."""
        try:
            self._call("/v3/lease/revoke", {"ID": str(lease_id)})
        except EtcdError as e:
            if "not found" not in str(e):
                raise

    # -- watching -------------------------------------------------------------------------------
    def watch(self, key, prefix=False, start_revision=None, timeout=10.0):
        """Yield events on ``key`` (or under it) from the watch stream for at most ``timeout`` seconds.

        Each event is ``(kind, KeyValue)`` with kind ``"PUT"`` or ``"DELETE"``. The generator ends when
        the deadline passes (or the stream closes); closing it early closes the connection."""
        body = {"create_request": {"key": _b64(key)}}
        if prefix:
            body["create_request"]["range_end"] = _b64(prefix_range_end(key))
        if start_revision is not None:
            body["create_request"]["start_revision"] = str(int(start_revision))
        parsed = urllib.parse.urlsplit(self.endpoint)
        deadline = time.monotonic() + timeout
        if self._user and self._token is None:
            self._login()
        conn_timeout = max(0.1, min(timeout, self.timeout))
        if parsed.scheme == "https":
            conn = http.client.HTTPSConnection(parsed.hostname, parsed.port, timeout=conn_timeout, context=self._ssl)
        else:
            conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=conn_timeout)
        try:
            try:
                conn.request("POST", "/v3/watch", json.dumps(body).encode("utf-8"), self._headers())
                sock = conn.sock  # kept: the response reads from it even if the connection lets go
                resp = conn.getresponse()
            except (OSError, http.client.HTTPException) as e:
                raise EtcdError("etcd at %s: /v3/watch failed: %s" % (self.endpoint, e)) from None
            if resp.status != 200:
                raise EtcdError("etcd at %s: /v3/watch answered HTTP %d" % (self.endpoint, resp.status))
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                sock.settimeout(left)  # bounds each read: a quiet stream ends at the deadline
                try:
                    line = resp.readline(MAX_ANSWER_BYTES + 1)
                except (socket.timeout, TimeoutError):
                    return
                except (OSError, http.client.HTTPException) as e:
                    raise EtcdError("etcd at %s: /v3/watch stream broke: %s" % (self.endpoint, e)) from None
                if not line:
                    return
                try:
                    msg = bounded_json.loads(line, "a /v3/watch event", MAX_ANSWER_BYTES, MAX_ANSWER_DEPTH)
                except bounded_json.JSONBoundsError as e:
                    raise EtcdError("etcd at %s: %s" % (self.endpoint, e)) from None
                if not isinstance(msg, dict):
                    raise EtcdError("etcd at %s: a /v3/watch event is not a JSON object" % self.endpoint)
                if "error" in msg:
                    raise EtcdError("etcd at %s: /v3/watch error: %s" % (self.endpoint, msg["error"]))
                for ev in msg.get("result", {}).get("events", []):
                    yield ev.get("type", "PUT"), KeyValue(ev.get("kv", {}))
        finally:
            conn.close()

    def wait_for(self, key, predicate, prefix=False, timeout=30.0, poll=0.2):
        """Poll ``key`` (or the prefix) until ``predicate(list of KeyValue)`` is true; return that list.
        Raises EtcdError naming the key after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            kvs = self.range(key, prefix=prefix)
            if predicate(kvs):
                return kvs
            if time.monotonic() > deadline:
                raise EtcdError("etcd at %s: waited %.0f s on %r%s without the expected state"
                                % (self.endpoint, timeout, key, " (prefix)" if prefix else ""))
            time.sleep(poll)


class Lease:
    """A lease kept alive by a daemon thread (refreshed every ``ttl/3`` seconds).

    ``lost`` is set when a refresh finds the lease gone (expired while etcd was unreachable, or
    revoked); ``on_lost`` (if given) is then called once from the thread."""

    def __init__(self, client, ttl, on_lost=None):
        self.client = client
        self.ttl = max(1, int(ttl))
        self.id = client.lease_grant(self.ttl)
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._on_lost = on_lost
        self._thread = threading.Thread(target=self._run, name="etcd-lease-%d" % self.id, daemon=True)
        self._thread.start()

    def _run(self):
        interval = max(0.2, self.ttl / 3.0)
        while not self._stop.wait(interval):
            try:
                ttl = self.client.lease_keepalive(self.id)
            except EtcdError:
                continue  # etcd unreachable for now; try again next round while the TTL lasts
            if ttl <= 0:
                self.lost.set()
                if self._on_lost is not None:
                    self._on_lost()
                return

    def stop(self):
        """Stop refreshing (the lease then expires after its TTL)."""
        self._stop.set()
        self._thread.join(timeout=5)

    def revoke(self):
        """Stop refreshing and revoke now, deleting the keys attached to the lease."""
        self.stop()
        self.client.lease_revoke(self.id)
