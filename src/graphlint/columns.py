"""Columns, one model: a position is a 1-based line and a 0-based column counted in
code points (LibCST's), in every diagnostic; each output converts to what its
consumer counts.

CPython's ``ast`` gives UTF-8 byte offsets instead: :class:`ByteColumns` turns them
into code points where the source is at hand (the calls that module summaries and
compile sites record, which become the steps of a finding's chain).
"""

from __future__ import annotations

import re
from typing import Final

_LINE: Final = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")  # Python's line breaks


def lines_of(text: str) -> list[str]:
    """The lines of ``text`` as Python's tokenizer breaks them (``\\n``, ``\\r\\n``,
    ``\\r``; not the form feeds and separators ``str.splitlines`` also breaks at),
    without their line breaks."""
    return [line.rstrip("\r\n") for line in _LINE.findall(text)]


class ByteColumns:
    """Code-point columns of UTF-8 byte offsets on the lines of one source text
    (CPython's ``col_offset``)."""

    def __init__(self, text: str) -> None:
        self._lines: list[str] | None = None if text.isascii() else lines_of(text)

    def __call__(self, line: int, offset: int) -> int:
        if self._lines is None or not 0 < line <= len(self._lines):
            return offset
        text = self._lines[line - 1]
        if text.isascii():
            return offset
        head = text.encode("utf-8", "surrogatepass")[:offset]
        return len(head.decode("utf-8", "replace"))
