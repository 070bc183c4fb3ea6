"""fluid.io's reader decorators, with Paddle's names and semantics; errors reach the consumer."""
import numpy as np
import pytest

import fluidist as fluid


def count(n):
    return lambda: iter(range(n))


def test_batch_shuffle_firstn_chain_compose_cache_map():
    assert list(fluid.io.batch(count(5), 2)()) == [[0, 1], [2, 3], [4]]
    assert list(fluid.io.batch(count(5), 2, drop_last=True)()) == [[0, 1], [2, 3]]
    with pytest.raises(ValueError, match="batch_size"):
        fluid.io.batch(count(5), 0)
    shuffled = list(fluid.io.shuffle(count(10), 4)())
    assert sorted(shuffled) == list(range(10))
    assert sorted(shuffled[:4]) == [0, 1, 2, 3] and sorted(shuffled[8:]) == [8, 9]
    assert list(fluid.io.firstn(count(10), 3)()) == [0, 1, 2]
    assert list(fluid.io.chain(count(2), count(3))()) == [0, 1, 0, 1, 2]
    pairs = lambda: iter([(1, 2), (3, 4)])
    assert list(fluid.io.compose(pairs, count(2))()) == [(1, 2, 0), (3, 4, 1)]
    with pytest.raises(fluid.io.ComposeNotAligned):
        list(fluid.io.compose(pairs, count(3))())
    assert list(fluid.io.compose(pairs, count(3), check_alignment=False)()) == [(1, 2, 0), (3, 4, 1)]
    calls = []

    def once():
        calls.append(1)
        return iter([1, 2])
    cached = fluid.io.cache(once)
    assert list(cached()) == [1, 2] and list(cached()) == [1, 2] and len(calls) == 1
    assert list(fluid.io.map_readers(lambda a, b: a * b, count(3), count(3))()) == [0, 1, 4]


def broken(n):
    def reader():
        for i in range(n):
            yield i
        raise OSError("disk gone")
    return reader


@pytest.mark.timeout(30)
def test_buffered_and_xmap_pass_errors_on():
    assert list(fluid.io.buffered(count(100), 3)()) == list(range(100))
    with pytest.raises(OSError, match="disk gone"):
        list(fluid.io.buffered(broken(5), 2)())
    assert list(fluid.io.xmap_readers(lambda x: x * 2, count(50), 4, 8, order=True)()) == [2 * i for i in range(50)]
    assert sorted(fluid.io.xmap_readers(lambda x: x * 2, count(50), 3, 4)()) == [2 * i for i in range(50)]
    with pytest.raises(OSError, match="disk gone"):
        list(fluid.io.xmap_readers(lambda x: x, broken(5), 3, 2)())

    def bad_mapper(x):
        if x == 7:
            raise ZeroDivisionError("sample 7")
        return x
    with pytest.raises(ZeroDivisionError, match="sample 7"):
        list(fluid.io.xmap_readers(bad_mapper, count(20), 2, 2, order=True)())


@pytest.mark.timeout(60)
def test_multiprocess_reader_sends_samples_without_pickle():
    def make(k):
        def reader():
            for i in range(20):
                yield np.full((2, 3), k * 100 + i, np.float32), k * 100 + i, ("s%d" % k, [i])
        return reader
    got = list(fluid.io.multiprocess_reader([make(1), make(2)])())
    assert len(got) == 40
    for arr, n, (s, lst) in got:
        assert arr.dtype == np.float32 and arr.shape == (2, 3) and arr[0, 0] == n
        assert s == "s%d" % (n // 100) and lst == [n % 100]
    with pytest.raises(RuntimeError, match="disk gone"):
        list(fluid.io.multiprocess_reader([broken(3), make(1)])())

    def unsendable():
        yield object()
    with pytest.raises(RuntimeError, match="may hold numbers, strings, bytes, numpy arrays"):
        list(fluid.io.multiprocess_reader([unsendable])())


@pytest.mark.timeout(60)
def test_multiprocess_reader_sends_dicts_and_bytes_as_paddle_does():
    """Paddle 1.8 pickles whatever its reader processes yield: dict samples (``{"img": ..., "label": ...}``)
    and encoded images (bytes) are common; fluidist sends them too, still without pickle."""
    def reader():
        for i in range(5):
            yield {"img": np.arange(4, dtype=np.uint8) + i, "raw": bytes([i, 255]), 7: (i, None)}
    got = sorted(fluid.io.multiprocess_reader([reader])(), key=lambda d: d["raw"])
    assert [sorted(d, key=str) for d in got] == [[7, "img", "raw"]] * 5
    for i, d in enumerate(got):
        np.testing.assert_array_equal(d["img"], np.arange(4, dtype=np.uint8) + i)
        assert d["raw"] == bytes([i, 255]) and d[7] == (i, None)

    def objects():
        yield np.array([object()], dtype=object)
    with pytest.raises(RuntimeError, match=r"numpy arrays \(not of objects\)"):
        list(fluid.io.multiprocess_reader([objects])())
