"""The user's code with some statements moved out of the capture: a variant run.

A capture stops at its first failure, so the findings after it in the same region
would never be tried. Once a failure is confirmed (or shown to be the script's own,
eager too), ``graphlint confirm`` runs the script again with that statement moved
out of the capture, and so on, until each finding has had its own chance. The
statement is the innermost one holding the failing line. Its expressions are
computed when no graph is being captured (the warm-up) and the capture reuses the
values kept then, as a fix that hoists them would; the rest of the statement stays,
so the names it binds stay bound, and every line keeps its number, so each later
failure is attributed as before.

The run's settings name the lines (``neutralised``: ``[[path, line], ...]``); the
script, the modules it imports from the user's files, and the blocks the checker
re-runs (``graphlint.runtime.source``) are all compiled from the rewritten source.
Nothing is written: the bytecode of a rewritten module is never cached.
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib.abc
import importlib.machinery
import os
import sys
from collections.abc import Callable, Sequence
from types import CodeType, ModuleType
from typing import Any

from graphlint.runtime import lines, session

HOISTED = "hoisted"  # computed outside the capture, its value reused inside
UNGRAPHED = "ungraphed"  # a capture's own call: the code runs without it

Taken = dict[int, str]  # line -> how its statement is moved: HOISTED or UNGRAPHED


@functools.cache
def _neutralised() -> dict[str, Taken]:
    found: dict[str, Taken] = {}
    for path, line, *mode in session.settings().get("neutralised") or ():
        found.setdefault(os.path.realpath(path), {})[int(line)] = (
            mode[0] if mode else HOISTED
        )
    return found


def lines_of(path: str) -> Taken:
    """The lines of ``path`` whose statements this run moves, and how."""
    return _neutralised().get(os.path.realpath(path), {})


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


HOIST = "__graphlint_hoist__"  # the builtin a rewritten statement calls
VALUES: dict[str, Any] = {}  # by "path:line": the value last computed eagerly


def hoist(key: str, compute: Callable[[], Any], kind: str = "value") -> Any:
    """What a statement moved out of the capture computes. Run eagerly (outside any
    capture: the warm-up) it computes its value and keeps it (an ``if``'s or an
    ``assert``'s test as a bool); while a graph is being captured it returns the
    value kept (None when none was), and a loop's test is false."""
    if not lines.capturing():
        value = compute()
        VALUES[key] = bool(value) if kind != "value" else value
        return VALUES[key]
    return False if kind == "loop" else VALUES.get(key)


class _TakeOut(ast.NodeTransformer):
    """Moves statements out of the capture: each expression of a statement taken
    out is computed outside captures only (in the warm-up), and the capture uses
    the value kept then; a loop's condition is false while capturing. The rest of
    the statement stays (the body of an ``if``, the target of an assignment), so
    the names it binds stay bound and the code after it runs on."""

    def __init__(self, statements: dict[int, str], path: str) -> None:
        self.modes = statements  # id(statement) -> HOISTED or UNGRAPHED
        self.path = path

    def _hoisted(
        self, node: ast.stmt, value: ast.expr, kind: str = "value"
    ) -> ast.expr:
        call = ast.Call(
            func=ast.Name(HOIST, ast.Load()),
            args=[
                ast.Constant(f"{self.path}:{node.lineno}"),
                ast.Lambda(
                    ast.arguments(
                        posonlyargs=[],
                        args=[],
                        kwonlyargs=[],
                        kw_defaults=[],
                        defaults=[],
                    ),
                    value,
                ),
                ast.Constant(kind),
            ],
            keywords=[],
        )
        return ast.copy_location(call, value)

    def visit(self, node: ast.AST) -> Any:
        mode = self.modes.get(id(node))
        if mode is None:
            return self.generic_visit(node)
        if mode == UNGRAPHED:
            return _ungraphed(node)
        self.generic_visit(node)  # statements inside it may move too (an elif)
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.Return, ast.Expr)):
            if node.value is not None:
                node.value = self._hoisted(node, node.value)
                return node
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            node.value = self._hoisted(node, node.value)
            return node
        elif isinstance(node, (ast.If, ast.Assert)):
            node.test = self._hoisted(node, node.test, "test")
            return node
        elif isinstance(node, ast.While):
            node.test = self._hoisted(node, node.test, "loop")
            return node
        return ast.copy_location(ast.Pass(), node)


def _ungraphed(node: ast.AST) -> ast.AST | list[ast.stmt]:
    """A capture's own call taken out: ``graphed = make_graphed_callables(model,
    ...)`` binds the model itself (``torch.compile(fn)`` the function), and a
    ``with torch.cuda.graph(g):`` leaves its body, so the code runs eagerly; any
    other statement becomes ``pass``."""
    if isinstance(node, ast.With):
        return node.body
    if (
        isinstance(node, (ast.Assign, ast.AnnAssign))
        and isinstance(node.value, ast.Call)
        and node.value.args
        and not isinstance(node.value.args[0], ast.Starred)
    ):
        node.value = node.value.args[0]
        return node
    return ast.copy_location(ast.Pass(), node)


def rewrite(tree: ast.Module, taken: Taken, path: str = "") -> ast.Module:
    """``tree`` with the statement holding each line of ``taken`` moved out of the
    capture (``_TakeOut``)."""
    statements = {
        id(found): mode
        for line, mode in taken.items()
        if (found := statement_at(tree, line)) is not None
    }
    if not statements:
        return tree
    changed = _TakeOut(statements, path).visit(tree)
    assert isinstance(changed, ast.Module)
    return ast.fix_missing_locations(changed)


def compile_file(path: str) -> CodeType | None:
    """``path`` compiled with its statements moved out of the capture; None when this
    run takes nothing out of it (or it cannot be read)."""
    taken = lines_of(path)
    if not taken:
        return None
    try:
        with open(path, "rb") as handle:
            tree = ast.parse(handle.read(), path)
    except (OSError, SyntaxError, ValueError):
        return None
    rewritten = rewrite(tree, taken, os.path.realpath(path))
    code: CodeType = compile(rewritten, path, "exec", dont_inherit=True)
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
        setattr(builtins, HOIST, hoist)
        sys.meta_path.insert(0, _Finder())
