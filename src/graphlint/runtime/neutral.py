"""The user's code with some statements taken out: a variant run of the script.

A capture stops at its first failure, so the findings after it in the same region
would never be tried. Once a failure is confirmed (or shown to be the script's own,
eager too), ``graphlint confirm`` runs the script again with that statement
replaced by ``pass``, and so on, until each finding has had its own chance. The
statement is the innermost one holding the failing line; the rest of the file
keeps its line numbers, so every later failure is attributed as before.

The run's settings name the lines (``neutralised``: ``[[path, line], ...]``); the
script, the modules it imports from the user's files, and the blocks the checker
re-runs (``graphlint.runtime.source``) are all compiled from the rewritten source.
Nothing is written: the bytecode of a rewritten module is never cached.
"""

from __future__ import annotations

import ast
import functools
import importlib.abc
import importlib.machinery
import os
import sys
from collections.abc import Sequence
from types import CodeType, ModuleType
from typing import Any

from graphlint.runtime import session


@functools.cache
def _neutralised() -> dict[str, frozenset[int]]:
    found: dict[str, set[int]] = {}
    for path, line in session.settings().get("neutralised") or ():
        found.setdefault(os.path.realpath(path), set()).add(int(line))
    return {path: frozenset(lines) for path, lines in found.items()}


def lines_of(path: str) -> frozenset[int]:
    """The lines of ``path`` whose statements this run takes out."""
    return _neutralised().get(os.path.realpath(path), frozenset())


def statement_at(tree: ast.AST, line: int) -> ast.stmt | None:
    """The innermost statement that holds ``line`` (a compound statement holds the
    lines of its header; its body's statements are deeper)."""
    found: ast.stmt | None = None
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    depth_found = -1
    while stack:
        node, depth = stack.pop()
        if isinstance(node, ast.stmt):
            end = node.end_lineno or node.lineno
            if not node.lineno <= line <= end:
                continue
            if depth > depth_found:
                found, depth_found = node, depth
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return found


class _TakeOut(ast.NodeTransformer):
    def __init__(self, statements: Sequence[ast.stmt]) -> None:
        self.ids = {id(s) for s in statements}

    def visit(self, node: ast.AST) -> Any:
        if id(node) in self.ids:
            return ast.copy_location(ast.Pass(), node)
        return self.generic_visit(node)


def rewrite(tree: ast.Module, lines: frozenset[int]) -> ast.Module:
    """``tree`` with the statement holding each of ``lines`` replaced by ``pass``."""
    if not lines:
        return tree
    statements = [s for s in (statement_at(tree, line) for line in lines) if s]
    if not statements:
        return tree
    changed = _TakeOut(statements).visit(tree)
    assert isinstance(changed, ast.Module)
    return ast.fix_missing_locations(changed)


def compile_file(path: str) -> CodeType | None:
    """``path`` compiled with its neutralised statements taken out; None when this
    run takes nothing out of it (or it cannot be read)."""
    lines = lines_of(path)
    if not lines:
        return None
    try:
        with open(path, "rb") as handle:
            tree = ast.parse(handle.read(), path)
    except (OSError, SyntaxError, ValueError):
        return None
    code: CodeType = compile(rewrite(tree, lines), path, "exec", dont_inherit=True)
    return code


class _Loader(importlib.machinery.SourceFileLoader):
    def get_code(self, fullname: str) -> CodeType | None:
        code = compile_file(self.path)
        return code if code is not None else super().get_code(fullname)


class _Finder(importlib.abc.MetaPathFinder):
    """Finds the user's modules as usual, and loads those this run rewrites with
    ``_Loader``."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if (
            spec is not None
            and spec.origin is not None
            and isinstance(spec.loader, importlib.machinery.SourceFileLoader)
            and lines_of(spec.origin)
        ):
            spec.loader = _Loader(fullname, spec.origin)
        return spec


def install() -> None:
    """Rewrite the user's modules this run takes statements out of, when imported."""
    if _neutralised():
        sys.meta_path.insert(0, _Finder())


def describe(places: Sequence[Sequence[Any]]) -> str:
    """``a.py:12, a.py:14``: the statements a variant run took out."""
    return ", ".join(f"{os.path.basename(str(p))}:{line}" for p, line in places)
