"""``with graph:`` where ``graph = torch.accelerator.Graph()``: PyTorch's
device-generic graph (2.13) is itself the context manager. Entering it synchronizes
and starts a capture on the current stream (``Graph.__enter__`` calls
``capture_begin()``), leaving it ends the capture; ``graph.replay()`` replays it.
The graph is the object entered, so the region's graph is the ``with`` item
(``graph``, ``self.graph``); ``with torch.accelerator.Graph():`` captures into a
graph nothing names (``as`` binds None: ``__enter__`` returns nothing)."""

from __future__ import annotations

import re

from graphlint.diagnostics import Confidence, RegionKind
from graphlint.facts.kinds.base import Opened, Recogniser, Screen

LABEL = "torch.accelerator.Graph"  # the class, as the values name its objects

_ACCELERATOR = "accelerator"
_GRAPH_CLASS = re.compile(r"\bGraph\b")
# ``from .graphs import Graph``, ``from . import graphs``: in ``torch/accelerator/``
_RELATIVE_GRAPHS = re.compile(r"from\s+\.+\s*(?:graphs\b|import\b[^\n]*\bgraphs\b)")


class AcceleratorGraphScreen(Screen):
    """Both words of ``torch.accelerator.Graph``, anywhere in the text: however
    the class or its module is imported, the file names both (or, in PyTorch's
    own package, imports its ``graphs`` module relatively, also in the import of
    ``Graph`` itself: ``from . import Graph, graphs``); then the class's name
    in the code."""

    letters = ("Graph",)
    pattern = (
        r"\A(?s:(?=.*\bGraph\b)"
        r"(?=.*(?:accelerator|from\s+\.+\s*(?:graphs\b|import\b[^\n]*\bgraphs\b))))"
    )

    def text(self, source: str) -> bool:
        return (
            _ACCELERATOR in source
            or ("graphs" in source and _RELATIVE_GRAPHS.search(source) is not None)
        ) and _GRAPH_CLASS.search(source) is not None

    def names(self, source: str) -> frozenset[str]:
        return frozenset({"Graph"}) if self.text(source) else frozenset()


class AcceleratorGraph(Recogniser):
    screen = AcceleratorGraphScreen

    def entered(self, cls: str) -> Opened | None:
        if cls == LABEL:
            return RegionKind.MANUAL, LABEL, Confidence.HIGH, None
        return None


__all__ = ["LABEL", "AcceleratorGraph", "AcceleratorGraphScreen"]
