"""InMemoryDataset's instance ids and content (``set_parse_ins_id`` / ``set_parse_content``), their
merging (``set_merge_by_lineid``, Paddle 1.8's MergeByInsId rules), ``core.Dataset`` and an empty
QueueDataset (Paddle 1.8 trains on no batches)."""
import numpy as np
import pytest

import fluidist as fluid


def _slots(main, dense_last=False):
    with fluid.program_guard(main, fluid.Program()):
        a = fluid.layers.data(name="a", shape=[1], dtype="int64", lod_level=1)
        b = fluid.layers.data(name="b", shape=[1], dtype="int64", lod_level=1)
        c = fluid.layers.data(name="c", shape=[1], dtype="float32", lod_level=0 if dense_last else 1)
    return [a, b, c]


def _dataset(tmp_path, lines, slots, **flags):
    path = tmp_path / "part-0"
    path.write_text("".join(line + "\n" for line in lines))
    ds = fluid.DatasetFactory().create_dataset("InMemoryDataset")
    ds.set_use_var(slots)
    ds.set_filelist([str(path)])
    for name, value in flags.items():
        getattr(ds, "set_" + name)(value)
    return ds


def _instances(records):
    """{ins_id: [values of each slot]}"""
    out = {}
    for i in range(records.n):
        one = records.slice(i, i + 1)
        out[records.ins_ids[i]] = [v.tolist() for v in one.values]
    return out


def test_ids_and_content_are_read_before_the_slots(tmp_path):
    ds = _dataset(tmp_path, ["1 q7 1 pageA 2 5 6 1 9 1 0.5", "1 q8 1 pageB 1 3 1 4 1 1.5"],
                  _slots(fluid.Program()), parse_ins_id=True, parse_content=True)
    assert ds.parse_ins_id and ds.parse_content
    ds.load_into_memory()
    assert list(ds.records.ins_ids) == ["q7", "q8"] and list(ds.records.contents) == ["pageA", "pageB"]
    assert ds.records.values[0].tolist() == [5, 6, 3] and ds.records.offsets[0].tolist() == [0, 2, 3]
    np.random.seed(1)
    ds.local_shuffle()
    assert sorted(zip(ds.records.ins_ids, ds.records.contents)) == [("q7", "pageA"), ("q8", "pageB")]


def test_a_line_without_its_id_names_the_file_and_line(tmp_path):
    ds = _dataset(tmp_path, ["1 q7 1 5 1 9 1 0.5", "2 5 6 1 9 1 0.5"], _slots(fluid.Program()), parse_ins_id=True)
    with pytest.raises(fluid.dataset.DataFormatError, match="line 2: expected the ins_id"):
        ds.load_into_memory()


def test_merge_by_lineid_merges_groups_of_merge_size_without_conflicts(tmp_path):
    lines = ["1 id1 1 1 1 2 1 0.5",      # id1: both fill slot a: a conflict, dropped
             "1 id1 1 3 1 0 1 0",
             "1 id2 1 7 1 0 1 0",        # id2: alone (merge size 2): dropped
             "1 id3 1 0 1 8 1 2.5",      # id3: a from the second, b and c from the first
             "1 id3 1 9 1 0 1 0",
             "1 id4 1 0 1 0 1 0",        # id4: nothing filled: the first instance's zeros
             "1 id4 1 0 1 0 1 0"]
    ds = _dataset(tmp_path, lines, _slots(fluid.Program()))
    ds.set_merge_by_lineid(2)
    assert ds.parse_ins_id
    ds.load_into_memory()
    np.random.seed(0)
    ds.global_shuffle()           # (no fleet: a local shuffle, then the merge)
    assert _instances(ds.records) == {"id3": [[9], [8], [2.5]], "id4": [[0], [0], [0.0]]}

    ds = _dataset(tmp_path, lines, _slots(fluid.Program(), dense_last=True))
    ds.set_merge_by_lineid(0)      # any group size; a dense slot takes the last filled instance's values
    ds.load_into_memory()
    ds.dataset.merge_by_lineid()
    assert _instances(ds.records) == {"id2": [[7], [0], [0.0]], "id3": [[9], [8], [2.5]], "id4": [[0], [0], [0.0]]}


def test_merged_instances_train(tmp_path):
    main = fluid.Program()
    slots = _slots(main)
    ds = _dataset(tmp_path, ["1 x 1 1 1 0 1 0", "1 x 1 0 1 4 1 2", "1 y 1 3 1 0 1 0", "1 y 1 0 1 6 1 1"], slots)
    ds.set_merge_by_lineid(2)
    ds.set_batch_size(2)
    ds.load_into_memory()
    ds.dataset.merge_by_lineid()
    loader = fluid.io.DataLoader.from_dataset(ds, fluid.cpu_places(1), drop_last=False)
    batches = [b for b in loader()]
    got = sorted(np.array(batches[0][0]["a"]).ravel().tolist())
    assert got == [1, 3] and ds.get_memory_data_size() == 2


def test_core_dataset_keeps_its_settings():
    d = fluid.core.Dataset("MultiSlotDataset")
    d.set_thread_num(12)
    d.set_filelist(["a.txt", "b.txt"])
    d.set_trainer_num(4)
    d.set_hdfs_config("fs_name", "fs_ugi")
    assert (d.get_thread_num(), d.get_filelist(), d.get_trainer_num(), d.get_hdfs_config()) == \
        (12, ["a.txt", "b.txt"], 4, ("fs_name", "fs_ugi"))
    with pytest.raises(NotImplementedError, match="create_dataset"):
        d.merge_by_lineid()
    with pytest.raises(ValueError, match="unknown dataset kind"):
        fluid.core.Dataset("NoSuchDataset")
    with pytest.raises(NotImplementedError, match="PSLib"):
        fluid.core.Fleet()


def test_an_empty_queue_dataset_trains_on_nothing():
    main, startup = fluid.Program(), fluid.Program()
    slots = _slots(main)
    with fluid.program_guard(main, startup):
        fluid.layers.mean(fluid.layers.cast(slots[0], "float32"))
    ds = fluid.DatasetFactory().create_dataset("QueueDataset")
    ds.set_use_var(slots)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    exe.train_from_dataset(main, ds)
    with pytest.raises(RuntimeError, match="no dataset given"):
        exe.train_from_dataset(main, None)
