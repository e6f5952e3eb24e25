"""Which files may hold a capture region, decided before LibCST sees them.

LibCST's parse and analysis cost a hundred times CPython's parse, so pass one hands a
file to it only when the file may capture. Each kind of region says what its regions
need (its ``Screen``, in its module under ``graphlint.facts.kinds``); two tests ask
all kinds together, the cheap one first:

1. the text names something a region needs (``torch.cuda.graph``,
   ``torch.accelerator.Graph``, ``capture_begin``, ``make_graphed_callables``, a
   CUDA-graph compile mode, a marker): most files of a tree stop at a few substring
   searches, one for each of the kinds' letters;
2. the code does, in CPython's tree, which the pre-screen has already made: names
   and calls, not comments, docstrings or longer identifiers
   (``make_graphed_callables_kwargs``, "# the graphs returned by
   make_graphed_callables"), which are most of the text matches in real trees.

Both are over-approximations of what ``graphlint.facts.regions`` recognises: a file
they reject has no region, so its analysis would find nothing.
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass
from pathlib import Path

from graphlint.columns import placed
from graphlint.comments import scan, unknown_suppressions
from graphlint.diagnostics import Diagnostic, FileResult
from graphlint.facts import kinds
from graphlint.facts.kinds.base import Looker, Screen
from graphlint.facts.kinds.compiled import writes_compile_setting
from graphlint.read import read_text
from graphlint.settings import Settings


class Screens:
    """Every kind's screen, for a run's markers, asked together."""

    def __init__(self, markers: frozenset[str]) -> None:
        self.screens: tuple[Screen, ...] = tuple(
            kind.screen(markers) for kind in kinds.RECOGNISERS
        )
        # each letter once, whichever kinds need it: a text without any of them,
        # most of a tree, is settled by that many substring searches
        self.letters = tuple(dict.fromkeys(x for s in self.screens for x in s.letters))

    def text(self, source: str) -> bool:
        """Whether ``source``'s text names something a region of some kind needs."""
        for letter in self.letters:
            if letter in source:
                break
        else:
            return False  # most files of a tree
        # whether each letter is in the text, searched once when a kind asks
        found = dict.fromkeys(self.letters[: self.letters.index(letter)], False)
        found[letter] = True
        for screen in self.screens:
            for x in screen.letters:
                here = found.get(x)
                if here is None:
                    here = found[x] = x in source
                if here:
                    if screen.text(source):
                        return True
                    break
        return False

    def tree(self, source: str, tree: ast.Module) -> bool:
        """Whether CPython's tree of ``source``, a text that passed, names or calls
        something a region needs."""
        if any(screen.shown(source) for screen in self.screens):
            return True
        names = frozenset().union(*(screen.names(source) for screen in self.screens))
        # the tests each type of node is given: names first, then the kinds' own
        looking: dict[type[ast.AST], list[Looker]] = {}
        if names:
            named = functools.partial(_named, names=names)
            for node_type in _NAMED:
                looking[node_type] = [named]
        for screen in self.screens:
            looker = screen.looker(source)
            if looker is not None:
                for node_type in screen.looks_at:
                    looking.setdefault(node_type, []).append(looker)
        for node in ast.walk(tree):  # breadth first: a call before its arguments
            for look in looking.get(type(node), ()):
                if look(node):
                    return True
        return False


_NAMED: tuple[type[ast.AST], ...] = (ast.Name, ast.Attribute, ast.alias)


def _named(node: ast.AST, names: frozenset[str]) -> bool:
    """A name, an attribute or a name imported, among ``names``."""
    if isinstance(node, ast.Name):
        return node.id in names
    if isinstance(node, ast.Attribute):
        return node.attr in names
    if isinstance(node, ast.alias):
        return node.name.rpartition(".")[2] in names or node.asname in names
    return False


@functools.lru_cache(maxsize=8)
def screens(markers: frozenset[str] = frozenset()) -> Screens:
    """The kinds' screens for a run's markers (a process sees one or two sets)."""
    return Screens(markers)


def _definition() -> re.Pattern[str]:
    """The kinds' patterns as one: ``text_candidate``'s definition (tests compare)."""
    patterns = (s.pattern for s in screens().screens if s.pattern)
    return re.compile("|".join(f"(?:{p})" for p in patterns))


def text_candidate(source: str) -> bool:
    """Whether ``source``'s text names something a capture region needs, markers
    aside (``_definition()`` matches it)."""
    return screens().text(source)


def may_capture(source: str, tree: ast.Module | None, markers: frozenset[str]) -> bool:
    """Whether the file may hold a capture region (``tree``: CPython's, or None where
    only LibCST parses the file: then the text decides)."""
    found = screens(markers)
    if not found.text(source):
        return False
    return tree is None or found.tree(source, tree)


@dataclass(frozen=True)
class Screened:
    """What pass one sees of a file before parsing it (``screen``)."""

    result: FileResult | None  # settled: nothing to analyse; None: a worker's job
    compiles: bool = False  # its text writes a CUDA-graph compile setting
    parsable: bool = False  # settled, but has code a worker could parse


def screen(path: Path, settings: Settings) -> Screened:
    """Pass one's first look at a file, in the collecting process: its GL0xx outcome
    when it cannot be read or decoded, a clean result when its text names nothing a
    capture region needs (nothing to analyse: it is not parsed), or none: a worker
    parses and analyses it."""
    display = str(path)
    text = read_text(path, display, settings.max_file_size)
    if isinstance(text, Diagnostic):
        enabled = text.code in settings.enabled
        return Screened(FileResult(display, (text,) if enabled else ()))
    if screens(settings.markers).text(text):
        return Screened(None, compiles=writes_compile_setting(text))
    comments = scan(text)
    problems = unknown_suppressions(comments, display, settings.enabled)
    # the lines with characters outside the BMP count here for its own diagnostics
    # only: where a region reaches the file, the project pass checks it again
    found, wide = placed(problems, text) if problems else ((), ())
    result = FileResult(display, found, suppressions=tuple(comments.entries), wide=wide)
    return Screened(result, parsable=bool(text))


__all__ = [
    "Screened",
    "Screens",
    "may_capture",
    "screen",
    "screens",
    "text_candidate",
]
