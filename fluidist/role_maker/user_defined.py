"""Role makers whose roles the user states in code (Paddle 1.8's argument checks, in its order)."""
from __future__ import annotations

from typing import List, Optional

from .base import Role, RoleMakerBase


def _is_int(x):
    return isinstance(x, int)       # as Paddle 1.8 checks (a bool passes, a NumPy integer does not)


def _check_endpoint_list(eps: object, what: str) -> List[str]:
    if not isinstance(eps, list):
        raise TypeError("%s: expected a list of 'ip:port' strings, got %r" % (what, eps))
    if len(eps) <= 0:
        raise ValueError("%s: the list is empty; give at least one 'ip:port'" % what)
    if len(set(eps)) != len(eps):
        raise ValueError("%s: an endpoint is listed twice in %r" % (what, eps))
    for ep in eps:
        if not isinstance(ep, str):
            raise TypeError("%s: each endpoint is an 'ip:port' string, got %r" % (what, ep))
    return eps


class UserDefinedRoleMaker(RoleMakerBase):
    """A parameter-server job's role given in code: this process is worker ``current_id`` of
    ``worker_num`` or server ``current_id`` of ``server_endpoints``."""

    def __init__(self, current_id: int = 0, role: int = Role.WORKER, worker_num: int = 0,
                 server_endpoints: Optional[List[str]] = None) -> None:
        """A parameter-server job's role given in code rather than read from the environment.

        Args:
            current_id: this process's index among the workers, or among the servers.
            role: ``Role.WORKER`` or ``Role.SERVER``.
            worker_num: the number of workers.
            server_endpoints: the servers' ``ip:port`` endpoints.

        Examples:
            >>> from fluidist.incubate.fleet.base import role_maker
            >>> rm = role_maker.UserDefinedRoleMaker(current_id=0, role=role_maker.Role.SERVER, worker_num=2,
            ...                                      server_endpoints=["127.0.0.1:6174", "127.0.0.1:6175"])
            >>> rm.generate_role()
            >>> rm.is_server(), rm.server_index()
            (True, 0)
        """
        super().__init__()
        server_endpoints = _check_endpoint_list(server_endpoints, "server_endpoints")
        if role not in (Role.WORKER, Role.SERVER):
            raise TypeError("role: expected Role.WORKER or Role.SERVER, got %r" % (role,))
        if not _is_int(current_id):
            raise TypeError("current_id: expected an int, got %r" % (current_id,))
        if current_id < 0:
            raise ValueError("current_id: expected 0 or more, got %d" % current_id)
        if role == Role.SERVER and current_id >= len(server_endpoints):
            raise ValueError("current_id: server %d does not exist: server_endpoints lists %d (ids 0..%d)"
                             % (current_id, len(server_endpoints), len(server_endpoints) - 1))
        if not _is_int(worker_num):
            raise TypeError("worker_num: expected an int, got %r" % (worker_num,))
        if worker_num <= 0:
            raise ValueError("worker_num: expected at least 1 worker, got %d" % worker_num)
        self._current_id = current_id
        self._role = role
        self._worker_num = worker_num
        self._server_endpoints = list(server_endpoints)

    def generate_role(self):
        self._role_is_generated = True

    def is_worker(self):
        return self._role == Role.WORKER

    def is_server(self):
        return self._role == Role.SERVER

    def is_first_worker(self):
        return self._role == Role.WORKER and self._current_id == 0

    def worker_index(self):
        return self._current_id

    def server_index(self):
        return self._current_id

    def worker_num(self):
        return self._worker_num

    def server_num(self):
        return len(self._server_endpoints)


class UserDefinedCollectiveRoleMaker(RoleMakerBase):
    """A collective job's role given in code: this process is trainer ``current_id`` of
    ``worker_endpoints``. Every process is a worker."""

    def __init__(self, current_id: int = 0, worker_endpoints: Optional[List[str]] = None) -> None:
        """A collective job's role given in code: this process is trainer ``current_id`` of
        ``worker_endpoints``; every process is a worker.

        Args:
            current_id: this trainer's index.
            worker_endpoints: every trainer's ``ip:port`` endpoint, in rank order.
        """
        super().__init__()
        worker_endpoints = _check_endpoint_list(worker_endpoints, "worker_endpoints")
        if not _is_int(current_id):
            raise TypeError("current_id: expected an int, got %r" % (current_id,))
        if current_id < 0:
            raise ValueError("current_id: expected 0 or more, got %d" % current_id)
        if current_id >= len(worker_endpoints):
            raise ValueError("current_id: worker %d does not exist: worker_endpoints lists %d (ids 0..%d)"
                             % (current_id, len(worker_endpoints), len(worker_endpoints) - 1))
        self._current_id = current_id
        self._worker_endpoints = list(worker_endpoints)
        self._worker_num = len(worker_endpoints)
        self._role = Role.WORKER

    def generate_role(self):
        self._role_is_generated = True

    def is_worker(self):
        return True

    def is_server(self):
        # Paddle 1.8 raised NotImplementedError; in a collective job no process is a server.
        return False

    def is_first_worker(self):
        return self._current_id == 0

    def worker_index(self):
        return self._current_id

    def worker_num(self):
        return self._worker_num

    def server_num(self):
        return 0

    def get_local_endpoint(self):
        return self._worker_endpoints[self._current_id]
