"""``with graph:`` where ``graph = torch.accelerator.Graph()``: PyTorch's
device-generic graph (2.13) is itself the context manager. Entering it synchronizes
and starts a capture on the current stream (``Graph.__enter__`` calls
``capture_begin()``), leaving it ends the capture; ``graph.replay()`` replays it.
The graph is the object entered, so the region's graph is the ``with`` item
(``graph``, ``self.graph``); ``with torch.accelerator.Graph():`` captures into a
graph nothing names (``as`` binds None: ``__enter__`` returns nothing)."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Confidence, RegionKind
from graphlint.facts.kinds.base import Opened, Recogniser

ACCELERATOR_GRAPHS = frozenset(
    {"torch.accelerator.Graph", "torch.accelerator.graphs.Graph"}
)
LABEL = "torch.accelerator.Graph"


class AcceleratorGraph(Recogniser):
    def context(self, call: cst.Call, qualified: str | None) -> Opened | None:
        if qualified in ACCELERATOR_GRAPHS:  # the object the call makes is the graph
            return RegionKind.MANUAL, LABEL, Confidence.HIGH, call
        return None


__all__ = ["ACCELERATOR_GRAPHS", "LABEL", "AcceleratorGraph"]
