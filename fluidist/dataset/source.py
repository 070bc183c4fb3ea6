"""Reading one data file into Records: directly, or through the dataset's pipe command (and its
download command), as ``<download_cmd> <file> | <pipe_command>`` or ``<pipe_command> < <file>``."""
import io
import shlex
import subprocess
import tempfile

from .records import parse_lines


class DataSourceError(RuntimeError):
    """A data file that cannot be read, or a pipe command that failed."""


def _plain(cmd):
    return cmd is None or cmd.strip() in ("", "cat")


def read_records(path, slots, pipe_command="cat", download_cmd=None, prefixes=()):
    """The Records of data file ``path``; ``prefixes``: the text fields each line opens with
    (``"ins_id"``, ``"content"``: see ``records.parse_lines``)."""
    if _plain(pipe_command) and not download_cmd:
        try:
            f = open(path, "r", encoding="utf-8", errors="strict")
        except OSError as e:
            raise DataSourceError("dataset: cannot read data file %r: %s" % (path, e)) from None
        with f:
            try:
                return parse_lines(f, slots, "file %r" % path, prefixes=prefixes)
            except UnicodeDecodeError as e:
                raise DataSourceError("dataset: data file %r is not UTF-8 text: %s" % (path, e)) from None
    return _through_commands(path, slots, pipe_command, download_cmd, prefixes)


def _through_commands(path, slots, pipe_command, download_cmd, prefixes):
    cmd = pipe_command if not _plain(pipe_command) else "cat"
    stdin = None
    if download_cmd:
        cmd = "%s %s | %s" % (download_cmd, shlex.quote(path), cmd)
        stdin = subprocess.DEVNULL
    else:
        try:
            stdin = open(path, "rb")
        except OSError as e:
            raise DataSourceError("dataset: cannot read data file %r: %s" % (path, e)) from None
    source = "the output of %r for data file %r" % (cmd, path)
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, shell=True, stdin=stdin, stdout=subprocess.PIPE, stderr=err)
        try:
            lines = io.TextIOWrapper(proc.stdout, encoding="utf-8")
            records = parse_lines(lines, slots, source, prefixes=prefixes)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        finally:
            if stdin not in (None, subprocess.DEVNULL):
                stdin.close()
        rc = proc.wait()
        if rc != 0:
            err.seek(0)
            tail = err.read()[-2000:].decode("utf-8", "replace").strip()
            raise DataSourceError("dataset: the command %r for data file %r exited with code %d%s"
                                  % (cmd, path, rc, (": " + tail) if tail else ""))
    return records
