"""JSON from another process or a file, read with bounds on its size and nesting.

``json.loads`` recurses once per nested array or object: a line of 200,000 ``[`` raises
``RecursionError`` deep in the parser (or, with a raised recursion limit, overflows the C stack).
:func:`loads` measures the nesting first, in one pass over the text that recurses nowhere, and
refuses text deeper than ``max_depth`` or longer than ``max_bytes`` before the parser sees it. Every
failure is a :class:`JSONBoundsError` (a ``ValueError``) saying what was wrong.
"""
import json

DEFAULT_MAX_DEPTH = 32
DEFAULT_MAX_BYTES = 1 << 20


class JSONBoundsError(ValueError):
    """The text is not JSON, or is larger or more deeply nested than allowed."""


def nesting_depth(text, limit):
    """The deepest nesting of arrays and objects in ``text`` (brackets inside strings do not count);
    stops counting once past ``limit``. A linear scan without recursion."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    return deepest
        elif ch in "]}":
            depth -= 1
    return deepest


def loads(data, what, max_bytes=DEFAULT_MAX_BYTES, max_depth=DEFAULT_MAX_DEPTH, **json_kw):
    """``data`` (bytes or str) parsed as JSON, refused (``JSONBoundsError`` naming ``what``) when it is
    over ``max_bytes`` long, nested deeper than ``max_depth``, not UTF-8, or not JSON. ``json_kw`` go to
    ``json.loads`` (hooks; what they raise passes through).

    Text with no more opening brackets than ``max_depth`` cannot nest deeper: it skips the scan."""
    if len(data) > max_bytes:
        raise JSONBoundsError("%s is %d bytes long, more than the %d allowed" % (what, len(data), max_bytes))
    if isinstance(data, (bytes, bytearray, memoryview)):
        try:
            data = bytes(data).decode("utf-8")
        except UnicodeDecodeError as e:
            raise JSONBoundsError("%s is not valid JSON: not UTF-8 (%s)" % (what, e)) from None
    opening = data.count("[") + data.count("{")
    if opening > max_depth and nesting_depth(data, max_depth) > max_depth:
        raise JSONBoundsError("%s nests arrays/objects more than %d deep" % (what, max_depth))
    try:
        return json.loads(data, **json_kw)
    except (json.JSONDecodeError, RecursionError) as e:   # RecursionError: cannot happen after the check
        raise JSONBoundsError("%s is not valid JSON: %s" % (what, str(e)[:200])) from None
