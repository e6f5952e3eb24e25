"""A file parsed again after an edit: only the top-level statements the edit changed.

The language server checks the file being typed in at every pause. Its workers
keep the pieces of the parses they made (``Pieces``): the source is cut before
every top-level statement where a cut is exact (``parsing.cuts``), so that a
piece's text does not depend on what an edit changes elsewhere, and each piece's
module is kept by its text. A new version of the file is cut the same way; the
pieces whose text recurs are taken as they are, the others parsed, and the pieces
are joined (``parsing.join``) into the module the whole parse gives, with the
positions ``positions_of`` gives it (``tests/test_reparse.py`` holds both to that).

A piece's positions count its own lines, are computed a statement at a time when
first asked (``facts.positions.Positions``) and are kept with the piece: an edit
computes those of the statements it changed that the analysis asks about, and in
the file a piece's positions move by the lines before it, when asked.

A top-level class is cut the same way inside: before each statement of its body
after which only empty lines come (``_split``). An edit inside one method of a
class parses that member alone, in a class of its own (``class _:`` and the
member's text: the statements that parse give the nodes the whole parse gives),
and takes every other member's nodes from the class's last parse, found by the
class's name (``Pieces._parsed``): a method an edit left alone keeps its
nodes, and with them what the analysis kept for it (``facts.reaching``).

A piece is used once in a module: a text that recurs within one file is parsed
again, so that no node is in two places of one tree. Pieces of another file with
the same text are shared; syntax trees are immutable and the analysis keys what
it learns by node in the run of one file only.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import libcst as cst
from libcst.metadata import CodePosition, CodeRange

from graphlint.facts.positions import (
    Anchor,
    Positions,
    anchors,
    anchors_of,
    positions_of,
)
from graphlint.parsing import cpython_parse, cuts, join, parse_module, release_freed

Ranges = Mapping[cst.CSTNode, CodeRange]
KEPT = 1 << 20  # characters of source whose pieces a worker keeps
_TRIM_FROM = 1 << 17  # characters parsed at once after which freed memory goes back
_CLASS_NAME = re.compile(r"^class\s+(\w+)", re.MULTILINE)


class _Split(NamedTuple):
    """Where a piece that is one class is cut inside (``_split``): the offsets its
    members start at (the first after the class's header and the first statements
    of its body), and how many statements of LibCST's tree the head and each
    member hold."""

    starts: tuple[int, ...]
    counts: tuple[int, ...]


def _split(text: str, tree: ast.Module | None) -> _Split | None:
    """Where a piece that is one class (``tree``: CPython's parse of ``text``) is
    cut: before each statement of its body that only empty lines separate from
    the one before it, where the cut takes them (they lead the statement, as in the
    whole parse); None where the piece is not one class whose body starts on a line
    of its own and is followed by empty lines only, or nothing is cut (or where
    CPython ends a line that ``str.split`` does not: a lone carriage return)."""
    if tree is None or len(tree.body) != 1 or type(tree.body[0]) is not ast.ClassDef:
        return None
    if text.count("\r") != text.count("\r\n"):
        return None
    body = tree.body[0].body
    lines = text.split("\n")
    head = body[0]
    if lines[head.lineno - 1][: head.col_offset].strip():
        return None  # ``class C: x = 1``
    end = body[-1].end_lineno or head.lineno
    if any(line not in ("", "\r") for line in lines[end:]):
        return None  # a comment after the class: LibCST may give it to the body
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    starts: list[int] = []
    counts = [1]
    for before, statement in itertools.pairwise(body):
        decorators = getattr(statement, "decorator_list", None)
        first = decorators[0].lineno if decorators else statement.lineno
        last = before.end_lineno or before.lineno
        if (
            first > last
            # a backslash ending a statement's last line takes the empty line after
            # it into that line's whitespace, in LibCST's tree
            and not lines[last - 1].rstrip("\r").endswith("\\")
            and all(line in ("", "\r") for line in lines[last : first - 1])
        ):
            starts.append(offsets[last])
            counts.append(1)
        elif statement.lineno > last:  # ``x = 1; y = 2`` is one line of LibCST's
            counts[-1] += 1
    return _Split(tuple(starts), tuple(counts)) if starts else None


@dataclass(eq=False)
class _Piece:
    """A piece's text and module, and its positions in its own lines, computed
    when first asked and kept with it."""

    text: str
    module: cst.Module
    _positions: Ranges | None = None
    _nodes: list[int] | None = None  # the ids of its statements' nodes
    # where CPython puts its statements, and where it is cut inside: read once
    _anchors: list[Anchor] | None = None
    _inside: _Split | None = None
    _read: bool = False

    def positions(self) -> Ranges:
        if self._positions is None:
            self._positions = positions_of(self.module, self._read_text()._anchors)
        return self._positions

    def split(self) -> _Split | None:
        """Where the piece is cut inside, if it is a class (``_split``)."""
        return self._read_text()._inside

    def _read_text(self) -> _Piece:
        """The piece, its anchors and cuts inside read off CPython's parse."""
        if not self._read:
            tree = cpython_parse(self.text)
            self._anchors = None if tree is None else anchors(tree.body)
            self._inside = _split(self.text, tree)
            self._read = True
        return self

    def members(self) -> dict[tuple[str, bool], tuple[cst.BaseStatement, ...]]:
        """A class piece's members after its head, by their text and whether it is
        the last: their statements in its module."""
        split = self.split()
        body = _class_body(self.module)
        if split is None or body is None or len(body.body) != sum(split.counts):
            return {}
        found: dict[tuple[str, bool], tuple[cst.BaseStatement, ...]] = {}
        at = split.counts[0]
        bounds = zip(split.starts, [*split.starts[1:], len(self.text)], strict=True)
        for index, ((start, end), count) in enumerate(
            zip(bounds, split.counts[1:], strict=True)
        ):
            key = (self.text[start:end], index == len(split.starts) - 1)
            found.setdefault(key, tuple(body.body[at : at + count]))
            at += count
        return found

    def nodes(self) -> list[int]:
        if self._nodes is None:
            positions = self.positions()
            self._nodes = (
                positions.nodes()
                if isinstance(positions, Positions)
                else [id(node) for node in positions if node is not self.module]
            )
        return self._nodes


def _moved(where: CodeRange, lines: int) -> CodeRange:
    if not lines:
        return where
    start, end = where.start, where.end
    return CodeRange(
        CodePosition(start.line + lines, start.column),
        CodePosition(end.line + lines, end.column),
    )


class _Joined(Mapping[cst.CSTNode, CodeRange]):
    """The positions of a module joined from pieces: a node's is its piece's, moved
    by the lines before the piece; a piece's first statement, made anew by the
    join, has that of the statement it stands for."""

    def __init__(
        self,
        module: cst.Module,
        pieces: Sequence[_Piece],
        lines: Sequence[int],
    ) -> None:
        self._module = module
        self._pieces = pieces
        self._lines = lines  # before each piece
        # a piece's first statement that the join made anew: its piece, its own
        self._leads: dict[int, tuple[int, cst.CSTNode]] = {}
        self._joined: dict[cst.CSTNode, cst.CSTNode] = {}  # its own -> the new one
        body = iter(module.body)
        for index, piece in enumerate(pieces):
            lead, *rest = piece.module.body
            joined = next(body)
            if joined is not lead:
                self._leads[id(joined)] = (index, lead)
                self._joined[lead] = joined
            for _ in rest:
                next(body)
        self._found: dict[cst.CSTNode, CodeRange] = {}
        self._home: dict[int, int] | None = None  # node's id -> its piece

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        found = self._found.get(node)
        if found is None:
            found = self._found[node] = self._find(node)
        return found

    def _find(self, node: cst.CSTNode) -> CodeRange:
        if node is self._module:
            last = self._pieces[-1]
            end = last.positions()[last.module].end
            return CodeRange(
                CodePosition(1, 0), CodePosition(end.line + self._lines[-1], end.column)
            )
        lead = self._leads.get(id(node))
        if lead is not None:
            index, own = lead
        else:
            if self._home is None:
                self._home = {}
                for at, piece in enumerate(self._pieces):
                    self._home.update(dict.fromkeys(piece.nodes(), at))
            found = self._home.get(id(node))
            if found is None:  # layout, or another tree's: asked of every piece
                return self._asked_of_all(node)
            index, own = found, node
        return _moved(self._pieces[index].positions()[own], self._lines[index])

    def _asked_of_all(self, node: cst.CSTNode) -> CodeRange:
        for index, piece in enumerate(self._pieces):
            where = piece.positions().get(node)
            if where is not None and node is not piece.module:
                return _moved(where, self._lines[index])
        raise KeyError(node)

    def __iter__(self) -> Iterator[cst.CSTNode]:
        yield self._module
        for piece in self._pieces:
            for node in piece.positions():
                if node is not piece.module:
                    yield self._joined.get(node, node)

    def __len__(self) -> int:
        return 1 + sum(len(p.positions()) - 1 for p in self._pieces)


def _class_body(module: cst.Module) -> cst.IndentedBlock | None:
    """The body of the class that is ``module``'s one statement."""
    if len(module.body) != 1:
        return None
    statement = module.body[0]
    if (
        type(statement) is not cst.ClassDef
        or type(statement.body) is not cst.IndentedBlock
    ):
        return None
    return statement.body


def _class_name(text: str) -> str | None:
    """What finds a class's last parse: its name; None for a piece that does not
    start a class (or its decorators)."""
    if not text.startswith(("class", "@")):
        return None
    found = _CLASS_NAME.search(text)
    return found.group(1) if found is not None else None


class Pieces:
    """The pieces of recent parses, by text, most recently used last: at most
    ``limit`` characters of them, or those of the last parse."""

    def __init__(self, limit: int = KEPT) -> None:
        self.limit = limit
        self._kept: dict[str, _Piece] = {}
        self._classes: dict[str, _Piece] = {}  # the last of each class, by name
        self._size = 0
        self.parsed = 0  # characters parsed, for tests and benches

    def parse(
        self, source: str, starts: Sequence[int] | None = None
    ) -> tuple[cst.Module, Ranges]:
        """``source``'s module and positions, as ``parse_module`` and
        ``positions_of`` give them, from the kept pieces where their text recurs;
        ``starts``: ``cuts(source, 1)``, where the caller has them."""
        if starts is None:
            starts = cuts(source, 1)
        bounds = list(zip([0, *starts], [*starts, len(source)], strict=True))
        texts = [source[start:end] for start, end in bounds]
        pieces: list[_Piece] = []
        used: set[str] = set()
        members: set[int] = set()  # the ids of the class bodies' statements used
        taken: set[int] = set()  # the ids of the classes whose members were taken
        present = set(texts)
        fresh = 0
        try:
            for text in texts:
                piece = self._kept.pop(text, None) if text not in used else None
                if piece is not None:
                    self._size -= len(text)
                if piece is None or not _unshared(piece, members):
                    piece, parsed = self._parsed(text, present, taken)
                    if not _unshared(piece, members):
                        piece, parsed = _Piece(text, cst.parse_module(text)), len(text)
                    fresh += parsed
                pieces.append(piece)
                if text not in used:
                    used.add(text)
                    self._kept[text] = piece
                    self._size += len(text)
                    name = _class_name(text)
                    if name is not None:
                        self._classes[name] = piece
        except cst.ParserSyntaxError:
            pieces = []  # parsed whole below: it raises what the whole parse raises
        self._let_go(len(used))
        if fresh >= _TRIM_FROM:
            release_freed()
        self.parsed += fresh
        joined = join([p.module for p in pieces]) if len(pieces) > 1 else None
        if joined is None:
            if len(pieces) == 1:
                return pieces[0].module, pieces[0].positions()
            module = parse_module(source)
            self.parsed += len(source)
            return module, positions_of(module, anchors_of(source))
        lines = [0]  # before each piece
        for start, end in itertools.pairwise([0, *starts]):
            lines.append(lines[-1] + source.count("\n", start, end))
        return joined, _Joined(joined, pieces, lines)

    def _parsed(
        self, text: str, texts: set[str], taken: set[int]
    ) -> tuple[_Piece, int]:
        """A piece for ``text``, which no kept piece has, and the characters
        parsed: a class's from the members of its last parse that ``text`` still
        has (not one of ``texts``, the source's, nor one ``taken`` already), else
        parsed whole."""
        name = _class_name(text)
        last = self._classes.get(name) if name is not None else None
        if last is not None and last.text not in texts and id(last) not in taken:
            try:
                rebuilt = _rebuilt(text, last)
            except cst.ParserSyntaxError:
                rebuilt = None  # parsed whole: it raises what the whole parse raises
            if rebuilt is not None:
                taken.add(id(last))
                return rebuilt
        return _Piece(text, cst.parse_module(text)), len(text)

    def _let_go(self, last: int) -> None:
        """Drop the least recently used pieces beyond the limit, but not the
        ``last`` ones kept: those of the parse that just ended."""
        while self._size > self.limit and len(self._kept) > last:
            oldest = next(iter(self._kept))
            self._size -= len(oldest)
            piece = self._kept.pop(oldest)
            name = _class_name(oldest)
            if name is not None and self._classes.get(name) is piece:
                del self._classes[name]


def _unshared(piece: _Piece, members: set[int]) -> bool:
    """Whether no statement of the piece's class body is among ``members`` (of the
    pieces already in the module); adds them where none is. Two versions of a class
    share the members an edit left alone, and a source may hold both."""
    body = _class_body(piece.module)
    if body is None:
        return True
    ids = {id(statement) for statement in body.body}
    if not members.isdisjoint(ids):
        return False
    members.update(ids)
    return True


def _rebuilt(text: str, last: _Piece) -> tuple[_Piece, int] | None:
    """The piece of a class whose text is ``text``, made of the members of its
    ``last`` parse that it still has, those it does not parsed alone, in a class
    of their own, and the characters parsed; None where ``text`` is not a class cut
    inside, ``last`` has fewer than half of its members (another class of that
    name: parsed whole, in one parse rather than one a member), or the pieces do
    not agree on the first newline or indentation."""
    tree = cpython_parse(text)
    split = _split(text, tree)
    kept = last.members()
    earlier = last.split()
    if tree is None or split is None or earlier is None or not kept:
        return None
    ends_at = [*split.starts[1:], len(text)]
    final = len(split.starts) - 1
    wanted = [
        (text[start:end], index == final)
        for index, (start, end) in enumerate(zip(split.starts, ends_at, strict=True))
    ]
    if 2 * sum(key in kept for key in wanted) < len(wanted):
        return None
    head = text[: split.starts[0]]
    parsed = 0
    if head == last.text[: earlier.starts[0]]:
        base = last.module
    else:
        base = cst.parse_module(head)
        parsed += len(head)
    block = _class_body(base)
    if block is None or len(block.body) < split.counts[0]:
        return None
    # a member's newlines and indentation are written as they differ from its
    # module's first: the kept ones' module must have the same
    detected = (base.default_newline, base.default_indent)
    if detected != (last.module.default_newline, last.module.default_indent):
        return None
    statements = list(block.body[: split.counts[0]])
    newline = base.default_newline
    # what follows the last member: as it was, where it is kept (the members of
    # ``last`` come from one body)
    kept_block = _class_body(last.module)
    assert kept_block is not None
    ends = (last.module.footer, kept_block.footer, last.module.has_trailing_newline)
    for key, count in zip(wanted, split.counts[1:], strict=True):
        member, is_final = key
        found = kept.pop(key, None)
        if found is None:
            alone = cst.parse_module(f"class _:{newline}{member}")
            parsed += len(member)
            own = _class_body(alone)
            if (
                own is None
                or len(own.body) != count
                or alone.default_indent != base.default_indent
            ):
                return None
            found = tuple(own.body)
            if is_final:
                ends = (alone.footer, own.footer, alone.has_trailing_newline)
        statements.extend(found)
    footer, block_footer, trailing = ends
    statement = base.body[0]
    assert isinstance(statement, cst.ClassDef)
    body = block.with_changes(body=statements, footer=block_footer)
    module = base.with_changes(
        body=[statement.with_changes(body=body)],
        footer=footer,
        has_trailing_newline=trailing,
    )
    piece = _Piece(text, module, _anchors=anchors(tree.body), _inside=split, _read=True)
    return piece, parsed


__all__ = ["KEPT", "Pieces"]
