"""``fluid.core.Dataset``: the object under a Paddle dataset (``dataset.dataset``).

In Paddle the Python dataset keeps its settings and hands them to this C++ object, which reads,
holds and shuffles the instances. In fluidist the Python dataset does all of that itself; this
object keeps the settings a script gives it directly (``core.Dataset("MultiSlotDataset")``
with ``set_thread_num``, ``set_filelist``, ... and their getters) and, as a dataset's
``dataset`` attribute, runs that dataset's in-memory operations (``merge_by_lineid``,
``load_into_memory``, ``local_shuffle``, ...). fluidist reads local files only: the HDFS settings
are kept and returned, and used by nothing.
"""
from typing import Any, List, Optional, Tuple

_KINDS = ("MultiSlotDataset", "BoxPSDataset")


class Dataset:
    """``core.Dataset(name)``: settings, and a dataset's in-memory operations (see the module)."""

    def __init__(self, name: str = "MultiSlotDataset", owner: Any = None) -> None:
        if name not in _KINDS:
            raise ValueError("core.Dataset: unknown dataset kind %r (Paddle 1.8 has %s)" % (name, list(_KINDS)))
        self.name = name
        self._owner = owner
        self._filelist: List[str] = []
        self._thread_num = 1
        self._trainer_num = 1
        self._fleet_send_batch_size = 1024
        self._hdfs: Tuple[str, str] = ("", "")
        self._data_feed_desc = ""

    # ---------------------------------------------------------------- settings
    def set_filelist(self, filelist: List[str]) -> None:
        self._filelist = [str(f) for f in filelist]

    def get_filelist(self) -> List[str]:
        return list(self._filelist)

    def set_thread_num(self, thread_num: int) -> None:
        self._thread_num = int(thread_num)

    def get_thread_num(self) -> int:
        return self._thread_num

    def set_trainer_num(self, trainer_num: int) -> None:
        self._trainer_num = int(trainer_num)

    def get_trainer_num(self) -> int:
        return self._trainer_num

    def set_fleet_send_batch_size(self, size: int) -> None:
        self._fleet_send_batch_size = int(size)

    def get_fleet_send_batch_size(self) -> int:
        return self._fleet_send_batch_size

    def set_hdfs_config(self, fs_name: str, fs_ugi: str) -> None:
        """Kept and returned by ``get_hdfs_config``; fluidist reads local files only."""
        self._hdfs = (str(fs_name), str(fs_ugi))

    def get_hdfs_config(self) -> Tuple[str, str]:
        return self._hdfs

    def set_data_feed_desc(self, desc: str) -> None:
        self._data_feed_desc = str(desc)

    def get_data_feed_desc(self) -> str:
        return self._data_feed_desc if self._owner is None else self._owner.desc()

    # ---------------------------------------------------------------- the owning dataset's operations
    def _dataset(self, what: str) -> Any:
        if self._owner is None:
            raise NotImplementedError("core.Dataset.%s: a core.Dataset made by itself holds no data in fluidist; "
                                      "use fluid.DatasetFactory().create_dataset('InMemoryDataset') and its %s"
                                      % (what, what))
        return self._owner

    def merge_by_lineid(self) -> None:
        """Merge the instances in memory by instance id (``set_merge_by_lineid`` on the dataset)."""
        self._dataset("merge_by_lineid")._merge_by_lineid()

    def load_into_memory(self) -> None:
        self._dataset("load_into_memory").load_into_memory()

    def local_shuffle(self) -> None:
        self._dataset("local_shuffle").local_shuffle()

    def release_memory(self) -> None:
        self._dataset("release_memory").release_memory()

    def get_memory_data_size(self) -> int:
        return self._dataset("get_memory_data_size").get_memory_data_size()

    def get_shuffle_data_size(self) -> int:
        return self._dataset("get_shuffle_data_size").get_shuffle_data_size()

    def __repr__(self) -> str:
        owner: Optional[str] = type(self._owner).__name__ if self._owner is not None else None
        return "core.Dataset(%r%s)" % (self.name, ", of a %s" % owner if owner else "")
