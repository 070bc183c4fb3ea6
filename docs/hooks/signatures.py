"""The API pages' separated signatures, formatted in this process.

mkdocstrings-python formats every signature longer than ``line_length`` with Black or, when only Ruff is
installed, by starting one ``ruff format`` process per signature: ~680 processes, 40 s to minutes on a
busy machine for what is string splitting. This hook gives it a formatter that lays signatures out the
way Black and Ruff do (tests/test_docs_site.py compares the two):

- the whole ``def name(...) -> R:`` on one line when it fits;
- else the parameters on one indented line between ``(`` and ``) -> R:`` when that line fits;
- else one parameter a line, each with a trailing comma;
- string literals in double quotes where that needs no escape, and a lone parameter on its own line
  followed by a comma (Black's and Ruff's "magic trailing comma").

Anything that is not a ``def`` (a long attribute value) is left as it is. mkdocstrings looks the
formatter up through a private function (``_get_formatter``); where a later version moves it, the hook
says so (INFO) and the build goes on with mkdocstrings' own formatter (slower, same pages);
tests/test_docs_site.py fails then, so the move is noticed.
"""
import logging
import re

log = logging.getLogger("mkdocs.hooks.signatures")

_OPEN, _CLOSE = "([{", ")]}"
# a single-quoted literal with neither quote kind nor a backslash inside: Black and Ruff write it in "
_SIMPLE_SINGLE_QUOTED = re.compile(r"'([^'\"\\\n]*)'")


def split_top_level(text):
    """``text`` split at the commas outside brackets and string literals, each part stripped."""
    parts, depth, quote, start, i = [], 0, None, 0, 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif text.startswith(quote, i):
                i += len(quote) - 1
                quote = None
        elif ch in "'\"":
            quote = text[i:i + 3] if text[i:i + 3] in ("'''", '"""') else ch
            i += len(quote) - 1
        elif ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
        i += 1
    last = text[start:].strip()
    return parts + [last] if last else parts


def _matching_paren(text, open_at):
    """The index of the ``)`` that closes the ``(`` at ``open_at`` (brackets and strings skipped)."""
    depth, quote, i = 0, None, open_at
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def format_def(code, line_length):
    """``def name(params) -> R: pass`` laid out as Black and Ruff do, ending in ``:\\n    pass\\n``.

    Code that is not such a ``def`` comes back unchanged."""
    code = code.strip()
    if not code.startswith("def ") or not code.endswith(": pass") or "(" not in code:
        return code
    open_at = code.index("(")
    close_at = _matching_paren(code, open_at)
    if close_at < 0:
        return code
    head, params, tail = code[:open_at + 1], code[open_at + 1:close_at], code[close_at:-len(" pass")]
    one_line = head + _SIMPLE_SINGLE_QUOTED.sub(r'"\1"', params) + tail
    if len(one_line) <= line_length or not params.strip():
        return one_line + "\n    pass\n"
    parts = [_SIMPLE_SINGLE_QUOTED.sub(r'"\1"', p) for p in split_top_level(params)]
    joined = "    " + ", ".join(parts) + ("," if len(parts) == 1 else "")
    if len(joined) <= line_length:
        return "%s\n%s\n%s\n    pass\n" % (head, joined, tail)
    return "%s\n%s\n%s\n    pass\n" % (head, "\n".join("    %s," % p for p in parts), tail)


def on_startup(command, dirty):
    """MkDocs hook: put ``format_def`` where mkdocstrings-python looks for its formatter."""
    try:
        from mkdocstrings_handlers.python._internal import rendering
    except ImportError:
        log.info("mkdocstrings-python has moved its rendering module: signatures formatted its own (slow) way")
        return
    if not callable(getattr(rendering, "_get_formatter", None)):
        log.info("mkdocstrings-python has no _get_formatter: signatures formatted its own (slow) way")
        return
    rendering._get_formatter = lambda: format_def
