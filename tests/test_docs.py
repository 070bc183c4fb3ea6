"""The docs: every example in docs/*.md runs (doctest), the migration page's compatibility table is
generated from the code (refused = ``__fluidist_refused__``), the public entry points are typed.
The site itself is built by .ci/run (``mkdocs build --strict``)."""
import builtins
import doctest
import glob
import inspect
import os
import re
import subprocess
import symtable
import sys
import types

import pytest

import fluidist as fluid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "docs", "hooks"))

import compat  # noqa: E402

PAGES = sorted(glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True))


@pytest.mark.parametrize("page", PAGES, ids=[os.path.relpath(p, ROOT) for p in PAGES])
def test_examples_in_the_docs_run(page, monkeypatch, tmp_path):
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(sys, "path", list(sys.path))
    r = doctest.testfile(page, module_relative=False, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
                         extraglobs={"__name__": "__docs__"})
    assert r.failed == 0, "%d of %d examples of %s failed (see above)" % (r.failed, r.attempted, page)


def test_some_pages_hold_examples():
    counts = {os.path.relpath(p, ROOT): doctest.DocTestParser().get_examples(open(p).read()) for p in PAGES}
    assert sum(len(v) for v in counts.values()) >= 30
    assert counts["docs/index.md"] and counts["docs/guide/distributed.md"] and counts["docs/guide/observability.md"]


def test_compat_table_is_generated_from_the_code(monkeypatch):
    mod = types.ModuleType("fluidist_fake_module")

    def works():
        pass

    def refused():
        raise NotImplementedError("refused is not supported by fluidist; use works")
    refused.__fluidist_refused__ = True

    class Thing:
        def fine(self):
            pass

        def nope(self):
            raise NotImplementedError("Thing.nope is not supported")
        nope.__fluidist_refused__ = True

    class Gone:
        __fluidist_refused__ = True

    mod.works, mod.refused, mod.Thing, mod.Gone, mod._private = works, refused, Thing, Gone, works
    monkeypatch.setitem(sys.modules, "fluidist_fake_module", mod)
    rows = compat.compat_rows([("paddle.fluid.fake", "fluidist_fake_module"), ("paddle.fluid.none", "no_such_mod")])
    assert rows[0] == ("paddle.fluid.fake", "fluidist_fake_module", ["Thing", "works"],
                       ["Gone", "Thing.nope", "refused"])
    assert rows[1][3] is None
    md = compat.compat_markdown([("paddle.fluid.fake", "fluidist_fake_module")])
    assert "| `paddle.fluid.fake` | `fluidist_fake_module` | 2 | 3 |" in md
    assert "**Refused** (3): `Gone`, `Thing.nope`, `refused`" in md
    # the real table: every module the page lists, fluid.layers with its layers
    real = {r[0]: r for r in compat.compat_rows()}
    assert "fc" in real["paddle.fluid.layers"][2] and "Executor" in real["paddle.fluid"][2]
    page = compat.on_page_markdown("x\n" + compat.MARKER + "\ny", None, None, None)
    assert compat.MARKER not in page and "| `paddle.fluid.layers` | `fluidist.layers` |" in page


ENTRY_POINTS = [fluid.Executor.__init__, fluid.Executor.run, fluid.DataFeeder.__init__, fluid.DataFeeder.feed,
                fluid.CompiledProgram.with_data_parallel, fluid.DistributeTranspiler.transpile,
                fluid.DistributeTranspiler.get_trainer_program, fluid.DistributeTranspiler.get_pserver_program,
                fluid.DistributeTranspiler.get_startup_program, fluid.data, fluid.program_guard,
                fluid.io.save_inference_model, fluid.io.load_inference_model, fluid.io.save_persistables,
                fluid.io.load_persistables]


@pytest.mark.parametrize("fn", ENTRY_POINTS, ids=[f.__qualname__ for f in ENTRY_POINTS])
def test_entry_points_are_typed_and_documented(fn):
    sig = inspect.signature(fn)
    missing = [n for n, p in sig.parameters.items() if n != "self" and p.annotation is inspect.Parameter.empty]
    assert not missing and sig.return_annotation is not inspect.Signature.empty, missing
    assert inspect.getdoc(fn), fn.__qualname__
    assert os.path.exists(os.path.join(ROOT, "fluidist", "py.typed"))


_PYTHON_BLOCK = re.compile(r"^```python[^\n]*\n(.*?)^```", re.M | re.S)


def undefined_names(code):
    """Names a script reads that nothing in it defines (imports, assignments, defs, loops) nor Python
    itself: what a reader copying the block would meet as a NameError."""
    table = symtable.symtable(code, "<block>", "exec")
    defined = {s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported()}
    defined |= set(dir(builtins))
    missing, tables = set(), [table]
    while tables:
        t = tables.pop()
        tables += t.get_children()
        for s in t.get_symbols():
            free = t is table or s.is_global() or s.is_free()
            if s.is_referenced() and free and not s.is_assigned() and not s.is_imported() and not s.is_parameter():
                missing.add(s.get_name())
    return sorted(missing - defined)


@pytest.mark.parametrize("page", PAGES, ids=[os.path.relpath(p, ROOT) for p in PAGES])
def test_the_first_code_block_of_a_page_runs_as_written(page):
    """A page's first Python block is what a newcomer copies: every name it uses is defined in it
    (doctest blocks also run, above), and no block of the docs reaches into the repository's own
    folders (``sys.path.insert``) as test scaffolding."""
    blocks = _PYTHON_BLOCK.findall(open(page).read())
    assert not [b for b in blocks if "sys.path" in b], "%s: a block changes sys.path" % page
    if not blocks:
        return
    first = blocks[0]
    if first.lstrip().startswith(">>>"):
        first = "\n".join(ex.source for ex in doctest.DocTestParser().get_examples(first))
    assert not undefined_names(first), "%s's first block uses %s, which it never defines" % (
        os.path.relpath(page, ROOT), undefined_names(first))


# Pages whose first block is a job for a cluster the test cannot make here, and why; first_job.md's blocks
# run in tests/test_first_job.py.
NOT_RUN_HERE = {"guide/cluster.md": "an MPI job (mpirun -np 4, a server and a worker per node; the MPI role makers "
                                    "are tested in tests/fleet/test_fleet_mpi_role_makers.py)",
                "guide/first_job.md": "run command by command in tests/test_first_job.py"}


def _first_scripts():
    for page in PAGES:
        blocks = _PYTHON_BLOCK.findall(open(page).read())
        rel = os.path.relpath(page, os.path.join(ROOT, "docs"))
        if blocks and not blocks[0].lstrip().startswith(">>>") and rel not in NOT_RUN_HERE:
            yield rel, blocks[0]


@pytest.mark.parametrize("rel,block", list(_first_scripts()), ids=[r for r, _ in _first_scripts()])
def test_the_first_script_of_a_page_runs_as_written(rel, block, tmp_path):
    """A page's first script runs as a newcomer runs it: with ``python`` where it is a script, under
    ``fluidist-launch --server_num 1 --worker_num 2`` where it is a parameter-server job (it reads
    ``TRAINING_ROLE``), in an empty folder, copied from the page unchanged."""
    script = tmp_path / "first.py"
    script.write_text(block)
    if "TRAINING_ROLE" in block:
        cmd = [sys.executable, "-m", "fluidist.launch", "--server_num", "1", "--worker_num", "2",
               "--log_dir", str(tmp_path / "logs"), str(script)]
    else:
        cmd = [sys.executable, str(script)]
    proc = subprocess.run(cmd, cwd=str(tmp_path), capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, "docs/%s's first block failed as written:\n%s" % (rel, (proc.stdout + proc.stderr)[-3000:])


def test_undefined_names_finds_what_a_block_never_defines():
    assert undefined_names("import os\nx = os.sep\nfor i in range(3):\n    print(i, x)\n") == []
    assert undefined_names("t.transpile(trainer_id)\ndef f(a):\n    return a + exe\n") == ["exe", "t", "trainer_id"]
