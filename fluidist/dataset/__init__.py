"""``fluid.dataset``: the data pipeline of parameter-server CTR jobs (Paddle 1.x names).

::

    dataset = fluid.DatasetFactory().create_dataset("InMemoryDataset")
    dataset.set_use_var([ids, dense, label])       # the slots of every line, in this order
    dataset.set_pipe_command("python ctr_reader.py")   # a MultiSlotDataGenerator script (default: cat)
    dataset.set_batch_size(32)
    dataset.set_thread(2)
    dataset.set_filelist(fleet.split_files(files))
    dataset.load_into_memory()
    dataset.global_shuffle(fleet)                  # records move between the workers
    exe.train_from_dataset(fleet.main_program, dataset, fetch_list=[loss], fetch_info=["loss"])
    dataset.release_memory()

Files are read by ``set_thread`` threads, each file through the pipe command in its own process
(so a Python data generator runs in parallel), and parsed into column-stored records
(:mod:`.records`; a bad line is an error naming the file and line). ``InMemoryDataset`` keeps the
records of all files, in file order, until ``release_memory``; ``QueueDataset`` reads its files
again each time it is trained on. Shuffles draw from NumPy's global random state
(``np.random.seed`` makes them repeatable).

Batches: thread ``t`` of ``T`` gets files ``t, t+T, ...`` (QueueDataset) or the ``t``-th
contiguous share of the records (InMemoryDataset) and cuts them into batches of ``batch_size``
(the last one may be smaller).

Not supported (the setters that would turn them on raise NotImplementedError): instance ids and
content (``set_parse_ins_id``, ``set_parse_content``, ``set_parse_logkey``, ``set_merge_by_lineid``,
pv merging), HDFS (``set_hdfs_config``), BoxPS (``BoxPSDataset``) and
PSLib's local tables. ``set_fleet_send_batch_size``, ``set_fleet_send_sleep_seconds`` and
``set_queue_num`` are kept but change nothing (records travel as one message per worker pair).
"""
import threading

import numpy as np

from ..compat import refused_class
from .records import DataFormatError, Records, Slot  # noqa: F401
from .source import DataSourceError, read_records  # noqa: F401

__all__ = ["DatasetFactory", "InMemoryDataset", "QueueDataset", "FileInstantDataset", "BoxPSDataset"]


class DatasetFactory:
    """``DatasetFactory().create_dataset("InMemoryDataset" | "QueueDataset" | "FileInstantDataset")``."""

    def create_dataset(self, datafeed_class="QueueDataset"):
        kinds = {"InMemoryDataset": InMemoryDataset, "QueueDataset": QueueDataset,
                 "FileInstantDataset": FileInstantDataset, "BoxPSDataset": BoxPSDataset}
        if datafeed_class not in kinds:
            raise ValueError("datafeed class %s does not exist (choose one of %s)" % (datafeed_class, sorted(kinds)))
        return kinds[datafeed_class]()


class DatasetBase:
    _feed_name = "MultiSlotDataFeed"

    def __init__(self):
        self.pipe_command = "cat"
        self.download_cmd = None
        self.batch_size = 1
        self.thread_num = 1
        self.filelist = []
        self.slots = []
        self.use_vars = []
        self.rank_offset = ""
        self.pv_batch_size = 0
        self.fea_eval = False
        self.record_candidate_size = 0

    # ---------------------------------------------------------------- configuration
    def set_pipe_command(self, pipe_command):
        """A shell command each file's content is piped through (``cat`` by default)."""
        if not isinstance(pipe_command, str):
            raise TypeError("set_pipe_command takes a str, got %r" % type(pipe_command).__name__)
        self.pipe_command = pipe_command

    def set_download_cmd(self, download_cmd):
        """A command printing a file given its path (``<cmd> <path> | <pipe_command>``)."""
        self.download_cmd = download_cmd

    def set_batch_size(self, batch_size):
        if int(batch_size) <= 0:
            raise ValueError("set_batch_size: batch_size must be positive, got %r" % (batch_size,))
        self.batch_size = int(batch_size)

    def set_pv_batch_size(self, pv_batch_size):
        self.pv_batch_size = int(pv_batch_size)

    def set_thread(self, thread_num):
        if int(thread_num) <= 0:
            raise ValueError("set_thread: thread_num must be positive, got %r" % (thread_num,))
        self.thread_num = int(thread_num)

    def set_filelist(self, filelist):
        if not isinstance(filelist, (list, tuple)) or not all(isinstance(f, str) for f in filelist):
            raise TypeError("set_filelist takes a list of file names, got %r" % (filelist,))
        self.filelist = list(filelist)

    def set_use_var(self, var_list):
        """The variables each line gives values for, in the order the line gives them."""
        self.use_vars = list(var_list)
        self.slots = [Slot(v) for v in self.use_vars]

    def set_rank_offset(self, rank_offset):
        self.rank_offset = rank_offset

    def set_fea_eval(self, record_candidate_size, fea_eval=True):
        """Turn on ``slots_shuffle`` (feature-importance evaluation)."""
        self.fea_eval = bool(fea_eval)
        self.record_candidate_size = int(record_candidate_size)

    def set_hdfs_config(self, fs_name, fs_ugi):
        raise NotImplementedError("Dataset.set_hdfs_config: HDFS is not supported by fluidist; read local files, or "
                                  "stream remote ones with set_download_cmd(<command printing a file>)")

    def desc(self):
        """The data feed description as Paddle's protobuf text format."""
        lines = ['name: "%s"' % self._feed_name, "batch_size: %d" % self.batch_size, "multi_slot_desc {"]
        lines += [s.desc() for s in self.slots]
        lines += ["}", 'pipe_command: "%s"' % self.pipe_command.replace('"', '\\"')]
        return "\n".join(lines) + "\n"

    # ---------------------------------------------------------------- reading
    def _need_slots(self):
        if not self.slots:
            raise ValueError("the dataset has no variables: call set_use_var([...]) first")

    def _read_files(self, files):
        """Records of ``files`` (in that order), read by up to ``thread_num`` threads."""
        self._need_slots()
        results = [None] * len(files)
        errors = []
        lock = threading.Lock()
        next_file = [0]

        def work():
            while True:
                with lock:
                    i = next_file[0]
                    next_file[0] += 1
                if i >= len(files) or errors:
                    return
                try:
                    results[i] = read_records(files[i], self.slots, self.pipe_command, self.download_cmd)
                except BaseException as e:
                    errors.append((i, e))
                    return
        threads = [threading.Thread(target=work, daemon=True) for _ in range(max(1, min(self.thread_num,
                                                                                      len(files))))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise min(errors, key=lambda e: e[0])[1]
        return Records.concat(self.slots, results)

    def _thread_batches(self, threads):
        """One generator of batches ([(array, lod)] in slot order) per thread."""
        raise NotImplementedError

    def _batches_of(self, records):
        for a in range(0, records.n, self.batch_size):
            yield records.batch(a, min(a + self.batch_size, records.n))

    def _prepare_to_run(self):
        self._need_slots()

    def _finish_to_run(self):
        pass

    def _dynamic_adjust_before_train(self, thread_num):
        pass

    def _dynamic_adjust_after_train(self):
        pass

    def slots_shuffle(self, slots):
        raise NotImplementedError("%s does not keep instances in memory: slots_shuffle needs an InMemoryDataset"
                                  % type(self).__name__)


class QueueDataset(DatasetBase):
    """Reads its files each time it is trained on: thread ``t`` reads files ``t, t+T, ...``."""

    def _thread_batches(self, threads):
        self._need_slots()
        if not self.filelist:
            raise ValueError("QueueDataset: the file list is empty (set_filelist)")
        threads = max(1, min(threads, len(self.filelist)))

        def stream(t):
            for path in self.filelist[t::threads]:
                yield from self._batches_of(read_records(path, self.slots, self.pipe_command, self.download_cmd))
        return [stream(t) for t in range(threads)]

    def local_shuffle(self):
        raise NotImplementedError("QueueDataset does not support local shuffle, please use InMemoryDataset for "
                                  "local_shuffle")

    def global_shuffle(self, fleet=None):
        raise NotImplementedError("QueueDataset does not support global shuffle, please use InMemoryDataset for "
                                  "global_shuffle")


class FileInstantDataset(QueueDataset):
    _feed_name = "MultiSlotFileInstantDataFeed"

    def local_shuffle(self):
        raise NotImplementedError("FileInstantDataset does not support local shuffle, please use InMemoryDataset "
                                  "for local_shuffle")

    def global_shuffle(self, fleet=None):
        raise NotImplementedError("FileInstantDataset does not support global shuffle, please use "
                                  "InMemoryDataset for global_shuffle")


def _refuse(what):
    raise NotImplementedError("InMemoryDataset.%s is not supported by fluidist (instance ids, content and pv "
                              "merging are PSLib features)" % what)


class InMemoryDataset(DatasetBase):
    """Loads every file into memory once; shuffles locally or across the workers."""

    _feed_name = "MultiSlotInMemoryDataFeed"

    def __init__(self):
        super().__init__()
        self.records = None
        self.queue_num = None
        self.fleet_send_batch_size = None
        self.fleet_send_sleep_seconds = None
        self._preload = None
        self._shuffled = 0

    # ---------------------------------------------------------------- Paddle's knobs
    def set_feed_type(self, data_feed_type):
        if data_feed_type not in ("MultiSlotInMemoryDataFeed", "MultiSlotDataFeed"):
            raise NotImplementedError("InMemoryDataset.set_feed_type(%r): fluidist reads the MultiSlot text format "
                                      "only" % (data_feed_type,))
        self._feed_name = data_feed_type

    def set_queue_num(self, queue_num):
        self.queue_num = int(queue_num)

    def set_fleet_send_batch_size(self, fleet_send_batch_size=1024):
        self.fleet_send_batch_size = int(fleet_send_batch_size)

    def set_fleet_send_sleep_seconds(self, fleet_send_sleep_seconds=0):
        self.fleet_send_sleep_seconds = fleet_send_sleep_seconds

    def set_parse_ins_id(self, parse_ins_id):
        if parse_ins_id:
            _refuse("set_parse_ins_id(True)")

    def set_parse_content(self, parse_content):
        if parse_content:
            _refuse("set_parse_content(True)")

    def set_parse_logkey(self, parse_logkey):
        if parse_logkey:
            _refuse("set_parse_logkey(True)")

    def set_merge_by_sid(self, merge_by_sid):
        """Kept for scripts that set it: it only matters with pv merging, which is not supported."""
        self.merge_by_sid = bool(merge_by_sid)

    def set_enable_pv_merge(self, enable_pv_merge):
        if enable_pv_merge:
            _refuse("set_enable_pv_merge(True)")

    def set_merge_by_lineid(self, merge_size=2):
        _refuse("set_merge_by_lineid")

    def preprocess_instance(self):
        _refuse("preprocess_instance")

    def postprocess_instance(self):
        _refuse("postprocess_instance")

    def set_current_phase(self, current_phase):
        _refuse("set_current_phase")

    def get_pv_data_size(self):
        _refuse("get_pv_data_size")

    def set_generate_unique_feasigns(self, generate_uni_feasigns, shard_num):
        _refuse("set_generate_unique_feasigns")

    def generate_local_tables_unlock(self, table_id, fea_dim, read_thread_num, consume_thread_num, shard_num):
        _refuse("generate_local_tables_unlock")

    # ---------------------------------------------------------------- loading
    def load_into_memory(self):
        """Read every file of the file list (in file order) into memory."""
        if not self.filelist:
            raise ValueError("InMemoryDataset: the file list is empty (set_filelist)")
        self.records = self._read_files(self.filelist)

    def preload_into_memory(self, thread_num=None):
        """``load_into_memory`` in the background; ``wait_preload_done`` waits for it."""
        if thread_num is not None:
            self.set_thread(thread_num)
        box = {}

        def run():
            try:
                self.load_into_memory()
            except BaseException as e:
                box["error"] = e
        t = threading.Thread(target=run, daemon=True)
        t.start()
        self._preload = (t, box)

    def wait_preload_done(self):
        if self._preload is None:
            raise RuntimeError("wait_preload_done: preload_into_memory was not called")
        t, box = self._preload
        t.join()
        self._preload = None
        if "error" in box:
            raise box["error"]

    def _loaded(self, what):
        if self.records is None:
            raise RuntimeError("InMemoryDataset.%s: no data in memory; call load_into_memory() first" % what)
        return self.records

    def local_shuffle(self):
        """Shuffle this worker's instances."""
        records = self._loaded("local_shuffle")
        self.records = records.take(np.random.permutation(records.n))
        self._shuffled = self.records.n

    def global_shuffle(self, fleet=None, thread_num=12):
        """Send every instance to a worker drawn at random (this one included), then shuffle what
        arrived; with ``fleet=None`` (or one worker) this is a local shuffle."""
        records = self._loaded("global_shuffle")
        if fleet is None or fleet.worker_num() == 1:
            self.local_shuffle()
            return
        from .exchange import exchange_for, records_from_payload, records_payload, workers_of
        rank, endpoints = workers_of(fleet)
        n = len(endpoints)
        dest = np.random.randint(0, n, size=records.n)
        parts = [records.take(np.nonzero(dest == k)[0]) for k in range(n)]
        received = exchange_for(rank, endpoints).all_to_all([records_payload(p) for p in parts])
        mine = [parts[k] if k == rank else records_from_payload(received[k], self.slots, k) for k in range(n)]
        merged = Records.concat(self.slots, mine)
        self.records = merged.take(np.random.permutation(merged.n))
        self._shuffled = self.records.n

    def slots_shuffle(self, slots):
        """Shuffle the values of the named slots across instances (``set_fea_eval`` first)."""
        if not self.fea_eval:
            return
        self.records = self._loaded("slots_shuffle").shuffle_slots(set(slots), np.random)

    def release_memory(self):
        self.records = None

    def get_memory_data_size(self, fleet=None):
        """The number of instances in memory (of every worker, with ``fleet``)."""
        return self._total(self._loaded("get_memory_data_size").n, fleet)

    def get_shuffle_data_size(self, fleet=None):
        """The number of instances after the last shuffle (of every worker, with ``fleet``)."""
        return self._total(self._shuffled, fleet)

    @staticmethod
    def _total(local, fleet):
        if fleet is None or fleet.worker_num() == 1:
            return local
        from .exchange import exchange_for, workers_of
        rank, endpoints = workers_of(fleet)
        return sum(exchange_for(rank, endpoints).all_gather(int(local)))

    def _thread_batches(self, threads):
        records = self._loaded("training")
        threads = max(1, min(threads, records.n)) if records.n else 1
        bounds = [records.n * t // threads for t in range(threads + 1)]
        return [self._batches_of(records.slice(bounds[t], bounds[t + 1])) for t in range(threads)]


BoxPSDataset = refused_class("fluid.dataset.BoxPSDataset", "BoxPS is Baidu's GPU parameter server; use "
                                                           "InMemoryDataset with the parameter-server fleet")
