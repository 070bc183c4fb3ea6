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


class SyntheticClicks:
    """Click-log-like samples of a CTR model: ``num_slots`` categorical ids per sample (one per slot)
    drawn Zipf-like (a few ids are very frequent, most are rare, as in click logs), hashed into
    ``[0, id_space)``, and ``num_dense`` float features. Labels (0/1 clicks) come from a fixed random
    teacher over the ids and the dense features, so the loss can fall.

    ``x`` is a dict ``{"dense": (n, num_dense) float32, "ids": (n, num_slots) int64}``."""

    def __init__(self, num_samples, num_slots, num_dense, id_space, zipf_a=1.2, seed=0):
        rng = np.random.RandomState(seed)
        self.num_slots, self.num_dense, self.id_space = int(num_slots), int(num_dense), int(id_space)
        n = int(num_samples)
        # a Zipf rank per (sample, slot); rank r of slot s is hashed to one id of the shared id space
        ranks = np.minimum(rng.zipf(zipf_a, size=(n, self.num_slots)), 1 << 40).astype(np.int64)
        salt = (np.arange(self.num_slots, dtype=np.int64) + 1) * 1000003
        ids = (ranks * 2654435761 + salt) % self.id_space
        dense = rng.standard_normal((n, self.num_dense)).astype(np.float32)
        # teacher: a per-id weight from the id's hash plus a linear term of the dense features
        w_id = ((ids * 40503) % 1009).astype(np.float32) / 1009.0 - 0.5
        logit = w_id.sum(axis=1) + dense @ rng.standard_normal(self.num_dense).astype(np.float32)
        self.y = (logit > 0).astype(np.int64).reshape(-1, 1)
        self.x = {"dense": dense, "ids": ids}
        self.input_dim = None
        self.num_classes = 2

    def __len__(self):
        return len(self.y)

    def rows_of(self, s):
        return {"dense": self.x["dense"][s], "ids": self.x["ids"][s]}


DATA_CLASSES = {"SyntheticClassification": SyntheticClassification, "SyntheticClicks": SyntheticClicks}


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


class CTR:
    """Spec of a CTR model as Paddle's CTR-DNN builds it: ``num_slots`` sparse slots looked up in one
    shared embedding table of ``table_rows`` x ``embedding_dim`` (``is_sparse=True``,
    ``is_distributed=True``: the table lives on the pservers only, row ``i`` on pserver ``i % N``), the
    slots' embeddings concatenated with ``num_dense`` dense features, an MLP (relu) on top, softmax
    cross entropy over 2 classes, plain SGD (or ``optimizer: "adagrad"``: Adagrad for every parameter,
    the table's accumulator then rows on the pservers too). The dense parameters use fluid's names
    ``fc_<i>.w_0`` / ``fc_<i>.b_0``; the table is ``ctr_table``."""

    TABLE = "ctr_table"

    OPTIMIZERS = ("sgd", "adagrad")

    def __init__(self, num_slots, num_dense, table_rows, embedding_dim, hidden, learning_rate=0.01,
                 init_scale=0.01, optimizer="sgd"):
        if optimizer not in self.OPTIMIZERS:
            raise ValueError("CTR: optimizer must be one of %s, got %r" % (self.OPTIMIZERS, optimizer))
        self.optimizer = optimizer
        self.num_slots, self.num_dense = int(num_slots), int(num_dense)
        self.table_rows, self.embedding_dim = int(table_rows), int(embedding_dim)
        self.input_dim = self.num_slots * self.embedding_dim + self.num_dense
        self.sizes = [int(h) for h in hidden] + [2]
        self.num_classes = 2
        self.learning_rate = float(learning_rate)
        self.init_scale = float(init_scale)

    def param_shapes(self):
        """The dense parameters [(name, shape)] sorted by name (the table is not among them)."""
        return MLP(self.input_dim, self.sizes[:-1], 2).param_shapes()

    def num_params(self):
        """Dense parameters plus the table's."""
        return int(sum(np.prod(s) for _, s in self.param_shapes())) + self.table_rows * self.embedding_dim

    def initial_params(self, seed=0):
        return MLP(self.input_dim, self.sizes[:-1], 2).initial_params(seed)


MODEL_CLASSES = {"MLP": MLP, "CTR": CTR}


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
    if isinstance(model, CTR) or isinstance(data, SyntheticClicks):
        if not (isinstance(model, CTR) and isinstance(data, SyntheticClicks)):
            raise ValueError("data %r and model %r do not go together: a CTR model needs click data "
                             "(SyntheticClicks) and click data a CTR model" % (data_id, model_id))
        if (data.num_slots, data.num_dense) != (model.num_slots, model.num_dense) or data.id_space > model.table_rows:
            raise ValueError("data %r has %d slots, %d dense features and ids below %d but model %r expects %d, %d "
                             "and a table of %d rows" % (data_id, data.num_slots, data.num_dense, data.id_space,
                                                         model_id, model.num_slots, model.num_dense, model.table_rows))
        return
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
        mine.append((data.rows_of(s) if hasattr(data, "rows_of") else data.x[s], data.y[s]))
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
