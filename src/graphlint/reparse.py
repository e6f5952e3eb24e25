"""A file parsed again after an edit: only the top-level statements the edit changed.

The language server checks the file being typed in at every pause. Its workers
keep the pieces of the parses they made (``Pieces``): the source is cut before
every top-level statement where a cut is exact (``parsing.cuts``), so that a
piece's text does not depend on what an edit changes elsewhere, and each piece's
module and positions are kept by its text. A new version of the file is cut the
same way; the pieces whose text recurs are taken as they are, the others parsed,
and the pieces are joined (``parsing.join``) into the module the whole parse
gives, with the positions ``positions_of`` gives it (``tests/test_reparse.py``
holds both to that). A piece's positions count its own lines: in the file they
move by the lines before it, computed again only where that number changed.

A piece is used once in a module: a text that recurs within one file is parsed
again, so that no node is in two places of one tree. Pieces of another file with
the same text are shared; syntax trees are immutable and the analysis keys what
it learns by node in the run of one file only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import CodePosition, CodeRange

from graphlint.facts.positions import positions_of
from graphlint.parsing import cuts, join, parse_module, release_freed

Positions = Mapping[cst.CSTNode, CodeRange]
KEPT = 1 << 20  # characters of source whose pieces a worker keeps
_TRIM_FROM = 1 << 17  # characters parsed at once after which freed memory goes back


@dataclass(eq=False)
class _Piece:
    """A piece's module, and its positions in its own lines; ``shifted``: moved by
    ``lines`` (those before it in the file it was last used in), without the
    piece's module, which is not in the file's tree."""

    module: cst.Module
    positions: Positions
    lines: int = -1
    shifted: dict[cst.CSTNode, CodeRange] = field(default_factory=dict)

    def at(self, lines: int) -> dict[cst.CSTNode, CodeRange]:
        if lines != self.lines:
            # built, then kept: a memory error on the way (a worker survives one)
            # must not leave the piece claiming positions it does not hold
            shifted = {
                node: _moved(where, lines)
                for node, where in self.positions.items()
                if node is not self.module
            }
            self.shifted, self.lines = shifted, lines
        return self.shifted


def _moved(where: CodeRange, lines: int) -> CodeRange:
    if not lines:
        return where
    start, end = where.start, where.end
    return CodeRange(
        CodePosition(start.line + lines, start.column),
        CodePosition(end.line + lines, end.column),
    )


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
    ) -> tuple[cst.Module, Positions]:
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
                    module = cst.parse_module(text)
                    piece = _Piece(module, positions_of(module))
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
                return pieces[0].module, pieces[0].positions
            module = parse_module(source)
            self.parsed += len(source)
            return module, positions_of(module)
        return joined, self._positions(joined, pieces, source, starts)

    def _positions(
        self,
        module: cst.Module,
        pieces: list[_Piece],
        source: str,
        starts: Sequence[int],
    ) -> Positions:
        """The positions of the joined ``module``: each piece's, moved by the lines
        before it, and the module's own range."""
        found: dict[cst.CSTNode, CodeRange] = {}
        lines, done = 0, 0
        body = iter(module.body)
        for index, piece in enumerate(pieces):
            if index:
                lines += source.count("\n", done, starts[index - 1])
                done = starts[index - 1]
            found.update(piece.at(lines))
            statements = piece.module.body
            lead = next(body)
            if lead is not statements[0]:  # ``join`` made it anew
                found[lead] = found.pop(statements[0])
            for _ in statements[1:]:
                next(body)
        last = pieces[-1].positions[pieces[-1].module].end
        found[module] = CodeRange(
            CodePosition(1, 0), CodePosition(last.line + lines, last.column)
        )
        return found

    def _let_go(self, last: int) -> None:
        """Drop the least recently used pieces beyond the limit, but not the
        ``last`` ones kept: those of the parse that just ended."""
        while self._size > self.limit and len(self._kept) > last:
            oldest = next(iter(self._kept))
            self._size -= len(oldest)
            del self._kept[oldest]


__all__ = ["KEPT", "Pieces"]
