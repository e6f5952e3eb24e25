"""What the region finder asks each kind of capture region (``Recogniser``).

The finder (``facts.regions.RegionFinder``) keeps what every kind shares: the
replay of the scope walk's sites, the loops over a ``with``'s items and a
definition's decorators, the functions a callable expression stands for, the
guards. At each place a region may open it asks the kinds, in their order
(``facts.kinds.RECOGNISERS``), and the first that recognises one opens it; a
kind answers only the questions its syntax can raise, and is asked no other.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import libcst as cst

from graphlint.diagnostics import Confidence, RegionKind, RegionRef

if TYPE_CHECKING:
    from graphlint.facts.regions import RegionFinder

# a context that opens a capture: its kind, label, confidence and the graph
Opened = tuple[RegionKind, str, Confidence, cst.BaseExpression | None]
# a decorator that makes the function a region: its kind, label and confidence
Decorated = tuple[RegionKind, str, Confidence]
# a call of a kind's: what it is given, and the region that makes of it (None for
# either: no region, and no other kind is asked of the call)
Made = tuple[cst.BaseExpression | None, RegionRef | None]


class Recogniser:
    """One kind of capture region, as LibCST's tree of one file shows it. A kind
    overrides the questions its syntax answers; the finder asks only those."""

    def __init__(self, finder: RegionFinder) -> None:
        self.finder = finder
        self.values = finder.values
        self.scopes = finder.scopes

    def module(self, module: cst.Module) -> None:
        """The file is about to be replayed (module-level settings)."""

    def entering(
        self, node: cst.CSTNode, expressions: Sequence[cst.BaseExpression]
    ) -> None:
        """A ``with`` (its items), a function or a class (its decorators) starts."""

    def leaving(self, node: cst.CSTNode) -> None:
        """That ``with``, function or class ends."""

    def context(self, call: cst.Call, qualified: str | None) -> Opened | None:
        """A context manager's call (a ``with`` item, a context entered on an exit
        stack) that captures what runs under it."""
        return None

    def entered(self, cls: str) -> Opened | None:
        """An object of class ``cls`` (qualified) that a ``with`` or an exit stack
        enters, and that captures what runs under it: the object is the graph, which
        the finder names by the expression entered."""
        return None

    def decorator(
        self, expression: cst.BaseExpression, qualified: str | None
    ) -> Decorated | None:
        """A function's decorator that makes the function a region."""
        return None

    def decorated_class(
        self, decorator: cst.Decorator, qualified: str | None
    ) -> RegionRef | None:
        """A class's decorator that makes its ``forward`` a region."""
        return None

    def call(self, call: cst.Call, qualified: str | None) -> Made | None:
        """A call that makes the callable it is given a region; None: not one of
        this kind's calls."""
        return None

    def statements(self, module: cst.Module) -> None:
        """After the replay: regions that statements open and close, in order."""


QUESTIONS = (
    "module",
    "entering",
    "leaving",
    "context",
    "entered",
    "decorator",
    "decorated_class",
    "call",
    "statements",
)


def asks(kind: type[Recogniser], question: str) -> bool:
    """Whether ``kind`` answers ``question`` (overrides it)."""
    return getattr(kind, question) is not getattr(Recogniser, question)


__all__ = ["QUESTIONS", "Decorated", "Made", "Opened", "Recogniser", "asks"]
