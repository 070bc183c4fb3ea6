"""Runs the models of ``tests/models/zoo`` with either framework: fluidist, or paddlepaddle 1.8.

Each model file is written as a Paddle 1.x user writes it, with one changed import: its only
mention of fluidist is the line ``import fluidist as fluid``. ``load_model(name, "paddle")``
swaps that line for ``import paddle.fluid as fluid`` and nothing else, so the Paddle reference
runs (``tools/paddle18_models.py``, under Python 3.8 with paddlepaddle 1.8.5) execute the very same
model source. This file only uses the fluid API the two share, and plain NumPy.

A model file defines:
    build(**options) -> dict(main, startup, test_program, loss, fetches={name: var}[,
        infer=dict(program, fetches={name: var})])
    batch(step, n, **options) -> {feed name: array, or (array, sequence lengths)}  (NumPy only)
and optionally ``infer_batch(n, **options)`` for its ``infer`` program.

Initial values: both frameworks draw random initialisers differently, so for the comparison with
Paddle every parameter that the startup program fills from a random op is overwritten, after
startup, by a value computed here from its name and shape (``reference_value``). Parameters with a
constant or a given initial value keep what startup gave them; that part is compared too.
"""
import os
import types
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ZOO = os.path.join(HERE, "zoo")
IMPORT_LINE = "import fluidist as fluid"
PADDLE_IMPORT_LINE = "import paddle.fluid as fluid"
RANDOM_INIT_OPS = ("uniform_random", "gaussian_random", "truncated_gaussian_random")

# case name -> (model file, build options, batch size, steps compared with Paddle)
CASES = {
    "mnist": ("mnist", {}, 8, 5),
    "recognize_digits_conv": ("recognize_digits", {"nn_type": "conv"}, 8, 5),
    "ctr": ("ctr", {}, 8, 5),
    "simnet_bow_dense": ("simnet_bow", {"is_sparse": False, "is_distributed": False}, 8, 5),
    "simnet_bow_sparse": ("simnet_bow", {"is_sparse": True, "is_distributed": False}, 8, 5),
    "simnet_bow_dtable": ("simnet_bow", {"is_sparse": True, "is_distributed": True}, 8, 5),
    "text_classification": ("text_classification", {}, 8, 5),
    "se_resnext": ("se_resnext", {}, 4, 4),
    # a learning rate high enough to saturate the softmax: where Paddle's clamps decide the loss
    "se_resnext_high_lr": ("se_resnext", {"lr": 10.0}, 4, 5),
    "transformer": ("transformer", {}, 4, 5),
    "recommender_system": ("recommender_system", {}, 8, 5),
    "understand_sentiment_conv": ("understand_sentiment", {"net": "conv"}, 8, 5),
    "understand_sentiment_lstm": ("understand_sentiment", {"net": "stacked_lstm", "lr": 0.05}, 8, 5),
    "label_semantic_roles": ("label_semantic_roles", {}, 4, 5),
    "machine_translation": ("machine_translation", {}, 4, 5),
}


def load_model(name, framework="fluidist"):
    """The model module ``zoo/<name>.py``, its fluid being fluidist or (framework="paddle") paddle.fluid."""
    path = os.path.join(ZOO, name + ".py")
    with open(path) as f:
        src = f.read()
    if src.count(IMPORT_LINE) != 1:
        raise ValueError("%s must import fluidist exactly once, as %r" % (path, IMPORT_LINE))
    if framework == "paddle":
        src = src.replace(IMPORT_LINE, PADDLE_IMPORT_LINE)
        if "fluidist" in src:
            raise ValueError("%s mentions fluidist outside its import line" % path)
    elif framework != "fluidist":
        raise ValueError("framework must be 'fluidist' or 'paddle', got %r" % framework)
    module = types.ModuleType("zoo_" + name)
    module.__file__ = path
    exec(compile(src, path, "exec"), module.__dict__)
    return module


def reference_value(name, shape, dtype="float32"):
    """A Xavier-uniform draw seeded by the parameter's name: the same in every framework."""
    shape = tuple(int(d) for d in shape)
    if len(shape) >= 2:
        receptive = int(np.prod(shape[2:])) if len(shape) > 2 else 1
        fan_in, fan_out = shape[1] * receptive, shape[0] * receptive
        if len(shape) == 2:
            fan_in, fan_out = shape[0], shape[1]
    else:
        fan_in = fan_out = max(shape[0] if shape else 1, 1)
    limit = np.sqrt(6.0 / (fan_in + fan_out))
    rng = np.random.RandomState(zlib.crc32(name.encode("utf-8")))
    return rng.uniform(-limit, limit, shape).astype(dtype)


def randomly_initialised(startup):
    """Names the startup program fills from a random op."""
    names = []
    for op in startup.global_block().ops:
        if op.type in RANDOM_INIT_OPS:
            names.extend(op.output_arg_names)
    return names


def set_reference_values(fluid, startup, scope, place):
    """Overwrite every randomly initialised variable with ``reference_value``; returns the names."""
    names = randomly_initialised(startup)
    for name in names:
        var = scope.find_var(name)
        if var is None:     # a distributed table lives on the pservers only
            continue
        old = np.array(var.get_tensor())
        var.get_tensor().set(reference_value(name, old.shape, old.dtype), place)
    return names


def _levels(lens):
    """Sequence lengths as a list of LoD levels (a model may give one level as a flat list)."""
    return [list(map(int, l)) for l in lens] if lens and isinstance(lens[0], (list, tuple)) else [list(lens)]


def to_feed(fluid, data, place):
    """Arrays as they are; (array, lengths) as a LoDTensor (lengths: one level, or a list of levels)."""
    feed = {}
    for name, value in data.items():
        if isinstance(value, tuple):
            feed[name] = fluid.create_lod_tensor(np.asarray(value[0]), _levels(value[1]), place)
        else:
            feed[name] = np.asarray(value)
    return feed


def split_batch(data, part, parts):
    """Trainer ``part``'s share of a batch: rows (or sequences, for LoD inputs) in equal slices."""
    out = {}
    for name, value in data.items():
        if isinstance(value, tuple):
            arr, lens = value
            if len(_levels(lens)) > 1:
                raise ValueError("split_batch: %r has %d LoD levels; only one is split" % (name, len(lens)))
            per = len(lens) // parts
            offsets = np.concatenate([[0], np.cumsum(lens)]).astype(int)
            lo, hi = part * per, (part + 1) * per
            out[name] = (arr[offsets[lo]:offsets[hi]], list(lens[lo:hi]))
        else:
            per = len(value) // parts
            out[name] = value[part * per:(part + 1) * per]
    return out


def case_model(case, framework="fluidist"):
    """(model module, options, batch size, steps) of a case."""
    name, options, batch, steps = CASES[case]
    return load_model(name, framework), dict(options), batch, steps


def pack(values):
    """A long, mostly-zero list (auc's stat buckets) as its size and nonzero entries; others as they are."""
    nonzero = [(i, v) for i, v in enumerate(values) if v != 0]
    if len(values) > 64 and len(nonzero) * 4 < len(values):
        return {"size": len(values), "nonzero": [[i, v] for i, v in nonzero]}
    return values


def unpack(packed):
    if isinstance(packed, dict):
        values = [0.0] * packed["size"]
        for i, v in packed["nonzero"]:
            values[int(i)] = v
        return values
    return packed


def fetch_names(net):
    return sorted(net["fetches"])


def run_steps(fluid, exe, net, model, options, steps, batch_size, scope, place, part=0, parts=1,
              program=None, start_step=0):
    """Train ``steps`` steps of ``program`` (the net's main by default) on share ``part`` of each batch;
    returns {"loss": [...], fetch name: [...]}, each value as a list of floats."""
    program = net["main"] if program is None else program
    names = fetch_names(net)
    history = {"loss": []}
    history.update({n: [] for n in names})
    for step in range(start_step, start_step + steps):
        data = model.batch(step, batch_size, **options)
        if parts > 1:
            data = split_batch(data, part, parts)
        out = exe.run(program, feed=to_feed(fluid, data, place),
                      fetch_list=[net["loss"]] + [net["fetches"][n] for n in names], scope=scope,
                      return_numpy=False)
        # a data-parallel program fetches one loss per place: their mean is the loss of the batch
        history["loss"].append(float(np.mean(np.array(out[0]))))
        for n, v in zip(names, out[1:]):
            history[n].append(pack(np.array(v).reshape(-1).astype(float).tolist()))
    return history


EVAL_STEP = 100000     # data seeds of this "step" are never trained on


def evaluate(fluid, exe, net, model, options, scope, place, n=32, program=None):
    """The loss of the net's test program (or of ``program``, run once) on a fixed batch that
    training never sees."""
    data = model.batch(EVAL_STEP, n, **options)
    program = net["test_program"] if program is None else program
    out = exe.run(program, feed=to_feed(fluid, data, place), fetch_list=[net["loss"]], scope=scope,
                  return_numpy=False)
    return float(np.array(out[0]).reshape(-1)[0])


class Started:
    """A case's model built, and its startup program run in a fresh scope on the CPU."""

    def __init__(self, fluid, case, framework="fluidist"):
        self.model, self.options, self.batch, self.steps = case_model(case, framework)
        self.net = self.model.build(**self.options)
        self.place = fluid.CPUPlace()
        self.exe = fluid.Executor(self.place)
        self.scope = fluid.Scope()
        self.exe.run(self.net["startup"], scope=self.scope)

    def run_steps(self, fluid, steps, batch_size, **kw):
        return run_steps(fluid, self.exe, self.net, self.model, self.options, steps, batch_size, self.scope,
                         self.place, **kw)

    def evaluate(self, fluid, **kw):
        return evaluate(fluid, self.exe, self.net, self.model, self.options, self.scope, self.place, **kw)


def initial_evaluation(fluid, case):
    """``evaluate`` on the initial values of the framework's own startup program."""
    return Started(fluid, case).evaluate(fluid)


def run_infer(fluid, exe, net, model, options, batch_size, scope, place):
    """Run the net's inference program (if any) once; each fetch as (values, LoD) lists."""
    infer = net.get("infer")
    if infer is None:
        return None
    data = model.infer_batch(batch_size, **options)
    out = exe.run(infer["program"], feed=to_feed(fluid, data, place),
                  fetch_list=[infer["fetches"][n] for n in sorted(infer["fetches"])], scope=scope,
                  return_numpy=False)
    result = {}
    for n, t in zip(sorted(infer["fetches"]), out):
        result[n] = {"values": np.array(t).reshape(-1).astype(float).tolist(), "lod": [list(l) for l in t.lod()]}
    return result


def run_local(fluid, case, framework="fluidist", steps=None, batch_size=None, reference_init=True):
    """One process, the whole batch: what the Paddle reference records and the tests compare."""
    c = Started(fluid, case, framework)
    steps = c.steps if steps is None else steps
    batch_size = c.batch if batch_size is None else batch_size
    replaced = set_reference_values(fluid, c.net["startup"], c.scope, c.place) if reference_init else []
    result = c.run_steps(fluid, steps, batch_size)
    result["infer"] = run_infer(fluid, c.exe, c.net, c.model, c.options, batch_size, c.scope, c.place)
    result["reference_init"] = sorted(replaced)
    return result, c.net


def uses_batch_norm(net):
    return any(op.type == "batch_norm" for op in net["main"].global_block().ops)


def run_reference_for_trainers(fluid, case, steps, batch_size, trainers):
    """What ``trainers`` synchronous trainers, each on its share of every batch, must reproduce: a
    local run on the whole batch, or, where batch_norm normalises each trainer's share by its own
    statistics, a data-parallel run over as many places as trainers (gradients averaged, each place
    on its share). Initial values are the framework's own, as the trainers get them."""
    c = Started(fluid, case)
    program = c.net["main"]
    if uses_batch_norm(c.net):
        program = fluid.CompiledProgram(program).with_data_parallel(loss_name=c.net["loss"].name,
                                                                    places=[c.place] * trainers)
    return c.run_steps(fluid, steps, batch_size, program=program), c.net


def parameters(net):
    """[(name, shape)] of the main program's parameters, sorted by name."""
    return sorted((p.name, [int(d) for d in p.shape]) for p in net["main"].global_block().all_parameters())


def forward_op_types(program):
    """Op types of the forward part of a program (ops before the first backward op)."""
    types_ = []
    for op in program.global_block().ops:
        role = op.attr("op_role") if op.has_attr("op_role") else 0
        if int(role) & 0x0001 or int(role) & 0x0002:       # Backward, Optimize
            break
        types_.append(op.type)
    return types_
