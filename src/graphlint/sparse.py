"""The project pass analyses reached functions, not whole files.

A file that regions elsewhere reach is analysed for those functions only, so it is
given to LibCST with every other function blanked out: its lines stay where they
were (positions, suppression comments and messages are unchanged) and what the
analysis of a reached function reads is kept: module-level statements (imports,
constants), class headers and class-level names, the methods that set an
instance's attributes (``__init__`` and the other set-up methods) and the
functions enclosing a reached one.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection

from graphlint.facts.flow import SETUP_METHODS  # what ``self.x`` holds is set there

# lines as CPython counts them (``str.splitlines`` also splits at form feeds)
_LINES = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def sparse_source(source: str, tree: ast.Module, keep: Collection[str]) -> str:
    """``source`` with the functions that neither are in ``keep`` (paths such as
    "Cls.method", "outer.inner") nor enclose one, nor set up a class, blanked."""
    lines = _LINES.findall(source)
    blanked: set[int] = set()  # 0-based line numbers
    stubs: dict[int, str] = {}  # a line that becomes ``pass`` (an emptied class)
    prefixes = {p for path in keep for p in _prefixes(path)}

    def body(statements: list[ast.stmt], scope: str) -> None:
        removed: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
        for statement in statements:
            if isinstance(statement, ast.ClassDef):
                body(statement.body, f"{scope}{statement.name}.")
            elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                path = f"{scope}{statement.name}"
                if path not in prefixes and not (
                    scope and statement.name in SETUP_METHODS
                ):
                    removed.append(statement)
        for function in removed:
            start = min([function.lineno, *(d.lineno for d in function.decorator_list)])
            blanked.update(range(start - 1, function.end_lineno or start))
        if scope and removed and len(removed) == len(statements):  # an empty class
            first = removed[0]
            stubs[first.lineno - 1] = " " * first.col_offset + "pass\n"

    body(tree.body, "")
    if not blanked:
        return source
    out = []
    for number, line in enumerate(lines):
        if number in stubs:
            out.append(stubs[number])
        elif number in blanked:
            out.append("\n" if line.endswith(("\n", "\r")) else "")
        else:
            out.append(line)
    return "".join(out)


def function_spans(
    tree: ast.Module, keep: Collection[str]
) -> dict[str, tuple[int, int]]:
    """The lines (first, last; decorators included) of the functions at the paths
    in ``keep``, wherever they are defined (in a class, a function, an ``if``)."""
    found: dict[str, tuple[int, int]] = {}
    todo: list[tuple[ast.AST, str]] = [(tree, "")]
    while todo:
        node, scope = todo.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                path = f"{scope}{child.name}"
                if path in keep and not isinstance(child, ast.ClassDef):
                    first = min(
                        [child.lineno, *(d.lineno for d in child.decorator_list)]
                    )
                    found[path] = (first, child.end_lineno or child.lineno)
                todo.append((child, f"{path}."))
            elif isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)):
                todo.append((child, scope))
    return found


def _prefixes(path: str) -> list[str]:
    """ "a.b.c" -> ["a", "a.b", "a.b.c"]."""
    parts = path.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


__all__ = ["function_spans", "sparse_source"]
