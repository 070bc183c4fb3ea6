"""Every reader form trains the digits MLP to the same parameters as feeding the same batches by
hand; the end of a pass is ``fluid.core.EOFException`` (non-iterable) or the end of the loop
(iterable); a generator that raises ends the pass with its own error."""
import numpy as np
import pytest

import fluidist as fluid

BATCH = 16
STEPS = 6


def digits():
    from sklearn.datasets import load_digits
    d = load_digits()
    x = (d.images / 16.0).astype(np.float32).reshape(-1, 64)[:BATCH * STEPS]
    y = d.target.astype(np.int64).reshape(-1, 1)[:BATCH * STEPS]
    return x, y


def net(img, label):
    h = fluid.layers.fc(img, 32, act="relu")
    logits = fluid.layers.fc(h, 10)
    loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(logits, label))
    fluid.optimizer.SGD(0.2).minimize(loss)
    return loss


def build(make_inputs):
    """(main, startup, loss, extra): ``make_inputs()`` returns (img, label, extra)."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 5
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        img, label, extra = make_inputs()
        loss = net(img, label)
    return main, startup, loss, extra


def data_vars():
    return fluid.data("img", [None, 64], "float32"), fluid.data("label", [None, 1], "int64")


def params(scope, main):
    return {p.name: np.array(scope.find_var(p.name).get_tensor()) for p in main.global_block().all_parameters()}


def samples():
    x, y = digits()
    for i in range(len(x)):
        yield x[i], y[i]


def sample_lists():
    x, y = digits()
    for i in range(0, len(x), BATCH):
        yield [(x[j], y[j]) for j in range(i, i + BATCH)]


def batches():
    x, y = digits()
    for i in range(0, len(x), BATCH):
        yield x[i:i + BATCH], y[i:i + BATCH]


@pytest.fixture(scope="module")
def reference():
    """Losses and parameters after feeding the batches by hand."""
    main, startup, loss, _ = build(lambda: data_vars() + (None,))
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    losses = [exe.run(main, feed={"img": x, "label": y}, fetch_list=[loss], scope=scope)[0][0] for x, y in batches()]
    return losses, params(scope, main)


def check(reference, losses, scope, main):
    ref_losses, ref_params = reference
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-6)
    got = params(scope, main)
    assert sorted(got) == sorted(ref_params)
    for k in got:
        np.testing.assert_allclose(got[k], ref_params[k], rtol=1e-6, atol=1e-7)


def set_source(loader, how, places=None):
    if how == "sample":
        loader.set_sample_generator(samples, batch_size=BATCH, places=places)
    elif how == "sample_list":
        loader.set_sample_list_generator(sample_lists, places=places)
    else:
        loader.set_batch_generator(batches, places=places)


@pytest.mark.parametrize("how", ["sample", "sample_list", "batch"])
def test_iterable_data_loader(reference, how):
    main, startup, loss, loader = build(lambda: data_vars() + (None,))
    with fluid.program_guard(main, startup):
        loader = fluid.io.DataLoader.from_generator(feed_list=[main.global_block().var("img"),
                                                               main.global_block().var("label")], capacity=3)
    set_source(loader, how, fluid.cpu_places(1))
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    losses = [exe.run(main, feed=data, fetch_list=[loss], scope=scope)[0][0] for data in loader()]
    check(reference, losses, scope, main)


def non_iterable_inputs(capacity=2, double_buffer=True):
    img, label = data_vars()
    loader = fluid.io.DataLoader.from_generator(feed_list=[img, label], capacity=capacity, iterable=False,
                                                use_double_buffer=double_buffer)
    return img, label, loader


def train_one_pass(reference, reader, startup, main, loss):
    """Start ``reader``, train until EOFException, reset, compare with the reference."""
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    reader.start()
    losses = run_until_eof(exe, main, loss, scope)
    reader.reset()
    check(reference, losses, scope, main)


def run_until_eof(exe, main, loss, scope):
    losses = []
    while True:
        try:
            losses.append(exe.run(main, fetch_list=[loss], scope=scope)[0][0])
        except fluid.core.EOFException:
            return losses


@pytest.mark.parametrize("how", ["sample", "sample_list", "batch"])
@pytest.mark.parametrize("double_buffer", [True, False])
def test_non_iterable_data_loader_ends_the_pass_with_eof(reference, how, double_buffer):
    main, startup, loss, loader = build(lambda: non_iterable_inputs(double_buffer=double_buffer))
    types = [op.type for op in main.global_block().ops[:3]]
    assert types == ["create_py_reader", "create_double_buffer_reader", "read"] if double_buffer else \
        types[:2] == ["create_py_reader", "read"]
    set_source(loader, how)
    train_one_pass(reference, loader, startup, main, loss)
    main.lint()


def test_several_passes_and_forgetting_start():
    main, startup, loss, loader = build(non_iterable_inputs)
    loader.set_batch_generator(batches)
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    with pytest.raises(RuntimeError, match="has not been started: call start"):
        exe.run(main, fetch_list=[loss], scope=scope)
    counts = []
    for _ in range(3):
        loader.start()
        counts.append(len(run_until_eof(exe, main, loss, scope)))
        loader.reset()
    assert counts == [STEPS] * 3
    # reset in the middle of a pass: the next pass starts from the beginning
    loader.start()
    exe.run(main, fetch_list=[loss], scope=scope)
    loader.reset()
    loader.start()
    assert len(run_until_eof(exe, main, loss, scope)) == STEPS
    loader.reset()


def test_py_reader_and_read_file(reference):
    def inputs():
        reader = fluid.layers.py_reader(capacity=4, shapes=[(-1, 64), (-1, 1)], dtypes=["float32", "int64"],
                                        name="digits")
        img, label = fluid.layers.read_file(reader)
        return img, label, reader
    main, startup, loss, reader = build(inputs)
    assert "create_py_reader" in [op.type for op in startup.global_block().ops]
    assert [op.type for op in main.global_block().ops][:2] == ["create_double_buffer_reader", "read"]
    reader.decorate_sample_list_generator(sample_lists)
    train_one_pass(reference, reader, startup, main, loss)


def test_create_py_reader_by_data_with_double_buffer(reference):
    def inputs():
        img, label = data_vars()
        reader = fluid.layers.create_py_reader_by_data(capacity=2, feed_list=[img, label], use_double_buffer=False)
        reader = fluid.layers.double_buffer(reader)
        img2, label2 = fluid.layers.read_file(reader)
        assert img2.shape == (-1, 64) and label2.dtype == "int64"
        return img2, label2, reader
    main, startup, loss, reader = build(inputs)
    reader.decorate_batch_generator(batches)
    train_one_pass(reference, reader, startup, main, loss)


@pytest.mark.parametrize("iterable", [True, False])
def test_py_reader_class(reference, iterable):
    def inputs():
        img, label = data_vars()
        return img, label, fluid.io.PyReader(feed_list=[img, label], capacity=2, iterable=iterable)
    main, startup, loss, reader = build(inputs)
    reader.decorate_sample_generator(samples, batch_size=BATCH, places=fluid.cpu_places(1) if iterable else None)
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    if iterable:
        losses = [exe.run(main, feed=d, fetch_list=[loss], scope=scope)[0][0] for d in reader()]
    else:
        reader.start()
        losses = run_until_eof(exe, main, loss, scope)
        reader.reset()
    check(reference, losses, scope, main)


def failing_batches():
    for i, b in enumerate(batches()):
        if i == 2:
            raise KeyError("no such record 17")
        yield b


@pytest.mark.timeout(60)
def test_a_generator_that_raises_ends_the_pass_with_its_error():
    main, startup, loss, loader = build(lambda: data_vars() + (None,))
    with fluid.program_guard(main, startup):
        loader = fluid.io.DataLoader.from_generator(feed_list=[main.global_block().var("img"),
                                                               main.global_block().var("label")], capacity=1)
    loader.set_batch_generator(failing_batches, places=fluid.cpu_places(1))
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    seen = 0
    with pytest.raises(KeyError, match="no such record 17"):
        for data in loader():
            exe.run(main, feed=data, fetch_list=[loss], scope=scope)
            seen += 1
    assert seen == 2
    # the loader works again on the next pass
    loader.set_batch_generator(batches, places=fluid.cpu_places(1))
    assert sum(1 for _ in loader()) == STEPS

    main, startup, loss, loader = build(non_iterable_inputs)
    loader.set_batch_generator(failing_batches)
    exe.run(startup, scope=scope)
    loader.start()
    with pytest.raises(KeyError, match="no such record 17"):
        run_until_eof(exe, main, loss, scope)
    loader.reset()


def test_bad_batches_name_the_variable():
    main, startup, loss, loader = build(non_iterable_inputs)
    loader.set_batch_generator(lambda: iter([(np.zeros((4, 63), "float32"), np.zeros((4, 1), "int64"))]))
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    loader.start()
    with pytest.raises(ValueError, match="'img' expects shape"):
        exe.run(main, fetch_list=[loss], scope=scope)
    loader.reset()
    loader.set_batch_generator(lambda: iter([(np.zeros((4, 64), "float32"),)]))
    loader.start()
    with pytest.raises(ValueError, match="holds 1 values but the reader feeds 2 variables"):
        exe.run(main, fetch_list=[loss], scope=scope)
    loader.reset()
    with pytest.raises(ValueError, match="capacity"):
        fluid.io.DataLoader.from_generator(feed_list=[main.global_block().var("img")], capacity=0)
    with pytest.raises(ValueError, match="places cannot be None"):
        fluid.io.DataLoader.from_generator(feed_list=[main.global_block().var("img")], capacity=2
                                           ).set_batch_generator(batches)


def test_sequences_keep_their_lod():
    words = fluid.data("words", [None, 1], "int64", lod_level=1)
    loader = fluid.io.DataLoader.from_generator(feed_list=[words], capacity=2)
    loader.set_sample_list_generator(lambda: iter([[([1, 2, 3],), ([4],)], [([5, 6],), ([7],), ([8],)]]),
                                     places=fluid.cpu_places(1))
    got = [d[0]["words"] for d in loader()]
    assert [t.lod() for t in got] == [[[0, 3, 4]], [[0, 2, 3, 4]]]
    np.testing.assert_array_equal(np.array(got[1]).ravel(), [5, 6, 7, 8])


@pytest.mark.parametrize("nplaces", [2])
def test_non_iterable_loader_on_several_places(nplaces):
    """Each place's read takes a batch of its own: two places on batches (b0, b1) equal one place
    on b0 + b1 concatenated."""
    main, startup, loss, loader = build(non_iterable_inputs)
    loader.set_batch_generator(batches)
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    compiled = fluid.CompiledProgram(main).with_data_parallel(loss_name=loss.name, places=fluid.cpu_places(nplaces))
    loader.start()
    steps = len(run_until_eof(exe, compiled, loss, scope))
    loader.reset()
    assert steps == STEPS // nplaces

    ref_main, ref_startup, ref_loss, _ = build(lambda: data_vars() + (None,))
    ref_scope = fluid.Scope()
    exe.run(ref_startup, scope=ref_scope)
    bs = list(batches())
    for i in range(0, STEPS, nplaces):
        x = np.concatenate([b[0] for b in bs[i:i + nplaces]])
        y = np.concatenate([b[1] for b in bs[i:i + nplaces]])
        exe.run(ref_main, feed={"img": x, "label": y}, scope=ref_scope)
    for k, v in params(ref_scope, ref_main).items():
        np.testing.assert_allclose(np.array(scope.find_var(k).get_tensor()), v, rtol=1e-5, atol=1e-6)


def test_iterable_loader_gives_one_batch_per_place():
    """An iterable loader on two places yields [batch for place 0, batch for place 1]; running them
    data parallel equals one place on the two batches concatenated."""
    main, startup, loss, _ = build(lambda: data_vars() + (None,))
    with fluid.program_guard(main, startup):
        loader = fluid.io.DataLoader.from_generator(feed_list=[main.global_block().var("img"),
                                                               main.global_block().var("label")], capacity=4)
    loader.set_batch_generator(batches, places=fluid.cpu_places(2))
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    compiled = fluid.CompiledProgram(main).with_data_parallel(loss_name=loss.name, places=fluid.cpu_places(2))
    got = list(loader())
    assert len(got) == STEPS // 2 and all(len(d) == 2 for d in got)
    for d in got:
        exe.run(compiled, feed=d, scope=scope)
    ref_main, ref_startup, _, _ = build(lambda: data_vars() + (None,))
    ref_scope = fluid.Scope()
    exe.run(ref_startup, scope=ref_scope)
    bs = list(batches())
    for i in range(0, STEPS, 2):
        exe.run(ref_main, feed={"img": np.concatenate([bs[i][0], bs[i + 1][0]]),
                                "label": np.concatenate([bs[i][1], bs[i + 1][1]])}, scope=ref_scope)
    for k, v in params(ref_scope, ref_main).items():
        np.testing.assert_allclose(np.array(scope.find_var(k).get_tensor()), v, rtol=1e-5, atol=1e-6)
