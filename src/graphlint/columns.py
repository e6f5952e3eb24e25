"""Columns, one model: a position is a 1-based line and a 0-based column counted in
code points (LibCST's), in every diagnostic; each output converts to what its
consumer counts.

Two other counts meet that model at its edges. CPython's ``ast`` gives UTF-8 byte
offsets (:class:`ByteColumns` turns them into code points where the source is at
hand), and LSP and SARIF consumers count UTF-16 code units, in which a character
outside the Basic Multilingual Plane (most emoji) is two. Converting needs
the line's text, which the outputs do not have: the engine records, once per file,
where such characters are (:func:`astral_lines`), and each diagnostic carries the
entries of the lines its positions are on (``Diagnostic.wide``), so that a formatter
stays a function of the results alone.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from graphlint.diagnostics import Diagnostic

_LINE: Final = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")  # Python's line breaks
_ASTRAL: Final = re.compile("[\U00010000-\U0010ffff]")


BREAK: Final = re.compile(r"\r\n|\r|\n")  # the line breaks Python's tokenizer knows


def line_starts(text: str) -> list[int]:
    """The offset where each line of ``text`` starts (index 0 is line 1), then the
    text's end (where a line after the last one would start)."""
    return [0, *(m.end() for m in BREAK.finditer(text)), len(text)]


def offset(starts: Sequence[int], line: int, col: int) -> int:
    """The offset of a position (1-based line, 0-based column in code points) in the
    text ``starts`` (``line_starts``) is of; past its end, its end."""
    if line - 1 >= len(starts) - 1:
        return starts[-1]
    return min(starts[line - 1] + col, starts[-1])


def lines_with_breaks(text: str) -> list[str]:
    """``lines_of``, each with its line break."""
    return _LINE.findall(text)


def lines_of(text: str) -> list[str]:
    """The lines of ``text`` as Python's tokenizer breaks them (``\\n``, ``\\r\\n``,
    ``\\r``; not the form feeds and separators ``str.splitlines`` also breaks at),
    without their line breaks."""
    return [line.rstrip("\r\n") for line in _LINE.findall(text)]


def astral_lines(text: str) -> tuple[tuple[int, tuple[int, ...]], ...]:
    """The lines of ``text`` that hold characters outside the Basic Multilingual
    Plane, each (1-based) with the code-point columns of those characters."""
    if text.isascii() or _ASTRAL.search(text) is None:
        return ()
    return tuple(
        (number, tuple(m.start() for m in _ASTRAL.finditer(line)))
        for number, line in enumerate(lines_of(text), start=1)
        if _ASTRAL.search(line)
    )


def utf16(col: int, astral: Sequence[int]) -> int:
    """A code-point column as UTF-16 code units, given the columns of the line's
    characters outside the BMP (each counts two units)."""
    return col + sum(1 for at in astral if at < col)


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


def anchor(
    lines: Sequence[str], line: int, col: int, end_line: int, end_col: int
) -> str:
    """A digest of the code a finding flags, for fingerprints that survive edits
    elsewhere in the file: the span's text on its first line (the whole line where
    the span is empty there), with runs of white space as one space; "" for a line
    the text does not have."""
    if not 0 < line <= len(lines):
        return ""
    text = lines[line - 1]
    flagged = text[col : end_col if end_line == line else len(text)]
    normal = " ".join(flagged.split()) or " ".join(text.split())
    if not normal:
        return ""
    data = normal.encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()[:16]


def placed(
    diagnostics: Sequence[Diagnostic], text: str
) -> tuple[tuple[Diagnostic, ...], tuple[tuple[int, tuple[int, ...]], ...]]:
    """What the outputs need of a file's text, taken where it is at hand (the engine,
    the screen of files with nothing to analyse): each diagnostic given its
    ``anchor``, and the file's :func:`astral_lines` (the project pass hands each
    diagnostic the entries of the places it names)."""
    if not diagnostics:  # the lines still count: a call here may be a chain's
        return (), astral_lines(text)
    lines = lines_of(text)
    found = tuple(
        replace(d, anchor=anchor(lines, d.line, d.col, d.end_line, d.end_col))
        for d in diagnostics
    )
    return found, astral_lines(text)
