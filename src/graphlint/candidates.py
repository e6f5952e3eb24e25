"""Which files may hold a capture region, decided before LibCST sees them.

LibCST's parse and analysis cost a hundred times CPython's parse, so pass one hands a
file to it only when the file may capture. Two tests, the cheap one first:

1. the text names something every region needs (``torch.cuda.graph``,
   ``torch.accelerator.Graph``, ``capture_begin``, ``make_graphed_callables``, a
   CUDA-graph compile mode, a marker): most files of a tree stop at a substring
   search;
2. the code does, in CPython's tree, which the pre-screen has already made: names
   and calls, not comments, docstrings or longer identifiers
   (``make_graphed_callables_kwargs``, "# the graphs returned by
   make_graphed_callables"), which are most of the text matches in real trees.

Both are over-approximations of what ``graphlint.facts.regions`` recognises: a file
they reject has no region, so its analysis would find nothing.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from graphlint.columns import placed
from graphlint.comments import scan, unknown_suppressions
from graphlint.diagnostics import Diagnostic, FileResult
from graphlint.facts.torchapi import (
    BUILTIN_MARKERS,
    CUDAGRAPH_COMPILE_MODES,
    CUDAGRAPHS_OPTION,
    CUDAGRAPHS_SWITCH,
)
from graphlint.read import read_text
from graphlint.settings import Settings

# Text that every capture region needs somewhere in its file (torch.cuda.graph, an
# import of it under another name, also in parentheses over lines from a ``cuda``
# module, x.graph(...), torch.accelerator.Graph, capture_begin,
# make_graphed_callables, a CUDA-graph compile mode, a marker); ``fx``'s ``.graph``
# attributes do not match. This pattern is the definition; ``text_candidate`` finds
# the same files ten times faster (a test compares them): no alternative here starts
# with a literal, so the pattern is tried at every position of every file.
_CANDIDATE = re.compile(
    r"cuda\.graph\b|\bimport\b[^\n]*\bgraph\b"
    r"|\bcuda[\w.]*[ \t]+import[ \t]*\((?:[^)#]|#[^\n]*\n)*?\bgraph\b"
    r"|\.graph\(|capture_begin|make_graphed_callables|graphlint|reduce-overhead"
    r"|max-autotune(?!-no-cudagraphs)|triton\.cudagraphs|[\"']cudagraphs[\"']"
    # ``torch.accelerator.Graph``, however it is imported: both words, anywhere in
    # the text (in PyTorch's own package, ``graphs`` imported relatively for
    # ``accelerator``, also in the import of ``Graph``: ``from . import Graph, graphs``)
    r"|\A(?s:(?=.*\bGraph\b)"
    r"(?=.*(?:accelerator|from\s+\.+\s*(?:graphs\b|import\b[^\n]*\bgraphs\b))))"
)
_AUTOTUNE = "max-autotune"  # a mode that captures, unless "-no-cudagraphs" follows
_NO_CUDAGRAPHS = "-no-cudagraphs"
_GRAPH = re.compile(r"graph\b")  # a literal first: found by a fast scan
_CUDAGRAPHS_WORD = re.compile(r"cudagraphs")
_IMPORT = re.compile(r"\bimport\b")
_IMPORT_PAREN = re.compile(r"import[ \t]*\(")
_GRAPH_WORD = re.compile(r"\bgraph\b")
_ACCELERATOR = "accelerator"  # with the class ``Graph``: ``torch.accelerator.Graph``
_GRAPH_CLASS = re.compile(r"\bGraph\b")
# ``from .graphs import Graph``, ``from . import graphs``: in ``torch/accelerator/``
_RELATIVE_GRAPHS = re.compile(r"from\s+\.+\s*(?:graphs\b|import\b[^\n]*\bgraphs\b)")
# a span marked in comments: only the text shows it
_PRAGMA = re.compile(r"#\s*graphlint:\s*capture-(?:begin|end)\b", re.I)
# names a region is made with: graphed callables, manual capture
_NAMES = frozenset({"make_graphed_callables", "capture_begin"})
# strings that make torch.compile capture, written out: modes, the backend, the
# Inductor option (in ``options``, ``config.patch``, ``patch.object``)
_SETTINGS = CUDAGRAPH_COMPILE_MODES | {
    "cudagraphs",
    CUDAGRAPHS_OPTION,
    CUDAGRAPHS_SWITCH,
}


# Inductor's CUDA-graph switch written out (an option, the backend, an assignment)
_CUDAGRAPHS = re.compile(
    r"triton\.cudagraphs|[\"']cudagraphs[\"']|\bcudagraphs\s*=[^=]"
)


def writes_compile_setting(source: str) -> bool:
    """Whether the text may set a compile mode that captures CUDA graphs (a mode, the
    backend, Inductor's switch): a project with none anywhere compiles nothing so
    through a wrapper."""
    if "reduce-overhead" in source or _autotunes(source):
        return True
    return "cudagraphs" in source and bool(_CUDAGRAPHS.search(source))


def _autotunes(source: str) -> bool:
    """Whether the text names the mode ``max-autotune``, which captures, and not
    only ``max-autotune-no-cudagraphs``, which does not."""
    at = source.find(_AUTOTUNE)
    while at >= 0:
        end = at + len(_AUTOTUNE)
        if not source.startswith(_NO_CUDAGRAPHS, end):
            return True
        at = source.find(_AUTOTUNE, end)
    return False


def text_candidate(source: str) -> bool:
    """Whether ``source``'s text names something a capture region needs
    (``_CANDIDATE``). Every alternative but three (``capture_begin`` and two
    modes) holds the letters ``graph`` or ``Graph``: a text without either, most
    of a tree, is settled by five substring searches."""
    if "capture_begin" in source or "reduce-overhead" in source or _autotunes(source):
        return True
    if "graph" in source and _names_a_graph(source):
        return True
    return "Graph" in source and _names_accelerator_graph(source)


def _names_a_graph(source: str) -> bool:
    """``text_candidate`` for a text that holds ``graph``: the alternatives of
    ``_CANDIDATE`` that hold that word."""
    if "make_graphed_callables" in source or "graphlint" in source:
        return True
    for match in _CUDAGRAPHS_WORD.finditer(source):
        start, end = match.span()
        quoted = source[start - 1 : start] in ("'", '"') and source[end : end + 1] in (
            "'",
            '"',
        )
        if quoted or source[max(0, start - 7) : start] == "triton.":
            return True
    return _names_graph(source) or ("cuda" in source and _imports_from_cuda(source))


def _names_accelerator_graph(source: str) -> bool:
    """Whether the text has both words of ``torch.accelerator.Graph``: however the
    class or its module is imported, the file names both (or, in PyTorch's own
    package, imports its ``graphs`` module relatively)."""
    return (
        _ACCELERATOR in source
        or ("graphs" in source and _RELATIVE_GRAPHS.search(source) is not None)
    ) and _GRAPH_CLASS.search(source) is not None


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


def has_marker(source: str, markers: frozenset[str]) -> bool:
    """Whether the text holds the last part of one of the configured markers."""
    return any(m.rsplit(".", 1)[-1] in source for m in markers)


def may_capture(source: str, tree: ast.Module | None, markers: frozenset[str]) -> bool:
    """Whether the file may hold a capture region (``tree``: CPython's, or None where
    only LibCST parses the file: then the text decides)."""
    if not text_candidate(source) and not has_marker(source, markers):
        return False
    if tree is None or _PRAGMA.search(source):
        return True
    names = _NAMES | {m.rsplit(".", 1)[-1] for m in BUILTIN_MARKERS | markers}
    if _names_accelerator_graph(source):  # the class, by its own name
        names |= {"Graph"}
    skipped: set[int] = set()  # ids of strings in calls that cannot switch anything
    for node in ast.walk(tree):  # breadth first: a call before its arguments
        if isinstance(node, ast.Call) and len(node.args) + len(node.keywords) < 3:
            # "cudagraphs" alone names Inductor's switch as the attribute of a patch
            # or setattr (three arguments), or as a backend (a keyword); passed to a
            # call of two arguments it is something else (a logger's name)
            skipped.update(id(arg) for arg in node.args if _is_text(arg, "cudagraphs"))
        if id(node) not in skipped and _names_a_region(node, names):
            return True
    return False


def _names_a_region(node: ast.AST, names: frozenset[str]) -> bool:
    if isinstance(node, ast.Attribute):
        if node.attr == "cudagraphs":  # Inductor's switch, set (read, it makes none)
            return isinstance(node.ctx, ast.Store)
        return node.attr in names or (node.attr == "graph" and _is_cuda(node.value))
    if isinstance(node, ast.Name):
        return node.id in names
    if isinstance(node, ast.Call):  # x.graph(g), graph(g): torch.cuda.graph aliased
        func = node.func
        return (isinstance(func, ast.Attribute) and func.attr == "graph") or (
            isinstance(func, ast.Name) and func.id == "graph"
        )
    if isinstance(node, ast.alias):
        last = node.name.rpartition(".")[2]
        return last in names or last == "graph" or node.asname in names
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value in _SETTINGS
    return False


def _is_text(expr: ast.expr, text: str) -> bool:
    return isinstance(expr, ast.Constant) and expr.value == text


def _is_cuda(expr: ast.expr) -> bool:
    """``cuda`` or ``<anything>.cuda``: ``torch.cuda.graph`` referred to."""
    return (isinstance(expr, ast.Attribute) and expr.attr == "cuda") or (
        isinstance(expr, ast.Name) and expr.id == "cuda"
    )


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
    if text_candidate(text) or has_marker(text, settings.markers):
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
    "has_marker",
    "may_capture",
    "screen",
    "text_candidate",
    "writes_compile_setting",
]
