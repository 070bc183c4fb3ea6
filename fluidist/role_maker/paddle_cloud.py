"""PaddleCloudRoleMaker: the role of this process, read from the variables the launchers set.

Parameter-server jobs (``is_collective=False``) read

=============================  ==========================================================
``PADDLE_PSERVERS_IP_PORT_LIST``  every process: the servers' ``ip:port`` list
``PADDLE_TRAINERS_NUM``           every process: the number of trainers (> 0)
``TRAINING_ROLE``                 every process: ``TRAINER`` or ``PSERVER``
``PADDLE_TRAINER_ID``             trainers: this trainer's index in [0, PADDLE_TRAINERS_NUM)
``PADDLE_PSERVER_ID``             servers (optional): this server's index in the list
``POD_IP``, ``PADDLE_PORT``       servers without PADDLE_PSERVER_ID: ``POD_IP:PADDLE_PORT`` is
                                  looked up in the list
``PADDLE_TRAINER_ENDPOINTS``      optional: the trainers' endpoints (then ``worker_endpoints()``
                                  lists them; Paddle 1.8 left it empty in this mode)
=============================  ==========================================================

Collective jobs (``is_collective=True``) read ``PADDLE_TRAINER_ENDPOINTS`` (required),
``PADDLE_TRAINER_ID`` (required when there is more than one endpoint, else 0),
``PADDLE_CURRENT_ENDPOINT`` (optional; when set it must be this trainer's endpoint),
``PADDLE_TRAINERS_NUM`` (optional; when set it must equal the number of endpoints) and
``TRAINING_ROLE`` / ``PADDLE_TRAINING_ROLE`` (optional; when set, ``TRAINER``).

fluidist differences from Paddle 1.8, all fixes: every process of a collective job is a WORKER
(1.8 left the role unset, so ``is_worker()`` and ``is_first_worker()`` were False); a missing or
malformed variable raises :class:`~fluidist.role_maker.env.EnvVarError` naming it.
"""
from __future__ import annotations

from typing import Any, Mapping, Optional

from .base import Role, LazyRoleGetters, RoleMakerBase
from .env import EnvReader, env_error


class PaddleCloudRoleMaker(LazyRoleGetters, RoleMakerBase):
    def __init__(self, is_collective: bool = False, **kwargs: Any) -> None:
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
        workers = []
        if env.has("PADDLE_TRAINER_ENDPOINTS"):
            workers = env.endpoints("PADDLE_TRAINER_ENDPOINTS")
            if len(workers) != trainers:
                raise env.error("PADDLE_TRAINER_ENDPOINTS", "%d endpoints, one per trainer "
                                "(PADDLE_TRAINERS_NUM=%d)" % (trainers, trainers))
        if role == "TRAINER":
            current = env.integer("PADDLE_TRAINER_ID", low=0, high=trainers - 1,
                                  expected="an integer in [0, PADDLE_TRAINERS_NUM - 1] = [0, %d]" % (trainers - 1))
            self._role = Role.WORKER
            self._current_endpoint = workers[current] if workers else None
        else:
            current = self._server_id(env, servers)
            self._role = Role.SERVER
            self._current_endpoint = servers[current]
        self._server_endpoints = servers
        self._worker_endpoints = workers
        self._trainers_num = trainers
        self._current_id = current

    @staticmethod
    def _server_id(env, servers):
        n = len(servers)
        by_id = None
        if env.has("PADDLE_PSERVER_ID"):
            by_id = env.integer("PADDLE_PSERVER_ID", low=0, high=n - 1,
                                expected="an integer in [0, %d] (an index into PADDLE_PSERVERS_IP_PORT_LIST)"
                                % (n - 1))
            if not (env.has("POD_IP") or env.has("PADDLE_PORT")):
                return by_id
        ip = env.string("POD_IP", "this server's IP address, so that POD_IP:PADDLE_PORT is one of "
                                  "PADDLE_PSERVERS_IP_PORT_LIST")
        port = env.integer("PADDLE_PORT", low=1, high=65535, expected="this server's port (1-65535)")
        ep = "%s:%d" % (ip, port)
        if ep not in servers:
            raise env_error(env.owner, "POD_IP:PADDLE_PORT", ep, "one of PADDLE_PSERVERS_IP_PORT_LIST %s "
                            "(POD_IP=%r, PADDLE_PORT=%r)" % (servers, env.raw("POD_IP"), env.raw("PADDLE_PORT")))
        if by_id is not None and servers[by_id] != ep:
            raise env.error("PADDLE_PSERVER_ID", "the index of POD_IP:PADDLE_PORT (%s) in "
                            "PADDLE_PSERVERS_IP_PORT_LIST, %d" % (ep, servers.index(ep)))
        return servers.index(ep)

    def _read_collective(self, env):
        eps = env.endpoints("PADDLE_TRAINER_ENDPOINTS")
        for name in ("TRAINING_ROLE", "PADDLE_TRAINING_ROLE"):
            if env.has(name):
                env.choice(name, ("TRAINER",))
        n = len(eps)
        if env.has("PADDLE_TRAINERS_NUM"):
            env.integer("PADDLE_TRAINERS_NUM", low=n, high=n,
                        expected="%d, the number of PADDLE_TRAINER_ENDPOINTS" % n)
        current = env.integer("PADDLE_TRAINER_ID", low=0, high=n - 1, default=0 if n == 1 else None,
                              expected="an integer in [0, %d] (an index into PADDLE_TRAINER_ENDPOINTS)" % (n - 1))
        if env.has("PADDLE_CURRENT_ENDPOINT"):
            cur = env.string("PADDLE_CURRENT_ENDPOINT")
            if cur != eps[current]:
                raise env.error("PADDLE_CURRENT_ENDPOINT", "this trainer's endpoint %s (entry PADDLE_TRAINER_ID=%d "
                                "of PADDLE_TRAINER_ENDPOINTS)" % (eps[current], current))
        self._worker_endpoints = eps
        self._server_endpoints = []
        self._trainers_num = n
        self._current_id = current
        self._current_endpoint = eps[current]
        self._role = Role.WORKER


    def _is_collective_mode(self):
        return self._is_collective
