"""``fluid.incubate.data_generator``: Python scripts that turn raw lines into the MultiSlot text
format a Dataset reads (used as the dataset's pipe command)::

    class CriteoReader(dg.MultiSlotDataGenerator):
        def generate_sample(self, line):
            def reader():
                label, *feats = line.split("\\t")
                yield [("ids", [hash(f) % 10**6 for f in feats]), ("label", [int(label)])]
            return reader

    if __name__ == "__main__":
        CriteoReader().run_from_stdin()

Each sample is a list of ``(slot name, [values])``; a line of output is, for every slot in order,
the number of values followed by the values.
"""
import sys

__all__ = ["MultiSlotDataGenerator", "MultiSlotStringDataGenerator"]


class DataGenerator:
    """Base class: override ``generate_sample`` (and optionally ``generate_batch``)."""

    def __init__(self):
        self._proto_info = None
        self.batch_size_ = 32
        self._line_limit = None

    def _set_line_limit(self, line_limit):
        if not isinstance(line_limit, int):
            raise ValueError("line_limit%s must be in int type" % type(line_limit))
        if line_limit < 1:
            raise ValueError("line_limit can not less than 1")
        self._line_limit = line_limit

    def set_batch(self, batch_size):
        """How many samples ``generate_batch`` gets at a time."""
        self.batch_size_ = batch_size

    def _emit(self, samples, out):
        for sample in self.generate_batch(samples)():
            out.write(self._gen_str(sample))

    def _run(self, lines, out):
        batch = []
        for line in lines:
            for sample in self.generate_sample(line)():
                if sample is None:
                    continue
                batch.append(sample)
                if len(batch) == self.batch_size_:
                    self._emit(batch, out)
                    batch = []
        if batch:
            self._emit(batch, out)

    def run_from_memory(self):
        """Write the samples of ``generate_sample(None)`` to stdout (for debugging and benchmarks)."""
        self._run([None], sys.stdout)

    def run_from_stdin(self):
        """Read lines from stdin, write their samples to stdout in the MultiSlot text format."""
        self._run(sys.stdin, sys.stdout)

    def _gen_str(self, line):
        raise NotImplementedError("pls use MultiSlotDataGenerator or MultiSlotStringDataGenerator")

    def generate_sample(self, line):
        """Return a function of no arguments yielding samples ``[(name, [feasign, ...]), ...]``."""
        raise NotImplementedError("Please rewrite this function to return a list or tuple: "
                                  "[(name, [feasign, ...]), ...] or ((name, [feasign, ...]), ...)")

    def generate_batch(self, samples):
        """Return a function of no arguments yielding the samples of a batch (by default as given)."""
        def local_iter():
            for sample in samples:
                yield sample
        return local_iter


def _check_sample(line):
    if not isinstance(line, (list, tuple)):
        raise ValueError("the output of process() must be in list or tuple type, got %r" % type(line).__name__)


class MultiSlotStringDataGenerator(DataGenerator):
    """Samples whose values are strings, written as they are."""

    def _gen_str(self, line):
        _check_sample(line)
        parts = []
        for name, elements in line:
            parts.append(str(len(elements)))
            parts.extend(elements)
        return " ".join(parts) + "\n"


class MultiSlotDataGenerator(DataGenerator):
    """Samples whose values are ints (``uint64`` slots) or floats (a float anywhere makes the slot
    ``float``); every sample must give the same slots in the same order, none of them empty."""

    def _gen_str(self, line):
        _check_sample(line)
        first = self._proto_info is None
        info = [] if first else list(self._proto_info)
        if not first and len(line) != len(info):
            raise ValueError("the complete field set of two given line are inconsistent.")
        parts = []
        for index, item in enumerate(line):
            name, elements = item
            if not isinstance(name, str):
                raise ValueError("name%s must be in str type" % type(name))
            if not isinstance(elements, list):
                raise ValueError("elements%s must be in list type" % type(elements))
            if not elements:
                raise ValueError("the elements of each field can not be empty, you need padding it in process().")
            if first:
                info.append((name, "uint64"))
            elif name != info[index][0]:
                raise ValueError("the field name of two given line are not match: require<%s>, get<%s>."
                                 % (info[index][0], name))
            parts.append(str(len(elements)))
            for elem in elements:
                if isinstance(elem, float):
                    info[index] = (name, "float")
                elif not isinstance(elem, int) or isinstance(elem, bool):
                    raise ValueError("the type of element%s must be in int or float" % type(elem))
                parts.append(str(elem))
        self._proto_info = info
        return " ".join(parts) + "\n"
