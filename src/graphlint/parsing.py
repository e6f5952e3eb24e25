"""LibCST's parse of a module, in pieces for a large one, so its memory is a piece's.

LibCST's native parser needs about 600 bytes of memory a source byte while it parses
(tokens, memo tables, two trees), five times what the tree it returns keeps: a 1 MiB
file peaked above 600 MiB, and glibc kept most of it once freed. A module's body is
its top-level statements, and between two of them the tokenizer is in its first
state (no brackets, strings or indentation open), so the text from one top-level
statement to another parses alone to the statements the whole file parses to. A
large file is cut there into pieces of about ``PIECE`` characters, each parsed alone,
and the pieces' statements are joined into one module equal to the whole parse
(``deep_equals``; ``tests/test_parsing.py`` holds it to that).

The cuts stay where joining is exact:
- only before a statement that starts a line at column 0, after the first statement
  (the module's header belongs to the first piece), where the lines since the
  previous statement are all empty: LibCST gives a comment after an indented block
  to the block, or at the end of a file may drop one, so a comment never ends a piece;
- the empty lines that end a piece lead the next piece's first statement, as they do
  in the whole parse.
A file whose pieces do not agree on what the whole parse detects once for the file
(the first newline, the first indentation), with a lone carriage return (CPython
counts it as a line end, ``str.split("\\n")`` does not), or that CPython's parser
rejects, is parsed whole, as is any file where a piece fails to parse: the whole
parse then raises what it raises.
"""

from __future__ import annotations

import ast
import functools
import itertools
import sys
import warnings
from collections.abc import Callable, Sequence

import libcst as cst

PIECE = 1 << 16  # characters: pieces end at the first cut after this many

# glibc holds on to what the native parser frees below blocks still in use (~550 MiB
# after a whole parse of 1 MiB): after a large parse it goes back to the system; a
# small parse's is reused by the next
_TRIM_FROM = 1 << 17  # characters of source


def parse_module(source: str, *, piece: int = PIECE) -> cst.Module:
    """``source`` parsed by LibCST, in pieces of about ``piece`` characters when it
    is longer: the module the whole parse gives."""
    module = _in_pieces(source, piece) if len(source) > piece else None
    if module is None:
        module = cst.parse_module(source)
    if len(source) >= _TRIM_FROM:
        release_freed()
    return module


def _in_pieces(source: str, piece: int) -> cst.Module | None:
    """The module parsed in pieces; None where it must be parsed whole."""
    starts = cuts(source, piece)
    if not starts:
        return None
    ends = [*starts, len(source)]
    modules: list[cst.Module] = []
    try:
        for start, end in zip([0, *starts], ends, strict=True):
            modules.append(cst.parse_module(source[start:end]))
    except cst.ParserSyntaxError:
        return None
    return join(modules)


def join(modules: Sequence[cst.Module]) -> cst.Module | None:
    """The module that consecutive pieces of a source (cut by ``cuts``), each parsed
    alone, make together; None where they do not agree on what the whole parse
    detects once for the file (the first newline, the first indentation). A piece's
    first statement after the first piece is a new node (its leading lines gain the
    empty lines before it); every other node is the piece's own."""
    first = modules[0]
    if any(
        m.default_newline != first.default_newline
        or m.default_indent != first.default_indent
        for m in modules
    ):
        return None
    body: list[cst.BaseStatement] = list(first.body)
    for before, module in itertools.pairwise(modules):
        lead, *rest = module.body
        leading = [*before.footer, *module.header, *lead.leading_lines]
        body.append(lead.with_changes(leading_lines=leading))
        body.extend(rest)
    last = modules[-1]
    return first.with_changes(
        body=body, footer=last.footer, has_trailing_newline=last.has_trailing_newline
    )


def cpython_parse(source: str) -> ast.Module | None:
    """CPython's parse of ``source`` (a SyntaxWarning is no error); None where it
    does not parse."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def cuts(
    source: str, piece: int, statements: Sequence[ast.stmt] | None = None
) -> list[int]:
    """Where pieces of about ``piece`` characters start: offsets of top-level
    statements after only empty lines (see the module's docstring); ``statements``:
    CPython's parse of ``source``, where it is at hand. No cut in a source with a
    lone carriage return: CPython ends a line there, and the offsets below would not."""
    if source.count("\r") != source.count("\r\n"):
        return []
    if statements is None:
        tree = cpython_parse(source)
        if tree is None:
            return []
        statements = tree.body
    lines = source.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    cuts: list[int] = []
    last = 0  # the previous statement's last line (1-based)
    for statement in statements:
        first = statement.lineno
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            first = min([first, *(d.lineno for d in statement.decorator_list)])
        if (
            last
            and first > last
            and statement.col_offset == 0
            and offsets[first - 1] - (cuts[-1] if cuts else 0) >= piece
            and all(line in ("", "\r") for line in lines[last : first - 1])
        ):
            cuts.append(offsets[first - 1])
        last = statement.end_lineno or first
    return cuts


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    import ctypes  # noqa: PLC0415 - Linux only

    try:
        trim: Callable[[int], int] = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None
    return trim


def release_freed() -> None:
    """Give the memory malloc holds free back to the system, where it can."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


__all__ = ["PIECE", "cpython_parse", "cuts", "join", "parse_module", "release_freed"]
