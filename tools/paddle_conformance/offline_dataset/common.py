"""Stand-in for ``paddle.dataset.common``: the data folder, file checksums, ``download``, ``split`` and
``cluster_files_reader``.

There is no network in the conformance runner, so ``download`` never fetches. It returns a file that
is already in place under ``DATA_HOME/<module_name>/`` with the expected MD5 (as Paddle's does); for
the URLs of ``downloads.SYNTHETIC_FILES`` (files Paddle's tests download and parse themselves) it
writes a synthetic stand-in there, in the format the caller parses, and returns its path; for any
other URL it raises :class:`NoNetworkError` naming the URL. The dataset modules of this package do
not download at all: they generate their samples (see the package docstring).

``DATA_HOME`` is a scratch folder: ``$FLUIDIST_DATASET_HOME`` when set, otherwise a folder of this
user's under the system's temporary directory. Like Paddle's, it exists once the module is imported.
(The runner points it at ``<scratch>/home/.cache/paddle/dataset`` and ``HOME`` at ``<scratch>/home``:
Paddle's default, ``~/.cache/paddle/dataset``, which some tests read without asking ``DATA_HOME``.)
"""
import glob
import hashlib
import importlib
import os
import pickle
import sys
import tempfile
from typing import Any, BinaryIO, Callable, Iterator, Optional

from . import downloads

__all__ = ['DATA_HOME', 'download', 'md5file', 'split', 'cluster_files_reader']


def _default_data_home() -> str:
    configured = os.environ.get("FLUIDIST_DATASET_HOME")
    if configured:
        return os.path.abspath(os.path.expanduser(configured))
    user = os.getuid() if hasattr(os, "getuid") else 0
    return os.path.join(tempfile.gettempdir(), "fluidist-offline-dataset-%d" % user)


DATA_HOME = _default_data_home()


class NoNetworkError(ConnectionError):
    """``download`` was asked for a file that is not in ``DATA_HOME``: the runner has no network.

    A ``ConnectionError`` (an ``OSError``), as a download without a route to the server raises."""

    def __init__(self, url: str) -> None:
        super().__init__("no network in the conformance runner: %s" % url)
        self.url = url


def must_mkdirs(path: str) -> None:
    """Create ``path`` (and its parents) unless it exists."""
    os.makedirs(path, exist_ok=True)


must_mkdirs(DATA_HOME)


def md5file(fname: str) -> str:
    """The hex MD5 digest of the file ``fname``."""
    digest = hashlib.md5()
    with open(fname, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 16), b""):
            digest.update(chunk)
    return digest.hexdigest()


def download(url: str, module_name: str, md5sum: str, save_name: Optional[str] = None) -> str:
    """The path of ``DATA_HOME/module_name/<save_name or the URL's last part>``.

    Nothing is fetched. A file there with MD5 ``md5sum`` (one put in place by hand) is returned as
    it is. Otherwise, for a URL with a synthetic stand-in (``downloads.SYNTHETIC_FILES``), the
    stand-in is written there (unless that file already holds it) and its path returned: its MD5 is
    not ``md5sum`` (Paddle's checksum of the real file), and nothing here pretends it is. (Paddle's
    callers leave the check to ``download``: none compares a checksum itself; test_dataset_download
    only asserts that ``md5file`` gives one.) For any other URL: :class:`NoNetworkError` naming
    ``url``, its message also written to stderr."""
    dirname = os.path.join(DATA_HOME, module_name)
    must_mkdirs(dirname)
    filename = os.path.join(dirname, url.split('/')[-1] if save_name is None else save_name)
    if os.path.exists(filename) and md5file(filename) == md5sum:
        return filename
    if downloads.is_synthetic(url):
        payload = downloads.payload(url)
        if not (os.path.exists(filename) and md5file(filename) == hashlib.md5(payload).hexdigest()):
            write_file_atomically(filename, payload)
        return filename
    error = NoNetworkError(url)
    sys.stderr.write("%s\n" % error)  # in the log even where a test swallows the exception
    raise error


def write_file_atomically(path: str, payload: bytes) -> str:
    """Write ``payload`` to ``path`` through a temporary file in the same folder and a rename, so a
    reader in another process sees either no file or the whole of it. Returns ``path``."""
    folder = os.path.dirname(path)
    must_mkdirs(folder)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".partial-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return path


def fetch_all() -> None:
    """Call every dataset module's ``fetch`` (here: nothing to fetch, each is a no-op)."""
    package = __name__.rsplit('.', 1)[0]
    for name in ('mnist', 'imikolov', 'imdb', 'cifar', 'movielens', 'conll05', 'uci_housing',
                 'sentiment', 'wmt14', 'wmt16', 'flowers'):
        module = importlib.import_module("%s.%s" % (package, name))
        fetch = getattr(module, "fetch", None)
        if fetch is not None:
            fetch()


class _TextOrBytesFile:
    """A binary file that a dumper may also write ``str`` to (encoded as UTF-8): Paddle opens
    ``split``'s files in text mode, which a text dumper (``json.dump``) needs and ``pickle.dump``
    cannot use on Python 3; this accepts both."""

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw

    def write(self, data: Any) -> int:
        if isinstance(data, str):
            data = data.encode("utf-8")
        return self._raw.write(data)

    def flush(self) -> None:
        self._raw.flush()


def split(reader: Callable[[], Iterator[Any]], line_count: int, suffix: str = "%05d.pickle",
          dumper: Callable[[Any, Any], Any] = pickle.dump) -> None:
    """Dump the samples of ``reader`` into files named ``suffix % i``, ``dumper(list_of_samples, f)``
    per file. Files are cut where Paddle cuts them: after sample ``line_count`` (so the first file
    holds ``line_count + 1`` samples), then every ``line_count`` samples; the rest goes to a last file."""
    if not callable(dumper):
        raise TypeError("dumper should be callable.")
    lines = []
    file_index = 0
    for i, sample in enumerate(reader()):
        lines.append(sample)
        if i >= line_count and i % line_count == 0:
            with open(suffix % file_index, "wb") as f:
                dumper(lines, _TextOrBytesFile(f))
            lines = []
            file_index += 1
    if lines:
        with open(suffix % file_index, "wb") as f:
            dumper(lines, _TextOrBytesFile(f))


def cluster_files_reader(files_pattern: str, trainer_count: int, trainer_id: int,
                         loader: Callable[[Any], Any] = pickle.load) -> Callable[[], Iterator[Any]]:
    """A reader of the samples in the files matching ``files_pattern`` (sorted by name) that belong
    to trainer ``trainer_id`` of ``trainer_count``: every ``trainer_count``-th file from its id on.
    Each file is read with ``loader(f)`` (opened in binary mode: ``pickle.load`` and ``json.load``
    both take it) and must hold a list of samples."""

    def reader() -> Iterator[Any]:
        if not callable(loader):
            raise TypeError("loader should be callable.")
        file_list = sorted(glob.glob(files_pattern))
        mine = [fn for idx, fn in enumerate(file_list) if idx % trainer_count == trainer_id]
        for fn in mine:
            print("append file: %s" % fn)
        for fn in mine:
            with open(fn, "rb") as f:
                for line in loader(f):
                    yield line

    return reader
