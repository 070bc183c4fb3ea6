"""The IR: Program -> Block -> Operator / Variable / Parameter.

A Program is plain data. Operators hold variable *names*, not objects, so rewriting a program is
list and dict surgery and the JSON form (``serialization.py``) is exact. Every edit made through
these classes bumps ``Program._version`` so that executors can cache their plans safely.

The classes live in ``variable.py`` (Variable, Parameter, gradient names) and ``block.py`` (Block,
Operator); the Program's clone and JSON form in ``program_forms.py``; this module holds the Program,
the default programs and their guards, and re-exports the rest under its historical path.
"""
from __future__ import annotations

import contextlib
import json
import weakref
from typing import Any, Dict, Iterator, List, Optional

import numpy as np

from . import program_forms
from .block import Block, Operator  # noqa: F401 (re-exported: fluidist.framework.program.Block, .Operator)
from .graph import lint_program, ops_needed_for
from .name_scope import name_scope  # noqa: F401 (fluid.name_scope; Paddle's tree, one per process)
from .op_role import OP_NAMESCOPE_ATTR, OP_ROLE_ATTR, OP_ROLE_VAR_ATTR, OpRole  # noqa: F401
from .dtypes import VarType
from .serialization import loads
from . import desc_views
from .desc_views import DescView
from .variable import (EMPTY_VAR_NAME, GRAD_SUFFIX, LR_DECAY_COUNTER, RENAME_INFIX, TEMP_VAR_NAME,  # noqa: F401
                       Parameter, Variable, _strip_grad, grad_var_name)


class Program:
    """A program: a list of Blocks (block 0 is the global block) of variables and operators.

    Layers append to the current default main program (``fluid.default_main_program()``), their
    initialisers to the default startup program; ``fluid.program_guard(main, startup)`` makes others
    current. A Program is data: it can be cloned, printed, linted and saved as JSON; an ``Executor``
    runs it, and the transpiler rewrites it for distributed training.

    Attributes:
        blocks: the Blocks, by index.
        random_seed: the seed of random initialisers and dropout (0: a fresh one each run).

    Examples:
        >>> main, startup = fluid.Program(), fluid.Program()
        >>> with fluid.program_guard(main, startup):
        ...     x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        ...     y = fluid.layers.fc(x, size=2)
        >>> [op.type for op in main.global_block().ops]
        ['mul', 'elementwise_add']
        >>> test_program = main.clone(for_test=True)
    """

    desc = DescView("ProgramDesc")
    parse_from_string = staticmethod(desc_views.parse_program)   # Paddle's: a Program from ProgramDesc bytes

    def __init__(self) -> None:
        self.blocks = [Block(self, 0)]
        self.current_block_idx = 0
        self._version = 0
        self._seed = 0
        self._current_role = OpRole.Forward
        self._op_role_var: List[str] = []
        self._is_distributed = False
        self._is_chief = False
        self._endpoints: List[str] = []
        self._ps_endpoint: Optional[str] = None
        self._trainers_endpoints: List[str] = []
        self._nccl_comm_num = 1
        self._use_hierarchical_allreduce = False
        self._hierarchical_allreduce_inter_nranks = 0
        self._distributed_lookup_table = None
        self._parameters_on_pservers = None     # a transpiler's VarsDistributed (shared by clones, as in Paddle)
        self._origin_program = None
        self._appending_grad_times = 0          # gradient passes appended (names a later pass's grads)
        # {executor: {block index: its plan}} (executor.Executor._plan): the plans of executors that ran
        # this program live here, so that they go with it; None until the first run
        self._executor_plans: Optional[weakref.WeakKeyDictionary] = None

    # ---- seed
    @property
    def random_seed(self) -> int:
        """The seed of the program's random ops (initialisers, dropout) that have none of their own;
        0 draws a fresh seed each run. Set it before building the layers, as in Paddle."""
        return self._seed

    @random_seed.setter
    def random_seed(self, seed: int) -> None:
        if not isinstance(seed, (int, np.integer)):
            raise ValueError("Program.random_seed must be an integer, got %r" % (seed,))
        self._seed = int(seed)
        self._bump_version()

    def _bump_version(self) -> None:
        """Say that the program changed: what is cached on its version (the executor's plans, its
        prunings) is made again at the next run. Every edit of the IR calls it, and so does every pass."""
        self._version += 1

    # ---- blocks
    def global_block(self) -> Block:
        """Block 0, which holds the parameters and the top-level ops."""
        return self.blocks[0]

    def block(self, index: int) -> Block:
        """The Block at ``index``."""
        return self.blocks[index]

    def current_block(self) -> Block:
        """The Block that layers append to now (a sub-block inside a ``While`` or ``cond`` body)."""
        return self.blocks[self.current_block_idx]

    @property
    def num_blocks(self) -> int:
        """The number of blocks (1 + the sub-blocks of loops and branches)."""
        return len(self.blocks)

    def _create_block(self, parent_idx=None):
        parent = self.current_block_idx if parent_idx is None else parent_idx
        b = Block(self, len(self.blocks), parent)
        self.blocks.append(b)
        self.current_block_idx = b.idx
        self._bump_version()
        return b

    def _rollback(self):
        self.current_block_idx = self.current_block().parent_idx

    def list_vars(self) -> Iterator[Variable]:
        """Every Variable of every Block, block by block."""
        for b in self.blocks:
            for v in b.vars.values():
                yield v

    def all_parameters(self) -> List[Parameter]:
        """The Parameters (trainable or not) of the global block."""
        return self.global_block().all_parameters()

    def _copy_data_info_from(self, other: Program, pruned_origin_block_id_map: Optional[Dict[int, int]] = None) -> None:
        """Mark this program's variables as ``other``'s same-named ones are: data, fed with checks,
        stop_gradient (block ``i`` reads block ``pruned_origin_block_id_map[i]`` of ``other``, by
        default block ``i``). TypeError unless ``other`` is a Program; ValueError for a variable
        ``other`` lacks."""
        if not isinstance(other, Program):
            raise TypeError("Program._copy_data_info_from needs a source Program, got %r" % type(other).__name__)
        block_map = pruned_origin_block_id_map or {i: i for i in range(len(self.blocks))}
        for i, block in enumerate(self.blocks):
            theirs = other.blocks[block_map[i]]
            for var in list(block.vars.values()):
                src = theirs.var(var.name)
                if src.is_data:
                    var.is_data = True
                if src.need_check_feed:
                    var.need_check_feed = True
                if src.stop_gradient:
                    var.stop_gradient = True

    # ---- role guards used by backward / optimizer / lr schedules
    @contextlib.contextmanager
    def _role_guard(self, role, role_var=None):
        old_role, old_var = self._current_role, self._op_role_var
        self._current_role = role
        self._op_role_var = list(role_var) if role_var else []
        try:
            yield
        finally:
            self._current_role, self._op_role_var = old_role, old_var

    def _optimized_guard(self, param_and_grads):
        names = [v.name if isinstance(v, Variable) else v for v in param_and_grads]
        return self._role_guard(OpRole.Optimize, names)

    def _lr_schedule_guard(self, is_with_opt=False):
        role = OpRole.LRSched | (OpRole.Optimize if is_with_opt else 0)
        return self._role_guard(role)

    def _backward_role_guard(self):
        return self._role_guard(OpRole.Backward)

    # ---- copies and forms (framework/program_forms.py)
    def clone(self, for_test: bool = False) -> Program:
        """A deep copy: blocks, variables and ops (attrs that are Blocks point into the copy).

        Args:
            for_test: drop the backward, optimize and learning-rate ops and switch dropout and
                batch_norm to inference, as Paddle does; clone *before* ``minimize`` for an evaluation
                program that shares the parameters by name.

        Returns:
            The new Program.
        """
        return program_forms.clone_into(self, Program(), for_test)

    def to_dict(self) -> Dict[str, Any]:
        """The lossless JSON-ready form (``to_json`` -> ``from_json`` -> ``to_json`` is exact)."""
        return program_forms.to_dict(self)

    @staticmethod
    def from_dict(d: Dict[str, Any]) -> Program:
        """The Program of a ``to_dict`` form."""
        return program_forms.from_dict_into(d, Program())

    def to_json(self, indent: Optional[int] = None) -> str:
        """The JSON text of ``to_dict`` (what ``fluid.save`` writes as ``.pdmodel``)."""
        return json.dumps(self.to_dict(), indent=indent, sort_keys=False)

    @staticmethod
    def from_json(text: str) -> Program:
        """The Program of a ``to_json`` text.

        Examples:
            >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
            >>> y = fluid.layers.fc(x, size=2)
            >>> text = fluid.default_main_program().to_json()
            >>> fluid.Program.from_json(text).to_json() == text
            True
        """
        return Program.from_dict(loads(text))

    def lint(self) -> Program:
        """Check every op against the op registry (types, slots, attrs, declared variables);
        returns the program, or raises a LintError listing every problem."""
        return lint_program(self)

    def to_string(self, throw_on_error: bool = False, with_details: bool = False) -> str:
        """The program as text, block by block (what ``print(program)`` shows).

        Args:
            throw_on_error: accepted for Paddle's signature.
            with_details: also print each variable's attributes in full.

        Returns:
            The text.
        """
        return "\n".join(b.to_string(throw_on_error, with_details) for b in self.blocks)

    def __str__(self):
        return self.to_string()

    def _sync_with_cpp(self):
        """Kept for Paddle compatibility; there is nothing to sync."""

    def _prune(self, targets: Any) -> Program:
        """A copy keeping only the global block's ops that ``targets`` (Variables, names or
        Operators) need."""
        return self._prune_with_input([], targets)

    def _prune_with_input(self, feeded_var_names: Any, targets: Any) -> Program:
        """A copy keeping only the global block's ops that ``targets`` (Variables, names or
        Operators) need, given the variables ``feeded_var_names`` (their producers are left out)."""
        feeds = feeded_var_names if isinstance(feeded_var_names, list) else [feeded_var_names]
        for f in feeds:
            if not isinstance(f, str):
                raise ValueError("Program._prune_with_input: feeded_var_names holds names (str), got %r"
                                 % type(f).__name__)
        block = self.global_block()
        names, target_ops = [], []
        for t in targets if isinstance(targets, list) else [targets]:
            if isinstance(t, Operator):
                target_ops.append(block._index_of(t))
            elif isinstance(t, (Variable, str)):
                names.append(t.name if isinstance(t, Variable) else t)
            else:
                raise ValueError("Program._prune_with_input: targets are Variables, names or Operators, got %r"
                                 % type(t).__name__)
        wanted = names + [n for i in target_ops for n in block.ops[i].output_arg_names]
        keep = sorted(set(ops_needed_for(block, wanted, feeds)) | set(target_ops))
        pruned = self.clone()
        kept = pruned.global_block()
        kept.ops = [kept.ops[i] for i in keep]
        return pruned

    def _inference_optimize(self, prune_read_op=True):
        """A copy for inference: ``is_test`` set on the ops that have it and, with
        ``prune_read_op``, the global block's ops up to its first read (the first op that reads a
        reader variable into data: the ops before it create the reader) and its reader variables
        removed."""
        p = self.clone()
        if prune_read_op:
            block = p.global_block()
            first_read = next((i for i, op in enumerate(block.ops) if _reads_a_reader(block, op)), None)
            if first_read is not None:
                block._remove_op(0, first_read + 1)
            for name in [n for n, v in block.vars.items() if v.type == VarType.READER]:
                block._remove_var(name)
        program_forms._set_test_mode(p)
        return p


def _reads_a_reader(block, op):
    """Whether ``op`` reads a reader variable into data variables (Paddle's ``read``)."""
    def kinds(names):
        return {getattr(block._find_var_recursive(n), "type", None) for n in names}
    return VarType.READER in kinds(op.input_arg_names) and VarType.READER not in kinds(op.output_arg_names)


# ---- default programs and guards
_main_program_ = Program()
_startup_program_ = Program()


def default_main_program() -> Program:
    """The Program that layers append to (``program_guard`` swaps it)."""
    return _main_program_


def default_startup_program() -> Program:
    """The Program that receives the initialisers of the parameters layers create."""
    return _startup_program_


def switch_main_program(program: Program) -> Program:
    """Make ``program`` the default main program; return the previous one."""
    global _main_program_
    prev = _main_program_
    _main_program_ = program
    return prev


def switch_startup_program(program: Program) -> Program:
    """Make ``program`` the default startup program; return the previous one."""
    global _startup_program_
    prev = _startup_program_
    _startup_program_ = program
    return prev


@contextlib.contextmanager
def program_guard(main_program: Program, startup_program: Program | None = None) -> Iterator[None]:
    """Inside the ``with``, layers build into ``main_program`` (their initialisers into ``startup_program``).

    Args:
        main_program: the Program layers append their ops to.
        startup_program: the Program parameter initialisers go to (unchanged when None).

    Raises:
        TypeError: an argument that is not a Program.

    Examples:
        >>> main, startup = fluid.Program(), fluid.Program()
        >>> with fluid.program_guard(main, startup):
        ...     x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> main.global_block().has_var("x")
        True
    """
    if not isinstance(main_program, Program):
        raise TypeError("program_guard: main_program must be a Program, got %r" % type(main_program).__name__)
    if startup_program is not None and not isinstance(startup_program, Program):
        raise TypeError("program_guard: startup_program must be a Program, got %r"
                        % type(startup_program).__name__)
    main_program = switch_main_program(main_program)
    if startup_program is not None:
        startup_program = switch_startup_program(startup_program)
    try:
        yield
    finally:
        switch_main_program(main_program)
        if startup_program is not None:
            switch_startup_program(startup_program)


