"""DistributeTranspiler: Paddle 1.x's face over fluidist's transpiler passes."""
import sys

from ..framework.program import Program, default_main_program, default_startup_program
from . import pserver as ps
from .config import DistributeTranspilerConfig, ServerRuntimeConfig
from .details import parse_endpoints


class DistributeTranspiler:
    """``t.transpile(trainer_id, pservers=..., trainers=...)`` then ``t.get_trainer_program()`` or
    ``t.get_pserver_program(ep)`` / ``t.get_startup_program(ep, prog)``."""

    def __init__(self, config=None):
        self.config = config if config is not None else DistributeTranspilerConfig()
        if not isinstance(self.config, DistributeTranspilerConfig):
            raise TypeError("DistributeTranspiler(config): config must be a DistributeTranspilerConfig")
        self.config.validate()
        self._server_config = ServerRuntimeConfig()
        self._plan = None
        self._collective = None
        self.origin_program = None
        self.startup_program = None

    def _set_server_config(self, server_config=None):
        if server_config is not None and not isinstance(server_config, ServerRuntimeConfig):
            raise TypeError("_set_server_config takes a ServerRuntimeConfig")
        self._server_config = server_config or ServerRuntimeConfig()

    def transpile(self, trainer_id, program=None, pservers="127.0.0.1:6174", trainers=1, sync_mode=True,
                  startup_program=None, current_endpoint="127.0.0.1:6174"):
        self.config.validate()
        if not isinstance(trainer_id, int) or trainer_id < 0:
            raise ValueError("transpile: trainer_id must be an int >= 0, got %r" % (trainer_id,))
        program = program if program is not None else default_main_program()
        startup_program = startup_program if startup_program is not None else default_startup_program()
        if not isinstance(program, Program) or not isinstance(startup_program, Program):
            raise TypeError("transpile: program and startup_program must be Programs")
        self.origin_program = program
        self.startup_program = startup_program
        self.origin_startup_program = startup_program.clone()
        mode = self.config.mode
        if mode == "nccl2":
            from .collective import transpile_nccl2
            self._collective = transpile_nccl2(self.config, trainer_id, trainers, current_endpoint,
                                               program, startup_program)
            return
        if mode == "collective":
            from .collective import transpile_collective
            self._collective = transpile_collective(self.config, trainer_id, trainers, current_endpoint,
                                                    program, startup_program)
            return
        eps = parse_endpoints(pservers, "pservers")
        if not isinstance(trainers, int) or trainers < 1:
            raise ValueError("transpile: trainers must be an int >= 1 in pserver mode, got %r" % (trainers,))
        if trainer_id >= trainers:
            raise ValueError("transpile: trainer_id %d is out of range for %d trainers" % (trainer_id, trainers))
        self.trainer_num = trainers
        self.trainer_id = trainer_id
        self.sync_mode = bool(sync_mode)
        self.pserver_endpoints = eps
        self.current_endpoint = current_endpoint
        plan = ps.plan_pserver(program, startup_program, trainer_id, eps, trainers, self.sync_mode, self.config)
        ps.rewrite_trainer(plan, program, startup_program)
        self._plan = plan
        if self.config.print_log:
            sys.stderr.write("transpiled trainer %d for pservers %s\n" % (trainer_id, eps))

    def _require_pserver_plan(self, what):
        if self._plan is None:
            raise RuntimeError("%s: call transpile() in pserver mode first" % what)
        return self._plan

    def get_trainer_program(self, wait_port=True):
        """The trainer's program (the origin program, rewritten in place). ``wait_port`` is accepted as
        in Paddle; the wait itself is the runtime's: a trainer's first request to a pserver that is not
        listening yet waits for it within ``FLAGS_rpc_deadline``."""
        plan = self._require_pserver_plan("get_trainer_program")
        ps.finish_trainer(plan, self.origin_program)
        return self.origin_program

    def get_pserver_program(self, endpoint):
        plan = self._require_pserver_plan("get_pserver_program")
        return ps.build_pserver_program(plan, endpoint, self.config)

    def get_pserver_programs(self, endpoint):
        prog = self.get_pserver_program(endpoint)
        return prog, self.get_startup_program(endpoint, prog)

    def get_startup_program(self, endpoint, pserver_program=None, startup_program=None):
        plan = self._require_pserver_plan("get_startup_program")
        if pserver_program is None:
            pserver_program = self.get_pserver_program(endpoint)
        return ps.build_pserver_startup(plan, endpoint, pserver_program, startup_program)
