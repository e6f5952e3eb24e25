"""The kinds of capture region, one module each: which files may hold one (a
``Screen``, asked before any parse), and how each shows in LibCST's tree of a file
(a ``Recogniser``, which the region finder asks). The modules import no LibCST
until a recogniser runs (``graphlint.lazy``).

- ``graph_block``: ``with torch.cuda.graph(g):``;
- ``accelerator_graph``: ``with g:`` for ``g = torch.accelerator.Graph()``;
- ``marked``: a marker on a ``with``, a function or a class;
- ``graphed``: ``make_graphed_callables(fn, ...)``;
- ``compiled``: ``torch.compile`` in a CUDA-graph mode, and its wrappers;
- ``begin_end``: ``g.capture_begin()`` ... ``g.capture_end()``, a capture context
  entered on an exit stack.

The order is the order of asking: where two kinds could both see a region in
the same syntax, the first opens it (a ``with`` item is a graph block before a
marker; a decorator a marker before a compile).
"""

from __future__ import annotations

from graphlint.facts.kinds.accelerator_graph import AcceleratorGraph
from graphlint.facts.kinds.base import Recogniser, Screen
from graphlint.facts.kinds.begin_end import BeginEnd
from graphlint.facts.kinds.compiled import Compiled
from graphlint.facts.kinds.graph_block import GraphBlock
from graphlint.facts.kinds.graphed import Graphed
from graphlint.facts.kinds.marked import Marked

RECOGNISERS: tuple[type[Recogniser], ...] = (
    GraphBlock,
    AcceleratorGraph,
    Marked,
    Graphed,
    Compiled,
    BeginEnd,
)

__all__ = ["RECOGNISERS", "Recogniser", "Screen"]
