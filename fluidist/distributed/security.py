"""Who may talk to this job: ZeroMQ CURVE keys derived from a job secret, and HMAC proofs for the
launcher's plain TCP rendezvous.

Every socket of the runtime (parameter servers and their trainers, the collective rendezvous and the
ZeroMQ ring) is a CURVE socket by default: traffic is encrypted, and a peer that does not hold the job
secret never completes the handshake, so none of its messages reaches a handler. The keys come from
the secret alone (HMAC-SHA256 of the secret for each role, as Curve25519 secret keys), so processes of
one job agree on them without exchanging anything; servers also check, through a ZAP handler, that a
client presents the job's client key.

The secret, in order:

1. ``FLUIDIST_INSECURE=1``: no secret, plain sockets (a warning says so once per process);
2. ``FLUIDIST_JOB_SECRET``: the secret itself (the launcher hands a local job's fresh secret to its
   children this way);
3. ``FLUIDIST_SECRET_FILE``: a file holding it (readable by its owner only), the way for jobs on several
   hosts, and for role makers' processes started by hand (``fluidist-launch --secret_file`` reads it too);
4. otherwise ``~/.fluidist/job_secret``, made on first use (mode 0600): processes one user starts by
   hand on one host (or on hosts sharing the home directory) agree without any set-up.

``python -m fluidist.distributed.security new FILE`` writes a fresh secret file.
"""
import hashlib
import hmac
import logging
import os
import secrets
import stat
import sys
import threading

import zmq
from zmq.utils import z85

from ..log_helper import LineBudget

logger = logging.getLogger("fluidist.distributed.security")

SECRET_ENV = "FLUIDIST_JOB_SECRET"
SECRET_FILE_ENV = "FLUIDIST_SECRET_FILE"
INSECURE_ENV = "FLUIDIST_INSECURE"
DEFAULT_SECRET_FILE = os.path.join("~", ".fluidist", "job_secret")
MIN_SECRET_CHARS = 16
ZAP_DOMAIN = "fluidist"

_TRUE = ("1", "true", "yes", "on")


class SecurityError(RuntimeError):
    """The job secret is missing, unreadable or unsafe, or a peer failed to prove it holds it."""


# ------------------------------------------------------------------------------------ the secret
def new_secret():
    """A fresh job secret (256 random bits, URL-safe text)."""
    return secrets.token_urlsafe(32)


def insecure_requested(env=None):
    env = os.environ if env is None else env
    return env.get(INSECURE_ENV, "").strip().lower() in _TRUE


def read_secret_file(path):
    """The secret in ``path``: a regular file of this user, not readable by group or others."""
    path = os.path.expanduser(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as e:
        raise SecurityError("cannot read the job secret file %s: %s" % (path, e.strerror or e)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise SecurityError("the job secret file %s is not a regular file" % path)
        if st.st_uid != os.getuid():
            raise SecurityError("the job secret file %s belongs to uid %d, not to this user (uid %d)"
                                % (path, st.st_uid, os.getuid()))
        if st.st_mode & 0o077:
            raise SecurityError("the job secret file %s can be read by others (mode %04o): chmod 600 %s"
                                % (path, stat.S_IMODE(st.st_mode), path))
        data = os.read(fd, 1 << 16)
    finally:
        os.close(fd)
    text = data.decode("utf-8", "replace").strip()
    _check_strength(text, "the job secret file %s" % path)
    return text


def write_secret_file(path, secret=None):
    """Write ``secret`` (default: a fresh one) to a new file ``path``, mode 0600; returns the secret.
    An existing file is never overwritten: the file that is there (a concurrent writer's) wins."""
    path = os.path.expanduser(path)
    secret = secret or new_secret()
    d = os.path.dirname(path) or "."
    os.makedirs(d, mode=0o700, exist_ok=True)
    tmp = "%s.tmp.%d.%s" % (path, os.getpid(), secrets.token_hex(4))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, (secret + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass
    finally:
        os.unlink(tmp)
    return read_secret_file(path)


def _check_strength(secret, where):
    if len(secret) < MIN_SECRET_CHARS:
        raise SecurityError("%s holds a job secret of %d characters; use at least %d (e.g. `python -m "
                            "fluidist.distributed.security new FILE`)" % (where, len(secret), MIN_SECRET_CHARS))


_cache_lock = threading.Lock()
_cache: dict = {}
_warned: set = set()


def job_secret(env=None):
    """The job secret (str), or None when plain sockets were asked for (see the module doc)."""
    env = os.environ if env is None else env
    key = (env.get(INSECURE_ENV, ""), env.get(SECRET_ENV, ""), env.get(SECRET_FILE_ENV, ""), os.getpid())
    with _cache_lock:
        if key in _cache:
            return _cache[key]
        secret = _resolve(env)
        _cache.clear()
        _cache[key] = secret
        return secret


def _resolve(env):
    if insecure_requested(env):
        if "insecure" not in _warned:
            _warned.add("insecure")
            logger.warning("%s is set: this process's sockets are neither authenticated nor encrypted; any peer "
                           "that reaches its ports can read and change the job's parameters", INSECURE_ENV)
        return None
    value = env.get(SECRET_ENV, "").strip()
    if value:
        _check_strength(value, SECRET_ENV)
        return value
    path = env.get(SECRET_FILE_ENV, "").strip()
    if path:
        return read_secret_file(path)
    path = os.path.expanduser(DEFAULT_SECRET_FILE)
    if os.path.exists(path):
        return read_secret_file(path)
    try:
        secret = write_secret_file(path)
    except OSError as e:
        raise SecurityError("no job secret: set %s or %s on every process of the job (or %s=1 for plain sockets); "
                            "the per-user default %s could not be made: %s"
                            % (SECRET_FILE_ENV, SECRET_ENV, INSECURE_ENV, path, e)) from None
    logger.info("made the per-user job secret %s (processes of this user share it; set %s for a job of its own)",
                path, SECRET_FILE_ENV)
    return secret


def is_secure():
    """True when this process's sockets use CURVE (a job secret is set)."""
    return job_secret() is not None


def secret_tag(secret=None, n=12):
    """A short public name of the secret (a hash): shared-memory names of one job carry it."""
    secret = job_secret() if secret is None else secret
    if secret is None:
        return "plain"
    return hashlib.sha256(b"fluidist-tag\0" + secret.encode()).hexdigest()[:n]


# ------------------------------------------------------------------------------------ CURVE keys
def _keypair(secret, role):
    seed = hmac.new(secret.encode(), b"fluidist curve v1 " + role.encode(), hashlib.sha256).digest()
    secret_key = z85.encode(seed)
    return zmq.curve_public(secret_key), secret_key


_key_cache: dict = {}


def keys(role, secret=None):
    """``(public, secret)`` Z85 keys of ``role`` ("server" or "client") for the job secret."""
    secret = job_secret() if secret is None else secret
    if secret is None:
        raise SecurityError("no CURVE keys without a job secret (%s is set)" % INSECURE_ENV)
    k = (secret, role)
    if k not in _key_cache:
        _key_cache[k] = _keypair(secret, role)
    return _key_cache[k]


def secure_server(sock, secret=None):
    """Make ``sock`` (before it binds) a CURVE server of this job; a ZAP handler in its context admits
    only the job's client key. Returns True when secured, False in plain mode."""
    secret = job_secret() if secret is None else secret
    if secret is None:
        return False
    public, private = keys("server", secret)
    _zap_handler(sock.context).allow(keys("client", secret)[0])
    sock.setsockopt(zmq.ZAP_DOMAIN, ZAP_DOMAIN.encode())
    sock.curve_secretkey = private
    sock.curve_publickey = public
    sock.curve_server = True
    return True


def secure_client(sock, secret=None):
    """Make ``sock`` (before it connects) a CURVE client of this job's servers. Returns True when
    secured, False in plain mode."""
    secret = job_secret() if secret is None else secret
    if secret is None:
        return False
    public, private = keys("client", secret)
    sock.curve_serverkey = keys("server", secret)[0]
    sock.curve_publickey = public
    sock.curve_secretkey = private
    return True


# ------------------------------------------------------------------------------------ ZAP
class _JobClientKeys:
    """The credentials provider of a context's ZAP handler: admits CURVE clients whose public key is one of
    ``allowed`` (the job's client key), refuses and counts the others, with a WARNING."""

    def __init__(self):
        self.allowed = set()   # Z85 public keys
        self.refused = 0
        self._log_budget = LineBudget(5, 60.0)     # a peer retrying without the secret cannot flood the log

    def callback(self, domain, key):
        if key in self.allowed:
            return True
        self.refused += 1
        log, unlogged = self._log_budget.take()
        if log:
            logger.warning("refused a CURVE connection: its client key is not this job's, it does not hold this "
                           "job's secret (FLUIDIST_LOG_LEVEL=DEBUG logs its address)%s",
                           " (and %d more refused since the last such line)" % unlogged if unlogged else "")
        return False


class _ZapHandler:
    """ZeroMQ's authentication hook for one context: pyzmq's ``ThreadAuthenticator`` (a thread answering
    ZAP requests) with :class:`_JobClientKeys` for the ``fluidist`` domain, so only the job's client key
    gets in."""

    def __init__(self, ctx):
        from zmq.auth.thread import ThreadAuthenticator
        self.ctx = ctx
        self.keys = _JobClientKeys()
        self._auth = ThreadAuthenticator(ctx, log=logging.getLogger("fluidist.distributed.security.zap"))
        try:
            self._auth.start()
        except (zmq.ZMQError, RuntimeError) as e:
            raise SecurityError("cannot start the ZAP handler: %s" % e) from None
        self._auth.configure_curve_callback(ZAP_DOMAIN, credentials_provider=self.keys)

    @property
    def refused(self):
        return self.keys.refused

    def allow(self, public_z85):
        self.keys.allowed.add(public_z85 if isinstance(public_z85, bytes) else public_z85.encode("ascii"))

    def stop(self):
        self._auth.stop()


_zap_lock = threading.Lock()
_zap: dict = {}    # id(context) -> (context, handler), per process


def _zap_handler(ctx):
    with _zap_lock:
        key = (id(ctx), os.getpid())
        got = _zap.get(key)
        if got is None or got[0] is not ctx:
            got = _zap[key] = (ctx, _ZapHandler(ctx))
        return got[1]


def release_context(ctx):
    """Stop the ZAP handler of ``ctx`` (before terminating it: the handler's socket would hold it)."""
    with _zap_lock:
        got = _zap.pop((id(ctx), os.getpid()), None)
    if got is not None:
        got[1].stop()


# ------------------------------------------------------------------------------------ HMAC proofs
def _canonical(obj):
    import json
    return json.dumps({k: v for k, v in obj.items() if k != "mac"}, sort_keys=True, separators=(",", ":")).encode()


FROM_ENV = object()   # ``secret`` default of sign/verify: this process's job secret (None: plain mode)


def sign(obj, purpose, nonce, secret=FROM_ENV):
    """``obj`` with a ``mac`` proving (for ``purpose`` and the peer's ``nonce``) that its sender holds the
    job secret; unchanged in plain mode (``secret`` None)."""
    secret = job_secret() if secret is FROM_ENV else secret
    if secret is None:
        return dict(obj)
    mac = hmac.new(secret.encode(), purpose.encode() + b"\0" + str(nonce).encode() + b"\0" + _canonical(obj),
                   hashlib.sha256).hexdigest()
    return dict(obj, mac=mac)


def verify(obj, purpose, nonce, who, secret=FROM_ENV):
    """Raise SecurityError naming ``who`` unless ``obj`` carries a valid ``mac`` (plain mode: none)."""
    secret = job_secret() if secret is FROM_ENV else secret
    got = obj.get("mac") if isinstance(obj, dict) else None
    if secret is None:
        if got is not None:
            raise SecurityError("%s holds a job secret but this process runs with %s=1; use the same on every node"
                                % (who, INSECURE_ENV))
        return
    if not isinstance(got, str):
        raise SecurityError("%s sent no proof of the job secret (it runs without one, or with %s=1)"
                            % (who, INSECURE_ENV))
    want = sign(obj, purpose, nonce, secret)["mac"]
    if not hmac.compare_digest(got, want):
        raise SecurityError("%s does not hold this job's secret (give every node the same --secret_file)" % who)


def new_nonce():
    return secrets.token_hex(16)


def main(argv=None):
    """``python -m fluidist.distributed.security new FILE``: write a fresh job secret file (mode 0600)."""
    import argparse
    ap = argparse.ArgumentParser(prog="python -m fluidist.distributed.security",
                                 description="Make the secret file a job on several hosts shares (--secret_file).")
    ap.add_argument("command", choices=["new"], help="new: write a fresh secret to FILE")
    ap.add_argument("file", help="the file to write (mode 0600); an existing file is never overwritten")
    args = ap.parse_args(argv)
    if os.path.exists(os.path.expanduser(args.file)):
        ap.error("%s exists; not overwritten" % args.file)
    write_secret_file(args.file)
    print("wrote a job secret to %s (mode 0600); copy it to every node and pass --secret_file %s"
          % (args.file, args.file))
    return 0


if __name__ == "__main__":
    sys.exit(main())
