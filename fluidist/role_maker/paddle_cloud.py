"""PaddleCloudRoleMaker: the role of this process, read from the variables the launchers set.

Parameter-server jobs (``is_collective=False``) read

=============================  ==========================================================
``PADDLE_PSERVERS_IP_PORT_LIST``  every process: the servers' ``ip:port`` list
``PADDLE_TRAINERS_NUM``           every process: the number of trainers (> 0)
``TRAINING_ROLE``                 every process: ``TRAINER`` or ``PSERVER``
``PADDLE_TRAINER_ID``             trainers: this trainer's index (>= 0; a sync trainer's must be
                                  below PADDLE_TRAINERS_NUM, which the transpiler checks)
``PADDLE_PSERVER_ID``             servers (optional): this server's index in the list
``POD_IP``, ``PADDLE_PORT``       servers: ``POD_IP:PADDLE_PORT`` is looked up in the list (it wins
                                  over PADDLE_PSERVER_ID, as in Paddle, which reads only these)
``PADDLE_TRAINER_ENDPOINTS``      optional: the trainers' endpoints (then ``worker_endpoints()``
                                  lists them; Paddle 1.8 does not read it in this mode, so a
                                  malformed value is passed over with a warning)
=============================  ==========================================================

Collective jobs (``is_collective=True``) read ``PADDLE_TRAINER_ENDPOINTS`` (required),
``PADDLE_TRAINER_ID`` (0 when unset, as in Paddle), ``PADDLE_CURRENT_ENDPOINT`` (optional: what
``get_local_endpoint()`` gives; a warning when it is not this trainer's entry) and
``PADDLE_TRAINING_ROLE`` (optional; when set, ``TRAINER``). ``PADDLE_TRAINERS_NUM`` and
``TRAINING_ROLE`` are not read there, as in Paddle (a warning when the first disagrees).

fluidist differences from Paddle 1.8, all fixes: every process of a collective job is a WORKER
(1.8 left the role unset, so ``is_worker()`` and ``is_first_worker()`` were False); a missing or
malformed variable raises :class:`~fluidist.role_maker.env.EnvVarError` naming it.
"""
from __future__ import annotations

import warnings
from typing import Any, Mapping, Optional

from .base import Role, LazyRoleGetters, RoleMakerBase
from .env import EnvReader, EnvVarError, env_error


class PaddleCloudRoleMaker(LazyRoleGetters, RoleMakerBase):
    """The role of this process read from the environment that ``fluidist-launch`` (or a Paddle
    cluster) sets: ``TRAINING_ROLE``, ``PADDLE_TRAINER_ID``, ``PADDLE_TRAINER_ENDPOINTS``,
    ``PADDLE_PSERVERS_IP_PORT_LIST``, ``PADDLE_PORT``, ``POD_IP``, ``PADDLE_TRAINERS_NUM``. A missing or
    malformed variable is an error naming it.

    Args:
        is_collective: a collective job (every process a worker) rather than a parameter-server one.
        **kwargs: accepted for Paddle's signature.

    Examples:
        >>> from fluidist.incubate.fleet.base import role_maker
        >>> rm = role_maker.PaddleCloudRoleMaker(is_collective=True)
        >>> rm.generate_role({"PADDLE_TRAINER_ID": "1", "PADDLE_TRAINER_ENDPOINTS": "127.0.0.1:6170,127.0.0.1:6171",
        ...                   "PADDLE_CURRENT_ENDPOINT": "127.0.0.1:6171"})
        >>> rm.worker_index(), rm.worker_num()
        (1, 2)
    """

    def __init__(self, is_collective: bool = False, **kwargs: Any) -> None:
        super().__init__()
        self._is_collective = bool(is_collective)
        self._trainers_num = 0
        self._current_endpoint = None
        self._kwargs = kwargs

    # ---------------------------------------------------------------- reading the environment
    def generate_role(self, environ: Optional[Mapping[str, str]] = None) -> None:
        """Read the environment once (later calls do nothing); ``environ`` replaces ``os.environ``."""
        if self._role_is_generated:
            return
        env = EnvReader(type(self).__name__ + ("(is_collective=True)" if self._is_collective else ""), environ)
        if self._is_collective:
            self._read_collective(env)
        else:
            self._read_ps(env)
        self._role_is_generated = True

    def _read_ps(self, env):
        servers = env.endpoints("PADDLE_PSERVERS_IP_PORT_LIST")
        trainers = env.integer("PADDLE_TRAINERS_NUM", low=1)
        role = env.choice("TRAINING_ROLE", ("TRAINER", "PSERVER"))
        workers = self._optional_trainer_endpoints(env, trainers)
        if role == "TRAINER":
            # any index, as in Paddle: a sync trainer out of range is refused by get_trainer_program
            current = env.integer("PADDLE_TRAINER_ID", low=0, expected="an integer >= 0 (this trainer's index)")
            self._role = Role.WORKER
            self._current_endpoint = workers[current] if current < len(workers) else None
        else:
            current = self._server_id(env, servers)
            self._role = Role.SERVER
            self._current_endpoint = servers[current]
        self._server_endpoints = servers
        self._worker_endpoints = workers
        self._trainers_num = trainers
        self._current_id = current

    @staticmethod
    def _optional_trainer_endpoints(env, trainers):
        """``PADDLE_TRAINER_ENDPOINTS`` in a parameter-server job: Paddle 1.8 does not read it there,
        so a value that is malformed or lists another number of trainers is passed over, with a warning."""
        if not env.has("PADDLE_TRAINER_ENDPOINTS"):
            return []
        try:
            workers = env.endpoints("PADDLE_TRAINER_ENDPOINTS")
        except EnvVarError as e:
            warnings.warn("%s; it is not read (a parameter-server job does not need it)" % e, stacklevel=4)
            return []
        if len(workers) != trainers:
            warnings.warn("%s: PADDLE_TRAINER_ENDPOINTS lists %d endpoints for PADDLE_TRAINERS_NUM=%d; it is not "
                          "read" % (env.owner, len(workers), trainers), stacklevel=4)
            return []
        return workers

    @staticmethod
    def _server_id(env, servers, prefer_id=False):
        """This server's index, read as Paddle 1.8 reads it: ``POD_IP:PADDLE_PORT`` looked up in the list
        (PaddleCloudRoleMaker, which does not read PADDLE_PSERVER_ID: then a warning when it is malformed or
        disagrees), or, with ``prefer_id``, ``PADDLE_PSERVER_ID`` when it is set (GeneralRoleMaker).
        ``PADDLE_PSERVER_ID`` alone is taken too."""
        n = len(servers)
        id_expected = "an integer in [0, %d] (an index into PADDLE_PSERVERS_IP_PORT_LIST)" % (n - 1)
        has_ep = env.has("POD_IP") or env.has("PADDLE_PORT")
        if env.has("PADDLE_PSERVER_ID") and (prefer_id or not has_ep):
            return env.integer("PADDLE_PSERVER_ID", low=0, high=n - 1, expected=id_expected)
        ip = env.string("POD_IP", "this server's IP address, so that POD_IP:PADDLE_PORT is one of "
                                  "PADDLE_PSERVERS_IP_PORT_LIST")
        port = env.integer("PADDLE_PORT", low=1, high=65535, expected="this server's port (1-65535)")
        ep = "%s:%d" % (ip, port)
        if ep not in servers:
            raise env_error(env.owner, "POD_IP:PADDLE_PORT", ep, "one of PADDLE_PSERVERS_IP_PORT_LIST %s "
                            "(POD_IP=%r, PADDLE_PORT=%r)" % (servers, env.raw("POD_IP"), env.raw("PADDLE_PORT")))
        if env.has("PADDLE_PSERVER_ID"):
            try:
                by_id = env.integer("PADDLE_PSERVER_ID", low=0, high=n - 1, expected=id_expected)
                differs = servers[by_id] != ep and "names %s" % servers[by_id]
            except EnvVarError:
                differs = "is not %s" % id_expected
            if differs:
                warnings.warn("%s: PADDLE_PSERVER_ID=%s %s, but POD_IP:PADDLE_PORT is %s (entry %d of "
                              "PADDLE_PSERVERS_IP_PORT_LIST), which is used, as in Paddle"
                              % (env.owner, env.raw("PADDLE_PSERVER_ID"), differs, ep, servers.index(ep)),
                              stacklevel=4)
        return servers.index(ep)

    def _read_collective(self, env):
        eps = env.endpoints("PADDLE_TRAINER_ENDPOINTS")
        if env.has("PADDLE_TRAINING_ROLE"):        # Paddle reads this one (not TRAINING_ROLE) in a collective job
            env.choice("PADDLE_TRAINING_ROLE", ("TRAINER",))
        n = len(eps)
        if env.has("PADDLE_TRAINERS_NUM") and env.raw("PADDLE_TRAINERS_NUM").strip() != str(n):
            warnings.warn("%s: PADDLE_TRAINERS_NUM=%r, but PADDLE_TRAINER_ENDPOINTS lists %d trainers: the job has "
                          "%d, as in Paddle" % (env.owner, env.raw("PADDLE_TRAINERS_NUM"), n, n), stacklevel=4)
        if n > 1 and not env.has("PADDLE_TRAINER_ID"):
            warnings.warn("%s: PADDLE_TRAINER_ID is unset: this process is trainer 0 of %d, as in Paddle (every "
                          "trainer of a job needs its own id)" % (env.owner, n), stacklevel=4)
        current = env.integer("PADDLE_TRAINER_ID", low=0, high=n - 1, default=0,
                              expected="an integer in [0, %d] (an index into PADDLE_TRAINER_ENDPOINTS)" % (n - 1))
        self._current_endpoint = eps[current]
        if env.has("PADDLE_CURRENT_ENDPOINT"):
            cur = env.string("PADDLE_CURRENT_ENDPOINT")
            if cur != eps[current]:
                warnings.warn("%s: PADDLE_CURRENT_ENDPOINT=%s is not entry PADDLE_TRAINER_ID=%d of "
                              "PADDLE_TRAINER_ENDPOINTS (%s); get_local_endpoint() gives it, as in Paddle, and the "
                              "job uses the entry" % (env.owner, cur, current, eps[current]), stacklevel=4)
            self._current_endpoint = cur
        self._worker_endpoints = eps
        self._server_endpoints = []
        self._trainers_num = n
        self._current_id = current
        self._role = Role.WORKER


    def _is_collective_mode(self):
        return self._is_collective
