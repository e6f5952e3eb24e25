"""What the region finder asks each kind of capture region (``Recogniser``).

The finder (``facts.regions.RegionFinder``) keeps what every kind shares: the
replay of the scope walk's sites, the loops over a ``with``'s items and a
definition's decorators, the functions a callable expression stands for, the
guards. At each place a region may open it asks the kinds, in their order
(``facts.kinds.RECOGNISERS``), and the first that recognises one opens it; a
kind answers only the questions its syntax can raise, and is asked no other.

Before any of that, a kind's ``Screen`` says which files may hold one of its
regions, from their text and CPython's tree (``graphlint.candidates``): the
process that screens a project's files imports the kinds' modules but never
LibCST, which each of them names through ``graphlint.lazy``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, ClassVar, TypeAlias

from graphlint.diagnostics import Confidence, RegionKind, RegionRef

if TYPE_CHECKING:  # a kind's module imports no LibCST (``graphlint.lazy``)
    import libcst as cst

    from graphlint.facts.regions import RegionFinder

# a context that opens a capture: its kind, label, confidence and the graph
Opened: TypeAlias = "tuple[RegionKind, str, Confidence, cst.BaseExpression | None]"
# a decorator that makes the function a region: its kind, label and confidence
Decorated: TypeAlias = tuple[RegionKind, str, Confidence]
# a call of a kind's: what it is given, and the region that makes of it (None for
# either: no region, and no other kind is asked of the call)
Made: TypeAlias = "tuple[cst.BaseExpression | None, RegionRef | None]"


# a test of the nodes of CPython's tree of one file, breadth first: whether the
# node shows a region of the kind
Looker: TypeAlias = Callable[[ast.AST], bool]


class Screen:
    """Which files may hold a region of one kind, asked before LibCST parses them:
    an over-approximation of what the kind's ``Recogniser`` opens a region for, so
    that a file every kind's screen rejects has no region. Made once for a run's
    markers (``graphlint.candidates`` asks all kinds' screens together).

    - ``letters``: the text of a file with a region of the kind holds one of
      these; a text without any is settled by these substring searches alone;
    - ``pattern``: a regular expression that defines ``text`` for a run that
      configures no markers (tests compare); ``text`` finds the same files ten
      times faster, by hand: most alternatives start with no literal, so a
      pattern is tried at every position of every file;
    - ``text``: where a letter is, whether the text may hold a region;
    - ``shown``: whether the text alone shows one, whatever the code is;
    - ``names``: names, attributes and imported names that show one in CPython's
      tree of the text;
    - ``looker``: a test of the tree's other nodes, for one file, or None; it is
      given the nodes of the types in ``looks_at``.
    """

    letters: tuple[str, ...] = ()
    pattern: ClassVar[str] = ""
    looks_at: ClassVar[tuple[type[ast.AST], ...]] = ()

    def __init__(self, markers: frozenset[str]) -> None:
        self.markers = markers  # the run's markers, qualified

    def text(self, source: str) -> bool:
        """Whether ``source``, which holds one of ``letters``, may hold a region:
        by default, a letter is enough."""
        return True

    def shown(self, source: str) -> bool:
        return False

    def names(self, source: str) -> frozenset[str]:
        return frozenset()

    def looker(self, source: str) -> Looker | None:
        return None


class Recogniser:
    """One kind of capture region, as LibCST's tree of one file shows it. A kind
    overrides the questions its syntax answers; the finder asks only those; its
    ``screen`` says which files may hold one."""

    screen: ClassVar[type[Screen]] = Screen

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


__all__ = [
    "QUESTIONS",
    "Decorated",
    "Looker",
    "Made",
    "Opened",
    "Recogniser",
    "Screen",
    "asks",
]
