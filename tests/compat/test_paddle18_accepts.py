"""What Paddle 1.8 runs with, fluidist runs with too: each test is a call written the way Paddle's own
code makes it (its distributed test harness ``test_dist_base.py``, its fleet, its book tests), with the
argument values Paddle takes (None where Paddle ignores the argument, NumPy integers, an int-valued
float, a flag's truth value), and checks the result against the one the canonical spelling gives."""
import re

import numpy as np
import pytest

import fluidist as fluid

EP0, EP1 = "127.0.0.1:6174", "127.0.0.1:6175"
PSERVERS = "%s,%s" % (EP0, EP1)


def fc_model():
    """fc(1000 -> 1000) + mean + SGD: big enough that the weight is sliced over both pservers."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 1
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[1000], dtype="float32")
        pred = fluid.layers.fc(input=x, size=1000, param_attr=fluid.ParamAttr(name="fc_w"),
                               bias_attr=fluid.ParamAttr(name="fc_b"))
        loss = fluid.layers.mean(pred)
        fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
    return main, startup


def harness_transpile(trainer_id, config=None, **overrides):
    """``test_dist_base.TestDistRunnerBase.get_transpiler``'s call, keywords and all: trainers and
    pservers alike pass ``current_endpoint=None``."""
    main, startup = fc_model()
    kw = dict(trainer_id=trainer_id, program=main, pservers=PSERVERS, trainers=2, sync_mode=True,
              current_endpoint=None)
    kw.update(overrides)
    with fluid.program_guard(main, startup):
        t = fluid.DistributeTranspiler(config=config)
        t.transpile(**kw)
    return t


def programs_text(trainer_id, trainer=True, **kw):
    """The trainer program, or both pservers' main and startup programs, as text (names made afresh and
    the name-scope counter left out, so two transpiles compare equal)."""
    with fluid.unique_name.guard():
        t = harness_transpile(trainer_id, **kw)
        if trainer:
            texts = [str(t.get_trainer_program(wait_port=False))]
        else:
            texts = []
            for ep in (EP0, EP1):
                prog = t.get_pserver_program(ep)
                texts += [str(prog), str(t.get_startup_program(ep, prog))]
    texts = [re.sub(r"op_namescope = [^,]*, ", "", text) for text in texts]
    return texts[0] if trainer else texts


@pytest.mark.parametrize("trainer_id", [0, 1])
def test_harness_trainers_transpile_with_current_endpoint_none(trainer_id):
    """The harness's trainers: ``current_endpoint=None`` then ``get_trainer_program()``: the same program as
    with an endpoint (Paddle reads current_endpoint only in nccl2 mode)."""
    got = programs_text(trainer_id)
    assert got == programs_text(trainer_id, current_endpoint=EP0)
    assert "send" in got and "recv" in got


def test_harness_pservers_transpile_with_current_endpoint_none():
    """The harness's pservers transpile with None too, then name their endpoint to get_pserver_program."""
    assert programs_text(0, trainer=False) == \
        programs_text(0, current_endpoint=EP1, trainer=False)


def test_current_endpoint_is_unread_in_pserver_mode():
    """'' (the launcher's default), a hostname and a bare name make the same trainer program as None."""
    want = programs_text(0)
    for value in ("", "trainer0", "worker-3:7000"):
        assert programs_text(0, current_endpoint=value) == want


def test_sync_mode_is_taken_for_its_truth_value():
    """Paddle tests ``if self.sync_mode``: None is asynchronous, like False."""
    t_none = harness_transpile(0, sync_mode=None)
    assert t_none.sync_mode is False
    assert programs_text(0, sync_mode=None) == programs_text(0, sync_mode=False)
    assert programs_text(0, sync_mode=1) == programs_text(0)


def test_numpy_and_int_valued_float_counts():
    """argparse and NumPy spellings of the counts: np.int64 trainer_id, a float trainer count 2.0."""
    t = harness_transpile(np.int64(1), trainers=2.0)
    assert (t.trainer_id, t.trainer_num) == (1, 2) and type(t.trainer_num) is int
    assert programs_text(np.int64(1), trainers=2.0) == programs_text(1)


def test_pservers_may_pass_any_trainer_id():
    """A pserver's ``trainer_id`` is not read (Paddle's fleet passes the server's index, the harness its
    default 0): -1 and an index past the trainers build the same pserver programs; a trainer whose
    id is out of range in sync mode is still an error, at get_trainer_program."""
    want = programs_text(0, trainer=False)
    assert programs_text(-1, trainer=False) == want
    assert programs_text(3, trainer=False) == want
    with pytest.raises(ValueError, match=r"trainer_id 3 is out of range for 2 trainers"):
        harness_transpile(3).get_trainer_program(wait_port=False)


def test_async_trainer_ids_are_not_bounded():
    """Asynchronous gradients carry no trainer suffix: Paddle runs any trainer id, and so does fluidist."""
    trainer = harness_transpile(5, sync_mode=False).get_trainer_program(wait_port=False)
    sends = [op for op in trainer.global_block().ops if op.type == "send"]
    assert sends and all(op.attr("trainer_id") == 5 for op in sends)
    assert sorted(n for op in sends for n in op.input("X")) == ["fc_b@GRAD", "fc_w@GRAD.block0", "fc_w@GRAD.block1"]


def test_harness_config_fields_as_the_harness_sets_them():
    """``get_transpiler``'s config: enable_dc_asgd, sync_mode and runtime_split_send_recv set from its
    arguments (hogwild False), nccl_comm_num only when > 1; flags set to None count as False."""
    config = fluid.DistributeTranspilerConfig()
    config.enable_dc_asgd = False
    config.sync_mode = True
    config.runtime_split_send_recv = False
    config.wait_port = None
    config.print_log = 0
    config.slice_var_up = np.bool_(True)
    config.min_block_size = 8192.0
    config.nccl_comm_num = np.int64(1)
    assert programs_text(0, config=config) == programs_text(0)
    config = fluid.DistributeTranspilerConfig()
    config.slice_var_up = None          # falsy: parameters kept whole, as with False
    unsliced = fluid.DistributeTranspilerConfig()
    unsliced.slice_var_up = False
    assert programs_text(0, config=config) == programs_text(0, config=unsliced)
    assert ".block" not in programs_text(0, config=config)


@pytest.mark.parametrize("dtype,fed,want", [
    ("int64", 3, 6.0), ("int64", np.int64(3), 6.0), ("int64", 3.7, 6.0),     # cast to the variable's dtype
    ("float32", 3.5, 7.0), ("float32", np.float32(3.5), 7.0), ("float32", True, 2.0)])
def test_a_scalar_feed_is_a_one_element_tensor_of_the_variables_dtype(dtype, fed, want):
    """Paddle 1.8's Executor feeds a Python or NumPy scalar as ``np.array([value]).astype(var dtype)``: a
    shape-[1] fluid.data variable takes it (fluidist refused its shape () and its float64)."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        s = fluid.data(name="s", shape=[1], dtype=dtype)
        out = fluid.layers.cast(s, "float32") * 2.0
    got, = fluid.Executor(fluid.CPUPlace()).run(main, feed={"s": fed}, fetch_list=[out])
    np.testing.assert_array_equal(got, np.array([want], "float32"))
    with pytest.raises(ValueError, match=r"feed variable 's' expects shape \[1\] but got \[\]"):
        fluid.Executor(fluid.CPUPlace()).run(main, feed={"s": np.array(fed, dtype)}, fetch_list=[out])


def test_sample_generator_fields_past_the_feed_variables_are_not_fed():
    """``set_sample_generator`` without LoD variables: Paddle 1.8 zips each sample's fields with the feed
    variables, so a reader yielding (image, label, sample id) feeds [image, label] (fluidist refused the
    third field). With a LoD variable Paddle's DataFeeder wants exactly one field per variable."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        image = fluid.data(name="image", shape=[None, 2], dtype="float32")
        label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        total = fluid.layers.reduce_sum(image) + fluid.layers.cast(fluid.layers.reduce_sum(label), "float32")
    samples = [(np.full(2, i, "float32"), np.array([i]), "id-%d" % i) for i in range(4)]
    loader = fluid.io.DataLoader.from_generator(feed_list=[image, label], capacity=2)
    loader.set_sample_generator(lambda: iter(samples), batch_size=2, places=fluid.cpu_places(1))
    exe = fluid.Executor(fluid.CPUPlace())
    got = [exe.run(main, feed=d, fetch_list=[total])[0].tolist() for d in loader()]
    assert got == [[0 * 3 + 1 * 3], [2 * 3 + 3 * 3]]
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        words = fluid.data(name="words", shape=[None, 1], dtype="int64", lod_level=1)
    lod_loader = fluid.io.DataLoader.from_generator(feed_list=[words], capacity=2)
    lod_loader.set_sample_generator(lambda: iter([([1, 2], "extra")] * 2), batch_size=2, places=fluid.cpu_places(1))
    with pytest.raises(ValueError, match="sample 0 has 2 fields for 1 feed variables"):
        list(lod_loader())


def test_a_py_reader_fed_through_its_queue_needs_no_start_in_its_first_pass():
    """Paddle's test_py_reader_using_executor: a thread pushes LoDTensorArrays into ``py_reader.queue`` and
    closes it; the program reads them without ``start()`` (a Paddle reader runs from its creation until
    its first reset). fluidist refused the read as "not started", and took only (array, lod) pairs."""
    import threading
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        reader = fluid.layers.py_reader(capacity=2, shapes=[[-1, 3], [-1, 1]], dtypes=["float32", "int64"])
        x, label = fluid.layers.read_file(reader)
        total = fluid.layers.reduce_sum(x) + fluid.layers.cast(fluid.layers.reduce_sum(label), "float32")
    batches = [(np.full((2, 3), i, "float32"), np.array([[i], [1]], "int64")) for i in range(4)]

    def feed():
        for xb, lb in batches:
            array = fluid.LoDTensorArray()
            for value in (xb, lb):
                t = fluid.LoDTensor()
                t.set(value, fluid.CPUPlace())
                array.append(t)
            reader.queue.push(array)
        reader.queue.close()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    threading.Thread(target=feed, daemon=True).start()
    got = []
    with pytest.raises(fluid.core.EOFException):
        while True:
            got.append(float(exe.run(main, fetch_list=[total])[0][0]))
    assert got == [6 * i + i + 1 for i in range(4)]
    reader.reset()            # after a reset, Paddle's reader reads again only once started
    with pytest.raises(RuntimeError, match="has not been started: call start"):
        exe.run(main, fetch_list=[total])
