"""The RNN blocks of ``layers.control_flow``: ``DynamicRNN`` (a ``While`` over the time steps of LoD
sequences, on tensor arrays and a rank table, as Paddle builds it) and ``StaticRNN`` (one ``recurrent``
op over the first dimension of its inputs)."""
from __future__ import annotations

import contextlib
from typing import Any, Iterator, Sequence

from ..framework import unique_name
from ..framework.dtypes import VarType
from ..framework.program import Variable
from .hints import DType
from .block_guard import SubBlockGuard, parent_block
from .layer_helper import LayerHelper, check_variable
from .logic import increment, less_than
from .tensor import fill_constant
from .tensor_array import array_read, array_to_lod_tensor, array_write, shrink_memory
from .while_loop import While


_check_var = check_variable


class DynamicRNN:
    """A recurrent loop over LoD sequences of different lengths, one block run per time step.

    Inside ``with drnn.block():``, ``step_input(x)`` is step ``t`` of each sequence of ``x`` still
    running, ``memory(...)`` a state carried between steps, ``update_memory(prev, new)`` says what
    it holds next, and ``output(...)`` collects step results; ``drnn()`` after the block gives them
    back as LoD sequences.

    As Paddle builds it: the sequences are sorted longest first (``lod_rank_table``) and cut into one
    array item per step (``lod_tensor_to_array``); at step ``t`` only the sequences longer than
    ``t`` take part, so the batch shrinks (``shrink_memory``); a ``While`` runs the steps, and the
    outputs go back to sequence order (``array_to_lod_tensor``).

    Args:
        name: the prefix of the loop's variables (generated when None).

    Raises:
        ValueError: a method used outside the block, the block entered twice, memories made or
            updated wrongly, or the outputs used before the block ends.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32", lod_level=1)
        >>> drnn = fluid.layers.DynamicRNN()
        >>> with drnn.block():
        ...     word = drnn.step_input(x)
        ...     prev = drnn.memory(shape=[4], value=0.0)
        ...     running_sum = fluid.layers.elementwise_add(prev, word)
        ...     drnn.update_memory(prev, running_sum)
        ...     drnn.output(running_sum)
        >>> last = fluid.layers.sequence_last_step(drnn())
        >>> t = fluid.create_lod_tensor(np.ones((5, 4), "float32"), [[2, 3]], fluid.CPUPlace())
        >>> fluid.Executor(fluid.CPUPlace()).run(feed={"x": t}, fetch_list=[last])[0][:, 0].tolist()
        [2.0, 3.0]
    """

    BEFORE_RNN, IN_RNN, AFTER_RNN = 0, 1, 2

    def __init__(self, name: str | None = None):
        self.helper = LayerHelper("dynamic_rnn", name=name)
        self.status = DynamicRNN.BEFORE_RNN
        # set while the block is built (None before): Any keeps the checker from asking at each use
        self.lod_rank_table: Any = None
        self.max_seq_len: Any = None
        self.step_idx: Any = None
        self.zero_idx: Any = None
        self.mem_dict: dict[str, Variable] = {}
        self.output_array: list[Variable] = []
        self.outputs: list[Variable] = []
        self.cond = self.helper.create_variable_for_type_inference(dtype="bool")
        self.cond.stop_gradient = False
        self.while_op = While(self.cond)
        self.input_array: list[tuple[Variable, Any]] = []
        self.mem_link: list[tuple[Variable, Variable]] = []

    def _assert_in_rnn_block(self, method):
        if self.status != DynamicRNN.IN_RNN:
            raise ValueError("DynamicRNN.%s can only be called inside 'with rnn.block():'" % method)

    def step_input(self, x: Variable, level: int = 0) -> Variable:
        """Step ``t`` of each sequence of ``x`` still running (the first call fixes the steps).

        Args:
            x: a LoD tensor.
            level: the LoD level whose sequences are stepped through.

        Returns:
            The step's rows, one per running sequence, longest sequence first.
        """
        self._assert_in_rnn_block("step_input")
        _check_var(x, "DynamicRNN.step_input", "x")
        parent = parent_block(self.helper.main_program)
        if self.lod_rank_table is None:
            self.lod_rank_table = parent.create_var(name=unique_name.generate("lod_rank_table"),
                                                    type=VarType.LOD_RANK_TABLE, stop_gradient=True)
            parent.append_op("lod_rank_table", inputs={"X": [x]}, outputs={"Out": [self.lod_rank_table]},
                             attrs={"level": int(level)})
            self.max_seq_len = parent.create_var(name=unique_name.generate("dynamic_rnn_max_seq_len"),
                                                 dtype="int64", shape=[1])
            self.max_seq_len.stop_gradient = False
            parent.append_op("max_sequence_len", inputs={"RankTable": [self.lod_rank_table]},
                             outputs={"Out": [self.max_seq_len]})
            self.cond.stop_gradient = True
            parent.append_op("less_than", inputs={"X": [self.step_idx], "Y": [self.max_seq_len]},
                             outputs={"Out": [self.cond]}, attrs={"force_cpu": True})
        input_array = parent.create_var(name=unique_name.generate("dynamic_rnn_input_array"),
                                        type=VarType.LOD_TENSOR_ARRAY, dtype=x.dtype, shape=x.shape)
        self.input_array.append((input_array, x.dtype))
        parent.append_op("lod_tensor_to_array", inputs={"X": [x], "RankTable": [self.lod_rank_table]},
                         outputs={"Out": [input_array]})
        return array_read(input_array, self.step_idx)

    def static_input(self, x: Variable) -> Variable:
        """``x`` seen whole at every step (after ``step_input``).

        Args:
            x: one row (or sequence) per input sequence, in input order.

        Returns:
            ``x`` reordered like the steps and cut to the sequences still running.
        """
        self._assert_in_rnn_block("static_input")
        _check_var(x, "DynamicRNN.static_input", "x")
        if self.lod_rank_table is None:
            raise RuntimeError("DynamicRNN.static_input() must be called after step_input()")
        parent = parent_block(self.helper.main_program)
        reordered = parent.create_var(name=unique_name.generate("dynamic_rnn_static_input_reordered"),
                                      type=VarType.LOD_TENSOR, dtype=x.dtype, shape=x.shape, lod_level=x.lod_level)
        parent.append_op("reorder_lod_tensor_by_rank", inputs={"X": [x], "RankTable": [self.lod_rank_table]},
                         outputs={"Out": [reordered]})
        return shrink_memory(reordered, self.step_idx, self.lod_rank_table)

    @contextlib.contextmanager
    def block(self) -> Iterator[None]:
        """The context manager whose ops form one step (entered once)."""
        if self.status != DynamicRNN.BEFORE_RNN:
            raise ValueError("DynamicRNN.block() can only be entered once")

        self.step_idx = fill_constant(shape=[1], dtype="int64", value=0, force_cpu=True)
        self.step_idx.stop_gradient = False
        self.status = DynamicRNN.IN_RNN
        with self.while_op.block():
            yield
            if self.lod_rank_table is None:
                raise ValueError("DynamicRNN: call step_input() inside the block")
            increment(x=self.step_idx, value=1.0, in_place=True)
            for new_mem, mem_array in self.mem_link:
                array_write(x=new_mem, i=self.step_idx, array=mem_array)
            less_than(x=self.step_idx, y=self.max_seq_len, force_cpu=True, cond=self.cond)
        self.status = DynamicRNN.AFTER_RNN
        for each in self.output_array:
            self.outputs.append(array_to_lod_tensor(x=each, table=self.lod_rank_table))

    def __call__(self, *args, **kwargs):
        if self.status != DynamicRNN.AFTER_RNN:
            raise ValueError("the outputs of a DynamicRNN can only be used after its block")
        return self.outputs[0] if len(self.outputs) == 1 else self.outputs

    def memory(self, init: Variable | None = None, shape: list[int] | None = None, value: float = 0.0,
               need_reorder: bool = False, dtype: DType = "float32") -> Variable:
        """A state carried from step to step.

        Args:
            init: its first value, one row per sequence; when None, ``value`` of ``shape``.
            shape: the shape of one sequence's state, without ``init`` (after ``step_input``).
            value: the fill value, without ``init``.
            need_reorder: ``init`` is in input order: reorder it like the steps.
            dtype: the dtype, without ``init``.

        Returns:
            The memory's value at this step.
        """
        self._assert_in_rnn_block("memory")
        self._init_zero_idx()
        parent = parent_block(self.helper.main_program)
        if init is not None:
            _check_var(init, "DynamicRNN.memory", "init")
            init_tensor = init
            if need_reorder:
                if self.lod_rank_table is None:
                    raise ValueError("DynamicRNN.memory(need_reorder=True) needs step_input() called before it")
                init_tensor = parent.create_var(name=unique_name.generate("dynamic_rnn_mem_init_reordered"),
                                                type=VarType.LOD_TENSOR, dtype=init.dtype, shape=init.shape)
                parent.append_op("reorder_lod_tensor_by_rank",
                                 inputs={"X": [init], "RankTable": [self.lod_rank_table]},
                                 outputs={"Out": [init_tensor]})
            mem_array = parent.create_var(name=unique_name.generate("dynamic_rnn_mem_array"),
                                          type=VarType.LOD_TENSOR_ARRAY, dtype=init.dtype, shape=init.shape)
            parent.append_op("write_to_array", inputs={"X": [init_tensor], "I": [self.zero_idx]},
                             outputs={"Out": [mem_array]})
            retv = array_read(mem_array, self.step_idx)
            retv = shrink_memory(retv, self.step_idx, self.lod_rank_table)
            self.mem_dict[retv.name] = mem_array
            return retv
        if not shape:
            raise ValueError("DynamicRNN.memory: give init, or the shape of the memory")
        if not isinstance(shape, list):
            raise TypeError("DynamicRNN.memory: shape must be a list, got %r" % type(shape).__name__)
        if not self.input_array:
            raise ValueError("DynamicRNN.memory(shape=...) needs step_input() called before it")
        init = parent.create_var(name=unique_name.generate("mem_init"), dtype=dtype, shape=[-1] + list(shape))
        arr, in_dtype = self.input_array[0]
        in0 = parent.create_var(name=unique_name.generate("in0"), dtype=in_dtype)
        parent.append_op("read_from_array", inputs={"X": [arr], "I": [self.zero_idx]}, outputs={"Out": [in0]})
        parent.append_op("fill_constant_batch_size_like", inputs={"Input": [in0]}, outputs={"Out": [init]},
                         attrs={"shape": [-1] + list(shape), "value": float(value), "dtype": init.dtype})
        return self.memory(init=init)

    def update_memory(self, ex_mem: Variable, new_mem: Variable) -> None:
        """The memory ``ex_mem`` (from ``memory``) holds ``new_mem`` at the next step."""
        self._assert_in_rnn_block("update_memory")
        _check_var(ex_mem, "DynamicRNN.update_memory", "ex_mem")
        _check_var(new_mem, "DynamicRNN.update_memory", "new_mem")
        mem_array = self.mem_dict.get(ex_mem.name)
        if mem_array is None:
            raise ValueError("DynamicRNN.update_memory: %r is not a memory of this RNN (call memory() first)"
                             % ex_mem.name)
        if self.lod_rank_table is None:
            raise ValueError("DynamicRNN.update_memory needs step_input() called before it")
        self.mem_link.append((new_mem, mem_array))

    def output(self, *outputs: Variable) -> None:
        """Collect these step results; ``drnn()`` gives them back as LoD sequences."""
        self._assert_in_rnn_block("output")
        parent = parent_block(self.helper.main_program)
        for each in outputs:
            _check_var(each, "DynamicRNN.output", "output")
            outside = parent.create_var(
                name=unique_name.generate("_".join([self.helper.name, "output_array", each.name])),
                type=VarType.LOD_TENSOR_ARRAY, dtype=each.dtype, shape=each.shape)
            array_write(x=each, i=self.step_idx, array=outside)
            self.output_array.append(outside)

    def _init_zero_idx(self):
        if self.zero_idx is None:
            parent = parent_block(self.helper.main_program)
            self.zero_idx = parent.create_var(name=unique_name.generate("zero_idx"), dtype="int64", shape=[1])
            parent.append_op("fill_constant", outputs={"Out": [self.zero_idx]},
                             attrs={"shape": [1], "dtype": "int64", "value": 0.0, "force_cpu": True})


class _MemoryLink:
    def __init__(self, init, pre_mem, mem=None):
        self.init = init
        self.pre_mem = pre_mem
        self.mem = mem


class StaticRNN:
    """A recurrent loop over inputs of a fixed number of steps (their first dimension).

    Inside ``with rnn.step():``, ``step_input(x)`` is ``x[t]``, ``memory(...)`` a state carried
    between steps, ``update_memory(prev, new)`` says what it holds next, and ``step_output(o)``
    collects results; ``rnn()`` after the block stacks them, ``[seq_len, ...]``. One ``recurrent``
    op runs the step block once per step, and its gradient runs them backwards.

    Args:
        name: the prefix of the loop's variables (generated when None).

    Raises:
        ValueError: a method used outside the block, step inputs of different lengths, a memory
            never updated, or the outputs used before the block ends.

    Examples:
        >>> x = fluid.data(name="x", shape=[3, None, 2], dtype="float32")
        >>> rnn = fluid.layers.StaticRNN()
        >>> with rnn.step():
        ...     word = rnn.step_input(x)
        ...     prev = rnn.memory(shape=[-1, 2], batch_ref=word, init_value=0.0, ref_batch_dim_idx=0)
        ...     running_sum = fluid.layers.elementwise_add(prev, word)
        ...     rnn.update_memory(prev, running_sum)
        ...     rnn.step_output(running_sum)
        >>> sums = rnn()
        >>> out, = fluid.Executor(fluid.CPUPlace()).run(feed={"x": np.ones((3, 1, 2), "float32")}, fetch_list=[sums])
        >>> out[:, 0, 0].tolist()
        [1.0, 2.0, 3.0]
    """

    BEFORE_RNN_BLOCK, IN_RNN_BLOCK, AFTER_RNN_BLOCK = 0, 1, 2

    def __init__(self, name: str | None = None):
        self.helper = LayerHelper("static_rnn", name=name)
        self.memories: dict[str, _MemoryLink] = {}   # pre_mem name -> _MemoryLink
        self.inputs: list[Variable] = []     # the step inputs, variables of the step block
        self.outputs: list[Variable] = []    # the outputs, variables of the enclosing block
        self.status = StaticRNN.BEFORE_RNN_BLOCK
        self.seq_len: int | None = None

    def step(self) -> SubBlockGuard:
        """The context manager whose ops form one step (entered once)."""
        if self.status != StaticRNN.BEFORE_RNN_BLOCK:
            raise ValueError("StaticRNN.step() can only be entered once")
        return SubBlockGuard(self.helper.main_program, self._finish, self._start)

    def _start(self):
        self.status = StaticRNN.IN_RNN_BLOCK

    def _finish(self):
        self.status = StaticRNN.AFTER_RNN_BLOCK
        self._complete_op()

    def _assert_in_rnn_block(self, method):
        if self.status != StaticRNN.IN_RNN_BLOCK:
            raise ValueError("StaticRNN.%s can only be called inside 'with rnn.step():'" % method)

    def memory(self, init: Variable | None = None, shape: Sequence[int] | None = None,
               batch_ref: Variable | None = None, init_value: float = 0.0, init_batch_dim_idx: int = 0,
               ref_batch_dim_idx: int = 1) -> Variable:
        """A state carried from step to step.

        Args:
            init: its first value; when None, ``init_value`` of ``shape``.
            shape: the state's shape (its batch dimension is replaced), without ``init``.
            batch_ref: the Variable the batch size is read from, without ``init``.
            init_value: the fill value, without ``init``.
            init_batch_dim_idx: the batch dimension of the state.
            ref_batch_dim_idx: the batch dimension of ``batch_ref`` (1 for an input
                ``[seq_len, batch, ...]``; 0 for a step input).

        Returns:
            The memory's value at this step.
        """
        self._assert_in_rnn_block("memory")
        if init is None:
            if shape is None or batch_ref is None:
                raise ValueError("StaticRNN.memory: without init, give shape and batch_ref")
            _check_var(batch_ref, "StaticRNN.memory", "batch_ref")
            parent = parent_block(self.helper.main_program)
            boot = parent.create_var(name=unique_name.generate("@".join([self.helper.name, "memory_boot"])),
                                     shape=shape, dtype=batch_ref.dtype, persistable=False)
            parent.append_op("fill_constant_batch_size_like", inputs={"Input": [batch_ref]}, outputs={"Out": [boot]},
                             attrs={"value": float(init_value), "shape": list(boot.shape), "dtype": boot.dtype,
                                    "input_dim_idx": int(ref_batch_dim_idx),
                                    "output_dim_idx": int(init_batch_dim_idx)})
            return self.memory(init=boot)
        _check_var(init, "StaticRNN.memory", "init")
        pre_mem = self.helper.create_variable(name=unique_name.generate("@".join([self.helper.name, "mem"])),
                                              dtype=init.dtype, shape=init.shape)
        self.memories[pre_mem.name] = _MemoryLink(init=init, pre_mem=pre_mem)
        return pre_mem

    def step_input(self, x: Variable) -> Variable:
        """``x[t]`` at step ``t``; ``x`` is ``[seq_len, ...]`` (all step inputs the same length)."""
        self._assert_in_rnn_block("step_input")
        _check_var(x, "StaticRNN.step_input", "x")
        if self.seq_len is None:
            self.seq_len = x.shape[0]
        elif x.shape[0] != -1 and self.seq_len != x.shape[0]:
            raise ValueError("StaticRNN: step inputs must have the same number of steps, got %d and %d"
                             % (self.seq_len, x.shape[0]))
        ipt = self.helper.create_variable(name=x.name, dtype=x.dtype, shape=list(x.shape[1:]), type=x.type)
        self.inputs.append(ipt)
        return ipt

    def step_output(self, o: Variable) -> None:
        """Collect ``o``: ``rnn()`` stacks its step values, ``[seq_len] + o.shape``."""
        self._assert_in_rnn_block("step_output")
        _check_var(o, "StaticRNN.step_output", "o")
        tmp = self.helper.create_variable_for_type_inference(dtype=o.dtype)
        self.helper.append_op("rnn_memory_helper", inputs={"X": [o]}, outputs={"Out": [tmp]},
                              attrs={"dtype": o.dtype})
        out = parent_block(self.helper.main_program).create_var(
            name=tmp.name, shape=[self.seq_len] + list(o.shape or []), dtype=tmp.dtype)
        self.outputs.append(out)

    def output(self, *outputs: Variable) -> None:
        """``step_output`` for each of ``outputs``."""
        for each in outputs:
            self.step_output(each)

    def update_memory(self, mem: Variable, var: Variable) -> None:
        """The memory ``mem`` (from ``memory``) holds ``var`` at the next step."""
        _check_var(mem, "StaticRNN.update_memory", "mem")
        _check_var(var, "StaticRNN.update_memory", "var")
        if mem.name not in self.memories:
            raise ValueError("StaticRNN.update_memory: %r is not a memory of this RNN" % mem.name)
        self.memories[mem.name].mem = var

    def __call__(self, *args, **kwargs):
        if self.status != StaticRNN.AFTER_RNN_BLOCK:
            raise ValueError("the outputs of a StaticRNN can only be used after its step block")
        if not self.outputs:
            raise ValueError("StaticRNN has no output (call step_output in the step block)")
        return self.outputs[0] if len(self.outputs) == 1 else self.outputs

    def _complete_op(self):
        program = self.helper.main_program
        rnn_block = program.current_block()
        parent = parent_block(self.helper.main_program)
        local = set()
        for op in rnn_block.ops:
            local.update(op.output_arg_names)
        local.update(v.name for v in self.inputs)
        local.update(self.memories)
        params = []
        for op in rnn_block.ops:
            for n in op.input_arg_names:
                if n not in local and n not in params:
                    params.append(n)
        missing = [n for n in params if parent._find_var_recursive(n) is None]
        if missing:
            raise ValueError("StaticRNN: the step reads %s, which no enclosing block declares" % missing)
        boot, pre, states = [], [], []
        for name, link in self.memories.items():
            if link.mem is None:
                raise ValueError("StaticRNN: memory %r (from %r) is never updated: call update_memory in the step"
                                 % (name, link.init.name))
            new_mem = self.helper.create_variable_for_type_inference(dtype=link.mem.dtype)
            rnn_block.append_op("rnn_memory_helper", inputs={"X": [link.mem]}, outputs={"Out": [new_mem]},
                                attrs={"dtype": link.mem.dtype})
            boot.append(link.init)
            pre.append(link.pre_mem.name)
            states.append(new_mem.name)
        step_scopes = parent.create_var(name=unique_name.generate(self.helper.name + ".step_scopes"),
                                        type=VarType.STEP_SCOPES)
        parent.append_op("recurrent",
                         inputs={"inputs": [parent.var(v.name) if parent.has_var(v.name) else
                                            parent._var_recursive(v.name) for v in self.inputs],
                                 "initial_states": boot, "parameters": params},
                         outputs={"outputs": self.outputs, "step_scopes": [step_scopes]},
                         attrs={"has_states": bool(pre), "ex_states": pre, "states": states,
                                "sub_block": rnn_block})
