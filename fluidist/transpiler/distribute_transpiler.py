"""DistributeTranspiler: Paddle 1.x's face over fluidist's transpiler passes."""
from __future__ import annotations

import logging
import weakref
from typing import Any, Optional

from ..framework.program import Program, default_main_program, default_startup_program
from . import geo
from . import pserver as ps
from .config import DistributeTranspilerConfig, DistributedMode, ServerRuntimeConfig  # noqa: F401
from .details import check_int, gc_paused, parse_endpoints
from .slicing import VarBlock, slice_variable  # noqa: F401  (Paddle's names in this module)

logger = logging.getLogger(__name__)


def log(*args):
    """Paddle's transpiler debug print; here a DEBUG record of this module's logger."""
    logger.debug(" ".join(str(a) for a in args))


def same_or_split_var(p_name, var_name):
    """True when ``p_name`` is ``var_name`` or one of its blocks (``var_name.block<i>``)."""
    return p_name == var_name or p_name.startswith(var_name + ".block")


class DistributeTranspiler:
    """``t.transpile(trainer_id, pservers=..., trainers=...)`` then ``t.get_trainer_program()`` or
    ``t.get_pserver_program(ep)`` / ``t.get_startup_program(ep, prog)``."""

    def __init__(self, config: Optional[DistributeTranspilerConfig] = None) -> None:
        """Rewrites a single-process program into the programs of a distributed job (Paddle 1.x's API).

        ``t.transpile(trainer_id, pservers=..., trainers=...)``, then ``t.get_trainer_program()`` on
        trainers, or ``t.get_pserver_program(ep)`` and ``t.get_startup_program(ep, prog)`` on pservers.
        ``config.mode`` picks parameter servers (``"pserver"``, the default), ``"nccl2"`` or ``"collective"``.

        Args:
            config: how to split and place parameters, and the mode (default: ``DistributeTranspilerConfig()``).

        Raises:
            TypeError: ``config`` is not a DistributeTranspilerConfig.
            ValueError: a misconfigured field of ``config`` (named).

        Examples:
            >>> main, startup = fluid.Program(), fluid.Program()
            >>> with fluid.program_guard(main, startup):
            ...     x = fluid.data(name="x", shape=[None, 4], dtype="float32")
            ...     _ = fluid.optimizer.SGD(0.1).minimize(fluid.layers.mean(fluid.layers.fc(x, 1)))
            >>> t = fluid.DistributeTranspiler()
            >>> t.transpile(0, program=main, startup_program=startup, pservers="127.0.0.1:6174,127.0.0.1:6175",
            ...             trainers=2)
            >>> sorted({op.type for op in t.get_trainer_program(wait_port=False).global_block().ops} & {"send", "recv"})
            ['recv', 'send']
            >>> pserver = t.get_pserver_program("127.0.0.1:6174")
        """
        self.config = config if config is not None else DistributeTranspilerConfig()
        if not isinstance(self.config, DistributeTranspilerConfig):
            raise TypeError("DistributeTranspiler(config): config must be a DistributeTranspilerConfig")
        self.config.validate()
        self._server_config = ServerRuntimeConfig()
        self._plan: Any = None
        self.vars_overview: Any = None
        self._collective: Any = None
        self.origin_program: Any = None
        self.startup_program: Any = None

    def _set_server_config(self, server_config=None):
        if server_config is not None and not isinstance(server_config, ServerRuntimeConfig):
            raise TypeError("_set_server_config takes a ServerRuntimeConfig")
        self._server_config = server_config or ServerRuntimeConfig()

    @gc_paused
    def transpile(self, trainer_id: int, program: Program | None = None, pservers: str = "127.0.0.1:6174",
                  trainers: int | str = 1, sync_mode: bool = True, startup_program: Program | None = None,
                  current_endpoint: Optional[str] = "127.0.0.1:6174") -> None:
        """Rewrite ``program`` (in place) for distributed training, and remember the plan for the
        ``get_*_program`` calls.

        In pserver mode (the default ``config.mode``) the trainer program sends each gradient (or each block
        of a sliced gradient) to the pserver that owns it, waits at the barriers in sync mode and receives
        the updated parameters; the optimizer ops move to the pservers. Every process of the job calls
        ``transpile`` with the same arguments except ``trainer_id``, so all of them agree on the plan.

        Args:
            trainer_id: this trainer's id, 0 .. trainers-1 (a pserver's is not read: any int).
            program: the main program to rewrite (default: the default main program).
            pservers: the pservers' ``ip:port`` list, comma-separated; parameters are assigned to them in turn.
            trainers: the number of trainers (pserver mode); in nccl2/collective mode the trainers'
                endpoints, comma-separated.
            sync_mode: true: every step waits for every trainer; false (None too): asynchronous updates.
            startup_program: its initializers follow the parameters to the pservers (default: the default
                startup program).
            current_endpoint: this trainer's endpoint, one of ``trainers`` (nccl2 / collective modes). Read
                in those modes only, as in Paddle 1.8: in pserver mode any value (None too) is kept as is.

        Raises:
            TypeError: an argument of the wrong type (named in the message).
            ValueError: an empty or malformed endpoint list, a negative trainer_id or a current_endpoint
                not among the trainers in nccl2 / collective mode (each named in the message).
        """
        self.config.validate()
        trainer_id = check_int(trainer_id, "transpile: trainer_id", minimum=None)
        program = program if program is not None else default_main_program()
        startup_program = startup_program if startup_program is not None else default_startup_program()
        for what, value in (("program", program), ("startup_program", startup_program)):
            if not isinstance(value, Program):
                raise TypeError("transpile: %s must be a Program, got %r (%s)" % (what, value, type(value).__name__))
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
        # pserver mode: current_endpoint is only remembered (Paddle 1.8 reads it in nccl2 mode alone; its
        # test harness passes None for every trainer), sync_mode is taken for its truth value as Paddle does
        # port 0 is a pserver binding any free port (it writes the port into /tmp/paddle.<pid>.port)
        eps = parse_endpoints(pservers, "transpile: pservers", allow_port_zero=True)
        if isinstance(trainers, str):
            raise TypeError("transpile: trainers must be the number of trainers (an int) in pserver mode, got the "
                            "string %r (a list of trainer endpoints is for the nccl2 / collective modes)" % trainers)
        n_trainers = check_int(trainers, "transpile: trainers (pserver mode)", minimum=1)
        self.trainer_num = n_trainers
        self.trainer_id = trainer_id
        self.sync_mode = bool(sync_mode)
        self.pserver_endpoints = eps
        self.current_endpoint = current_endpoint
        program._ps_endpoint = current_endpoint
        if self.config.geo_sgd_mode:
            self.sync_mode = False          # GEO-SGD is asynchronous (Paddle's GeoSgdTranspiler ignores sync_mode)
            plan = geo.plan_geo(program, startup_program, trainer_id, eps, n_trainers, self.config)
            geo.rewrite_geo_trainer(plan, program, startup_program)
            self._plan = plan
            self._record_placement(program)
            return
        plan = ps.plan_pserver(program, startup_program, trainer_id, eps, n_trainers, self.sync_mode, self.config,
                               startup_copy=self.origin_startup_program)
        ps.rewrite_trainer(plan, program, startup_program)
        self._plan = plan
        self._record_placement(program)
        if self.config.print_log:
            logger.info("transpiled trainer %d for pservers %s", trainer_id, eps)

    def _record_placement(self, program):
        """Paddle's ``vars_overview``, hung on the trainer program (and on each pserver program) as
        ``_parameters_on_pservers``: ``fluid.io``'s distributed save and load read it."""
        self.vars_overview = ps.vars_overview(self._plan)
        program._parameters_on_pservers = self.vars_overview
        # the record (filled when first read) holds the plan while this transpiler lives, not after
        weakref.finalize(self, ps.keep_placement_only, weakref.ref(self.vars_overview), self._plan).atexit = False

    def _require_pserver_plan(self, what):
        if self._plan is None:
            raise RuntimeError("%s: call transpile() in pserver mode first" % what)
        return self._plan

    @gc_paused
    def get_trainer_program(self, wait_port: bool = True) -> Program:
        """The trainer's program (the transpiled main program, rewritten in place). ``wait_port`` is
        accepted as in Paddle; the wait itself is the runtime's: a trainer's first request to a pserver
        that is not listening yet waits for it up to ``FLUIDIST_CONNECT_TIMEOUT`` seconds (10; a warning names
        it after 3 s)."""
        plan = self._require_pserver_plan("get_trainer_program")
        if plan.sync and plan.trainers > 1 and not 0 <= plan.trainer_id < plan.trainers:
            # checked here, not in transpile: pservers transpile too, and Paddle lets them pass any trainer_id
            raise ValueError("get_trainer_program: trainer_id %d is out of range for %d trainers: in sync mode the "
                             "pservers expect gradients from trainers 0..%d" % (plan.trainer_id, plan.trainers,
                                                                                plan.trainers - 1))
        if not isinstance(plan, geo.GeoPlan):      # GEO-SGD trainers keep their optimizer
            ps.finish_trainer(plan, self.origin_program, self.startup_program)
        return self.origin_program

    @gc_paused
    def get_pserver_program(self, endpoint: str) -> Program:
        """The program of the pserver at ``endpoint``: a ``listen_and_serv`` op that receives gradients and
        serves parameters, with one optimize block per parameter (block) it owns. Running it serves until
        every trainer has closed its Executor."""
        plan = self._require_pserver_plan("get_pserver_program")
        if isinstance(plan, geo.GeoPlan):
            prog = geo.build_geo_pserver_program(plan, endpoint, self._server_config)
        else:
            prog = ps.build_pserver_program(plan, endpoint, self.config)
        prog._parameters_on_pservers = self.vars_overview
        return prog

    def _get_vars_info(self):
        """GEO-SGD: what the trainers' communicator pushes (Paddle's ``push_vars``): per parameter its
        block names, row counts, pservers and whether it is row-sparse."""
        plan = self._require_pserver_plan("_get_vars_info")
        if not isinstance(plan, geo.GeoPlan):
            raise RuntimeError("_get_vars_info: the program was not transpiled with geo_sgd_mode")
        return geo.vars_info(plan)

    def get_pserver_programs(self, endpoint: str) -> tuple[Program, Program]:
        """``(get_pserver_program(endpoint), get_startup_program(endpoint, ...))``."""
        prog = self.get_pserver_program(endpoint)
        return prog, self.get_startup_program(endpoint, prog)

    @gc_paused
    def get_startup_program(self, endpoint: str, pserver_program: Program | None = None,
                            startup_program: Program | None = None) -> Program:
        """The startup program of the pserver at ``endpoint``: it initializes the parameters (and their
        blocks) and optimizer state that pserver owns, as the original startup program would."""
        plan = self._require_pserver_plan("get_startup_program")
        if pserver_program is None:
            pserver_program = self.get_pserver_program(endpoint)
        return ps.build_pserver_startup(plan, endpoint, pserver_program, startup_program)
