"""fluidist's ``op_test``: Paddle's ``OpTest`` API, run on fluidist's static programs.

The conformance runner copies this file over Paddle's ``unittests/op_test.py`` in its scratch folder,
so the 250-odd ``test_*_op.py`` files run unchanged. A test sets ``op_type``, ``inputs``, ``outputs``
and ``attrs`` (values as Paddle's tests give them: an array, ``(array, lod)`` with LoD as sequence
lengths, or ``[(name, value), ...]`` for a duplicable slot) and calls:

- ``check_output(atol=1e-5, ...)``: one program holding the op runs on an Executor and each listed
  output is compared with ``np.allclose`` (rtol 1e-5, ``atol``), its LoD with the expected lengths;
- ``check_grad(inputs_to_check, output_names, ...)``: the loss is the mean of the means of the outputs
  (as Paddle's harness builds it: ``mean`` ops, then ``sum`` and ``scale``); ``append_backward`` gives
  the analytic gradients, which are compared with central differences of the same loss (``delta``
  0.005) by Paddle's rule: ``max |numeric - analytic| / max(|numeric|, 1e-3 -> 1) <= max_relative_error``.

What is not run, and why: the dygraph half of ``check_output``/``check_grad`` (fluidist runs static
programs only), the inplace and memory-reuse passes (fluidist has none), and places other than the
CPU (``core.is_compiled_with_cuda()`` is false without CuPy, so Paddle's CUDA-only cases skip
themselves). The numeric gradient's loss is summed in float64, which is at least as accurate as
Paddle's float32 sum.
"""
import json
import os
import random
import unittest

import numpy as np

import paddle.fluid as fluid
import paddle.fluid.core as core
from paddle.fluid.backward import append_backward
from paddle.fluid.framework import Program, program_guard

__all__ = ["OpTest", "skip_check_grad_ci", "randomize_probability", "get_numeric_gradient",
           "_set_use_system_allocator"]


def _set_use_system_allocator(value=None):
    """Paddle's allocator flag: fluidist allocates through NumPy, so the flag is only kept and returned."""
    flags = core.globals()
    old = flags.get("FLAGS_use_system_allocator", False)
    if value is not None:
        flags["FLAGS_use_system_allocator"] = value
    return old


def randomize_probability(batch_size, class_num, dtype="float32"):
    """Rows of random probabilities that sum to 1 (a helper Paddle's op tests import from op_test)."""
    prob = np.random.uniform(0.1, 1.0, size=(batch_size, class_num)).astype(dtype)
    return prob / prob.sum(axis=1, keepdims=True)


def skip_check_grad_ci(reason=None):
    """Marks an OpTest class whose gradient Paddle's CI does not check (a reason is required)."""
    if not isinstance(reason, str):
        raise AssertionError("The reason for skipping check_grad is required.")

    def wrapper(cls):
        cls.no_need_check_grad = True
        return cls
    return wrapper


_SLOTS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "paddle18_op_slots.json")
if not os.path.exists(_SLOTS_FILE):      # in the scratch copy the runner puts it beside this file
    _SLOTS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "paddle18_op_slots.json")
try:
    with open(_SLOTS_FILE) as _f:
        PADDLE18_SLOTS = json.load(_f)
except OSError:
    PADDLE18_SLOTS = {}


def _declared(op_type, kind):
    """The ``kind`` ("inputs"/"outputs") slot names Paddle 1.8.5 declares for ``op_type`` (None: unknown).
    Paddle's OpTest passes an op only the listed slots its proto declares, and checks only those."""
    entry = PADDLE18_SLOTS.get(op_type)
    return None if entry is None else {name for name, _, _ in entry[kind]}


def _entries(slots, declared=None):
    """``[(slot, var name, value, lod)]`` from an inputs/outputs dict in OpTest's forms."""
    out = []
    for slot, val in (slots or {}).items():
        if val is None or (declared is not None and slot not in declared):
            continue
        if isinstance(val, list) and all(isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], str)
                                         for v in val):
            for name, item in val:
                value, lod = _split_lod(item)
                out.append((slot, name, value, lod))
        else:
            value, lod = _split_lod(val)
            out.append((slot, slot, value, lod))
    return out


def _split_lod(item):
    if isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], list):
        return item[0], item[1]
    return item, None


def _as_tensor(value, lod, place):
    tensor = fluid.LoDTensor()
    tensor.set(np.asarray(value), place)
    if lod:
        tensor.set_recursive_sequence_lengths(lod)
    return tensor


class OpTest(unittest.TestCase):
    """One op, its inputs and attrs, and the outputs (and gradients) NumPy says it must give."""

    @classmethod
    def setUpClass(cls):
        cls._np_rand_state = np.random.get_state()
        cls._py_rand_state = random.getstate()
        cls.call_once = False
        cls.dtype = None
        cls.outputs = {}
        np.random.seed(123)
        random.seed(124)

    @classmethod
    def tearDownClass(cls):
        np.random.set_state(cls._np_rand_state)
        random.setstate(cls._py_rand_state)

    # -- building ---------------------------------------------------------------------------------
    def _attrs(self):
        return dict(getattr(self, "attrs", None) or {})

    def _append_ops(self, block):
        """Declare the inputs and outputs in ``block`` and append the op; returns (inputs, outputs)
        as ``{slot: [Variable]}``."""
        inputs, outputs = {}, {}
        for slot, name, value, lod in self._inputs():
            arr = np.asarray(value)
            var = block.create_var(name=name, shape=list(arr.shape), dtype=arr.dtype,
                                   lod_level=len(lod) if lod else 0)
            inputs.setdefault(slot, []).append(var)
        for slot, name, value, lod in self._outputs():
            kwargs = {"name": name, "lod_level": len(lod) if lod else 0}
            if isinstance(value, np.ndarray):
                kwargs["dtype"] = value.dtype
            outputs.setdefault(slot, []).append(block.create_var(**kwargs))
        op = block.append_op(type=self.op_type, inputs=inputs, outputs=outputs, attrs=self._attrs())
        self.op = op
        return inputs, outputs

    def _inputs(self):
        return _entries(getattr(self, "inputs", {}), _declared(self.op_type, "inputs"))

    def _outputs(self):
        return _entries(getattr(self, "outputs", {}), _declared(self.op_type, "outputs"))

    def _get_places(self):
        return [fluid.CPUPlace()]

    def feed_var(self, input_vars, place):
        return {name: _as_tensor(value, lod, place) for _, name, value, lod in self._inputs()}

    def _expected(self, no_check_set):
        skip = set(no_check_set or ())
        return [(slot, name, value, lod) for slot, name, value, lod in self._outputs()
                if slot not in skip and name not in skip]

    def _calc_output(self, place, parallel=False, no_check_set=None, loss=None, enable_inplace=None,
                     for_inplace_test=None):
        """Run the op once: ``([LoDTensor per listed output], [output Variables])``."""
        program = Program()
        with program_guard(program, Program()):
            _, outputs = self._append_ops(program.global_block())
        self.program = program
        fetch = [v for vs in outputs.values() for v in vs
                 if v.name not in set(no_check_set or ())]
        exe = fluid.Executor(place)
        outs = exe.run(program, feed=self.feed_var(None, place), fetch_list=fetch, return_numpy=False,
                       scope=core.Scope())
        return outs, fetch

    # -- checking outputs -------------------------------------------------------------------------
    def check_output_with_place(self, place, atol=0, no_check_set=None, equal_nan=False, check_dygraph=True,
                                inplace_atol=None):
        outs, fetch = self._calc_output(place, no_check_set=no_check_set)
        got = {var.name: out for var, out in zip(fetch, outs)}
        for slot, name, value, lod in self._expected(no_check_set):
            if name not in got:
                continue
            actual = got[name]
            actual_np = np.array(actual)
            expect = np.asarray(value)
            self.assertTrue(np.allclose(actual_np, expect, atol=atol, equal_nan=equal_nan),
                            "Output (%s) of %s has diff at %s: max |diff| %s\nexpected %s\ngot %s" % (
                                name, self.op_type, place, _max_diff(actual_np, expect), expect, actual_np))
            if lod:
                self.assertListEqual(actual.recursive_sequence_lengths(), lod,
                                     "Output (%s) of %s has a different LoD at %s" % (name, self.op_type, place))

        return outs, fetch

    def check_output(self, atol=1e-5, no_check_set=None, equal_nan=False, check_dygraph=True, inplace_atol=None,
                     check_compile_vs_runtime=True):
        for place in self._get_places():
            outs, fetch = self.check_output_with_place(place, atol, no_check_set, equal_nan, check_dygraph,
                                                       inplace_atol)
            if check_compile_vs_runtime and self.op_type not in _compile_vs_runtime_exempt():
                self.check_compile_vs_runtime(fetch, outs)

    def check_compile_vs_runtime(self, fetch_list, fetch_outs):
        """Each fetched output's LoD level at run time equals its variable's declared ``lod_level``."""
        for var, out in zip(fetch_list, fetch_outs):
            runtime = len(out.lod()) if isinstance(out, core.LoDTensor) else 0
            declared = var.lod_level if var.type == core.VarDesc.VarType.LOD_TENSOR else 0
            self.assertEqual(declared, runtime, "The lod_level of Output (%s) of %s is different between "
                             "compile-time and runtime (%s vs %s)" % (var.name, self.op_type, declared, runtime))

    def calc_output(self, place):
        outs, _ = self._calc_output(place)
        return outs

    def check_output_customized(self, checker):
        for place in self._get_places():
            outs = [np.array(o) for o in self.calc_output(place)]
            outs.sort(key=len)
            checker(outs)

    # -- checking gradients -----------------------------------------------------------------------
    def check_grad(self, inputs_to_check, output_names, no_grad_set=None, numeric_grad_delta=0.005,
                   in_place=False, max_relative_error=0.005, user_defined_grads=None, check_dygraph=True):
        for place in self._get_places():
            self.check_grad_with_place(place, inputs_to_check, output_names, no_grad_set, numeric_grad_delta,
                                       in_place, max_relative_error, user_defined_grads, check_dygraph)

    def check_grad_with_place(self, place, inputs_to_check, output_names, no_grad_set=None,
                              numeric_grad_delta=0.005, in_place=False, max_relative_error=0.005,
                              user_defined_grads=None, check_dygraph=True):
        if isinstance(output_names, str):
            output_names = [output_names]
        output_names = [self._output_var_name(n) for n in output_names]
        numeric = user_defined_grads or [
            self._numeric_gradient(place, name, output_names, numeric_grad_delta) for name in inputs_to_check]
        analytic = self._get_gradient(inputs_to_check, place, output_names, no_grad_set)
        self._assert_is_close(numeric, analytic, inputs_to_check, max_relative_error,
                              "Gradient Check On %s" % str(place))

    def _output_var_name(self, name):
        """Paddle's tests name an output by its var name or, for a single-var slot, by the slot."""
        for slot, var_name, _, _ in self._outputs():
            if name in (slot, var_name):
                return var_name
        return name

    def _loss_program(self, output_names):
        """The op and Paddle's loss over ``output_names``: (program, loss)."""
        program = Program()
        with program_guard(program, Program()):
            block = program.global_block()
            self._append_ops(block)
            means = []
            for name in output_names:
                out = block.var(name)
                mean = block.create_var(name=name + "@MEAN", dtype=out.dtype, shape=[1])
                block.append_op(type="mean", inputs={"X": [out]}, outputs={"Out": [mean]})
                means.append(mean)
            loss = means[0]
            if len(means) > 1:
                total = block.create_var(name="loss@SUM", dtype=loss.dtype, shape=[1])
                block.append_op(type="sum", inputs={"X": means}, outputs={"Out": [total]})
                loss = block.create_var(name="loss", dtype=total.dtype, shape=[1])
                block.append_op(type="scale", inputs={"X": [total]}, outputs={"Out": [loss]},
                                attrs={"scale": 1.0 / len(means)})
        return program, loss

    def _get_gradient(self, input_to_check, place, output_names, no_grad_set, parallel=False):
        if isinstance(output_names, str):
            output_names = [output_names]
        program, loss = self._loss_program(output_names)
        with program_guard(program, Program()):
            pairs = append_backward(loss=loss, parameter_list=list(input_to_check),
                                    no_grad_set=set(no_grad_set or ()))
        grads = {p.name if hasattr(p, "name") else p: g for p, g in pairs}
        missing = [n for n in input_to_check if grads.get(n) is None]
        if missing:
            raise AssertionError("append_backward gave no gradient for %s of op %s" % (missing, self.op_type))
        exe = fluid.Executor(place)
        outs = exe.run(program, feed=self.feed_var(None, place), fetch_list=[grads[n] for n in input_to_check],
                       scope=core.Scope())
        return [np.array(o) for o in outs]

    def _numeric_gradient(self, place, input_name, output_names, delta):
        """Central differences of the mean of the outputs' means with respect to one input."""
        program = Program()
        with program_guard(program, Program()):
            self._append_ops(program.global_block())
        feed = self.feed_var(None, place)
        # C order, so that ``flat`` below is a view of it: an input fed as a transposed (non-contiguous)
        # array would otherwise be perturbed in a copy, and its numeric gradient come out 0
        base = np.array(feed[input_name], order="C")
        dtype = base.dtype
        lod = feed[input_name].recursive_sequence_lengths()
        exe = fluid.Executor(place)
        scope = core.Scope()

        def loss_at(value):
            feed[input_name] = _as_tensor(value, lod, place)
            outs = exe.run(program, feed=feed, fetch_list=list(output_names), scope=scope)
            return sum(np.asarray(o, dtype=np.float64).mean() for o in outs) / len(outs)

        grad = np.zeros(base.shape, dtype=np.float64)
        flat = base.reshape(-1)
        step = dtype.type(delta) if dtype == np.float16 else delta
        for i in range(flat.size):
            orig = flat[i]
            flat[i] = orig + step
            up = loss_at(base.copy())
            flat[i] = orig - step
            down = loss_at(base.copy())
            flat[i] = orig
            grad.reshape(-1)[i] = (up - down) / (2.0 * delta)
        feed[input_name] = _as_tensor(base, lod, place)
        return grad.astype(dtype if dtype != np.float16 else np.float32)

    def _assert_is_close(self, numeric_grads, analytic_grads, names, max_relative_error, msg_prefix):
        for numeric, analytic, name in zip(numeric_grads, analytic_grads, names):
            numeric = np.asarray(numeric, dtype=np.float64)
            analytic = np.asarray(analytic, dtype=np.float64).reshape(numeric.shape)
            scale = np.abs(numeric)
            scale[scale < 1e-3] = 1
            diff = np.abs(numeric - analytic) / scale
            max_diff = float(np.max(diff)) if diff.size else 0.0
            self.assertLessEqual(max_diff, max_relative_error,
                                 "%s: gradient of %s (op %s): max relative difference %g > %g at index %s" % (
                                     msg_prefix, name, self.op_type, max_diff, max_relative_error,
                                     np.unravel_index(int(np.argmax(diff)), diff.shape) if diff.size else ()))

    # -- Paddle's small helpers tests call ---------------------------------------------------------
    @staticmethod
    def np_dtype_to_fluid_dtype(input):
        return input

    def fluid_dtype_to_np_dtype(self, dtype):
        return dtype

    @staticmethod
    def _numpy_to_lod_tensor(np_value, lod, place):
        return _as_tensor(np_value, lod, place)

    def try_call_once(self, data_type):
        if not self.call_once:
            self.call_once = True
            self.dtype = data_type

    def infer_dtype_from_inputs_outputs(self, inputs, outputs):
        for _, _, value, _ in _entries(inputs) + _entries(outputs):
            self.try_call_once(np.asarray(value).dtype)
            return


def _compile_vs_runtime_exempt():
    """Paddle's list of ops whose LoD level is set only at run time (its white_list, read from the tree)."""
    try:
        from white_list import compile_vs_runtime_white_list
        return compile_vs_runtime_white_list.COMPILE_RUN_OP_WHITE_LIST
    except ImportError:
        return ()


def _max_diff(actual, expect):
    try:
        return float(np.max(np.abs(actual.astype(np.float64) - expect.astype(np.float64))))
    except (ValueError, TypeError):
        return "shapes %s vs %s" % (actual.shape, expect.shape)


def get_numeric_gradient(place, scope, op, inputs, input_to_check, output_names, delta=0.005, in_place=False):
    """Paddle's module-level helper runs a C++ Operator on a scope: fluidist has no eager Operator."""
    raise NotImplementedError("op_test.get_numeric_gradient is not implemented in fluidist: it runs a "
                              "fluid.op.Operator eagerly on a scope; use OpTest.check_grad")
