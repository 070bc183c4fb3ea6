"""fluid.dataset with a MultiSlotDataGenerator pipe command, and Executor.train_from_dataset:
batches equal to feeding the same instances by hand; errors name the file and line."""
import os
import subprocess
import sys

import numpy as np
import pytest

import fluidist as fluid
from ctr_data import GENERATOR, hand_feeds, raw_instances, write_files
from ctr_model import auc, build

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PIPE = "%s %s" % (sys.executable, GENERATOR)


@pytest.fixture
def files(tmp_path):
    return write_files(str(tmp_path), files=3, lines=40)


def make_dataset(kind, data_vars, files, batch=8, thread=1, pipe=PIPE):
    ds = fluid.DatasetFactory().create_dataset(kind)
    ds.set_use_var(list(data_vars))
    ds.set_pipe_command(pipe)
    ds.set_batch_size(batch)
    ds.set_thread(thread)
    ds.set_filelist(files)
    return ds


def test_data_generator_writes_the_multislot_format():
    script = ("import sys; sys.path.insert(0, %r)\n"
              "import fluidist.incubate.data_generator as dg\n"
              "class G(dg.MultiSlotDataGenerator):\n"
              "    def generate_sample(self, line):\n"
              "        def r():\n"
              "            a = [int(x) for x in line.split()]\n"
              "            yield [('words', a), ('score', [0.5]), ('label', [a[0] %% 2])]\n"
              "        return r\n"
              "G().run_from_stdin()\n" % ROOT)
    out = subprocess.run([sys.executable, "-c", script], input="3 4 5\n7\n", capture_output=True, text=True,
                         check=True).stdout
    assert out == "3 3 4 5 1 0.5 1 1\n1 7 1 0.5 1 1\n"
    import fluidist.incubate.data_generator as dg

    class S(dg.MultiSlotStringDataGenerator):
        def generate_sample(self, line):
            return lambda: iter([[("w", line.split())]])
    assert S()._gen_str([("w", ["a", "b"]), ("l", ["1"])]) == "2 a b 1 1\n"
    g = dg.MultiSlotDataGenerator()
    with pytest.raises(ValueError, match="can not be empty"):
        g._gen_str([("w", [])])
    g._gen_str([("w", [1])])
    with pytest.raises(ValueError, match="not match"):
        g._gen_str([("v", [1])])


@pytest.mark.parametrize("kind", ["InMemoryDataset", "QueueDataset"])
def test_train_from_dataset_equals_feeding_by_hand(files, kind):
    main, startup, data_vars, loss, _ = build()
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    ds = make_dataset(kind, data_vars, files)
    if kind == "InMemoryDataset":
        ds.load_into_memory()
        assert ds.get_memory_data_size() == 120
    exe.train_from_dataset(main, ds, scope=scope)

    main2, startup2, _, loss2, _ = build()
    ref = fluid.Scope()
    exe.run(startup2, scope=ref)
    for feed in hand_feeds(raw_instances(files), 8):
        exe.run(main2, feed=feed, scope=ref)
    for p in main.global_block().all_parameters():
        np.testing.assert_allclose(np.array(scope.find_var(p.name).get_tensor()),
                                   np.array(ref.find_var(p.name).get_tensor()), rtol=1e-6, atol=1e-7)


def test_threads_fetch_info_handler_and_infer(files, capsys):
    main, startup, data_vars, loss, prob = build()
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    ds = make_dataset("InMemoryDataset", data_vars, files * 4, thread=3)
    ds.load_into_memory()
    np.random.seed(3)
    ds.local_shuffle()
    assert ds.get_shuffle_data_size() == 480
    instances = raw_instances(files)
    feeds = list(hand_feeds(instances, len(instances)))

    def evaluate():
        p, = exe.run(main.clone(for_test=True), feed=feeds[0], fetch_list=[prob], scope=scope)
        return auc(feeds[0]["label"], p)
    before = evaluate()
    seen = []

    class Handler(fluid.executor.FetchHandler):
        def handler(self, res):
            seen.append(res["loss"])
    for _ in range(3):
        exe.train_from_dataset(main, ds, scope=scope, fetch_list=[loss], fetch_info=["the loss"], print_period=5,
                               fetch_handler=Handler(var_dict={"loss": loss}, period_secs=0.01))
    out = capsys.readouterr().out
    assert out.count("the loss: [") >= 3
    assert seen and all(v is None or v.shape == (1,) for v in seen)
    after = evaluate()
    assert after > before + 0.1 and after > 0.75, (before, after)

    params = {p.name: np.array(scope.find_var(p.name).get_tensor()) for p in main.global_block().all_parameters()}
    exe.infer_from_dataset(main, ds, scope=scope, thread=2)
    for k, v in params.items():
        np.testing.assert_array_equal(np.array(scope.find_var(k).get_tensor()), v)
    ds.release_memory()
    with pytest.raises(RuntimeError, match="load_into_memory"):
        exe.train_from_dataset(main, ds, scope=scope)


def test_bad_lines_name_the_file_and_line(tmp_path, files):
    main, startup, data_vars, loss, _ = build()
    good = "3 0.1 0.2 0.3 2 5 6 1 1\n"
    cases = {
        "zero": ("3 0.1 0.2 0.3 0 1 1\n", "line 2: slot 'ids' has 0 values"),
        "dense": ("2 0.1 0.2 2 5 6 1 1\n", "line 2: dense slot 'dense' needs 3 values"),
        "short": ("3 0.1 0.2 0.3 4 5 6 1 1\n", "line 2: the line ends before slot 'label'"),
        "value": ("3 0.1 0.2 0.3 2 5 x6 1 1\n", "line 2: 'x6' is not a uint64 value \\(slot 'ids'\\)"),
        "count": ("3 0.1 0.2 0.3 two 5 6 1 1\n", "line 2: expected the number of values of slot 'ids'"),
    }
    exe = fluid.Executor()
    ok = tmp_path / "good"
    ok.write_text(good * 5)
    for name, (bad, msg) in cases.items():
        path = tmp_path / ("bad_" + name)
        path.write_text(good + bad + good)
        ds = make_dataset("InMemoryDataset", data_vars, [str(ok), str(path)], pipe="cat", thread=2)
        with pytest.raises(ValueError, match="file '%s', %s" % (str(path), msg)):
            ds.load_into_memory()
        ds = make_dataset("QueueDataset", data_vars, [str(path)], pipe="cat")
        exe.run(startup)
        with pytest.raises(ValueError, match=msg):
            exe.train_from_dataset(main, ds)
    ds = make_dataset("InMemoryDataset", data_vars, [str(tmp_path / "missing")], pipe="cat")
    with pytest.raises(RuntimeError, match="cannot read data file .*missing"):
        ds.load_into_memory()
    ds = make_dataset("InMemoryDataset", data_vars, [files[0]], pipe="%s -c 'import sys; sys.exit(3)'"
                      % sys.executable)
    with pytest.raises(RuntimeError, match="exited with code 3"):
        ds.load_into_memory()
    with pytest.raises(ValueError, match="only supports float32 and int64"):
        ds.set_use_var([fluid.data("f64", [None, 1], "float64")])


def test_tokens_after_the_slots_are_passed_over_as_paddle_does(tmp_path):
    """Paddle 1.8's MultiSlot parser reads the slots of set_use_var and passes over the rest of a line (a
    data file with one more slot than the model uses loads): the same instances as without the extra
    tokens, and a warning naming the first such line."""
    main, startup, data_vars, loss, _ = build()
    line = "3 0.1 0.2 0.3 2 5 6 1 1"
    plain, extra = tmp_path / "plain", tmp_path / "extra"
    plain.write_text((line + "\n") * 4)
    extra.write_text((line + "\n") + (line + " 2 7 8\n") * 3)
    loaded = []
    for path in (plain, extra):
        ds = make_dataset("InMemoryDataset", data_vars, [str(path)], pipe="cat")
        if path is extra:
            with pytest.warns(UserWarning, match=r"file '%s', line 2 \(the first such line\): 3 tokens after the 3 "
                                                 r"slots of set_use_var" % str(path)):
                ds.load_into_memory()
        else:
            ds.load_into_memory()
        loaded.append(ds.records)
    assert loaded[0].n == loaded[1].n == 4
    for a, b in zip(loaded[0].values + loaded[0].offsets, loaded[1].values + loaded[1].offsets):
        np.testing.assert_array_equal(a, b)


def test_desc_and_refusals(files):
    main, startup, data_vars, loss, _ = build()
    ds = make_dataset("InMemoryDataset", data_vars, files, batch=32)
    d = ds.desc()
    assert 'name: "MultiSlotInMemoryDataFeed"' in d and "batch_size: 32" in d
    assert 'name: "ids"\n    type: "uint64"\n    is_dense: false' in d
    assert 'name: "dense"\n    type: "float"\n    is_dense: true\n    is_used: true\n    shape: -1\n    shape: 3' in d
    with pytest.raises(NotImplementedError, match="HDFS"):
        ds.set_hdfs_config("fs", "ugi")
    with pytest.raises(NotImplementedError, match="log keys"):
        ds.set_parse_logkey(True)
    q = fluid.DatasetFactory().create_dataset("QueueDataset")
    with pytest.raises(NotImplementedError, match="local shuffle"):
        q.local_shuffle()
    with pytest.raises(ValueError, match="does not exist"):
        fluid.DatasetFactory().create_dataset("NoSuchDataset")
    with pytest.raises(NotImplementedError):
        fluid.DatasetFactory().create_dataset("BoxPSDataset")


def test_preload_slots_shuffle_and_data_loader(files):
    main, startup, data_vars, loss, _ = build()
    ds = make_dataset("InMemoryDataset", data_vars, files, batch=8, thread=2)
    ds.preload_into_memory()
    ds.wait_preload_done()
    before = ds.records.values[1].copy()
    ds.set_fea_eval(100, True)
    np.random.seed(0)
    ds.slots_shuffle(["ids"])
    np.testing.assert_array_equal(ds.records.values[0], ds.records.values[0])
    assert sorted(ds.records.values[1]) == sorted(before) and not np.array_equal(ds.records.values[1], before)

    ds = make_dataset("InMemoryDataset", data_vars, files, batch=8)
    ds.load_into_memory()
    loader = fluid.io.DataLoader.from_dataset(ds, fluid.cpu_places(1), drop_last=False)
    got = [d[0] for d in loader()]
    want = list(hand_feeds(raw_instances(files), 8))
    assert len(got) == len(want) == 15
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.array(g["ids"]), np.array(w["ids"]))
        assert g["ids"].lod() == w["ids"].lod()
        np.testing.assert_allclose(np.array(g["dense"]), w["dense"], rtol=1e-6)
        np.testing.assert_array_equal(np.array(g["label"]), w["label"])


def test_exchange_between_workers_and_its_deadline(monkeypatch):
    """The all-to-all behind global_shuffle, two workers as two threads; a missing worker is named."""
    import threading
    from fluidist.dataset import exchange
    from fluidist.launch.cluster import find_free_ports
    eps = ["127.0.0.1:%d" % p for p in find_free_ports(2)]
    got = {}

    def worker(rank):
        ex = exchange.WorkerExchange(rank, eps)
        parts = [({"from": rank, "to": k}, [np.arange(3, dtype=np.int64) + 10 * rank + k]) for k in range(2)]
        got[rank] = [ex.all_to_all(parts), ex.all_gather(rank * 5), ex.all_to_all(parts)]
    ts = [threading.Thread(target=worker, args=(r,)) for r in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    for rank in range(2):
        first, sizes, again = got[rank]
        assert sizes == [0, 5]
        for parts in (first, again):
            assert [m for m, _ in parts] == [{"from": k, "to": rank} for k in range(2)]
            other = 1 - rank
            np.testing.assert_array_equal(np.frombuffer(parts[other][1][0], np.int64),
                                          np.arange(3) + 10 * other + rank)
    monkeypatch.setenv("FLUIDIST_SHUFFLE_TIMEOUT", "1")
    lonely = exchange.WorkerExchange(0, ["127.0.0.1:%d" % p for p in find_free_ports(2)])
    with pytest.raises(exchange.ExchangeError, match=r"no records yet from workers \[1\]"):
        lonely.all_gather(1)


@pytest.mark.parametrize("every,lines", [("0.000001", 15), ("0", 0)])
def test_train_from_dataset_says_how_far_it_is(files, monkeypatch, caplog, every, lines):
    """A line per FLUIDIST_PROGRESS seconds of a pass (here: every batch, 120 instances / 8), none with 0."""
    monkeypatch.setenv("FLUIDIST_PROGRESS", every)
    main, startup, data_vars, loss, _ = build()
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    with caplog.at_level("INFO", logger="fluidist.progress"):
        exe.train_from_dataset(main, make_dataset("QueueDataset", data_vars, files), scope=scope)
    said = [r.getMessage() for r in caplog.records if r.name == "fluidist.progress"]
    assert len(said) == lines, said
    if lines:
        assert said[-1].startswith("train_from_dataset (1 thread(s)): 15 batch(es) in "), said
