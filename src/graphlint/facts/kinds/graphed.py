"""``make_graphed_callables(fn, ...)``: the callables (or modules' ``forward``)
it is given are captured, each into graphs of its own."""

from __future__ import annotations

from typing import TYPE_CHECKING

from graphlint import lazy
from graphlint.diagnostics import RegionKind, RegionRef
from graphlint.facts.kinds.base import Made, Recogniser, Screen

if TYPE_CHECKING:
    import libcst as cst

    from graphlint.facts import syntax
else:
    syntax = lazy.module("graphlint.facts.syntax", __name__)

_NAME = "make_graphed_callables"

GRAPHED_CALLABLES = frozenset(
    {
        "torch.cuda.make_graphed_callables",
        "transformer_engine.pytorch.make_graphed_callables",
        "transformer_engine.pytorch.graph.make_graphed_callables",
    }
)
# PyTorch's own; another library's (Transformer Engine's) is labelled with its name:
# it runs the backward pass its own way (``torch.autograd.backward``, not ``grad``)
TORCH_GRAPHED = "torch.cuda.make_graphed_callables"


def graphed_label(qualified: str | None) -> str:
    """The label of a region ``make_graphed_callables`` makes: PyTorch's, or another
    library's, named (``make_graphed_callables of transformer_engine``)."""
    label = RegionKind.GRAPHED.value
    if qualified is not None and qualified != TORCH_GRAPHED:
        label += f" of {qualified.partition('.')[0]}"
    return label


class GraphedScreen(Screen):
    """The function's name, in the text and in the code."""

    letters = ("graph",)  # in its name: the screen searches it for other kinds
    pattern = _NAME

    def text(self, source: str) -> bool:
        return _NAME in source

    def names(self, source: str) -> frozenset[str]:
        return frozenset({_NAME})


class Graphed(Recogniser):
    screen = GraphedScreen

    def call(self, call: cst.Call, qualified: str | None) -> Made | None:
        if qualified not in GRAPHED_CALLABLES:
            return None
        # its set-up matters even when its targets cannot be resolved
        self.finder.graphed_calls.append(call)
        target = syntax.first_arg(call, "callables", "modules")
        line = self.finder.line(call)
        return target, RegionRef(RegionKind.GRAPHED, line, graphed_label(qualified))


__all__ = [
    "GRAPHED_CALLABLES",
    "TORCH_GRAPHED",
    "Graphed",
    "GraphedScreen",
    "graphed_label",
]
