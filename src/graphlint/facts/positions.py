"""Where each node of a module is: LibCST's ``PositionProvider``, made cheaper.

``MetadataWrapper.resolve(PositionProvider)`` runs a full batched traversal for the
batchable providers it was asked for, even when there are none, before the codegen
that actually computes positions: half of the cost, for nothing. The codegen itself
records a range for every node, two thirds of them whitespace and punctuation that
nothing asks about, and splits every token on a pattern to count its newlines.
``positions_of`` runs the same codegen, recording ranges only for the nodes that can
be asked about, and counts newlines only in tokens that have one.

Most of that is never asked: an analysis asks for the positions of the nodes of the
few functions with a region, a finding or a capture's set-up, and of no other (a
call's or a write's position is looked up only when something compares it). Given
where CPython's parse of the same source puts each statement (``anchors``), the
positions are computed a statement at a time (``Positions``: a top-level statement,
one of a top-level class, or one of the body of a function at those levels), when
a node of it is first asked: the statement's
codegen starts on its first line, which the anchor gives, and the range it computes
for the statement is checked against the anchor.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import libcst as cst
from libcst._nodes import op, whitespace
from libcst.metadata import (
    CodePosition,
    CodeRange,
    MetadataWrapper,
    PositionProvider,
)
from libcst.metadata.position_provider import PositionProvidingCodegenState

from graphlint.facts.walk import children
from graphlint.parsing import cpython_parse


def _unasked() -> frozenset[type[cst.CSTNode]]:
    """Whitespace, comments and operators: never the node of a finding, nor the
    first or last node another node's range is taken from (``ImportStar`` is: the
    end of ``from m import *``; brackets are, so they are not here)."""
    found: set[type[cst.CSTNode]] = set()
    for module in (op, whitespace):
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, cst.CSTNode):
                found.add(value)
    return frozenset(found - {cst.ImportStar})


UNASKED = _unasked()


class _Syntactic:
    """``PositionProvidingCodegenState.record_syntactic_position`` as a plain context
    manager: a generator-based one costs more than the position it records, and
    every expression opens one."""

    __slots__ = ("_end_node", "_node", "_start", "_start_node", "_state")

    def __init__(
        self,
        state: _State,
        node: cst.CSTNode,
        start_node: cst.CSTNode | None,
        end_node: cst.CSTNode | None,
    ) -> None:
        self._state = state
        self._node = node
        self._start_node = start_node
        self._end_node = end_node
        self._start = CodePosition(state.line, state.column)

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        state = self._state
        computed: MutableMapping[cst.CSTNode, Any] = state.provider._computed
        start = (
            self._start
            if self._start_node is None
            else computed[self._start_node].start
        )
        end = (
            CodePosition(state.line, state.column)
            if self._end_node is None
            else computed[self._end_node].end
        )
        computed[self._node] = CodeRange(start, end)


class _State(PositionProvidingCodegenState):
    """``PositionProvider``'s codegen state, skipping the nodes of ``UNASKED``."""

    def before_codegen(self, node: cst.CSTNode) -> None:
        if type(node) not in UNASKED:
            self._stack.append(CodePosition(self.line, self.column))

    def after_codegen(self, node: cst.CSTNode) -> None:
        if type(node) not in UNASKED:
            start = self._stack.pop()
            computed: MutableMapping[cst.CSTNode, Any] = self.provider._computed
            if node not in computed:  # a syntactic position is recorded already
                computed[node] = CodeRange(start, CodePosition(self.line, self.column))

    def record_syntactic_position(  # type: ignore[override]
        self,
        node: cst.CSTNode,
        *,
        start_node: cst.CSTNode | None = None,
        end_node: cst.CSTNode | None = None,
    ) -> _Syntactic:
        return _Syntactic(self, node, start_node, end_node)

    def _update_position(self, value: str) -> None:
        if "\n" in value or "\r" in value:
            super()._update_position(value)
        else:
            self.column += len(value)


# the codegen state above works with this LibCST: its provider keeps a dict
_OWN_WAY = isinstance(getattr(PositionProvider(), "_computed", None), dict)


class Anchor(NamedTuple):
    """Where CPython's parse puts a statement: the line and column its keyword or
    first token is at (where LibCST's syntactic range starts), the line of its first
    decorator or its own (where its text starts, but for the empty lines and comments
    before it), and its body's statements' where they are units of their own."""

    line: int
    column: int
    first: int
    members: tuple[Anchor, ...] = ()


def anchors(body: Sequence[ast.stmt]) -> list[Anchor]:
    """Where each of CPython's top-level statements starts, and the statements of a
    top-level class and of a top-level function or method."""
    return [_anchor(statement, 0) for statement in body]


def anchors_of(source: str) -> list[Anchor] | None:
    """``anchors`` of CPython's parse of ``source``; None where it does not parse."""
    tree = cpython_parse(source)
    return None if tree is None else anchors(tree.body)


def _anchor(statement: ast.stmt, depth: int) -> Anchor:
    """``statement``'s anchor; its body's, where its statements are units of their
    own: a class's at the top level, a function's at the top level or in a class."""
    decorators = getattr(statement, "decorator_list", None)
    first = decorators[0].lineno if decorators else statement.lineno
    members: tuple[Anchor, ...] = ()
    if (isinstance(statement, ast.ClassDef) and depth == 0) or (
        isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and depth <= 1
    ):
        members = tuple(_anchor(s, depth + 1) for s in statement.body)
    return Anchor(statement.lineno, statement.col_offset, first, members)


def positions_of(
    module: cst.Module, where: Sequence[Anchor] | None = None
) -> Mapping[cst.CSTNode, CodeRange]:
    """The range of each node that is not whitespace, a comment or an operator, as
    ``PositionProvider`` gives it (syntactic: no leading or trailing whitespace);
    computed a statement at a time, when asked, where CPython's ``anchors`` of the
    same source say where its statements are."""
    if where is not None and _OWN_WAY:
        units = _units(module, where)
        if units is not None:
            return Positions(module, units)
    return _computed(module, module, 1, ())


def _computed(
    module: cst.Module, node: cst.CSTNode, line: int, indent: Sequence[str]
) -> dict[cst.CSTNode, CodeRange]:
    """The positions of ``node``'s nodes, its text starting at ``line`` after the
    indentation ``indent``."""
    provider = PositionProvider()
    computed = getattr(provider, "_computed", None)
    if not isinstance(computed, dict):  # another LibCST inside: its own way
        return dict(
            MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        )
    state = _State(
        default_indent=module.default_indent,
        default_newline=module.default_newline,
        provider=provider,
    )
    state.line = line
    state.indent_tokens.extend(indent)
    node._codegen(state)
    return computed


@dataclass(frozen=True)
class _Unit:
    """Statements whose positions are computed together: a top-level statement,
    one of a top-level class's or one of a function's body at those levels (then
    the class's or function's ``parts`` are those of its statements, and theirs);
    where the statement starts (``Anchor``); its ``first`` line, a guess; the
    indentation it is in."""

    node: cst.BaseStatement
    where: Anchor
    first: int
    indent: tuple[str, ...]
    parts: range = range(0)


def _units(module: cst.Module, where: Sequence[Anchor]) -> list[_Unit] | None:
    """The module's units, CPython's statements matched to LibCST's (a line of
    several simple statements is one of LibCST's); None where they do not match."""
    units: list[_Unit] = []

    def add(
        statements: Sequence[cst.BaseStatement],
        anchors: Sequence[Anchor],
        indent: tuple[str, ...],
    ) -> bool:
        at = 0
        for statement in statements:
            if at >= len(anchors):
                return False
            anchor = anchors[at]
            lead = len(getattr(statement, "leading_lines", ()))
            decorators = getattr(statement, "decorators", ())
            if decorators:
                lead += len(decorators[0].leading_lines)
            unit = _Unit(statement, anchor, anchor.first - lead, indent)
            units.append(unit)
            if (
                anchor.members
                and isinstance(statement, (cst.ClassDef, cst.FunctionDef))
                and isinstance(statement.body, cst.IndentedBlock)
            ):
                block = statement.body
                inner = module.default_indent if block.indent is None else block.indent
                start = len(units)
                if not add(block.body, anchor.members, (*indent, inner)):
                    return False
                units[start - 1] = replace(unit, parts=range(start, len(units)))
            if isinstance(statement, cst.SimpleStatementLine):
                at += len(statement.body)
            else:
                at += 1
        return at == len(anchors)

    return units if add(module.body, where, ()) else None


class Positions(Mapping[cst.CSTNode, CodeRange]):
    """``positions_of``'s answer, computed a unit at a time (``_Unit``): the first
    time a node of a unit is asked, that unit's. A unit's text starts a line, so
    its codegen started on its first line, in its indentation, gives the positions
    the whole module's gives; where the range it computes for the statement does
    not start where CPython's parse says, the guess at its first line was wrong,
    and it is computed again from the line the difference says. A class's or a
    function's own nodes (its name, its bases or parameters) are computed with the
    whole of it; a node of no unit (the module, or a node of another tree), with
    the whole module."""

    def __init__(self, module: cst.Module, units: Sequence[_Unit]) -> None:
        self._module = module
        self._units = units
        self._computed: dict[cst.CSTNode, CodeRange] = {}
        self._home: dict[int, int] | None = None  # node's id -> its unit
        self._done: set[int] = set()  # the units computed
        self._whole = False  # every unit is computed

    @property
    def statements(self) -> int:
        """How many units are computed (for tests and benches)."""
        return len(self._units) if self._whole else len(self._done)

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        found = self._computed.get(node)
        if found is None and not self._whole:
            self._compute(node)
            found = self._computed.get(node)
        if found is None:
            raise KeyError(node)
        return found

    def __iter__(self) -> Iterator[cst.CSTNode]:
        self._compute_all()
        return iter(self._computed)

    def __len__(self) -> int:
        self._compute_all()
        return len(self._computed)

    def nodes(self) -> list[int]:
        """The ids of the nodes of the module's statements (those a walk enters)."""
        if self._home is None:
            self._home = _homes(self._units)
        return list(self._home)

    def _compute(self, node: cst.CSTNode) -> None:
        if self._home is None:
            self._home = _homes(self._units)
        index = self._home.get(id(node))
        if index is None:
            self._compute_all()
        elif index in self._done:
            return  # a node without a position
        elif node is self._units[index].node and self._units[index].parts:
            self._computed[node] = self._spanned(self._units[index])
        else:
            self._unit(index)

    def _spanned(self, unit: _Unit) -> CodeRange:
        """A class's or a function's range, without its codegen: LibCST's starts at
        its keyword, where CPython's parse puts it (after the indentation: the
        column counts characters of whitespace), and ends where its block's last
        statement ends."""
        node = unit.node
        assert isinstance(node, (cst.ClassDef, cst.FunctionDef))
        assert isinstance(node.body, cst.IndentedBlock)
        end = self[node.body.body[-1]].end
        return CodeRange(CodePosition(unit.where.line, unit.where.column), end)

    def _unit(self, index: int) -> None:
        unit = self._units[index]
        computed = _computed(self._module, unit.node, unit.first, unit.indent)
        start = computed[unit.node].start
        if start.line != unit.where.line and start.column == unit.where.column:
            again = unit.first + unit.where.line - start.line
            computed = _computed(self._module, unit.node, again, unit.indent)
            start = computed[unit.node].start
        if start.line != unit.where.line or start.column != unit.where.column:
            self._compute_all()
            return
        self._computed.update(computed)
        self._done.add(index)
        self._done.update(unit.parts)

    def _compute_all(self) -> None:
        if not self._whole:
            self._computed = _computed(self._module, self._module, 1, ())
            self._whole = True


def _homes(units: Sequence[_Unit]) -> dict[int, int]:
    """The unit each node is in, by the node's id: a class's or a function's
    statements are units of their own, the rest of it is its own unit's."""
    found: dict[int, int] = {}
    for index, unit in enumerate(units):
        parts = {id(units[part].node) for part in unit.parts}
        stack: list[cst.CSTNode] = [unit.node]
        while stack:
            node = stack.pop()
            if id(node) in parts:
                continue
            found[id(node)] = index
            stack.extend(children(node))
    return found


__all__ = ["UNASKED", "Anchor", "Positions", "anchors", "anchors_of", "positions_of"]
