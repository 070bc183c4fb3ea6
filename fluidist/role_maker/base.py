"""Role, RoleMakerBase and MockBarrier: what every role maker shares (Paddle 1.x names)."""
from __future__ import annotations

import warnings
from typing import Any, List


class Role:
    """The role of a process: plain class attributes, as in Paddle 1.x (not an ``enum.Enum``)."""
    WORKER = 1
    SERVER = 2


class MockBarrier:
    """Stands in for a communicator when none is wanted: barriers return at once, reductions and
    gathers see only this process's value."""

    def barrier(self) -> None:
        """Returns at once."""

    def barrier_all(self) -> None:
        """Returns at once."""

    def all_reduce(self, obj: Any) -> Any:
        """``obj`` itself."""
        return obj

    def all_gather(self, obj: Any) -> List[Any]:
        """``[obj]``."""
        return [obj]


class RoleMakerBase:
    """What a role maker answers: who this process is (worker or server, which index) and where
    everyone is (``ip:port`` endpoints). Subclasses implement ``generate_role`` and the getters.

    The communication methods (``all_gather``, ``all_reduce_worker``, ``barrier_worker``,
    ``barrier_all``) only warn here; the MPI and General role makers implement them.

    Examples:
        >>> from fluidist.incubate.fleet.base import role_maker
        >>> rm = role_maker.UserDefinedRoleMaker(current_id=0, role=role_maker.Role.WORKER, worker_num=2,
        ...                                      server_endpoints=["127.0.0.1:6170"])
        >>> rm.generate_role()
        >>> rm.is_worker(), rm.worker_index(), rm.role_id(), rm.get_pserver_endpoints()
        (True, 0, 0, ['127.0.0.1:6170'])
    """

    def __init__(self) -> None:
        self._worker_endpoints: List[str] = []
        self._server_endpoints: List[str] = []
        self._role_is_generated = False
        self._role: Any = None
        self._current_id = -1

    def generate_role(self) -> None:
        """Work out this process's role (from the environment, MPI, or the constructor's arguments)."""
        raise NotImplementedError("Please implement this method in child class")

    def is_worker(self) -> bool:
        """Whether this process is a worker (trainer)."""
        raise NotImplementedError("Please implement this method in child class")

    def is_server(self) -> bool:
        """Whether this process is a parameter server."""
        raise NotImplementedError("Please implement this method in child class")

    def is_first_worker(self) -> bool:
        """Whether this process is worker 0 (the one that saves models)."""
        raise NotImplementedError("Please implement this method in child class")

    def worker_num(self) -> int:
        """The number of workers."""
        raise NotImplementedError("Please implement this method in child class")

    def worker_index(self) -> int:
        """This worker's index."""
        raise NotImplementedError("Please implement this method in child class")

    def server_index(self) -> int:
        """This server's index."""
        raise NotImplementedError("Please implement this method in child class")

    def role_id(self) -> int:
        """The worker index of a worker, the server index of a server."""
        return self.worker_index() if self.is_worker() else self.server_index()

    def get_trainer_endpoints(self) -> List[str]:
        """The workers' ``ip:port`` endpoints."""
        return self._worker_endpoints

    def get_pserver_endpoints(self) -> List[str]:
        """The servers' ``ip:port`` endpoints."""
        return self._server_endpoints

    def to_string(self) -> str:
        """The role, index and endpoints, as text."""
        return "role: {}, current_id: {}, worker_endpoints: {}, server_endpoints: {}".format(
            self._role, self._current_id, self._worker_endpoints, self._server_endpoints)

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__, self.to_string())

    def _warn(self, what):
        warnings.warn("%s: %s is not supported by this role maker; use MPISymetricRoleMaker or GeneralRoleMaker"
                      % (type(self).__name__, what), stacklevel=3)

    def all_gather(self, input: Any) -> Any:
        """Every worker's ``input`` (warns and returns None here)."""
        self._warn("all_gather")
        return None

    def all_reduce_worker(self, input: Any, output: Any, mode: str = "sum") -> None:
        """Reduce ``input`` over the workers into ``output`` (warns here)."""
        self._warn("all_reduce_worker")

    def barrier_worker(self) -> None:
        """Wait for every worker (warns here)."""
        self._warn("barrier_worker")

    def barrier_all(self) -> None:
        """Wait for every process (warns here)."""
        self._warn("barrier_all")


class LazyRoleGetters:
    """The getters of role makers that read their role on first use (``generate_role`` fills
    ``_role``, ``_current_id``, ``_trainers_num``, the endpoint lists and ``_current_endpoint``)."""

    _role_is_generated: bool
    _role: Any
    _current_id: int
    _trainers_num: int
    _worker_endpoints: List[str]
    _server_endpoints: List[str]
    _current_endpoint: Any

    generate_role: Any            # the role maker's own (declared for the checker only)

    def _generated(self):
        if not self._role_is_generated:
            self.generate_role()
        return self

    def is_worker(self) -> bool:
        """Whether this process is a worker."""
        return self._generated()._role == Role.WORKER

    def is_server(self) -> bool:
        """Whether this process is a parameter server."""
        return self._generated()._role == Role.SERVER

    def is_first_worker(self) -> bool:
        """Whether this process is worker 0."""
        return self.is_worker() and self._current_id == 0

    def worker_index(self) -> int:
        """This worker's index."""
        return self._generated()._current_id

    def server_index(self) -> int:
        """This server's index."""
        return self._generated()._current_id

    def worker_num(self) -> int:
        """The number of workers."""
        return self._generated()._trainers_num

    def server_num(self) -> int:
        """The number of servers."""
        return len(self._generated()._server_endpoints)

    def get_trainer_endpoints(self) -> List[str]:
        """The workers' endpoints."""
        return self._generated()._worker_endpoints

    def get_pserver_endpoints(self) -> List[str]:
        """The servers' endpoints."""
        return self._generated()._server_endpoints

    def get_local_endpoint(self) -> str:
        """This process's own endpoint."""
        return self._generated()._current_endpoint
