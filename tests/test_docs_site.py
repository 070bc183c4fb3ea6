"""The docs site as a reader opens it: every name an API page lists is on the built page with its
docstring, and the build is quick.

mkdocstrings leaves out, without a warning, a member it cannot find (a name it cannot resolve
statically, a submodule that shadows a function of the same name), so ``mkdocs build --strict`` passes
with whole pages empty. These tests read the built HTML instead: for each ``:::`` directive of
docs/api/, each name it lists (its ``members:``, else the module's ``__all__``) must have its heading
(``id="module.name"``) followed by its docstring's first sentence.

The site is built once for the module (``mkdocs build --strict`` into a temporary folder; about 15 s of
CPU), or read from ``FLUIDIST_DOCS_SITE`` where .ci/run has just built it. Skipped, saying why, where the
docs extra (MkDocs) is not installed.
"""
import glob
import html
import importlib
import inspect
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
API_PAGES = sorted(p for p in glob.glob(os.path.join(ROOT, "docs", "api", "**", "*.md"), recursive=True)
                   if "\n::: " in open(p).read())
sys.path.insert(0, os.path.join(ROOT, "docs", "hooks"))

import signatures  # noqa: E402

# a directive: ``::: dotted.path`` and its indented YAML options
_DIRECTIVE = re.compile(r"^::: ([\w.]+)[ \t]*\n((?:(?:[ ]{4}.*)?\n)*)", re.M)
_WORD = re.compile(r"[a-z0-9]+")


def directives(page_text):
    """``[(identifier, members listed or None)]`` of a page's ``:::`` directives."""
    out = []
    for ident, options in _DIRECTIVE.findall(page_text):
        match = re.search(r"^ +members:\s*\n((?: +- .*\n?)+)", options, re.M)
        members = re.findall(r"- (\w+)", match.group(1)) if match else None
        out.append((ident, members))
    return out


def resolve(ident):
    """The object at a dotted path: the longest importable module, then attributes."""
    parts = ident.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        if inspect.ismodule(obj) and callable(obj):
            # a path of fluidist/paddle_paths.py that is a module of one function (fluid.data): the docs
            # render the function, which the face binds at that name
            obj = getattr(obj, obj.__all__[0])
        return obj
    raise ImportError(ident)


def expected_names(ident, members):
    """``{heading id: (name, object)}`` a directive must render; names fluidist refuses (listed on the
    migration page) are left out."""
    obj = resolve(ident)
    if members is None and inspect.ismodule(obj):
        members = getattr(obj, "__all__", None)
        if members is None:  # no __all__: what the module defines itself, as mkdocstrings renders it
            members = [n for n, v in vars(obj).items()
                       if (inspect.isclass(v) or inspect.isfunction(v)) and v.__module__ == obj.__name__]
        members = [n for n in members if not n.startswith("_")]
    if members is None:
        return {ident: (ident.rsplit(".", 1)[-1], obj)}
    named = {"%s.%s" % (ident, m): (m, getattr(obj, m)) for m in members}
    return {k: v for k, v in named.items() if getattr(v[1], "__fluidist_refused__", False) is not True}


def summary_words(obj):
    """The words of the first paragraph of a class's or function's own docstring (a class without one:
    its own ``__init__``'s, which the pages merge into the class), markdown links and markup gone."""
    doc = vars(obj).get("__doc__") if inspect.isclass(obj) else obj.__doc__
    if inspect.isclass(obj) and not doc and "__init__" in vars(obj):
        doc = vars(obj)["__init__"].__doc__
    first = inspect.cleandoc(doc or "").split("\n\n")[0]
    first = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", first)  # [text](target) renders as text
    return _WORD.findall(first.lower())


def _text_words(fragment):
    return _WORD.findall(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).lower())


def rendered_section(page_html, anchor):
    """The HTML from an object's heading to the next heading of an object, or None without the heading."""
    at = page_html.find('id="%s"' % anchor)
    if at < 0:
        return None
    end = page_html.find('class="doc doc-heading"', page_html.find("</h", at))
    return page_html[at:end if end > 0 else len(page_html)]


def _contains_run(haystack, needle):
    n = len(needle)
    return any(haystack[i:i + n] == needle for i in range(len(haystack) - n + 1))


def _why_missing(section, name, obj):
    if section is None:
        return "no heading on the page"
    if (inspect.isclass(obj) or inspect.isfunction(obj)) and obj.__name__ == name:
        words = summary_words(obj)[:12]
        if not words:
            return "has no docstring"
        if not _contains_run(_text_words(section), words):
            return "its docstring's first sentence is not under its heading"
        return None
    # another name for an object (SGD = SGDOptimizer), a constant, an instance (fleet): its own docstring
    contents = section.split('class="doc doc-contents', 1)
    if len(contents) < 2 or len(_text_words(contents[1])) < 3:
        return "shown without a docstring"
    return None


def missing_on_page(page_html, ident, members):
    """``[why]`` for each name a directive lists that its built page lacks or shows without its docstring."""
    problems = []
    for anchor, (name, obj) in expected_names(ident, members).items():
        why = _why_missing(rendered_section(page_html, anchor), name, obj)
        if why:
            problems.append("%s: %s" % (anchor, why))
    return problems


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The built site's folder: FLUIDIST_DOCS_SITE (built by .ci/run), else built here."""
    given = os.environ.get("FLUIDIST_DOCS_SITE")
    if given:
        assert os.path.isfile(os.path.join(given, "index.html")), "FLUIDIST_DOCS_SITE=%s holds no site" % given
        return given
    pytest.importorskip("mkdocs", reason="the docs extra (pip install -e '.[docs]') builds the site")
    pytest.importorskip("mkdocstrings_handlers.python", reason="the docs extra builds the site")
    out = str(tmp_path_factory.mktemp("site"))
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", out], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    return out


def _built_page(site, page):
    """The HTML of a page: ``api/core.html`` (the offline site), or ``api/core/index.html`` (a site built
    for a web server, ``FLUIDIST_DOCS_OFFLINE=false``)."""
    rel = os.path.splitext(os.path.relpath(page, os.path.join(ROOT, "docs")))[0]
    for path in (os.path.join(site, rel + ".html"), os.path.join(site, rel, "index.html")):
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                return f.read()
    raise AssertionError("the site in %s has no page for %s" % (site, rel))


@pytest.mark.timeout(900)
@pytest.mark.parametrize("page", API_PAGES, ids=[os.path.relpath(p, ROOT) for p in API_PAGES])
def test_every_listed_name_is_on_the_built_page_with_its_docstring(site, page):
    with open(page) as f:
        listed = directives(f.read())
    page_html = _built_page(site, page)
    problems = [p for ident, members in listed for p in missing_on_page(page_html, ident, members)]
    assert not problems, "%s:\n%s" % (os.path.relpath(page, ROOT), "\n".join(problems))


def test_the_check_finds_a_name_the_page_lacks():
    page_html = ('<h2 id="fluidist.layers.fc" class="doc doc-heading">fc</h2><p>Fully connected layer: '
                 '<code>act(input @ W + b)</code>.</p>')
    assert missing_on_page(page_html, "fluidist.layers", ["fc"]) == []
    assert missing_on_page(page_html, "fluidist.layers", ["fc", "While"]) == [
        "fluidist.layers.While: no heading on the page"]
    wrong = page_html.replace("Fully connected", "Something else")
    assert missing_on_page(wrong, "fluidist.layers", ["fc"]) == [
        "fluidist.layers.fc: its docstring's first sentence is not under its heading"]
    # a directive without members stands for the module's __all__
    assert set(expected_names("fluidist.layers.logic", None)) >= {"fluidist.layers.logic.less_than"}


# signatures as mkdocstrings hands them to the formatter: ``def <name as x's>(...) -> R: pass``
SIGNATURES = [
    'def xx(a: int, b: str = "x") -> None: pass',
    "def xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx(lengths: list[list[int]], other: dict[str, int] = {'a': 1}) -> None: pass",
    "def xxxx(input: Variable, size: int, num_flatten_dims: int = 1, param_attr: ParamAttrLike = None, "
    "bias_attr: ParamAttrLike = None, act: str | None = None, name: str | None = None) -> Variable: pass",
    "def xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx(fleet_send_sleep_seconds: int = 0) -> None: pass",
    "def xxxxx(x, sep: str = ', (', *args, key=lambda v: (v, 1), **kwargs) -> tuple[int, str]: pass",
]


@pytest.mark.parametrize("code", SIGNATURES)
def test_signatures_are_laid_out_as_ruff_lays_them_out(code):
    ruff = pytest.importorskip("ruff.__main__", reason="the docs extra installs ruff").find_ruff_bin()
    want = subprocess.run([ruff, "format", "--config", "line-length=72", "--stdin-filename", "f.py", "-"],
                          input=code, capture_output=True, text=True, check=True).stdout
    assert signatures.format_def(code, 72) == want


def test_the_hook_puts_the_formatter_where_mkdocstrings_looks():
    rendering = pytest.importorskip("mkdocstrings_handlers.python._internal.rendering",
                                    reason="the docs extra installs mkdocstrings-python")
    original = rendering._get_formatter
    try:
        signatures.on_startup(command="build", dirty=False)
        assert rendering._get_formatter() is signatures.format_def
    finally:
        rendering._get_formatter = original
    assert signatures.format_def("x = 1", 72) == "x = 1"  # not a def: left as it is
