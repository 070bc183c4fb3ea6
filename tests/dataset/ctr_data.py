"""Criteo-like files for the dataset tests: ``label<TAB>d1,d2,d3<TAB>c1 c2 c3 c4 c5`` per line, the
label drawn from a logistic model of the categories (so a CTR model can learn it), and the
``MultiSlotDataGenerator`` script that turns such lines into the slots dense / ids / label."""
import os

import numpy as np

NUM_CATS = 40
GENERATOR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ctr_generator.py")


def write_files(dirname, files=4, lines=120, seed=0):
    rng = np.random.RandomState(seed)
    weight = rng.randn(NUM_CATS) * 2.0
    paths = []
    for k in range(files):
        path = os.path.join(dirname, "part-%05d" % k)
        with open(path, "w") as f:
            for _ in range(lines):
                cats = rng.randint(0, NUM_CATS, size=5)
                dense = rng.rand(3)
                p = 1 / (1 + np.exp(-(weight[cats].sum() / 2 + dense[0] - 0.5)))
                label = int(rng.rand() < p)
                f.write("%d\t%s\t%s\n" % (label, ",".join("%.4f" % d for d in dense), " ".join("c%d" % c for c in cats)))
        paths.append(path)
    return paths


def parse(line):
    """(dense floats, category ids, label) of one raw line."""
    label, dense, cats = line.rstrip("\n").split("\t")
    return [float(d) for d in dense.split(",")], [int(c[1:]) for c in cats.split()], [int(label)]


def raw_instances(files):
    """The parsed instances of ``files``, in order."""
    out = []
    for path in files:
        with open(path) as f:
            out += [parse(line) for line in f]
    return out


def hand_feeds(instances, batch):
    """Feeds of the instances in batches, built by hand (LoD of the ids from their counts)."""
    import fluidist as fluid
    for i in range(0, len(instances), batch):
        part = instances[i:i + batch]
        ids = np.array([c for _, cats, _ in part for c in cats], np.int64).reshape(-1, 1)
        yield {"dense": np.array([d for d, _, _ in part], np.float32),
               "ids": fluid.create_lod_tensor(ids, [[len(c) for _, c, _ in part]], fluid.CPUPlace()),
               "label": np.array([l for _, _, l in part], np.int64)}
