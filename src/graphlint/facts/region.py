"""A capture region as one file's analysis sees it (``Region``): the region as
everything past the file names it (``RegionRef``) with its syntax in the file."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from graphlint.diagnostics import Confidence, Hop, RegionKind, RegionRef
from graphlint.facts import guards

FULLGRAPH = "fullgraph=True"  # in a compile region's label


@dataclass(frozen=True, slots=True)
class Region:
    """A capture region as one file's analysis sees it: the region (``ref``, as
    everything past the file names it: how it captures, where, how sure graphlint
    is, and for code that a region elsewhere reaches, that region's file, the calls
    from it and what they settle) with its syntax in this file.

    ``root`` is the statement that captures (the ``with``, the ``capture_begin()``
    line, the captured function); ``graph`` the source text of the graph object a
    manual capture records into, when it is written out.
    """

    ref: RegionRef
    end_line: int = 0
    root: cst.CSTNode | None = field(default=None, compare=False)
    graph: str | None = None
    # the expression of that graph object, for its host location
    graph_expr: cst.BaseExpression | None = field(default=None, compare=False)
    # a ``capture_begin()`` ... ``capture_end()`` span, not a ``with`` block
    begin_end: bool = False
    open: bool = False  # a ``capture_begin()`` whose ``capture_end()`` is elsewhere

    @property
    def kind(self) -> RegionKind:
        return self.ref.kind

    @property
    def line(self) -> int:
        return self.ref.line

    @property
    def label(self) -> str:
        return self.ref.label

    @property
    def confidence(self) -> Confidence:
        return self.ref.confidence

    @property
    def origin(self) -> str | None:
        """The region's file, for code reached from another file."""
        return self.ref.path

    @property
    def via(self) -> tuple[Hop, ...]:
        """The calls from the region to this code."""
        return self.ref.via

    @property
    def settled(self) -> tuple[guards.Settled, ...]:
        """For that code: its parameters that the calls under capture settle."""
        return self.ref.settled

    @property
    def tensors(self) -> tuple[str, ...]:
        """And those that every call under capture passes a device tensor."""
        return self.ref.tensors

    @property
    def fullgraph(self) -> bool:
        """A ``torch.compile(..., fullgraph=True)``: a graph break fails compilation."""
        return self.kind is RegionKind.COMPILE and FULLGRAPH in self.label

    def spans(self, line: int) -> bool:
        """Whether ``line`` lies within the region's source lines."""
        return self.line <= line <= self.end_line

    def site(self, path: str) -> RegionRef:
        """The region as found in the file ``path``, for what crosses a process."""
        return RegionRef(self.kind, self.line, self.label, path)


__all__ = ["FULLGRAPH", "Region"]
