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

The run's settings name the lines (``neutralised``: ``[[path, line, mode], ...]``,
the mode ``hoisted``, or ``ungraphed`` for a capture's own call); the script, the
modules it imports from the user's files, and the blocks the checker re-runs
(``graphlint.runtime.source``) are all compiled from the rewritten source.
Nothing is written: the bytecode of a rewritten module is never cached.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import functools
import importlib.abc
import importlib.machinery
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
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


def _first_line(node: ast.stmt) -> int:
    """A statement's first line: a decorated definition starts at its decorator."""
    decorators: list[ast.expr] = getattr(node, "decorator_list", [])
    return min([node.lineno, *(d.lineno for d in decorators)])


def statement_at(tree: ast.AST, line: int) -> ast.stmt | None:
    """The innermost statement that holds ``line`` (a compound statement holds the
    lines of its header and decorators; its body's statements are deeper)."""
    found: ast.stmt | None = None
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    depth_found = -1
    while stack:
        node, depth = stack.pop()
        if isinstance(node, ast.stmt):
            end = node.end_lineno or node.lineno
            if not _first_line(node) <= line <= end:
                continue
            if depth > depth_found:
                found, depth_found = node, depth
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return found


def span(path: str, line: int, mode: str = HOISTED) -> tuple[int, int]:
    """The first and last lines of what a run moving the statement of ``path`` that
    holds ``line`` takes out of the capture: a hoisted ``if``, ``while`` or ``for``
    loses its header's expression only (its body, an ``elif``, stay), an ungraphed
    statement all of itself (the line alone when the file cannot be read)."""
    tree = _parsed(os.path.realpath(path))
    found = statement_at(tree, line) if tree is not None else None
    if found is None:
        return line, line
    moved = getattr(found, _MOVED.get(type(found), ("",))[0], None)
    if mode == HOISTED and isinstance(found, _COMPOUND) and isinstance(moved, ast.expr):
        return _first_line(found), moved.end_lineno or moved.lineno
    return _first_line(found), found.end_lineno or found.lineno


def _parse(path: str) -> ast.Module | None:
    try:
        with open(path, "rb") as handle:
            return ast.parse(handle.read(), path)
    except (OSError, SyntaxError, ValueError):
        return None


_parsed = functools.lru_cache(maxsize=64)(_parse)  # as written: never rewritten


@functools.lru_cache(maxsize=64)
def tree_of(path: str) -> ast.Module | None:
    """``path`` parsed, with the statements this run takes out moved (``rewrite``);
    as written when it takes none. The script, the modules it imports and the
    blocks the checker re-runs (``source``) all compile from it."""
    taken = lines_of(path)
    if not taken:
        return _parsed(path)
    parsed = _parse(path)  # a tree of its own: the rewrite changes it
    return rewrite(parsed, taken, os.path.realpath(path)) if parsed else None


HOIST = "__graphlint_hoist__"  # the builtin a rewritten statement calls
VALUES: dict[str, Any] = {}  # by "path:line": the value last computed eagerly


# While capturing, what a moved expression whose value no run outside the capture
# kept stands for: a branch not taken, an assertion that holds, nothing to iterate
# (a loop that ends), no value. A failure that a stand-in causes is not a capture's
# failure, and confirms nothing (``report``).
_AS_IS = ("value", "iter")  # kinds whose value is kept as computed, not as a bool
_STAND_IN: dict[str, Any] = {"test": False, "assert": True, "iter": ()}


_EAGER_CHECK: list[bool] = []  # a failed capture's eager check under way


@contextlib.contextmanager
def eager_check() -> Iterator[None]:
    """The failed capture's code run again without capture: moved statements compute
    as in any eager run, and one that raises gives what it gave the capture instead
    (it was moved for failing), so the run reaches the line the capture failed at."""
    _EAGER_CHECK.append(True)
    try:
        yield
    finally:
        _EAGER_CHECK.pop()


def hoist(key: str, compute: Callable[[], Any], kind: str = "value") -> Any:
    """What a statement moved out of the capture computes. Run eagerly (outside any
    capture: the warm-up) it computes its value and keeps it (a test as a bool);
    while a graph is being captured it returns the value kept (a loop's test is
    false: the loop ends), or, when none was, its stand-in; run eagerly to compare
    with a replay (``pinned``) it returns what the capture used."""
    if lines.capturing():
        value = _as_captured(key, kind)
        stood_in = kind in _STAND_IN or kind == "value"
        USED.append(Used(key, value, stood_in and key not in VALUES))
        return value
    if _PINNED and key in _PINNED[-1]:
        return _PINNED[-1][key]
    try:
        value = compute()
    except Exception:
        if not _EAGER_CHECK:
            raise
        return _as_captured(key, kind)
    if kind in _AS_IS:
        VALUES[key] = value
    elif kind != "effect":  # a dropped value need not be kept
        VALUES[key] = value = bool(value)
    return value


def _as_captured(key: str, kind: str) -> Any:
    if kind == "loop":
        return False
    return VALUES.get(key, _STAND_IN.get(kind))


@dataclass(frozen=True)
class Used:
    """What a moved statement gave a capture."""

    key: str  # "path:line" of the statement
    value: Any
    stood_in: bool  # no run outside the capture kept a value: its stand-in


USED: list[Used] = []  # every capture's, in order (``mark`` and ``since``)
_PINNED: list[Mapping[str, Any]] = []  # the values an eager run reuses, innermost last


def mark() -> int:
    """Where the moved statements' values used from now on begin (``since``)."""
    return len(USED)


def since(start: int) -> list[Used]:
    """The moved statements' values used while capturing since ``mark()``."""
    return USED[start:]


def values_since(start: int) -> dict[str, Any]:
    """What each moved statement gave the captures since ``mark()``, last use first."""
    return {used.key: used.value for used in since(start)}


def stand_ins_since(start: int) -> list[str]:
    """The moved statements ("path:line") that captures since ``mark()`` gave a
    stand-in, each once, in the order they were used."""
    return list(dict.fromkeys(used.key for used in since(start) if used.stood_in))


@contextlib.contextmanager
def pinned(values: Mapping[str, Any]) -> Iterator[None]:
    """An eager run to compare with a replay: each moved statement the capture used
    gives the value the capture used (a replay never recomputes it), not a new
    one; the others compute as in any eager run."""
    _PINNED.append(values)
    try:
        yield
    finally:
        _PINNED.pop()


def missing(path: str, first: int, last: int) -> list[str]:
    """The statements of ``path`` between lines ``first`` and ``last`` that this run
    moves out of the capture and whose value no run outside it has kept yet: a
    capture reaching them would give them stand-ins."""
    taken = lines_of(path)
    tree = _parsed(os.path.realpath(path)) if taken else None
    keys = []
    for line, mode in sorted(taken.items()):
        found = statement_at(tree, line) if tree is not None else None
        if mode != HOISTED or found is None or not first <= found.lineno <= last:
            continue
        kind = _MOVED.get(type(found), ("", "effect"))[1]
        key = f"{os.path.realpath(path)}:{found.lineno}"
        if kind not in ("effect", "loop") and key not in VALUES:
            keys.append(key)
    return list(dict.fromkeys(keys))


# Expressions that cannot move into a lambda unchanged: they bind or read names of
# the enclosing scope (walrus, zero-argument super()) or suspend it (yield, await).
_UNMOVABLE = (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await)


def _movable(value: ast.expr) -> bool:
    for node in ast.walk(value):
        if isinstance(node, _UNMOVABLE):
            return False
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "super"
            and not node.args
        ):
            return False
    return True


class _TakeOut(ast.NodeTransformer):
    """Moves statements out of the capture: each expression of a statement taken
    out is computed outside captures only (in the warm-up), and the capture uses
    the value kept then; a loop's condition is false while capturing. The rest of
    the statement stays (the body of an ``if``, the target of an assignment), so
    the names it binds stay bound and the code after it runs on. A statement with
    nothing that can move stays as it is, and fails again where it failed."""

    def __init__(self, statements: dict[int, tuple[str, int]], path: str) -> None:
        self.modes = statements  # id(statement) -> (HOISTED or UNGRAPHED, line)
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
        if mode[0] == UNGRAPHED:
            return _ungraphed(node, mode[1])
        self.generic_visit(node)  # statements inside it may move too (an elif)
        field, kind = _MOVED.get(type(node), ("", ""))
        value = getattr(node, field, None) if field else None
        if (
            isinstance(node, ast.stmt)
            and isinstance(value, ast.expr)
            and _movable(value)
        ):
            setattr(node, field, self._hoisted(node, value, kind))
        return node  # nothing it computes can move: the variant changes nothing


# What moves out of each kind of statement, and how its value is used.
_MOVED: dict[type, tuple[str, str]] = {
    ast.Assign: ("value", "value"),
    ast.AugAssign: ("value", "value"),
    ast.AnnAssign: ("value", "value"),
    ast.Return: ("value", "value"),
    ast.Expr: ("value", "effect"),  # its value is dropped: none need be kept
    ast.For: ("iter", "iter"),
    ast.If: ("test", "test"),
    ast.Assert: ("test", "assert"),
    ast.While: ("test", "loop"),
}


_COMPOUND = (ast.If, ast.While, ast.For)  # a header that moves, a body that stays


def _ungraphed(node: ast.AST, line: int) -> ast.AST | list[ast.stmt]:
    """A capture's own call taken out: ``graphed = make_graphed_callables(model,
    ...)`` binds the model itself (``torch.compile(fn)`` the function), a ``with
    torch.cuda.graph(g):`` leaves its body and ``@torch.compile(...)`` its
    function, so the code runs eagerly; any other statement becomes ``pass``."""
    if isinstance(node, ast.With):
        return node.body
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        node.decorator_list = [d for d in node.decorator_list if d.lineno != line]
        return node
    if (
        isinstance(node, (ast.Assign, ast.AnnAssign))
        and isinstance(node.value, ast.Call)
        and node.value.args
        and not isinstance(node.value.args[0], ast.Starred)
    ):
        node.value = node.value.args[0]
        return node
    return ast.copy_location(ast.Pass(), node)


def graph_call(node: ast.AST, method: str) -> str | None:
    """``g`` for the statement ``g.<method>(...)``."""
    if (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Attribute)
        and node.value.func.attr == method
    ):
        return ast.unparse(node.value.func.value)
    return None


def _capture_end_of(tree: ast.Module, begin: ast.stmt) -> ast.stmt | None:
    """The first ``g.capture_end()`` after ``g.capture_begin()`` (``begin``)."""
    graph = graph_call(begin, "capture_begin")
    if graph is None:
        return None
    ends = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.stmt)
        and node.lineno > begin.lineno
        and graph_call(node, "capture_end") == graph
    ]
    return min(ends, key=lambda node: node.lineno, default=None)


def rewrite(tree: ast.Module, taken: Taken, path: str = "") -> ast.Module:
    """``tree`` with the statement holding each line of ``taken`` moved out of the
    capture (``_TakeOut``)."""
    statements = {
        id(found): (mode, line)
        for line, mode in taken.items()
        if (found := statement_at(tree, line)) is not None
    }
    if not statements:
        return tree
    for line, mode in taken.items():  # a capture_begin() goes with its capture_end()
        begin = statement_at(tree, line)
        end = _capture_end_of(tree, begin) if mode == UNGRAPHED and begin else None
        if end is not None:
            statements[id(end)] = (UNGRAPHED, end.lineno)
    changed = _TakeOut(statements, path).visit(tree)
    assert isinstance(changed, ast.Module)
    return ast.fix_missing_locations(changed)


def compile_file(path: str) -> CodeType | None:
    """``path`` compiled with its statements moved out of the capture; None when this
    run takes nothing out of it (or it cannot be read)."""
    rewritten = tree_of(path) if lines_of(path) else None
    if rewritten is None:
        return None
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
            spec is None
            or spec.origin is None
            or not isinstance(spec.loader, importlib.machinery.SourceFileLoader)
            or not lines_of(spec.origin)
        ):
            return None  # the finders after this one find it as they would
        spec.loader = _Loader(fullname, spec.origin)
        return spec


def install() -> None:
    """Rewrite the user's modules this run takes statements out of, when imported."""
    if _neutralised():
        setattr(builtins, HOIST, hoist)
        sys.meta_path.insert(0, _Finder())
