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

Instance ids and content: with ``set_parse_ins_id(True)`` / ``set_parse_content(True)`` an
InMemoryDataset's lines open with ``1 <ins_id>`` / ``1 <content>`` before their slots;
``set_merge_by_lineid(merge_size)`` merges the instances of one id after ``global_shuffle`` (or when
``dataset.dataset.merge_by_lineid()`` is called), see :mod:`.merge`.

Not supported (the setters that would turn them on raise NotImplementedError): log keys and pv
merging (``set_parse_logkey``, ``set_enable_pv_merge``), HDFS (``set_hdfs_config``), BoxPS
(``BoxPSDataset``) and PSLib's local tables. ``set_fleet_send_batch_size``, ``set_fleet_send_sleep_seconds`` and
``set_queue_num`` are kept but change nothing (records travel as one message per worker pair).
"""
from __future__ import annotations

import threading
from typing import Any, NoReturn, Sequence

import numpy as np

from ..compat import refused_class
from .core_dataset import Dataset as CoreDataset
from .records import DataFormatError, Records, Slot  # noqa: F401
from .source import DataSourceError, read_records  # noqa: F401

__all__ = ["DatasetFactory", "InMemoryDataset", "QueueDataset", "FileInstantDataset", "BoxPSDataset"]


class DatasetFactory:
    """``DatasetFactory().create_dataset("InMemoryDataset" | "QueueDataset" | "FileInstantDataset")``.

    Examples:
        >>> import os, tempfile
        >>> ids = fluid.data(name="ids", shape=[None, 1], dtype="int64", lod_level=1)
        >>> label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        >>> pooled = fluid.layers.sequence_pool(fluid.layers.embedding(ids, size=[10, 4]), "sum")
        >>> prob = fluid.layers.fc(pooled, size=2, act="softmax")
        >>> loss = fluid.layers.mean(fluid.layers.cross_entropy(prob, label))
        >>> _ = fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> _ = exe.run(fluid.default_startup_program())
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path = os.path.join(folder, "part-0")
        ...     with open(path, "w") as f:         # per slot: the count, then the values
        ...         _ = f.write("2 3 5 1 1\\n1 7 1 0\\n3 1 2 3 1 1\\n")
        ...     dataset = fluid.DatasetFactory().create_dataset("InMemoryDataset")
        ...     dataset.set_use_var([ids, label])
        ...     dataset.set_batch_size(2)
        ...     dataset.set_filelist([path])
        ...     dataset.load_into_memory()
        ...     dataset.local_shuffle()
        ...     exe.train_from_dataset(fluid.default_main_program(), dataset)
        ...     print(dataset.get_memory_data_size())
        ...     dataset.release_memory()
        3
    """

    def create_dataset(self, datafeed_class: str = "QueueDataset") -> DatasetBase:
        """A new dataset of that class (ValueError for an unknown one; ``BoxPSDataset`` is refused)."""
        kinds = {"InMemoryDataset": InMemoryDataset, "QueueDataset": QueueDataset,
                 "FileInstantDataset": FileInstantDataset, "BoxPSDataset": BoxPSDataset}
        if datafeed_class not in kinds:
            raise ValueError("datafeed class %s does not exist (choose one of %s)" % (datafeed_class, sorted(kinds)))
        return kinds[datafeed_class]()


class DatasetBase:
    """What every dataset has: the files, the variables each line fills, the pipe command, the
    batch size and the threads (see the module docstring). Make one with ``DatasetFactory``."""

    _feed_name = "MultiSlotDataFeed"

    def __init__(self) -> None:
        self.pipe_command = "cat"
        self.download_cmd: str | None = None
        self.batch_size = 1
        self.thread_num = 1
        self.filelist: list[str] = []
        self.slots: list[Slot] = []
        self.use_vars: list[Any] = []
        self.rank_offset = ""
        self.pv_batch_size = 0
        self.fea_eval = False
        self.record_candidate_size = 0
        self.dataset = CoreDataset("MultiSlotDataset", owner=self)     # Paddle's core object (core_dataset.py)

    # ---------------------------------------------------------------- configuration
    def set_pipe_command(self, pipe_command: str) -> None:
        """A shell command each file's content is piped through (``cat`` by default)."""
        if not isinstance(pipe_command, str):
            raise TypeError("set_pipe_command takes a str, got %r" % type(pipe_command).__name__)
        self.pipe_command = pipe_command

    def set_download_cmd(self, download_cmd: str) -> None:
        """A command printing a file given its path (``<cmd> <path> | <pipe_command>``)."""
        self.download_cmd = download_cmd

    def set_batch_size(self, batch_size: int) -> None:
        """Instances per batch (> 0); the last batch of a thread may be smaller."""
        if int(batch_size) <= 0:
            raise ValueError("set_batch_size: batch_size must be positive, got %r" % (batch_size,))
        self.batch_size = int(batch_size)

    def set_pv_batch_size(self, pv_batch_size: int) -> None:
        """Kept for scripts that set it (pv merging is not supported)."""
        self.pv_batch_size = int(pv_batch_size)

    def set_thread(self, thread_num: int) -> None:
        """The threads that read files and, in ``train_from_dataset``, train (> 0)."""
        if int(thread_num) <= 0:
            raise ValueError("set_thread: thread_num must be positive, got %r" % (thread_num,))
        self.thread_num = int(thread_num)

    def set_filelist(self, filelist: Sequence[str]) -> None:
        """The files to read (``fleet.split_files`` gives each worker its share)."""
        if not isinstance(filelist, (list, tuple)) or not all(isinstance(f, str) for f in filelist):
            raise TypeError("set_filelist takes a list of file names, got %r" % (filelist,))
        self.filelist = list(filelist)

    def set_use_var(self, var_list: Sequence[Any]) -> None:
        """The variables each line gives values for, in the order the line gives them."""
        self.use_vars = list(var_list)
        self.slots = [Slot(v) for v in self.use_vars]

    def set_rank_offset(self, rank_offset: str) -> None:
        """Kept for scripts that set it (PSLib's rank-offset feature is not used)."""
        self.rank_offset = rank_offset

    def set_fea_eval(self, record_candidate_size: int, fea_eval: bool = True) -> None:
        """Turn on ``slots_shuffle`` (feature-importance evaluation)."""
        self.fea_eval = bool(fea_eval)
        self.record_candidate_size = int(record_candidate_size)

    def set_hdfs_config(self, fs_name: str, fs_ugi: str) -> None:
        """Refused (NotImplementedError): use ``set_download_cmd``."""
        raise NotImplementedError("Dataset.set_hdfs_config: HDFS is not supported by fluidist; read local files, or "
                                  "stream remote ones with set_download_cmd(<command printing a file>)")

    def desc(self) -> str:
        """The data feed description as Paddle's protobuf text format."""
        lines = ['name: "%s"' % self._feed_name, "batch_size: %d" % self.batch_size, "multi_slot_desc {"]
        lines += [s.desc() for s in self.slots]
        lines += ["}", 'pipe_command: "%s"' % self.pipe_command.replace('"', '\\"')]
        return "\n".join(lines) + "\n"

    # ---------------------------------------------------------------- reading
    def _need_slots(self):
        if not self.slots:
            raise ValueError("the dataset has no variables: call set_use_var([...]) first")

    def _line_prefixes(self):
        """The text fields each line opens with (InMemoryDataset's instance ids and content)."""
        return ()

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
                    results[i] = read_records(files[i], self.slots, self.pipe_command, self.download_cmd,
                                              self._line_prefixes())
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

    def slots_shuffle(self, slots: Sequence[str]) -> None:
        """Needs an InMemoryDataset (NotImplementedError here)."""
        raise NotImplementedError("%s does not keep instances in memory: slots_shuffle needs an InMemoryDataset"
                                  % type(self).__name__)


class QueueDataset(DatasetBase):
    """Reads its files each time it is trained on: thread ``t`` reads files ``t, t+T, ...``; no
    shuffles (use an InMemoryDataset).

    Examples:
        >>> dataset = fluid.DatasetFactory().create_dataset("QueueDataset")
        >>> dataset.set_batch_size(32)
        >>> dataset.set_thread(2)
    """

    def _thread_batches(self, threads):
        self._need_slots()
        if not self.filelist:       # (Paddle 1.8 trains on no batches: a worker may get no file)
            return [iter(())]
        threads = max(1, min(threads, len(self.filelist)))

        def stream(t):
            for path in self.filelist[t::threads]:
                yield from self._batches_of(read_records(path, self.slots, self.pipe_command, self.download_cmd))
        return [stream(t) for t in range(threads)]

    def local_shuffle(self) -> None:
        """Refused (NotImplementedError)."""
        raise NotImplementedError("QueueDataset does not support local shuffle, please use InMemoryDataset for "
                                  "local_shuffle")

    def global_shuffle(self, fleet: Any = None) -> None:
        """Refused (NotImplementedError)."""
        raise NotImplementedError("QueueDataset does not support global shuffle, please use InMemoryDataset for "
                                  "global_shuffle")


class FileInstantDataset(QueueDataset):
    """A QueueDataset under Paddle's other feed name (``MultiSlotFileInstantDataFeed``)."""

    _feed_name = "MultiSlotFileInstantDataFeed"

    def local_shuffle(self) -> None:
        """Refused (NotImplementedError)."""
        raise NotImplementedError("FileInstantDataset does not support local shuffle, please use InMemoryDataset "
                                  "for local_shuffle")

    def global_shuffle(self, fleet: Any = None) -> None:
        """Refused (NotImplementedError)."""
        raise NotImplementedError("FileInstantDataset does not support global shuffle, please use "
                                  "InMemoryDataset for global_shuffle")


def _refuse(what: str) -> NoReturn:
    raise NotImplementedError("InMemoryDataset.%s is not supported by fluidist (log keys and pv merging are "
                              "PSLib features)" % what)


class InMemoryDataset(DatasetBase):
    """Loads every file into memory once; shuffles locally or across the workers.

    Paddle 1.8 difference: log keys and pv merging (PSLib features) are refused with
    NotImplementedError; ``set_queue_num`` and the ``set_fleet_send_*`` knobs change
    nothing (records travel as one message per worker pair).

    Examples:
        >>> import os, tempfile
        >>> ids = fluid.data(name="ids", shape=[None, 1], dtype="int64", lod_level=1)
        >>> label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        >>> pooled = fluid.layers.sequence_pool(fluid.layers.embedding(ids, size=[10, 4]), "sum")
        >>> prob = fluid.layers.fc(pooled, size=2, act="softmax")
        >>> loss = fluid.layers.mean(fluid.layers.cross_entropy(prob, label))
        >>> _ = fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> _ = exe.run(fluid.default_startup_program())
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path = os.path.join(folder, "part-0")
        ...     with open(path, "w") as f:         # per slot: the count, then the values
        ...         _ = f.write("2 3 5 1 1\\n1 7 1 0\\n3 1 2 3 1 1\\n")
        ...     dataset = fluid.DatasetFactory().create_dataset("InMemoryDataset")
        ...     dataset.set_use_var([ids, label])
        ...     dataset.set_batch_size(2)
        ...     dataset.set_filelist([path])
        ...     dataset.load_into_memory()
        ...     dataset.local_shuffle()
        ...     exe.train_from_dataset(fluid.default_main_program(), dataset)
        ...     print(dataset.get_memory_data_size())
        ...     dataset.release_memory()
        3
    """

    _feed_name = "MultiSlotInMemoryDataFeed"

    def __init__(self) -> None:
        super().__init__()
        self.records: Records | None = None
        self.queue_num: int | None = None
        self.fleet_send_batch_size: int | None = None
        self.fleet_send_sleep_seconds: Any = None
        self._preload: tuple[threading.Thread, dict] | None = None
        self._shuffled = 0
        self.parse_ins_id = False
        self.parse_content = False
        self.merge_by_lineid = False
        self.merge_size = 2

    # ---------------------------------------------------------------- Paddle's knobs
    def set_feed_type(self, data_feed_type: str) -> None:
        """The MultiSlot feeds only (NotImplementedError for others)."""
        if data_feed_type not in ("MultiSlotInMemoryDataFeed", "MultiSlotDataFeed"):
            raise NotImplementedError("InMemoryDataset.set_feed_type(%r): fluidist reads the MultiSlot text format "
                                      "only" % (data_feed_type,))
        self._feed_name = data_feed_type

    def set_queue_num(self, queue_num: int) -> None:
        """Kept; changes nothing."""
        self.queue_num = int(queue_num)

    def set_fleet_send_batch_size(self, fleet_send_batch_size: int = 1024) -> None:
        """Kept; changes nothing."""
        self.fleet_send_batch_size = int(fleet_send_batch_size)

    def set_fleet_send_sleep_seconds(self, fleet_send_sleep_seconds: float = 0) -> None:
        """Kept; changes nothing."""
        self.fleet_send_sleep_seconds = fleet_send_sleep_seconds

    def set_parse_ins_id(self, parse_ins_id: bool) -> None:
        """Lines open with their instance id, ``1 <ins_id>`` (read before the slots)."""
        self.parse_ins_id = bool(parse_ins_id)

    def set_parse_content(self, parse_content: bool) -> None:
        """Lines give their content, ``1 <content>``, after the instance id (if any) and before the slots."""
        self.parse_content = bool(parse_content)

    def set_parse_logkey(self, parse_logkey: bool) -> None:
        """True is refused (NotImplementedError)."""
        if parse_logkey:
            _refuse("set_parse_logkey(True)")

    def set_merge_by_sid(self, merge_by_sid: bool) -> None:
        """Kept for scripts that set it: it only matters with pv merging, which is not supported."""
        self.merge_by_sid = bool(merge_by_sid)

    def set_enable_pv_merge(self, enable_pv_merge: bool) -> None:
        """True is refused (NotImplementedError)."""
        if enable_pv_merge:
            _refuse("set_enable_pv_merge(True)")

    def set_merge_by_lineid(self, merge_size: int = 2) -> None:
        """Merge the instances of one instance id after ``global_shuffle`` (see ``dataset.merge``);
        turns on ``set_parse_ins_id``. ``merge_size > 0``: only groups of exactly that many merge, the
        others are dropped."""
        self.merge_by_lineid = True
        self.merge_size = int(merge_size)
        self.parse_ins_id = True

    def _line_prefixes(self):
        return (("ins_id",) if self.parse_ins_id else ()) + (("content",) if self.parse_content else ())

    def _merge_by_lineid(self):
        if not self.merge_by_lineid:
            return
        from .merge import merge_by_ins_id
        self.records = merge_by_ins_id(self._loaded("merge_by_lineid"), self.merge_size)

    def preprocess_instance(self) -> None:
        """Refused (NotImplementedError)."""
        _refuse("preprocess_instance")

    def postprocess_instance(self) -> None:
        """Refused (NotImplementedError)."""
        _refuse("postprocess_instance")

    def set_current_phase(self, current_phase: int) -> None:
        """Refused (NotImplementedError)."""
        _refuse("set_current_phase")

    def get_pv_data_size(self) -> int:
        """Refused (NotImplementedError)."""
        _refuse("get_pv_data_size")

    def set_generate_unique_feasigns(self, generate_uni_feasigns: bool, shard_num: int) -> None:
        """Refused (NotImplementedError)."""
        _refuse("set_generate_unique_feasigns")

    def generate_local_tables_unlock(self, table_id: int, fea_dim: int, read_thread_num: int, consume_thread_num: int,
                                     shard_num: int) -> None:
        """Refused (NotImplementedError)."""
        _refuse("generate_local_tables_unlock")

    # ---------------------------------------------------------------- loading
    def load_into_memory(self) -> None:
        """Read every file of the file list (in file order) into memory."""
        if not self.filelist:
            raise ValueError("InMemoryDataset: the file list is empty (set_filelist)")
        self.records = self._read_files(self.filelist)

    def preload_into_memory(self, thread_num: int | None = None) -> None:
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

    def wait_preload_done(self) -> None:
        """Wait for ``preload_into_memory``; its error, if any, is raised here."""
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

    def local_shuffle(self) -> None:
        """Shuffle this worker's instances."""
        records = self._loaded("local_shuffle")
        self.records = records.take(np.random.permutation(records.n))
        self._shuffled = self.records.n

    def global_shuffle(self, fleet: Any = None, thread_num: int = 12) -> None:
        """Send every instance to a worker drawn at random (this one included), then shuffle what
        arrived; with ``fleet=None`` (or one worker) this is a local shuffle."""
        records = self._loaded("global_shuffle")
        if fleet is None or fleet.worker_num() == 1:
            self.local_shuffle()
            self._merge_by_lineid()
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
        self._merge_by_lineid()

    def slots_shuffle(self, slots: Sequence[str]) -> None:
        """Shuffle the values of the named slots across instances (``set_fea_eval`` first)."""
        if not self.fea_eval:
            return
        self.records = self._loaded("slots_shuffle").shuffle_slots(set(slots), np.random)

    def release_memory(self) -> None:
        """Drop the instances in memory."""
        self.records = None

    def get_memory_data_size(self, fleet: Any = None) -> int:
        """The number of instances in memory (of every worker, with ``fleet``)."""
        return self._total(self._loaded("get_memory_data_size").n, fleet)

    def get_shuffle_data_size(self, fleet: Any = None) -> int:
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
