"""``with graph:`` where ``graph = torch.accelerator.Graph()``: PyTorch's
device-generic graph (2.13) is itself the context manager. Entering it synchronizes
and starts a capture on the current stream (``Graph.__enter__`` calls
``capture_begin()``), leaving it ends the capture; ``graph.replay()`` replays it.
The graph is the object entered, so the region's graph is the ``with`` item
(``graph``, ``self.graph``); ``with torch.accelerator.Graph():`` captures into a
graph nothing names (``as`` binds None: ``__enter__`` returns nothing)."""

from __future__ import annotations

from graphlint.diagnostics import Confidence, RegionKind
from graphlint.facts.kinds.base import Opened, Recogniser

LABEL = "torch.accelerator.Graph"  # the class, as the values name its objects


class AcceleratorGraph(Recogniser):
    def entered(self, cls: str) -> Opened | None:
        if cls == LABEL:
            return RegionKind.MANUAL, LABEL, Confidence.HIGH, None
        return None


__all__ = ["LABEL", "AcceleratorGraph"]
