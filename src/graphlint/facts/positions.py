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

from collections.abc import Mapping

import libcst as cst
from libcst._nodes import op, whitespace
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider
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


class _State(PositionProvidingCodegenState):
    """``PositionProvider``'s codegen state, skipping the nodes of ``UNASKED``."""

    def before_codegen(self, node: cst.CSTNode) -> None:
        if type(node) not in UNASKED:
            super().before_codegen(node)

    def after_codegen(self, node: cst.CSTNode) -> None:
        if type(node) not in UNASKED:
            super().after_codegen(node)

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
