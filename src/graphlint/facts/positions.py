"""Where each node of a module is: LibCST's ``PositionProvider``, made cheaper.

``MetadataWrapper.resolve(PositionProvider)`` runs a full batched traversal for the
batchable providers it was asked for, even when there are none, before the codegen
that actually computes positions: half of the cost, for nothing. The codegen itself
records a range for every node, two thirds of them whitespace and punctuation that
nothing asks about, and splits every token on a pattern to count its newlines.
``positions_of`` runs the same codegen, recording ranges only for the nodes that can
be asked about, and counts newlines only in tokens that have one.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

import libcst as cst
from libcst._nodes import op, whitespace
from libcst.metadata import (
    CodePosition,
    CodeRange,
    MetadataWrapper,
    PositionProvider,
)
from libcst.metadata.position_provider import PositionProvidingCodegenState


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


def positions_of(module: cst.Module) -> Mapping[cst.CSTNode, CodeRange]:
    """The range of each node that is not whitespace, a comment or an operator, as
    ``PositionProvider`` gives it (syntactic: no leading or trailing whitespace)."""
    provider = PositionProvider()
    computed = getattr(provider, "_computed", None)
    if not isinstance(computed, dict):  # another LibCST inside: its own way
        return MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    state = _State(
        default_indent=module.default_indent,
        default_newline=module.default_newline,
        provider=provider,
    )
    module._codegen(state)
    return computed


__all__ = ["UNASKED", "positions_of"]
