"""Make text from checked files (source snippets, file names) safe to print.

A repository can hold a file named ``a\\nb.py``, or source with an ESC or a BiDi
override inside a string that a message quotes. Printed raw, such text can forge an
output line, set the terminal's title or clipboard (OSC sequences), or reorder what
the reader sees (Trojan Source). :func:`printable` shows each such character as an
escape instead; all other text, ``é``, CJK and emoji included, stays as it is.

A file named ``::error file=SECURITY.md,line=1::x.py`` is a second kind of forged line:
GitHub Actions reads a line of a step's log that starts with ``::`` (after white
space) as a workflow command (an annotation, ``::add-mask::``, ``::stop-commands::``),
and ``##[command]`` anywhere in a line as one in the runner's older form. Text that
:func:`printable` returns, and every line that :func:`inert_lines` returns, is never
read as one: such a ``::`` shows as ``\\x3a:``, ``##[`` as ``##\\x5b``, and a path
that would start a line with ``::`` is shown as ``./::...`` (:func:`shown_path`).
JSON keeps its strings exact and writes ``##[`` as ``##\\u005b`` (:func:`inert_json`).
"""

from __future__ import annotations

import unicodedata
from typing import Final

# control characters (C0, DEL, C1), format characters (BiDi controls and marks,
# zero-width characters, the BOM) and the line and paragraph separators
_ESCAPED_CATEGORIES: Final = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
_SHORT: Final = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(char: str) -> str:
    code = ord(char)
    if char in _SHORT:
        return _SHORT[char]
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (``surrogateescape``)
        return f"\\x{code - 0xDC00:02x}"
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


# what GitHub Actions reads as a workflow command: "::" first on a line (after white
# space: the runner trims it), "##[" anywhere (the older form)
_COMMAND = "::"
_LEGACY_COMMAND = "##["


def visible(text: str) -> str:
    """``text`` as one line that a terminal shows as written and encodes as UTF-8.

    Control, format and separator characters and lone surrogates become escapes:
    ``\\n``, ``\\t``, ``\\x1b``, ``\\u202e``; a byte that was not UTF-8, which Python
    gives as a lone surrogate (``'\\udcff'``), becomes ``\\xff``. Workflow commands
    are left as they are: :func:`printable` escapes those too.
    """
    if text.isprintable():  # no character of an escaped category is printable
        return text
    return "".join(
        _escape(c) if unicodedata.category(c) in _ESCAPED_CATEGORIES else c
        for c in text
    )


def inert(text: str) -> str:
    """``text`` (without control characters: :func:`visible`'s) such that no line that
    starts with it is a workflow command: a ``::`` that starts it after white space
    becomes ``\\x3a:``, and ``##[`` anywhere ``##\\x5b``."""
    if _LEGACY_COMMAND in text:
        text = text.replace(_LEGACY_COMMAND, "##\\x5b")
    rest = text.lstrip()
    if rest.startswith(_COMMAND):
        text = f"{text[: len(text) - len(rest)]}\\x3a{rest[1:]}"
    return text


def printable(text: str) -> str:
    """``text`` as one line that a terminal shows as written, that encodes as UTF-8,
    and that GitHub Actions does not read as a workflow command, at the start of a
    line or anywhere in it (:func:`visible`, then :func:`inert`)."""
    return inert(visible(text))


def shown_path(path: str) -> str:
    """``path`` as :func:`printable` shows it, from ``./`` where it would start a line
    with ``::`` (``./::error file=x::y.py``, the same file): a name that stays a
    name the reader can copy."""
    shown = visible(path)
    if shown.lstrip().startswith(_COMMAND):
        shown = f"./{shown}"
    return inert(shown)


def inert_lines(text: str) -> str:
    """Each line of ``text`` (output assembled from :func:`printable` parts)
    :func:`inert`: what joining the parts made can be no workflow command either."""
    if _COMMAND not in text and _LEGACY_COMMAND not in text:
        return text
    return "\n".join(inert(line) for line in text.split("\n"))


def inert_json(text: str) -> str:
    """JSON text in which no ``##[`` (the only workflow command JSON's lines can hold:
    they start with white space and a bracket, brace or quote) is left: a string's
    ``[`` after ``##`` is written ``\\u005b``, which decodes to the same string."""
    return text.replace(_LEGACY_COMMAND, "##\\u005b")


def encodable(text: str) -> str:
    """``text`` with its lone surrogates escaped as :func:`printable` does, so that it
    encodes as UTF-8; everything else, control characters included, is kept (JSON
    escapes those itself)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "".join(
            _escape(c) if unicodedata.category(c) == "Cs" else c for c in text
        )
    return text


def encodable_json(value: object) -> object:
    """``value`` (JSON data) with every string made :func:`encodable`: paths and
    source quoted from the checked files can hold bytes that were not UTF-8."""
    if isinstance(value, str):
        return encodable(value)
    if isinstance(value, dict):
        return {key: encodable_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [encodable_json(item) for item in value]
    return value
