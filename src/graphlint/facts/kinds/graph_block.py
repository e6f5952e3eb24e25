"""``with torch.cuda.graph(g):``: the block runs under capture, into ``g``."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from graphlint import lazy
from graphlint.diagnostics import Confidence, RegionKind
from graphlint.facts.kinds.base import Looker, Opened, Recogniser, Screen

if TYPE_CHECKING:
    import libcst as cst

    from graphlint.facts import syntax
else:
    syntax = lazy.module("graphlint.facts.syntax", __name__)

CAPTURE_CONTEXTS = frozenset({"torch.cuda.graph"})

_GRAPH = re.compile(r"graph\b")  # a literal first: found by a fast scan
_IMPORT = re.compile(r"\bimport\b")
_IMPORT_PAREN = re.compile(r"import[ \t]*\(")
_GRAPH_WORD = re.compile(r"\bgraph\b")


class GraphBlockScreen(Screen):
    """``torch.cuda.graph`` in the text, or imported under another name: the word
    ``graph`` after ``cuda.``, before ``(`` after a dot, on a line after
    ``import``, or among the names imported in parentheses from a ``cuda``
    module. ``fx``'s ``.graph`` attributes are not enough."""

    letters = ("graph",)
    pattern = (
        r"cuda\.graph\b|\bimport\b[^\n]*\bgraph\b"
        r"|\bcuda[\w.]*[ \t]+import[ \t]*\((?:[^)#]|#[^\n]*\n)*?\bgraph\b"
        r"|\.graph\("
    )
    looks_at = (ast.Attribute, ast.Call, ast.alias)

    def text(self, source: str) -> bool:
        return _names_graph(source) or ("cuda" in source and _imports_from_cuda(source))

    def looker(self, source: str) -> Looker | None:
        return _shows_graph


def _shows_graph(node: ast.AST) -> bool:
    """``cuda.graph``, ``x.graph(g)`` or ``graph(g)`` (``torch.cuda.graph``
    aliased), ``graph`` imported."""
    if isinstance(node, ast.Attribute):
        return node.attr == "graph" and _is_cuda(node.value)
    if isinstance(node, ast.Call):
        func = node.func
        return (isinstance(func, ast.Attribute) and func.attr == "graph") or (
            isinstance(func, ast.Name) and func.id == "graph"
        )
    if isinstance(node, ast.alias):
        return node.name.rpartition(".")[2] == "graph"
    return False


def _is_cuda(expr: ast.expr) -> bool:
    """``cuda`` or ``<anything>.cuda``: ``torch.cuda.graph`` referred to."""
    return (isinstance(expr, ast.Attribute) and expr.attr == "cuda") or (
        isinstance(expr, ast.Name) and expr.id == "cuda"
    )


def _names_graph(source: str) -> bool:
    """Whether a word ``graph`` is ``cuda.graph``, ``x.graph(``, or imported on its
    line (after an ``import`` there). Linear in the text, whatever it holds: each
    line is searched for ``import`` once, however many ``graph`` it holds."""
    end = -1  # the end of the line last searched, and where its import is
    first_import = -1
    for match in _GRAPH.finditer(source):
        at = match.start()
        before = source[at - 1 : at]
        if before.isalnum() or before == "_":
            continue  # not the start of a word
        if source[max(0, at - 5) : at] == "cuda." or (
            before == "." and source[at + 5 : at + 6] == "("
        ):
            return True
        if at > end:  # a new line
            start = source.rfind("\n", 0, at) + 1
            end = source.find("\n", at)
            end = len(source) if end < 0 else end
            found = _IMPORT.search(source, start, end)
            first_import = found.start() if found is not None else -1
        if 0 <= first_import < at:
            return True
    return False


def _imports_from_cuda(source: str) -> bool:
    """``\\bcuda[\\w.]*[ \\t]+import[ \\t]*\\(`` and the name ``graph`` among those
    imported in the parentheses: ``torch.cuda.graph`` imported over several lines
    (a module such as ``cuda_graph_runner``, imported from in parentheses by every
    file that uses it, is not enough). By hand: each ``import (`` looks back at the
    dotted name before it, which is linear in the text (the pattern, without the
    word boundary that keeps it from a literal-first scan, would try each ``cuda``
    of a long name), and the parentheses are searched once: an ``import (`` inside
    ones already searched (in a comment there) is not searched again."""
    searched = 0  # where the parentheses searched last end
    for match in _IMPORT_PAREN.finditer(source):
        if match.end() < searched:
            continue
        space = match.start()
        while space > 0 and source[space - 1] in " \t":
            space -= 1
        if space == match.start():
            continue  # ``import`` must follow the name and a space
        start = space
        while start > 0 and (source[start - 1].isalnum() or source[start - 1] in "_."):
            start -= 1
        name = source[start:space]
        at = name.find("cuda")
        while at >= 0:  # a "cuda" in it that starts a word
            if at == 0 or not (name[at - 1].isalnum() or name[at - 1] == "_"):
                found, searched = _imports_graph(source, match.end())
                if found:
                    return True
                break
            at = name.find("cuda", at + 1)
    return False


def _imports_graph(source: str, start: int) -> tuple[bool, int]:
    """Whether the word ``graph`` is written in the parentheses that open before
    ``start``, outside comments (``(?:[^)#]|#[^\\n]*\\n)*?\\bgraph\\b`` matched
    at ``start``), and where the search ended: at their ``)``, or the text's end.
    By hand, each character read once: the pattern reads them one at a time."""
    end = len(source)
    close = hash_ = -1  # the next ``)`` and ``#`` at or after ``at``, once found
    at = start
    while True:
        if close < at:
            close = source.find(")", at)
            close = end if close < 0 else close
        if hash_ < at:
            hash_ = source.find("#", at)
            hash_ = end if hash_ < 0 else hash_
        stop = min(close, hash_)
        if _GRAPH_WORD.search(source, at, stop):
            return True, stop
        if stop == close:
            return False, stop
        newline = source.find("\n", stop)  # a comment, to the end of its line
        if newline < 0:
            return False, end
        at = newline + 1


class GraphBlock(Recogniser):
    screen = GraphBlockScreen

    def context(self, call: cst.Call, qualified: str | None) -> Opened | None:
        if qualified in CAPTURE_CONTEXTS:
            graph = syntax.first_arg(call, "cuda_graph")
            return RegionKind.MANUAL, "torch.cuda.graph", Confidence.HIGH, graph
        return None


__all__ = ["CAPTURE_CONTEXTS", "GraphBlock", "GraphBlockScreen"]
