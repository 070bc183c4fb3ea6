"""The offline ``paddle.dataset`` stand-ins (tools/paddle_conformance/offline_dataset/) that the
conformance runner installs in front of fluidist: each dataset's samples have the layout, types,
shapes and ranges that Paddle's callers (its unit tests and book tests) read, a reader yields the
same samples every time and in every process, and the mnist, imdb, uci_housing and imikolov
stand-ins are learnable by small NumPy models (well above chance).
(The files ``common.download`` writes for the URLs that Paddle's tests fetch themselves are checked
in test_offline_downloads.py.)"""
import hashlib
import inspect
import json
import math
import os
import re
import subprocess
import sys
from collections import Counter, defaultdict
from itertools import islice

import numpy as np
import pytest

TOOLS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools")
sys.path.insert(0, TOOLS)
import paddle_conformance.offline_dataset as ds  # noqa: E402
from paddle_conformance.offline_dataset import common  # noqa: E402


def _softmax_regression(x, y, classes, steps=150, lr=0.5):
    """Weights and bias of a softmax regression fitted by full-batch gradient descent."""
    w = np.zeros((x.shape[1], classes))
    b = np.zeros(classes)
    onehot = np.eye(classes)[y]
    for _ in range(steps):
        logits = x @ w + b
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        w -= lr * x.T @ (p - onehot) / len(y)
        b -= lr * (p - onehot).mean(axis=0)
    return w, b


def _digest(samples):
    """A SHA-256 of the samples: arrays by dtype, shape and bytes, everything else by repr."""
    h = hashlib.sha256()
    for sample in samples:
        for field in (sample if isinstance(sample, (tuple, list)) else [sample]):
            if isinstance(field, np.ndarray):
                h.update(("%s%s" % (field.dtype, field.shape)).encode() + field.tobytes())
            else:
                h.update(repr(field).encode())
    return h.hexdigest()


def _first_samples_digests():
    """A digest of the first samples of every dataset (the same in every process)."""
    wd = ds.imdb.word_dict()
    readers = {
        "mnist": ds.mnist.train(), "cifar": ds.cifar.test100(), "uci": ds.uci_housing.test(),
        "imdb": ds.imdb.test(wd), "imikolov": ds.imikolov.train(ds.imikolov.build_dict(), 5),
        "wmt14": ds.wmt14.train(1000), "wmt16": ds.wmt16.validation(500, 600, "de"),
        "movielens": ds.movielens.test(), "conll05": ds.conll05.test(),
        "flowers": ds.flowers.valid(use_xmap=False),
    }
    digests = {name: _digest(islice(reader(), 30)) for name, reader in readers.items()}
    digests["sentiment"] = _digest(islice(ds.sentiment.test(), 30))
    return digests


# --- the package and common -------------------------------------------------------------------


def test_package_imports_with_numpy_only_and_says_it_is_synthetic():
    code = ("import sys; import paddle_conformance.offline_dataset as d; "
            "print(sorted(m for m in ('six', 'requests', 'cv2', 'scipy', 'nltk', 'paddle', 'fluidist') "
            "if m in sys.modules)); print(d.__doc__)")
    out = subprocess.run([sys.executable, "-c", code], cwd=TOOLS, capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[0] == "[]"
    assert "synthetic stand-ins of the same shapes, not Paddle's data" in out
    assert sorted(ds.__all__) == sorted(["mnist", "imikolov", "imdb", "cifar", "movielens", "conll05",
                                         "uci_housing", "sentiment", "wmt14", "wmt16", "flowers"])


def test_download_returns_a_file_in_place_and_refuses_to_fetch(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(common, "DATA_HOME", str(tmp_path))
    url = "http://paddlemodels.bj.bcebos.com/flowers/102flowers.tgz"  # no synthetic stand-in
    with pytest.raises(common.NoNetworkError) as e:
        common.download(url, "flowers", "52808999861908f626f3c1f4e79d11fa")
    assert str(e.value) == "no network in the conformance runner: " + url
    assert capsys.readouterr().err == "no network in the conformance runner: %s\n" % url
    assert isinstance(e.value, ConnectionError) and e.value.url == url
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "saved.bin").write_bytes(b"payload")
    md5 = hashlib.md5(b"payload").hexdigest()
    assert common.md5file(str(tmp_path / "cache" / "saved.bin")) == md5
    assert common.download("http://x/y/z.bin", "cache", md5, save_name="saved.bin") == str(tmp_path / "cache" / "saved.bin")
    with pytest.raises(common.NoNetworkError):  # there, but not with this checksum
        common.download("http://x/y/z.bin", "cache", "0" * 32, save_name="saved.bin")
    ds.mnist.fetch()  # the modules' fetch has nothing to download
    common.fetch_all()


@pytest.mark.parametrize("dumper,loader", [(None, None), (json.dump, json.load)])
def test_split_and_cluster_files_reader_share_the_samples_out(tmp_path, dumper, loader, capsys):
    samples = [[i, i * i] for i in range(23)]
    suffix = str(tmp_path / "part-%05d.data")
    kwargs = {} if dumper is None else {"dumper": dumper}
    common.split(lambda: iter(samples), 5, suffix=suffix, **kwargs)
    files = sorted(os.listdir(tmp_path))
    assert files == ["part-%05d.data" % i for i in range(5)]  # Paddle's cuts: 6, 5, 5, 5, then 2
    kwargs = {} if loader is None else {"loader": loader}
    shares = [list(common.cluster_files_reader(str(tmp_path / "part-*"), 2, trainer, **kwargs)())
              for trainer in (0, 1)]
    assert [len(s) for s in shares] == [6 + 5 + 2, 5 + 5]
    assert "append file: %s" % (suffix % 4) in capsys.readouterr().out  # Paddle's reader says which files
    assert sorted(shares[0] + shares[1]) == samples
    with pytest.raises(TypeError):
        common.split(lambda: iter(samples), 5, suffix=suffix, dumper="not callable")


def test_every_reader_yields_the_same_samples_in_another_process():
    here = _first_samples_digests()
    assert here == _first_samples_digests()
    code = ("import json, sys; sys.path.insert(0, %r); import test_offline_dataset as t; "
            "print(json.dumps(t._first_samples_digests()))" % os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONHASHSEED="12345")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert json.loads(out.splitlines()[-1]) == here


# --- images -----------------------------------------------------------------------------------


def test_mnist_samples_are_pixels_in_minus_one_to_one_and_digit_labels():
    train = list(ds.mnist.train()())
    test = list(ds.mnist.test()())
    assert (len(train), len(test)) == (5000, 1000)
    image, label = train[0]
    assert isinstance(image, np.ndarray) and image.dtype == np.float32 and image.shape == (784,)
    assert type(label) is int
    pixels = np.stack([s[0] for s in train])
    assert pixels.min() == -1.0 and pixels.max() == 1.0
    np.testing.assert_allclose((pixels + 1) / 2 * 255, np.rint((pixels + 1) / 2 * 255), atol=1e-3)
    assert sorted(Counter(s[1] for s in train)) == list(range(10))
    assert _digest(train[:50]) != _digest(test[:50])


def test_mnist_is_learnable_by_a_softmax_regression():
    train, test = list(ds.mnist.train()()), list(ds.mnist.test()())
    x = np.stack([s[0] for s in train]).astype(np.float64)
    w, b = _softmax_regression(x, np.array([s[1] for s in train]), 10, steps=60, lr=1.0)
    predicted = (np.stack([s[0] for s in test]) @ w + b).argmax(axis=1)
    accuracy = (predicted == np.array([s[1] for s in test])).mean()
    assert accuracy > 0.9, accuracy  # chance: 0.1


@pytest.mark.parametrize("creator,classes,size", [
    ("train10", 10, 2000), ("test10", 10, 500), ("train100", 100, 2000), ("test100", 100, 500)])
def test_cifar_samples_are_3072_values_in_zero_one(creator, classes, size):
    samples = list(getattr(ds.cifar, creator)()())
    assert len(samples) == size
    image, label = samples[0]
    assert image.dtype == np.float32 and image.shape == (3072,) and type(label) is int
    pixels = np.stack([s[0] for s in samples])
    assert 0.0 <= pixels.min() and pixels.max() <= 1.0 and pixels.std() > 0.1
    assert max(s[1] for s in samples) == classes - 1 and min(s[1] for s in samples) == 0


def test_cifar_cycle_repeats_the_samples_without_end():
    once = list(ds.cifar.train10(cycle=False)())
    cycled = list(islice(ds.cifar.train10(cycle=True)(), 2 * len(once) + 3))
    assert _digest(cycled[:len(once)]) == _digest(once) == _digest(cycled[len(once):2 * len(once)])
    assert _digest(cycled[-3:]) == _digest(once[:3])


def test_flowers_samples_are_mean_subtracted_224_crops_with_102_labels():
    assert list(inspect.signature(ds.flowers.train).parameters) == ["mapper", "buffered_size", "use_xmap", "cycle"]
    assert list(inspect.signature(ds.flowers.valid).parameters) == ["mapper", "buffered_size", "use_xmap"]
    train = list(islice(ds.flowers.train(use_xmap=False)(), 110))
    image, label = train[0]
    assert image.dtype == np.float32 and image.shape == (3 * 224 * 224,) and type(label) is int
    assert -124.0 < image.min() and image.max() < 152.0
    assert sorted({s[1] for s in train}) == list(range(102))
    assert sum(1 for _ in ds.flowers.test()()) == 204 and sum(1 for _ in ds.flowers.valid(buffered_size=8)()) == 204
    raw = next(ds.flowers.train(mapper=lambda sample: sample)())
    assert raw[0].shape == (256, 256, 3) and raw[0].dtype == np.uint8
    np.testing.assert_array_equal(ds.flowers.test_mapper(raw)[0], next(ds.flowers.train()())[0])


# --- numbers ----------------------------------------------------------------------------------


def test_uci_housing_features_are_normalised_like_paddles_and_prices_in_range():
    train, test = list(ds.uci_housing.train()()), list(ds.uci_housing.test()())
    assert (len(train), len(test)) == (404, 102)
    features, price = train[0]
    assert features.dtype == np.float64 and features.shape == (13,) and price.shape == (1,)
    table = np.stack([np.concatenate(s) for s in train + test])
    np.testing.assert_allclose(table[:, :13].mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(table[:, :13].max(axis=0) - table[:, :13].min(axis=0), 1.0)
    assert 3.0 < table[:, 13].min() and table[:, 13].max() < 55.0 and 4.0 < table[:, 13].std() < 10.0
    np.testing.assert_array_equal(ds.uci_housing.predict_reader()[0], test[0][0])
    assert ds.uci_housing.feature_names[5] == "RM"


def test_uci_housing_is_learnable_by_a_linear_fit():
    train, test = list(ds.uci_housing.train()()), list(ds.uci_housing.test()())

    def design(samples):
        return np.stack([np.append(s[0], 1.0) for s in samples]), np.array([s[1][0] for s in samples])

    x, y = design(train)
    coef = np.linalg.lstsq(x, y, rcond=None)[0]
    tx, ty = design(test)
    mse = ((tx @ coef - ty) ** 2).mean()
    assert mse < 2.0 and mse < 0.1 * ty.var(), (mse, ty.var())  # the book test stops below 10


def test_movielens_records_have_paddles_layout_and_id_ranges():
    ml = ds.movielens
    assert (ml.max_user_id(), ml.max_movie_id(), ml.max_job_id()) == (6040, 3952, 20)
    assert ml.age_table == [1, 18, 25, 35, 45, 50, 56]
    assert len(ml.movie_categories()) == 18 and len(ml.get_movie_title_dict()) == 5174
    train, test = list(ml.train()()), list(ml.test()())
    assert len(train) + len(test) == ml.RATINGS and 0.05 < len(test) / ml.RATINGS < 0.15
    for record in train[:200] + test[:200]:
        uid, gender, age, job, mid, categories, title, rating = record
        assert 1 <= uid <= 6040 and gender in (0, 1) and 0 <= age < 7 and 0 <= job <= 20 and 1 <= mid <= 3952
        assert 1 <= len(categories) <= 3 and all(0 <= c < 18 for c in categories)
        assert 1 <= len(title) <= 6 and all(0 <= w < 5174 for w in title)
        assert rating[0] in (-3.0, -1.0, 1.0, 3.0, 5.0)
    assert ml.user_info()[uid].value() == record[:4] and ml.movie_info()[mid].value() == record[4:7]
    other = list(ml.train(rand_seed=1)())
    assert len(other) != len(train) or _digest(other) != _digest(train)
    assert len(list(ml.test(test_ratio=0.5)())) > 2 * len(test)


# --- words ------------------------------------------------------------------------------------


def test_imdb_samples_are_word_ids_positive_then_negative():
    wd = ds.imdb.word_dict()
    assert len(wd) == 5148 and wd['<unk>'] == 5147 and sorted(wd.values()) == list(range(5148))
    assert all(isinstance(k, bytes) for k in wd if k != '<unk>')
    train, test = list(ds.imdb.train(wd)()), list(ds.imdb.test(wd)())
    assert (len(train), len(test)) == (2000, 1000)
    assert [s[1] for s in train] == [0] * 1000 + [1] * 1000
    ids, label = train[0]
    assert isinstance(ids, list) and all(type(i) is int for i in ids) and type(label) is int
    assert all(0 <= i <= 5147 for s in train for i in s[0]) and min(len(s[0]) for s in train) >= 10
    small = {w: i for w, i in list(wd.items())[:100]}
    small['<unk>'] = 100
    assert max(i for s in ds.imdb.test(small)() for i in s[0]) == 100


def test_imdb_build_dict_counts_the_matching_documents():
    pattern = re.compile(r"aclImdb/test/pos/.*\.txt$")
    counts = Counter(w for doc in ds.imdb.tokenize(pattern) for w in doc)
    built = ds.imdb.build_dict(pattern, 20)
    kept = sorted((w for w, c in counts.items() if c > 20), key=lambda w: (-counts[w], w))
    assert built == dict({w: i for i, w in enumerate(kept)}, **{'<unk>': len(kept)})
    assert len(ds.imdb.build_dict(pattern, 100)) < len(built)


def _bag_of_words(samples, columns):
    """Which of the word ids ``columns`` each document has (1.0) and has not (0.0)."""
    column_of = {word: column for column, word in enumerate(columns)}
    x = np.zeros((len(samples), len(columns)))
    for row, (ids, _) in enumerate(samples):
        x[row, [column_of[i] for i in ids if i in column_of]] = 1.0
    return x


@pytest.mark.parametrize("name", ["imdb", "sentiment"])
def test_reviews_are_learnable_by_a_bag_of_words_logistic_regression(name):
    if name == "imdb":
        wd = ds.imdb.word_dict()
        train, test = list(ds.imdb.train(wd)()), list(ds.imdb.test(wd)())
    else:
        train, test = list(ds.sentiment.train()), list(ds.sentiment.test())
    columns = [i for i, _ in Counter(i for ids, _ in train for i in ids).most_common(2000)]
    w, b = _softmax_regression(_bag_of_words(train, columns), np.array([s[1] for s in train]), 2, steps=20)
    predicted = (_bag_of_words(test, columns) @ w + b).argmax(axis=1)
    accuracy = (predicted == np.array([s[1] for s in test])).mean()
    assert accuracy > 0.9, accuracy  # chance: 0.5


def test_sentiment_has_paddles_word_dict_size_and_alternating_labels():
    words = ds.sentiment.get_word_dict()
    assert len(words) == 39768 and [i for _, i in words] == list(range(39768))  # Paddle's own test checks 39768
    train = ds.sentiment.train()
    assert not callable(train) and inspect.isgenerator(train)  # Paddle's returns a generator, not a creator
    train, test = list(train), list(ds.sentiment.test())
    assert (len(train), len(test)) == (1600, 400)
    assert [s[1] for s in train[:6]] == [0, 1, 0, 1, 0, 1] and [s[1] for s in test[:2]] == [0, 1]
    assert all(0 <= i < 39768 for s in train for i in s[0])
    files = ds.sentiment.sort_files()
    assert [f.split("/")[0] for f in files[:4]] == ["neg", "pos", "neg", "pos"]


def test_imikolov_dict_and_ngrams_and_sequences():
    im = ds.imikolov
    wd = im.build_dict()
    assert len(wd) == 2074 and wd['<unk>'] == 2073 and {'<s>', '<e>'} <= set(wd)
    assert len(im.build_dict(200)) < len(wd) < len(im.build_dict(10))
    grams = list(im.train(wd, 5)())
    assert 20000 < len(grams) and all(isinstance(g, tuple) and len(g) == 5 for g in grams[:500])
    assert all(0 <= i < 2074 for g in grams for i in g)
    assert grams[0][0] == wd['<s>'] and any(g[-1] == wd['<e>'] for g in grams[:30])
    pairs = list(im.test(wd, -1, data_type=im.DataType.SEQ)())
    assert len(pairs) == 300 and all(s[0] == wd['<s>'] and t[-1] == wd['<e>'] and s[1:] == t[:-1] for s, t in pairs)
    assert all(len(s) <= 10 for s, _ in im.test(wd, 10, data_type=im.DataType.SEQ)())


def test_imikolov_next_word_is_learnable_below_the_book_tests_cost():
    wd = ds.imikolov.build_dict()
    train, test = list(ds.imikolov.train(wd, 5)()), list(ds.imikolov.test(wd, 5)())
    following = defaultdict(Counter)
    for g in train:
        following[g[-2]][g[-1]] += 1
    cost = 0.0
    for g in test:
        counts = following[g[-2]]
        cost -= math.log((counts[g[-1]] + 0.1) / (sum(counts.values()) + 0.1 * len(wd)))
    cost /= len(test)
    assert cost < 4.5 < math.log(len(wd)), cost  # test_word2vec stops below 5.0; uniform: 7.6


@pytest.mark.parametrize("dict_size", [30000, 1000])
def test_wmt14_pairs_are_marked_and_the_target_is_a_function_of_the_source(dict_size):
    samples = list(ds.wmt14.train(dict_size)())
    assert len(samples) == 2000 and len(list(ds.wmt14.test(dict_size)())) == 200
    translation = {}
    for src, trg, trg_next in samples:
        assert src[0] == 0 and src[-1] == 1 and trg[0] == 0 and trg_next[-1] == 1 and trg[1:] == trg_next[:-1]
        assert all(0 <= i < dict_size for i in src + trg)
        assert len(src) - 2 == len(trg) - 1
        for s, t in zip(src[1:-1], trg[1:]):
            if s != ds.wmt14.UNK_IDX:
                assert translation.setdefault(s, t) == t
    assert any(ds.wmt14.UNK_IDX in src for src, _, _ in samples) == (dict_size < 30000)
    src_dict, trg_dict = ds.wmt14.get_dict(dict_size)
    assert len(src_dict) == len(trg_dict) == dict_size and src_dict[0] == "<s>" and trg_dict[2] == "<unk>"
    assert ds.wmt14.get_dict(dict_size, reverse=False)[0]["<e>"] == 1


@pytest.mark.parametrize("src_lang", ["en", "de"])
def test_wmt16_pairs_and_dicts(src_lang):
    samples = list(ds.wmt16.train(10000, 3000, src_lang)())
    assert len(samples) == 2000 and len(list(ds.wmt16.test(10, 10, src_lang)())) == 200
    translation = {}
    for src, trg, trg_next in samples:
        assert src[0] == 0 and src[-1] == 1 and trg[0] == 0 and trg_next[-1] == 1 and trg[1:] == trg_next[:-1]
        assert all(i < 10000 for i in src) and all(i < 3000 for i in trg) and len(src) <= 22
        for s, t in zip(src[1:-1], trg[1:]):
            if s != 2 and t != 2:
                assert translation.setdefault(s, t) == t
    words = ds.wmt16.get_dict(src_lang, 1000, reverse=True)
    assert len(words) == 1000 and [words[i] for i in range(3)] == ["<s>", "<e>", "<unk>"]
    assert len(ds.wmt16.get_dict("en", 10 ** 6)) == 11250 and len(ds.wmt16.get_dict("de", 10 ** 6)) == 19220
    with pytest.raises(ValueError):
        ds.wmt16.train(100, 100, src_lang="fr")


def test_conll05_samples_have_nine_aligned_slots(tmp_path, monkeypatch):
    word_dict, verb_dict, label_dict = ds.conll05.get_dict()
    assert (len(word_dict), len(verb_dict), len(label_dict)) == (44068, 3162, 107)
    assert word_dict['<unk>'] == ds.conll05.UNK_IDX == 0 and label_dict['O'] == 106
    samples = list(ds.conll05.test()())
    assert len(samples) == 2000
    for sample in samples[:300]:
        assert len(sample) == 9 and len({len(slot) for slot in sample}) == 1
        words, n2, n1, c0, p1, p2, pred, mark, labels = sample
        verb_at = labels.index(label_dict['B-V'])
        assert c0[0] == words[verb_at] and all(len(set(slot)) == 1 for slot in (n2, n1, c0, p1, p2, pred))
        assert n1[0] == (words[verb_at - 1] if verb_at > 0 else word_dict['bos'])
        assert p2[0] == (words[verb_at + 2] if verb_at + 2 < len(words) else word_dict['eos'])
        assert mark == [int(abs(i - verb_at) <= 2) for i in range(len(words))]
        assert 0 <= pred[0] < 3162 and all(0 <= i < 44068 for i in words) and all(0 <= i < 107 for i in labels)
    monkeypatch.setattr(common, "DATA_HOME", str(tmp_path))
    path = ds.conll05.get_embedding()
    assert path.startswith(str(tmp_path))
    with open(path, "rb") as f:
        f.read(16)  # the book test's load_parameter skips the header
        embedding = np.fromfile(f, dtype=np.float32).reshape(44068, 32)
    assert 0.05 < embedding.std() < 0.2
    digest = common.md5file(path)
    os.remove(path)
    assert ds.conll05.get_embedding() == path and common.md5file(path) == digest  # written again, the same

