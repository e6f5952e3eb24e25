"""``with torch.cuda.graph(g):``: the block runs under capture, into ``g``."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Confidence, RegionKind
from graphlint.facts.kinds.base import Opened, Recogniser
from graphlint.facts.syntax import first_arg

CAPTURE_CONTEXTS = frozenset({"torch.cuda.graph"})


class GraphBlock(Recogniser):
    def context(self, call: cst.Call, qualified: str | None) -> Opened | None:
        if qualified in CAPTURE_CONTEXTS:
            graph = first_arg(call, "cuda_graph")
            return RegionKind.MANUAL, "torch.cuda.graph", Confidence.HIGH, graph
        return None


__all__ = ["CAPTURE_CONTEXTS", "GraphBlock"]
