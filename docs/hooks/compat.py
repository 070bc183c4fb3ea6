"""The Paddle 1.x compatibility table of the migration page, generated from the code at build time.

Every public name of the fluidist modules that stand for Paddle 1.x module paths is listed as *working*
or *refused*: a name is refused when the object carries ``__fluidist_refused__ = True`` (it exists and
raises NotImplementedError saying what to use instead). Methods of public classes marked the same way are
listed as refused ``Class.method``. Nothing here is written by hand but the module paths.

Used by MkDocs as a hook (``hooks:`` in mkdocs.yml): the marker ``<!-- compat-table -->`` in a page is
replaced by the table.
"""
import importlib
import inspect
import logging

MARKER = "<!-- compat-table -->"

# (Paddle 1.x module path, the fluidist module that stands for it)
MODULES = [
    ("paddle.fluid", "fluidist"),
    ("paddle.fluid.layers", "fluidist.layers"),
    ("paddle.fluid.io", "fluidist.io"),
    ("paddle.fluid.optimizer", "fluidist.optimizer"),
    ("paddle.fluid.initializer", "fluidist.initializer"),
    ("paddle.fluid.regularizer", "fluidist.regularizer"),
    ("paddle.fluid.clip", "fluidist.clip"),
    ("paddle.fluid.param_attr", "fluidist.param_attr"),
    ("paddle.fluid.backward", "fluidist.backward"),
    ("paddle.fluid.unique_name", "fluidist.unique_name"),
    ("paddle.fluid.data_feeder", "fluidist.data_feeder"),
    ("paddle.fluid.core", "fluidist.core"),
    ("paddle.fluid.profiler", "fluidist.profiler"),
    ("paddle.fluid.debugger", "fluidist.debugger"),
    ("paddle.fluid.net_drawer", "fluidist.net_drawer"),
    ("paddle.fluid.log_helper", "fluidist.log_helper"),
    ("paddle.fluid.transpiler", "fluidist.transpiler"),
    ("paddle.fluid.metrics", "fluidist.metrics"),
    ("paddle.fluid.contrib", "fluidist.contrib"),
    ("paddle.fluid.dygraph", "fluidist.dygraph"),
    ("paddle.fluid.incubate.fleet.base.role_maker", "fluidist.incubate.fleet.base.role_maker"),
    ("paddle.fluid.incubate.fleet.collective", "fluidist.incubate.fleet.collective"),
    ("paddle.fluid.incubate.fleet.parameter_server.distribute_transpiler",
     "fluidist.incubate.fleet.parameter_server.distribute_transpiler"),
    ("paddle.distributed.launch", "fluidist.distributed.launch"),
]


def is_refused(obj):
    return getattr(obj, "__fluidist_refused__", False) is True


def _exported(obj):
    return not inspect.ismodule(obj) and not isinstance(obj, logging.Logger)


def public_names(module):
    """The module's ``__all__``, else its public attributes that are not modules (nor loggers)."""
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in dir(module) if not n.startswith("_") and _exported(getattr(module, n))]
    return sorted(set(n for n in names if hasattr(module, n)))


def load(path):
    """The module at ``path``, or a module-valued attribute of its parent (``fluidist.unique_name``)."""
    try:
        return importlib.import_module(path)
    except ImportError:
        parent, _, last = path.rpartition(".")
        obj = getattr(importlib.import_module(parent), last, None) if parent else None
        if inspect.ismodule(obj):
            return obj
        raise


def module_rows(paddle_path, module):
    """``(working names, refused names)`` of one module (refused class methods as ``Class.method``)."""
    working, refused = [], []
    for name in public_names(module):
        obj = getattr(module, name)
        (refused if is_refused(obj) else working).append(name)
        if inspect.isclass(obj) and not is_refused(obj):
            for attr, member in sorted(vars(obj).items()):
                if not attr.startswith("_") and is_refused(getattr(member, "__func__", member)):
                    refused.append("%s.%s" % (name, attr))
    return working, refused


def compat_rows(modules=MODULES):
    """``[(paddle path, fluidist path, working, refused or None when the module does not exist)]``."""
    rows = []
    for paddle_path, path in modules:
        try:
            module = load(path)
        except ImportError:
            rows.append((paddle_path, path, [], None))
            continue
        working, refused = module_rows(paddle_path, module)
        rows.append((paddle_path, path, working, refused))
    return rows


def _names(names):
    return ", ".join("`%s`" % n for n in names) if names else "(none)"


def compat_markdown(modules=MODULES):
    rows = compat_rows(modules)
    out = ["| Paddle 1.x module | fluidist module | working | refused |", "| --- | --- | ---: | ---: |"]
    for paddle_path, path, working, refused in rows:
        if refused is None:
            out.append("| `%s` | not provided | 0 | all |" % paddle_path)
        else:
            out.append("| `%s` | `%s` | %d | %d |" % (paddle_path, path, len(working), len(refused)))
    total_w = sum(len(r[2]) for r in rows)
    total_r = sum(len(r[3] or []) for r in rows)
    out += ["", "%d working and %d refused names in all (generated from the code when these pages were built)."
            % (total_w, total_r), ""]
    for paddle_path, path, working, refused in rows:
        if refused is None:
            continue
        out += ["### `%s`" % paddle_path, "", "**Working** (%d): %s" % (len(working), _names(working)), "",
                "**Refused** (%d): %s" % (len(refused), _names(refused)), ""]
    return "\n".join(out)


def on_page_markdown(markdown, page, config, files):
    """MkDocs hook: put the table where the page has the marker."""
    if MARKER in markdown:
        markdown = markdown.replace(MARKER, compat_markdown())
    return markdown
