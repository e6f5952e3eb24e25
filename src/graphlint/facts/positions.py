"""Where each node of a module is: LibCST's ``PositionProvider``, without its wrapper.

``MetadataWrapper.resolve(PositionProvider)`` runs a full batched traversal for the
batchable providers it was asked for, even when there are none, before the codegen
that actually computes positions: half of the cost, for nothing.
"""

from __future__ import annotations

from collections.abc import Mapping

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider


def positions_of(module: cst.Module) -> Mapping[cst.CSTNode, CodeRange]:
    """Each node's range, as ``PositionProvider`` gives it (syntactic: no leading or
    trailing whitespace)."""
    provider = PositionProvider()
    generate = getattr(provider, "_gen_impl", None)
    computed = getattr(provider, "_computed", None)
    if generate is None or not isinstance(computed, dict):  # another LibCST inside
        return MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    generate(module)
    return computed
