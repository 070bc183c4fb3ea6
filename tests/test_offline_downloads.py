"""The files ``common.download`` of the offline ``paddle.dataset`` stand-ins writes for the URLs that
Paddle's tests download and then parse themselves (its distributed tests' CTR, simnet, text
classification and transformer data, the book tests' CIFAR-10 archive, the download test's flowers
labels, the async-executor demo's data): written once, under the name each caller asks for, the same
bytes in every process, and read here the way each caller reads them (its parsing written anew, in
this file's own words), checked for what the caller needs: member names, separators, id ranges,
label sets, how its distributed runs split them, and that its model has something to learn."""
import hashlib
import json
import os
import pickle
import re
import shutil
import string
import subprocess
import sys
import tarfile
from collections import Counter

import numpy as np
import pytest

from test_offline_dataset import TOOLS, _bag_of_words, _digest, _softmax_regression
import paddle_conformance.offline_dataset as ds  # noqa: E402  (test_offline_dataset put tools/ on the path)
from paddle_conformance.offline_dataset import common, downloads  # noqa: E402


_DIST_TRANSFORMER = "http://paddle-unittest-data.bj.bcebos.com/dist_transformer/"
_CTR_URL = "http://paddle-ctr-data.bj.bcebos.com/avazu_ctr_data.tgz"
_DEMO_URL = ("http://paddle-unittest-data.gz.bcebos.com/python_paddle_fluid_tests_demo_async-executor/"
             "train_data.tar.gz")
# (url, module_name, Paddle's MD5 of the real file, save_name) as each caller passes them to download
_CALLERS_DOWNLOADS = [
    (_CTR_URL, "avazu_ctr_data", "c11df99fbd14e53cd4bfa6567344b26e", None),
    ("http://paddle-dist-ce-data.bj.bcebos.com/simnet.train.1000", "simnet", "24e49366eb0611c552667989de2f57d5",
     "train"),
    ("http://paddle-dist-ce-data.bj.bcebos.com/imdb.vocab", "text_classification",
     "23c86a0533c0151b6f12fa52b106dcc2", None),
    ("http://paddle-dist-ce-data.bj.bcebos.com/text_classification.tar.gz", "text_classification",
     "29ebfc94f11aea9362bbb7f5e9d86b8a", None),
    (_DIST_TRANSFORMER + "vocab.bpe.32000", "test_dist_transformer", "a86d345ca6e27f6591d0dccb1b9be853", None),
    (_DIST_TRANSFORMER + "train.tok.clean.bpe.32000.en-de", "test_dist_transformer",
     "033eb02b9449e6dd823f050782ac8914", None),
    (_DIST_TRANSFORMER + "train.tok.clean.bpe.32000.en-de.train_0", "test_dist_transformer",
     "ddce7f602f352a0405267285379a38b1", None),
    (_DIST_TRANSFORMER + "train.tok.clean.bpe.32000.en-de.train_1", "test_dist_transformer",
     "8757798200180285b1a619cd7f408747", None),
    (_DIST_TRANSFORMER + "newstest2013.tok.bpe.32000.en-de", "test_dist_transformer",
     "9dd74a266dbdb25314183899f269b4a2", None),
    ("https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz", "cifar", "c58f30108f718f92721af3b95e74349a", None),
    ("https://dataset.bj.bcebos.com/cifar/cifar-10-python.tar.gz", "cifar", "c58f30108f718f92721af3b95e74349a",
     None),
    ("http://paddlemodels.bj.bcebos.com/flowers/imagelabels.mat", "flowers", "e0620be6f572b9609742df49c70aed4d",
     None),
    ("http://paddlemodels.bj.bcebos.com/flowers/setid.mat", "flowers", "a5357ecc9cb78c4bef273ce3793fc85c", None),
    (_DEMO_URL, "imdb", "2a405a31508969b3ab823f42c0f522ca", None),
]


@pytest.fixture(scope="module")
def downloaded(tmp_path_factory):
    """{url: path} of every stand-in, downloaded as its caller does into a DATA_HOME of this module's."""
    saved = common.DATA_HOME
    common.DATA_HOME = str(tmp_path_factory.mktemp("data_home"))
    try:
        yield {url: common.download(url, module, md5, save_name) for url, module, md5, save_name in _CALLERS_DOWNLOADS}
    finally:
        common.DATA_HOME = saved


def _accuracy_of_bag_of_words(train, test, columns=2000, steps=40):
    """Test accuracy of a logistic regression on which of the training set's most frequent ids a
    sample (ids, label) has."""
    kept = [i for i, _ in Counter(i for ids, _ in train for i in ids).most_common(columns)]
    w, b = _softmax_regression(_bag_of_words(train, kept), np.array([s[1] for s in train]), 2, steps=steps)
    predicted = (_bag_of_words(test, kept) @ w + b).argmax(axis=1)
    return (predicted == np.array([s[1] for s in test])).mean()


def test_download_writes_each_stand_in_once_under_the_callers_name(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "DATA_HOME", str(tmp_path))
    assert sorted(downloads.SYNTHETIC_FILES) == sorted(row[0] for row in _CALLERS_DOWNLOADS)
    for url, module, md5, save_name in _CALLERS_DOWNLOADS:
        path = common.download(url, module, md5, save_name)
        assert path == os.path.join(str(tmp_path), module, save_name or url.split("/")[-1])
        assert common.md5file(path) != md5  # a stand-in, not Paddle's file
        before = os.stat(path)
        assert common.download(url, module, md5, save_name) == path
        assert (os.stat(path).st_ino, os.stat(path).st_mtime_ns) == (before.st_ino, before.st_mtime_ns)  # kept
    train = str(tmp_path / "simnet" / "train")
    with open(train, "w") as f:
        f.write("spoiled")
    assert common.download(_CALLERS_DOWNLOADS[1][0], "simnet", "0" * 32, "train") == train
    with open(train, "rb") as f:
        assert f.read() == downloads.payload(_CALLERS_DOWNLOADS[1][0])  # written again
    with open(train, "wb") as f:
        f.write(b"the real file")  # a file with the checksum asked for is taken as it is
    assert common.download(_CALLERS_DOWNLOADS[1][0], "simnet", hashlib.md5(b"the real file").hexdigest(), "train")
    with open(train, "rb") as f:
        assert f.read() == b"the real file"
    assert os.listdir(str(tmp_path / "simnet")) == ["train"]  # no partial file left behind
    with pytest.raises(common.NoNetworkError, match="simnet.test.1000"):
        common.download("http://paddle-dist-ce-data.bj.bcebos.com/simnet.test.1000", "simnet", "0" * 32)


def test_stand_ins_are_the_same_bytes_in_another_process():
    digests = {url: hashlib.md5(downloads.payload(url)).hexdigest() for url in downloads.SYNTHETIC_FILES}
    code = ("import hashlib, json, sys; sys.path.insert(0, %r); "
            "from paddle_conformance.offline_dataset import downloads as d; "
            "print(json.dumps({u: hashlib.md5(d.payload(u)).hexdigest() for u in d.SYNTHETIC_FILES}))" % TOOLS)
    env = dict(os.environ, PYTHONHASHSEED="4321")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert json.loads(out.splitlines()[-1]) == digests


def _ctr_lines(path, file_name):
    """dist_ctr_reader's read_data: the text lines of the archive's (last) member named ``*file_name``."""
    with tarfile.open(path, "r:gz") as tar:
        member = [m for m in tar.getmembers() if m.name.endswith(file_name)][-1]
        return [raw.decode("utf-8") for raw in tar.extractfile(member).readlines()]


def _ctr_records(lines, with_click=True):
    """(dnn ids, lr ids, click) of each tab-separated record; an lr feature is ``id:value``."""
    records = []
    for line in lines:
        fields = line.strip().split("\t")
        lr_ids = [int(feature.split(":")[0]) for feature in fields[1].split()]
        records.append(([int(t) for t in fields[0].split()], lr_ids, int(fields[2]) if with_click else None))
    return records


def test_avazu_ctr_data_reads_as_both_ctr_readers_read_it_and_clicks_are_learnable(downloaded, tmp_path):
    path = downloaded[_CTR_URL]
    meta = _ctr_lines(path, "data.meta.txt")
    assert len(meta) == 2 and "dnn_input_dim:" in meta[0] and "lr_input_dim:" in meta[1]
    dnn_dim, lr_dim = [int(line.split(":")[1]) for line in meta]
    train, test = _ctr_records(_ctr_lines(path, "train.txt")), _ctr_records(_ctr_lines(path, "test.txt"))
    infer = _ctr_records(_ctr_lines(path, "infer.txt"), with_click=False)
    assert (len(train), len(test), len(infer)) == (1000, 200, 100)
    for dnn, lr, click in train + test + infer:
        assert all(0 <= i < dnn_dim for i in dnn) and all(0 <= i < lr_dim for i in lr) and click in (0, 1, None)
    assert 0.2 < np.mean([r[2] for r in train]) < 0.5
    # ctr_dataset_reader (the fleet test's) unpacks the archive beside it and reads the folder
    shutil.copy(path, str(tmp_path))
    with tarfile.open(str(tmp_path / os.path.basename(path)), "r:gz") as tar:
        tar.extractall(str(tmp_path))
    with open(str(tmp_path / "avazu_ctr_data" / "train.txt")) as f:
        assert _ctr_records(f.readlines()) == train
    x = np.zeros((len(train) + len(test), lr_dim))
    for row, (_, lr, _) in enumerate(train + test):
        x[row, lr] = 1.0
    clicks = np.array([r[2] for r in train + test])
    w, b = _softmax_regression(x[:len(train)], clicks[:len(train)], 2, steps=300, lr=1.0)
    accuracy = ((x[len(train):] @ w + b).argmax(axis=1) == clicks[len(train):]).mean()
    assert accuracy > max(0.8, 0.1 + max(clicks.mean(), 1 - clicks.mean())), accuracy


def test_simnet_train_reads_as_dist_simnet_bow_reads_it_and_positives_are_learnable(downloaded):
    path = downloaded[_CALLERS_DOWNLOADS[1][0]]
    assert path == os.path.join(common.DATA_HOME, "simnet", "train")  # where get_train_reader opens it
    samples, lines = [], 0
    with open(path) as f:
        for line in f:
            lines += 1
            fields = [[int(t) for t in field.split(" ")] for field in line.strip().split(";")[:-1]]
            positives, negatives = fields[1]
            assert positives + negatives == len(fields) - 3 and positives >= 1 and negatives >= 1
            query, titles = fields[2], fields[3:]
            samples += [(query, 0, titles[0], negative) for negative in titles[positives:]]  # the 1st positive
    assert lines == 1000 and len(samples) > 1500
    assert all(0 <= i < 1500 for sample in samples for seq in (sample[0], sample[2], sample[3]) for i in seq)
    # a word's vector: which words came with it in a (query, positive title) pair of the first half;
    # a sequence's vector: its words' sum (the test's bag of words); a cosine tells the rest apart
    half = len(samples) // 2
    together = np.zeros((1500, 1500))
    for query, _, positive, _ in samples[:half]:
        for word in query:
            together[word, positive] += 1.0
            together[positive, word] += 1.0
    vectors = together / np.maximum(np.linalg.norm(together, axis=1, keepdims=True), 1e-9)

    def cosine(a, b):
        u, v = vectors[a].sum(axis=0), vectors[b].sum(axis=0)
        return u @ v / (np.linalg.norm(u) * np.linalg.norm(v) + 1e-9)

    right = np.mean([cosine(q, pos) > cosine(q, neg) for q, _, pos, neg in samples[half:]])
    assert right > 0.9, right  # chance: 0.5


def _text_documents(path, prefix):
    """dist_text_classification's tokenize: the archive's members in order whose name matches
    ``<prefix>/...txt`` from its start, their bytes without the closing newline, without punctuation,
    lower-cased, split at white space."""
    pattern, documents = re.compile(prefix + r"/.*\.txt$"), []
    with tarfile.open(path) as tar:
        member = tar.next()
        while member is not None:
            if pattern.match(member.name):
                text = tar.extractfile(member).read().rstrip(b"\n\r")
                documents.append(text.translate(None, string.punctuation.encode()).lower().split())
            member = tar.next()
    return documents


def test_text_classification_files_read_as_the_dist_test_reads_them(downloaded):
    vocab_path = downloaded[_CALLERS_DOWNLOADS[2][0]]
    assert vocab_path == os.path.join(common.DATA_HOME, "text_classification", "imdb.vocab")
    with open(vocab_path, encoding="utf-8") as f:
        vocab = {line.strip(): index for index, line in enumerate(f)}
    vocab["<unk>"] = len(vocab)
    assert len(vocab) == 5001
    data = downloaded[_CALLERS_DOWNLOADS[3][0]]
    sets = {name: (_text_documents(data, name + "/pos"), _text_documents(data, name + "/neg"))
            for name in ("train", "test")}
    assert [len(d) for pair in sets.values() for d in pair] == [250, 250, 100, 100]
    words = [w for pos, neg in sets.values() for doc in pos + neg for w in doc]
    assert all(isinstance(w, bytes) and w.isalpha() and w == w.lower() for w in words)
    # the test looks its bytes words up in a vocabulary of str: under Python 3 each one is '<unk>'
    assert {vocab.get(w, vocab["<unk>"]) for w in words[:1000]} == {vocab["<unk>"]}
    out_of_vocabulary = np.mean([w.decode() not in vocab for w in words])
    assert 0.0 < out_of_vocabulary < 0.2, out_of_vocabulary

    def samples(name):  # as the words would read with a vocabulary of bytes
        pos, neg = sets[name]
        return [([vocab.get(w.decode(), 5000) for w in doc], label) for docs, label in ((pos, 0), (neg, 1))
                for doc in docs]

    assert _accuracy_of_bag_of_words(samples("train"), samples("test")) > 0.9


def test_dist_transformer_files_read_as_its_data_reader_reads_them(downloaded):
    def lines_of(name):
        with open(os.path.join(common.DATA_HOME, "test_dist_transformer", name), "rb") as f:
            return [raw.decode("utf-8").strip("\n") for raw in f]

    vocab = {token: index for index, token in enumerate(lines_of("vocab.bpe.32000"))}
    assert [vocab[t] for t in ("<s>", "<e>", "<unk>")] == [0, 1, 2] and len(vocab) == 1003
    files = {}
    for name in ("train.tok.clean.bpe.32000.en-de", "train.tok.clean.bpe.32000.en-de.train_0",
                 "train.tok.clean.bpe.32000.en-de.train_1", "newstest2013.tok.bpe.32000.en-de"):
        fields = [line.split("\t") for line in lines_of(name)]
        assert all(len(pair) == 2 for pair in fields)
        files[name] = [tuple([vocab[t] for t in side.split(" ")] for side in pair) for pair in fields]
    local, first, second, test = files.values()
    assert (len(local), len(first), len(second), len(test)) == (200, 100, 100, 40)  # the test keeps 10 of test
    for k in range(10):  # the local batch of 20 is trainer 0's batch of 10, then trainer 1's
        assert local[20 * k:20 * k + 20] == first[10 * k:10 * k + 10] + second[10 * k:10 * k + 10]
    translation = {}
    for source, target in local + test:
        assert len(source) == len(target) and 4 <= len(source) <= 14 and 2 not in source + target
        for s, t in zip(source, target):
            assert translation.setdefault(s, t) == t  # the target is a function of the source


def _cifar_samples(path, part):
    """cifar10_small_test_set's reader: the pickled batches whose member name has ``part`` in it."""
    with tarfile.open(path, mode="r") as tar:
        for name in [m.name for m in tar if part in m.name]:
            batch = pickle.load(tar.extractfile(name), encoding="bytes")
            labels = batch.get(b"labels", batch.get(b"fine_labels", None))
            for row, label in zip(batch[b"data"], labels):
                yield (row / 255.0).astype(np.float32), int(label)


@pytest.mark.parametrize("url", [row[0] for row in _CALLERS_DOWNLOADS if row[1] == "cifar"])
def test_cifar10_archive_holds_the_cifar_stand_ins_pictures(downloaded, url):
    assert _digest(_cifar_samples(downloaded[url], "data_batch")) == _digest(ds.cifar.train10()())
    assert _digest(_cifar_samples(downloaded[url], "test_batch")) == _digest(ds.cifar.test10()())


def test_flowers_mat_files_give_the_flowers_stand_ins_labels_and_sets(downloaded, tmp_path, monkeypatch):
    loadmat = pytest.importorskip("scipy.io").loadmat
    labels = loadmat(downloaded[_CALLERS_DOWNLOADS[11][0]])["labels"][0]
    sets = loadmat(downloaded[_CALLERS_DOWNLOADS[12][0]])
    assert labels.shape == (816,) and sorted(set(labels.astype(int))) == list(range(1, 103))
    numbers = np.concatenate([sets[flag][0] for flag in ("tstid", "trnid", "valid")]).astype(int)
    assert sorted(numbers) == list(range(1, 817))
    test_labels = [int(labels[i - 1]) - 1 for i in sets["trnid"][0].astype(int)]  # paddle.dataset.flowers' way
    assert test_labels == list(ds.flowers.test(mapper=lambda raw: raw[1])())
    # test_dataset_download: the file removed, downloaded again, there
    monkeypatch.setattr(common, "DATA_HOME", str(tmp_path))
    url, module, md5, _ = _CALLERS_DOWNLOADS[11]
    assert common.download(url, module, md5) == str(tmp_path / "flowers" / "imagelabels.mat")
    assert common.md5file(str(tmp_path / "flowers" / "imagelabels.mat"))


def test_async_executor_demo_data_is_multislot_text_and_learnable(downloaded, tmp_path):
    with tarfile.open(downloaded[_DEMO_URL]) as tar:
        tar.extractall(str(tmp_path))  # the demo unpacks it in its folder and lists train_data/part-0..11
    samples = []
    for part in range(12):
        with open(str(tmp_path / "train_data" / ("part-%d" % part))) as f:
            for line in f:
                tokens = [int(t) for t in line.split()]
                words = tokens[0]  # a slot: how many values, then the values; the label slot has one
                assert words >= 1 and len(tokens) == words + 3 and tokens[words + 1] == 1
                samples.append((tokens[1:words + 1], tokens[words + 2]))
    assert len(samples) == 1200 and {s[1] for s in samples} == {0, 1}
    assert all(0 <= i < 89528 for ids, _ in samples for i in ids)
    assert _accuracy_of_bag_of_words(samples[:1000], samples[1000:]) > 0.9
