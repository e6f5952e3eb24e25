"""Make text from checked files (source snippets, file names) safe to print.

A repository can hold a file named ``a\\nb.py``, or source with an ESC or a BiDi
override inside a string that a message quotes. Printed raw, such text can forge an
output line, set the terminal's title or clipboard (OSC sequences), or reorder what
the reader sees (Trojan Source). :func:`printable` shows each such character as an
escape instead; all other text, ``é``, CJK and emoji included, stays as it is.
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


def printable(text: str) -> str:
    """``text`` as one line that a terminal shows as written and encodes as UTF-8.

    Control, format and separator characters and lone surrogates become escapes:
    ``\\n``, ``\\t``, ``\\x1b``, ``\\u202e``; a byte that was not UTF-8, which Python
    gives as a lone surrogate (``'\\udcff'``), becomes ``\\xff``.
    """
    if text.isprintable():  # no character of an escaped category is printable
        return text
    return "".join(
        _escape(c) if unicodedata.category(c) in _ESCAPED_CATEGORIES else c
        for c in text
    )


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
