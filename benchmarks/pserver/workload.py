"""What the fluidist side and the PyTorch side of the benchmark share, so that both run the same job:
the JSON configs (ids -> specs), the synthetic data, each trainer's batches, the model's parameters
and how they are cut into blocks and dealt to the servers.

Everything here is NumPy only (no fluidist graph, no torch), deterministic from the config seeds, so
every process can rebuild its share of the job instead of receiving it.
"""
import json
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG_DIR = os.path.join(HERE, "configs")
DATA_CONFIGS = os.path.join(CONFIG_DIR, "data_configurations.json")
MODEL_CONFIGS = os.path.join(CONFIG_DIR, "model_configurations.json")


def get_json_config(path, config_id):
    """The entry ``config_id`` of the JSON file ``path``, or an error listing the ids it has."""
    with open(path) as f:
        configs = json.load(f)
    if config_id not in configs:
        raise ValueError("no configuration %r in %s; it has: %s" % (config_id, path, ", ".join(sorted(configs))))
    return configs[config_id]


class SyntheticClassification:
    """``num_samples`` standard-normal float32 rows of ``input_dim`` features; int64 labels given by a
    fixed random linear teacher, so that the loss can actually fall."""

    def __init__(self, num_samples, input_dim, num_classes, seed=0):
        rng = np.random.RandomState(seed)
        self.x = rng.standard_normal((num_samples, input_dim)).astype(np.float32)
        teacher = rng.standard_normal((input_dim, num_classes)).astype(np.float32)
        self.y = np.argmax(self.x @ teacher, axis=1).astype(np.int64).reshape(-1, 1)
        self.input_dim = input_dim
        self.num_classes = num_classes

    def __len__(self):
        return len(self.x)


DATA_CLASSES = {"SyntheticClassification": SyntheticClassification}


class MLP:
    """Spec of a multilayer perceptron: fc layers with relu between them, softmax cross entropy,
    plain SGD. Parameters use fluid's layout and default names: ``fc_<i>.w_0`` of shape (in, out),
    ``fc_<i>.b_0`` of shape (out,)."""

    def __init__(self, input_dim, hidden, num_classes, learning_rate=0.01):
        self.input_dim = int(input_dim)
        self.sizes = [int(h) for h in hidden] + [int(num_classes)]
        self.num_classes = int(num_classes)
        self.learning_rate = float(learning_rate)

    def param_shapes(self):
        """[(name, shape)] sorted by name, the order in which the transpiler deals blocks out."""
        shapes, fan_in = [], self.input_dim
        for i, out in enumerate(self.sizes):
            shapes.append(("fc_%d.w_0" % i, (fan_in, out)))
            shapes.append(("fc_%d.b_0" % i, (out,)))
            fan_in = out
        return sorted(shapes)

    def num_params(self):
        return int(sum(np.prod(s) for _, s in self.param_shapes()))

    def initial_params(self, seed=0):
        """Xavier-uniform weights (fluid's default for fc) and zero biases, from ``seed``."""
        rng = np.random.RandomState(seed)
        out = {}
        for name, shape in self.param_shapes():
            if len(shape) == 2:
                limit = np.sqrt(6.0 / (shape[0] + shape[1]))
                out[name] = rng.uniform(-limit, limit, shape).astype(np.float32)
            else:
                out[name] = np.zeros(shape, np.float32)
        return out


MODEL_CLASSES = {"MLP": MLP}


def load_data(data_id, path=DATA_CONFIGS):
    cfg = get_json_config(path, data_id)
    cls = DATA_CLASSES.get(cfg.get("data_class"))
    if cls is None:
        raise ValueError("data configuration %r: unknown data_class %r (known: %s)"
                         % (data_id, cfg.get("data_class"), ", ".join(DATA_CLASSES)))
    return cls(**cfg["configurations"])


def load_model(model_id, path=MODEL_CONFIGS):
    cfg = get_json_config(path, model_id)
    cls = MODEL_CLASSES.get(cfg.get("model_class"))
    if cls is None:
        raise ValueError("model configuration %r: unknown model_class %r (known: %s)"
                         % (model_id, cfg.get("model_class"), ", ".join(MODEL_CLASSES)))
    return cls(**cfg["configurations"])


def check_compatible(data, model, data_id, model_id):
    if data.input_dim != model.input_dim or data.num_classes != model.num_classes:
        raise ValueError("data %r has %d features and %d classes but model %r expects %d and %d"
                         % (data_id, data.input_dim, data.num_classes, model_id, model.input_dim,
                            model.num_classes))


def trainer_batches(data, batch_size, ntrainer, rank, epochs):
    """Trainer ``rank``'s batches, dealt as PyTorch's launcher deals them (the DataLoader's batches,
    in order, round-robin over trainers), repeated ``epochs`` times. The last partial batch is
    dropped and every trainer gets the same count, since a sync step needs every trainer."""
    n_batches = len(data) // batch_size
    per_trainer = n_batches // ntrainer
    if per_trainer == 0:
        raise ValueError("%d samples make %d full batches of %d: fewer than the %d trainers"
                         % (len(data), n_batches, batch_size, ntrainer))
    mine = []
    for b in range(rank, per_trainer * ntrainer, ntrainer):
        s = slice(b * batch_size, (b + 1) * batch_size)
        mine.append((data.x[s], data.y[s]))
    return mine * epochs


def shard_plan(model, nserver, min_block_size=8192):
    """The parameter blocks and the server each lives on, as fluidist's transpiler cuts and deals
    them (``slice_variable`` with ``slice_var_up``, then RoundRobin): a list of dicts with block,
    param, row_begin, rows, shape and server (index)."""
    from fluidist.transpiler.slicing import slice_variable

    class _V:
        def __init__(self, name, shape):
            self.name, self.shape = name, shape

    shapes = dict(model.param_shapes())
    blocks = slice_variable([_V(n, s) for n, s in model.param_shapes()], nserver, min_block_size)
    counts = {}
    for b in blocks:
        counts[b.varname] = counts.get(b.varname, 0) + 1
    plan = []
    for i, b in enumerate(blocks):
        shape = shapes[b.varname]
        bshape = (b.rows,) + tuple(shape[1:]) if len(shape) >= 2 else (b.size,)
        name = "%s.block%d" % (b.varname, b.index) if counts[b.varname] > 1 else b.varname
        plan.append({"block": name, "param": b.varname, "row_begin": b.row_begin,
                     "rows": bshape[0], "shape": bshape, "server": i % nserver})
    return plan
