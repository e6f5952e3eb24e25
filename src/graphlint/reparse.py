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

A piece is used once in a module: a text that recurs within one file is parsed
again, so that no node is in two places of one tree. Pieces of another file with
the same text are shared; syntax trees are immutable and the analysis keys what
it learns by node in the run of one file only.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import CodePosition, CodeRange

from graphlint.facts.positions import Positions, anchors_of, positions_of
from graphlint.parsing import cuts, join, parse_module, release_freed

Ranges = Mapping[cst.CSTNode, CodeRange]
KEPT = 1 << 20  # characters of source whose pieces a worker keeps
_TRIM_FROM = 1 << 17  # characters parsed at once after which freed memory goes back


@dataclass(eq=False)
class _Piece:
    """A piece's text and module, and its positions in its own lines, computed
    when first asked and kept with it."""

    text: str
    module: cst.Module
    _positions: Ranges | None = None
    _nodes: list[int] | None = None  # the ids of its statements' nodes

    def positions(self) -> Ranges:
        if self._positions is None:
            self._positions = positions_of(self.module, anchors_of(self.text))
        return self._positions

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


class Pieces:
    """The pieces of recent parses, by text, most recently used last: at most
    ``limit`` characters of them, or those of the last parse."""

    def __init__(self, limit: int = KEPT) -> None:
        self.limit = limit
        self._kept: dict[str, _Piece] = {}
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
        fresh = 0
        try:
            for text in texts:
                piece = self._kept.pop(text, None) if text not in used else None
                if piece is None:
                    fresh += len(text)
                    piece = _Piece(text, cst.parse_module(text))
                else:
                    self._size -= len(text)
                pieces.append(piece)
                if text not in used:
                    used.add(text)
                    self._kept[text] = piece
                    self._size += len(text)
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

    def _let_go(self, last: int) -> None:
        """Drop the least recently used pieces beyond the limit, but not the
        ``last`` ones kept: those of the parse that just ended."""
        while self._size > self.limit and len(self._kept) > last:
            oldest = next(iter(self._kept))
            self._size -= len(oldest)
            del self._kept[oldest]


__all__ = ["KEPT", "Pieces"]
