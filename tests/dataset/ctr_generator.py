"""The pipe command of the dataset tests: raw Criteo-like lines in, MultiSlot lines out."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fluidist.incubate.data_generator as dg  # noqa: E402
from ctr_data import parse  # noqa: E402


class CtrReader(dg.MultiSlotDataGenerator):
    def generate_sample(self, line):
        def reader():
            dense, ids, label = parse(line)
            yield [("dense", dense), ("ids", ids), ("label", label)]
        return reader


if __name__ == "__main__":
    CtrReader().run_from_stdin()
