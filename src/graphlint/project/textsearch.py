"""The project's files read as text, for the searches of ``reach.Project`` (what
calls a function, what a file installs): faster than summarising every file, and no
more than a hint that the summaries of the files it finds then confirm.

- ``imported_words``: the names a file's import statements bring in;
- ``installs``: the attribute writes that install a callable (``obj.step = fn``);
- ``names``: whether a name is written where a search wants it (anywhere, called,
  among a class's bases, defined);
- ``defined`` and ``methods``: the functions a file defines, and the methods.

Each pattern starts with a literal or is tried only where its name is written: a
regular expression that starts with ``\\b`` is tried at every position of a file.
"""

from __future__ import annotations

import re
from functools import cache

# where a search wants a name (``names``)
ANYWHERE = "word"  # anywhere, as ``grep -w`` finds it
BASE = "base"  # among the bases of a class statement: ``class Sub(pkg.Base):``
CALL = "call"  # called, or imported under another name: ``Name(``, ``Name as N``
DEF = "def"  # defined as a function: ``def name(``
_LEADS = {BASE: b"class", DEF: b"def"}  # what a match starts with, if not the name
# ``receiver.attr = value`` of a dotted name or a lambda (each pattern begins with a
# literal, and the receiver is read back only for a match: a scan of every file
# costs little)
_WRITTEN = re.compile(
    rb"\.(\w+)[ \t]*=[ \t]*"
    rb"(lambda(?=\W)|[A-Za-z_][\w.]*+(?=[ \t]*+(?:#[^\n]*)?\r?\n))"
)
# the plain name a write's ``.attr`` is set on: read back before the match, on the
# reversed text (a pattern anchored at the match's start would be tried at every
# position before it)
_RECEIVER = re.compile(rb"\w{1,256}(?![\w.])")
_METHOD = re.compile(rb"def[ \t]+(\w+)[ \t]*\([ \t]*self\b")
_DEFINED = re.compile(rb"def[ \t]+(\w+)")  # and ``undef x``: a name more, no harm


def installs(data: bytes) -> tuple[list[tuple[bytes, bytes]], list[bytes]]:
    """The attribute writes of a dotted name or a lambda in ``data`` (``_WRITTEN``),
    as (attribute, value), but those on ``self``; and the attributes of those that
    keep an object's own method under another name (``obj.orig = obj.step``, not
    ``self``'s: the class's attributes say what those hold)."""
    installed: list[tuple[bytes, bytes]] = []
    kept: list[bytes] = []
    for match in _WRITTEN.finditer(data):
        start = match.start()
        receiver = _RECEIVER.match(data[max(0, start - 257) : start][::-1])
        name = receiver[0][::-1] if receiver is not None else None
        if name == b"self":
            continue
        attribute, value = match[1], match[2]
        installed.append((attribute, value))
        owner, _, method = value.partition(b".")
        if owner == name and method and b"." not in method:
            kept.append(attribute)
    return installed, kept


# an import statement, from ``import``'s right: ``from a.b import (c, d as e)``
_IMPORT = re.compile(
    rb"^[ \t]*(?:from[ \t]+[\w.]+[ \t]+)?import[ \t]+"
    rb"(\([^)]*\)|(?:[^\\\n]|\\(?:\r?\n|.))*)",
    re.MULTILINE,
)
_WORD = re.compile(rb"\w+")


def imported_words(data: bytes) -> frozenset[bytes]:
    """The words of a file's import statements right of ``import``: the names and
    modules it imports (each part of ``a.b.c``) and their aliases; ``*`` for a star
    import, which may import anything."""
    words: set[bytes] = set()
    start = 0  # the regular expression is tried only on lines that say ``import``
    while (at := data.find(b"import", start)) != -1:
        match = _IMPORT.match(data, data.rfind(b"\n", 0, at) + 1)
        start = max(at + 6, match.end()) if match is not None else at + 6
        if match is not None:
            imported = match.group(1)
            words.update(_WORD.findall(imported))
            if b"*" in imported:
                words.add(b"*")
    return frozenset(words)


def names(data: bytes, name: bytes, how: str = ANYWHERE) -> bool:
    """Whether the text ``data`` has the word ``name`` where ``how`` says (over
    lines too). The pattern is tried only where the name is: at each place it is
    written, or from each ``def``/``class`` before it that may lead to it (a
    regular expression that starts with ``\\b`` is tried at every position)."""
    pattern = _pattern(name, how)
    lead = _LEADS.get(how)
    at = data.find(name)
    while at != -1:
        start = at
        while (start := data.rfind(lead, 0, start) if lead else start) != -1:
            if pattern.match(data, start):
                return True
            # ``def``: only the nearest one may lead to the name; ``class``: any
            # with no ``)`` between it and the name
            if lead is None or how == DEF or data.find(b")", start, at) != -1:
                break
        at = data.find(name, at + 1)
    return False


@cache
def _pattern(name: bytes, how: str) -> re.Pattern[bytes]:
    word = rb"\b" + re.escape(name) + rb"\b"
    if how == BASE:
        word = rb"\bclass\s+\w+\s*\([^)]*" + word
    elif how == CALL:
        word += rb"(?:\s*\(|\s+as\b)"
    elif how == DEF:
        word = rb"\bdef\s+" + word + rb"\s*\("
    return re.compile(word)


def defined(data: bytes) -> list[bytes]:
    """The names after each ``def`` in ``data``."""
    return _DEFINED.findall(data)


def methods(data: bytes) -> list[bytes]:
    """The names of the functions ``data`` defines with ``self`` first."""
    return _METHOD.findall(data)


__all__ = [
    "ANYWHERE",
    "BASE",
    "CALL",
    "DEF",
    "defined",
    "imported_words",
    "installs",
    "methods",
    "names",
]
