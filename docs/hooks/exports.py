"""Every module's ``__all__`` followed by the docs' reader, also below a package without one.

mkdocstrings reads the code with griffe, statically. A module whose ``__all__`` adds another module's
(``__all__ = _logic_names + [...]`` after ``from .logic import __all__ as _logic_names``) is expanded by
``GriffeLoader.expand_exports``, which walks down from the package, but stops at a module without
``__all__`` (``fluidist/__init__.py``): below it nothing is expanded, the names another module's
``__all__`` brings are unknown, a wildcard import of that module brings none of them, and the pages
leave them out without a warning (``fluid.layers.less_than``, ``RNNCell``, ...). This hook makes the
walk go on through such modules. tests/test_docs_site.py reads the built pages for every name.
"""
import logging

log = logging.getLogger("mkdocs.hooks.exports")


def on_startup(command, dirty):
    """MkDocs hook: wrap ``GriffeLoader.expand_exports`` (once) so it descends through every module."""
    try:
        from griffe import GriffeLoader
    except ImportError:
        log.info("griffe is not installed: nothing to patch")
        return
    original = GriffeLoader.expand_exports
    if getattr(original, "descends_everywhere", False):
        return

    def expand_exports(self, module, seen=None):
        seen = set() if seen is None else seen
        seen.add(module.path)  # (an empty set would make griffe start one of its own)
        original(self, module, seen)
        if module.exports is None:  # griffe returned without looking at the submodules
            for submodule in module.modules.values():
                if not submodule.is_alias and submodule.path not in seen:
                    self.expand_exports(submodule, seen)

    expand_exports.descends_everywhere = True
    GriffeLoader.expand_exports = expand_exports
