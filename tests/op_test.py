"""Helpers for op tests: run one op through a real Program + Executor, and check its gradient
(built by append_backward from the registered grad ops) against central finite differences."""
import numpy as np

import fluidist as fluid
from fluidist.backward import append_backward


def _declare(block, name, value, stop_gradient):
    value = np.asarray(value)
    return block.create_var(name=name, shape=value.shape, dtype=value.dtype.name, stop_gradient=stop_gradient)


def build_op(op_type, inputs, attrs=None, outputs=("Out",), grad_inputs=(), lods=None):
    """A program holding one ``op_type`` op. ``inputs``: {slot: array or [(name, array), ...]}.

    Returns (program, feed, {slot: [output var names]})."""
    prog = fluid.Program()
    block = prog.global_block()
    feed, slot_names = {}, {}
    for slot, val in inputs.items():
        if isinstance(val, list):
            names = []
            for name, arr in val:
                _declare(block, name, arr, name not in grad_inputs and slot not in grad_inputs)
                feed[name] = arr
                names.append(name)
            slot_names[slot] = names
        else:
            name = slot.lower() + "_in"
            _declare(block, name, val, slot not in grad_inputs)
            feed[name] = val
            slot_names[slot] = [name]
    out_names = {}
    for slot in outputs:
        if isinstance(slot, tuple):
            slot, n = slot
        else:
            n = 1
        names = ["%s_out%d" % (slot.lower(), i) for i in range(n)]
        for nm in names:
            block.create_var(name=nm, stop_gradient=False)
        out_names[slot] = names
    block.append_op(op_type, inputs=slot_names, outputs=out_names, attrs=attrs or {})
    if lods:
        for name, lod in lods.items():
            t = fluid.LoDTensor(np.asarray(feed[name]))
            t.set_lod(lod)
            feed[name] = t
    return prog, feed, out_names


def append_op(op_type, inputs, attrs=None, outputs=("Out",), dtype=None):
    """The op itself appended to the program being built, its first output returned: for float64
    gradient checks of ops whose Paddle 1.8 layer takes float32 only (``sequence_pool``,
    ``im2sequence``). ``inputs``: {slot: Variable}; the outputs get ``dtype`` (the first input's)."""
    helper = fluid.layers.LayerHelper(op_type)
    first = next(iter(inputs.values()))
    outs = {slot: [helper.create_variable_for_type_inference(dtype or first.dtype)] for slot in outputs}
    helper.append_op(op_type, inputs={k: [v] for k, v in inputs.items()}, outputs=outs, attrs=attrs or {})
    return outs[outputs[0]][0]


def sequence_pool_op(x, pool_type):
    """``layers.sequence_pool(x, pool_type)`` for any float dtype (the op, without the layer's check)."""
    return append_op("sequence_pool", {"X": x}, {"pooltype": pool_type.upper(), "is_test": False, "pad_value": 0.0},
                     outputs=("Out", "MaxIndex"))


def run_op(op_type, inputs, attrs=None, outputs=("Out",), lods=None):
    """Run one op; returns {slot: [arrays]}."""
    prog, feed, out_names = build_op(op_type, inputs, attrs, outputs, lods=lods)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    flat = [n for names in out_names.values() for n in names]
    res = exe.run(prog, feed=feed, fetch_list=flat, scope=scope)
    out, i = {}, 0
    for slot, names in out_names.items():
        out[slot] = res[i:i + len(names)]
        i += len(names)
    return out


def check_grad(op_type, inputs, wrt, attrs=None, out_slot="Out", outputs=None, eps=1e-6, rtol=1e-4,
               atol=1e-6, lods=None, seed=0):
    """Compare gradients of ``sum(Out * W)`` (W fixed random) w.r.t. the inputs named in ``wrt``
    (slots or input names) from the grad ops with central finite differences. Use float64 inputs."""
    outputs = outputs or (out_slot,)
    prog, feed, out_names = build_op(op_type, inputs, attrs, outputs, grad_inputs=wrt, lods=lods)
    block = prog.global_block()
    out_name = out_names[out_slot][0]
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    # weights shaped like the output: run forward once to learn the shape
    fwd_out = exe.run(prog, feed=feed, fetch_list=[out_name], scope=scope)[0]
    rng = np.random.RandomState(seed)
    w = rng.uniform(0.5, 1.5, fwd_out.shape).astype(fwd_out.dtype)
    block.create_var(name="w_fixed", shape=w.shape, dtype=w.dtype.name, stop_gradient=True)
    block.var(out_name).shape = w.shape
    block.var(out_name).dtype = w.dtype.name
    block.create_var(name="weighted", shape=w.shape, dtype=w.dtype.name)
    block.create_var(name="loss", shape=(1,), dtype=w.dtype.name)
    block.append_op("elementwise_mul", inputs={"X": [out_name], "Y": ["w_fixed"]}, outputs={"Out": ["weighted"]})
    block.append_op("reduce_sum", inputs={"X": ["weighted"]}, outputs={"Out": ["loss"]},
                    attrs={"reduce_all": True, "dim": [0], "keep_dim": False})
    feed = dict(feed)
    feed["w_fixed"] = w
    loss = block.var("loss")
    append_backward(loss)
    wrt_names = []
    for key in wrt:
        if key in out_names or key in inputs and not isinstance(inputs[key], list):
            wrt_names.append(key.lower() + "_in")
        elif key in inputs:
            wrt_names.extend(n for n, _ in inputs[key])
        else:
            wrt_names.append(key)
    grads = exe.run(prog, feed=feed, fetch_list=[n + "@GRAD" for n in wrt_names], scope=scope)

    fwd = fluid.Program()
    fwd_block = fwd.global_block()
    for v in block.vars.values():
        fwd_block._clone_variable(v, force_persistable=False)
    for op in block.ops:
        if op.attr("op_role") in (0, 256):
            fwd_block.append_op(op.type, inputs=op.inputs, outputs=op.outputs, attrs=op.attrs)

    def loss_at(f):
        return float(exe.run(fwd, feed=f, fetch_list=["loss"], scope=fluid.Scope())[0].reshape(-1)[0])

    for name, analytic in zip(wrt_names, grads):
        arr = _as_array(feed[name])
        idxs = list(np.ndindex(arr.shape))
        num = _numeric_grad(lambda a: loss_at(_with_value(feed, name, a)), arr, idxs, eps)
        np.testing.assert_allclose(analytic, num, rtol=rtol, atol=atol,
                                   err_msg="gradient of %s w.r.t. %s" % (op_type, name))


def _as_array(value):
    return np.array(value.__array__() if isinstance(value, fluid.LoDTensor) else value, dtype=np.float64)


def _with_value(feed, name, a):
    """``feed`` with ``name`` set to ``a`` (keeping the LoD of a LoDTensor)."""
    f = dict(feed)
    base = feed[name]
    if isinstance(base, fluid.LoDTensor):
        t = fluid.LoDTensor(a)
        t.set_lod(base.lod())
        f[name] = t
    else:
        f[name] = a
    return f


def _numeric_grad(loss_of, arr, idxs, eps):
    """Central differences of ``loss_of(array)`` at the positions ``idxs`` of ``arr``."""
    num = np.zeros_like(arr)
    for idx in idxs:
        for sign in (1, -1):
            a = arr.copy()
            a[idx] += sign * eps
            num[idx] += sign * loss_of(a)
        num[idx] /= 2 * eps
    return num


def run_program(main, startup, feed, fetch, **kwargs):
    """Run ``startup`` then ``main`` once in a fresh scope; the fetched values."""
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    return exe.run(main, feed=feed, fetch_list=fetch, scope=scope, **kwargs)


def check_program_grad(build, feed, wrt, eps=1e-6, rtol=1e-5, atol=1e-8, max_elems=None, seed=1):
    """Gradients of a whole program against central finite differences.

    ``build()`` (called under a fresh program guard) builds the forward program and returns the scalar
    loss; ``feed``: its feed (arrays or LoDTensors); ``wrt``: the names (fed variables or parameters)
    to check. Returns the analytic gradients (a dict). Use float64 programs."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = seed
    with fluid.program_guard(main, startup):
        loss = build()
        fwd = main.clone()
        append_backward(loss)
    main.lint()
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    params = {n: np.array(scope.find_var(n).get_tensor()) for n in scope.local_var_names()
              if scope.find_var(n).value() is not None}
    grads = exe.run(main, feed=feed, fetch_list=[n + "@GRAD" for n in wrt], scope=scope)

    def loss_at(f, p):
        s = fluid.Scope()
        for k, v in p.items():
            s.var(k).get_tensor().set(v)
        return float(np.asarray(exe.run(fwd, feed=f, fetch_list=[loss.name], scope=s)[0]).reshape(-1)[0])

    out = {}
    for name, analytic in zip(wrt, grads):
        in_feed = name in feed
        arr = _as_array(feed[name] if in_feed else params[name])
        idxs = list(np.ndindex(arr.shape))
        if max_elems is not None and len(idxs) > max_elems:
            pick = np.random.RandomState(0).choice(len(idxs), max_elems, replace=False)
            idxs = [idxs[i] for i in pick]
        num = _numeric_grad(lambda a: loss_at(_with_value(feed, name, a), params) if in_feed else
                            loss_at(feed, dict(params, **{name: a})), arr, idxs, eps)
        got = np.asarray(analytic, dtype=np.float64).reshape(arr.shape)
        sel = tuple(np.array(idxs).T) if idxs else ()
        np.testing.assert_allclose(got[sel], num[sel], rtol=rtol, atol=atol, err_msg="gradient w.r.t. %s" % name)
        out[name] = got
    return out
