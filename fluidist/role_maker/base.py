"""Role, RoleMakerBase and MockBarrier: what every role maker shares (Paddle 1.x names)."""
import warnings


class Role:
    """The role of a process: plain class attributes, as in Paddle 1.x (not an ``enum.Enum``)."""
    WORKER = 1
    SERVER = 2


class MockBarrier:
    """Stands in for a communicator when none is wanted: barriers return at once, reductions and
    gathers see only this process's value."""

    def barrier(self):
        pass

    def barrier_all(self):
        pass

    def all_reduce(self, obj):
        return obj

    def all_gather(self, obj):
        return [obj]


class RoleMakerBase:
    """What a role maker answers: who this process is (worker or server, which index) and where
    everyone is (``ip:port`` endpoints). Subclasses implement ``generate_role`` and the getters.

    The communication methods (``all_gather``, ``all_reduce_worker``, ``barrier_worker``,
    ``barrier_all``) only warn here; the MPI and General role makers implement them.
    """

    def __init__(self):
        self._worker_endpoints = []
        self._server_endpoints = []
        self._role_is_generated = False
        self._role = None
        self._current_id = -1

    def generate_role(self):
        raise NotImplementedError("Please implement this method in child class")

    def is_worker(self):
        raise NotImplementedError("Please implement this method in child class")

    def is_server(self):
        raise NotImplementedError("Please implement this method in child class")

    def is_first_worker(self):
        raise NotImplementedError("Please implement this method in child class")

    def worker_num(self):
        raise NotImplementedError("Please implement this method in child class")

    def worker_index(self):
        raise NotImplementedError("Please implement this method in child class")

    def server_index(self):
        raise NotImplementedError("Please implement this method in child class")

    def role_id(self):
        return self.worker_index() if self.is_worker() else self.server_index()

    def get_trainer_endpoints(self):
        return self._worker_endpoints

    def get_pserver_endpoints(self):
        return self._server_endpoints

    def to_string(self):
        return "role: {}, current_id: {}, worker_endpoints: {}, server_endpoints: {}".format(
            self._role, self._current_id, self._worker_endpoints, self._server_endpoints)

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__, self.to_string())

    def _warn(self, what):
        warnings.warn("%s: %s is not supported by this role maker; use MPISymetricRoleMaker or GeneralRoleMaker"
                      % (type(self).__name__, what), stacklevel=3)

    def all_gather(self, input):
        self._warn("all_gather")
        return None

    def all_reduce_worker(self, input, output, mode="sum"):
        self._warn("all_reduce_worker")

    def barrier_worker(self):
        self._warn("barrier_worker")

    def barrier_all(self):
        self._warn("barrier_all")


class LazyRoleGetters:
    """The getters of role makers that read their role on first use (``generate_role`` fills
    ``_role``, ``_current_id``, ``_trainers_num``, the endpoint lists and ``_current_endpoint``)."""

    def _generated(self):
        if not self._role_is_generated:
            self.generate_role()
        return self

    def is_worker(self):
        return self._generated()._role == Role.WORKER

    def is_server(self):
        return self._generated()._role == Role.SERVER

    def is_first_worker(self):
        return self.is_worker() and self._current_id == 0

    def worker_index(self):
        return self._generated()._current_id

    def server_index(self):
        return self._generated()._current_id

    def worker_num(self):
        return self._generated()._trainers_num

    def server_num(self):
        return len(self._generated()._server_endpoints)

    def get_trainer_endpoints(self):
        return self._generated()._worker_endpoints

    def get_pserver_endpoints(self):
        return self._generated()._server_endpoints

    def get_local_endpoint(self):
        return self._generated()._current_endpoint
