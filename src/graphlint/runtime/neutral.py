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
the mode ``hoisted``, or ``ungraphed`` for a capture's own call; a hoisted line may
name the expressions to move, ``[path, line, "hoisted", [[line, col, end_line,
end_col], ...]]``, the findings' own, so only the host read moves, as a user's fix
would move it, and the rest of the statement is captured); the script, the
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
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import CodeType, ModuleType
from typing import Any

from graphlint.runtime import lines, session

HOISTED = "hoisted"  # computed outside the capture, its value reused inside
UNGRAPHED = "ungraphed"  # a capture's own call: the code runs without it

Taken = dict[int, str]  # line -> how its statement is moved: HOISTED or UNGRAPHED
# an expression of a hoisted statement to move alone: its first line, first column,
# last line and end column (columns in code points, as graphlint's findings count)
Span = tuple[int, int, int, int]
Spans = dict[int, tuple[Span, ...]]  # line -> the expressions to move there


@functools.cache
def _neutralised() -> dict[str, tuple[Taken, Spans]]:
    grouped: dict[str, list[Sequence[Any]]] = {}
    for path, *move in session.settings().get("neutralised") or ():
        grouped.setdefault(os.path.realpath(path), []).append(move)
    return {path: _moves(moves) for path, moves in grouped.items()}


def _moves(moves: Iterable[Sequence[Any]]) -> tuple[Taken, Spans]:
    """What moves in one file, from ``[line, mode, spans]`` entries (as the run's
    ``neutralised`` names them, without the path; mode and spans optional)."""
    taken: Taken = {}
    spans: Spans = {}
    for line, *how in moves:
        taken[int(line)] = str(how[0]) if how else HOISTED
        if len(how) > 1 and how[1]:
            spans[int(line)] = tuple(
                (int(a), int(b), int(c), int(d)) for a, b, c, d in how[1]
            )
    return taken, spans


def lines_of(path: str) -> Taken:
    """The lines of ``path`` whose statements this run moves, and how."""
    return _neutralised().get(os.path.realpath(path), ({}, {}))[0]


def spans_of(path: str) -> Spans:
    """The expressions of ``path``'s hoisted lines that this run moves alone."""
    return _neutralised().get(os.path.realpath(path), ({}, {}))[1]


def place(key: str) -> tuple[str, str]:
    """A moved value's key (``_key``) as its path and line."""
    parts = key.split(":")
    numbers = 0
    while numbers < min(4, len(parts) - 1) and parts[-1 - numbers].isdigit():
        numbers += 1
    count = 4 if numbers == 4 else 1  # an expression's: line, col, end line, end col
    return ":".join(parts[:-count]), parts[-count]


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


def takes_out(path: str, moves: Sequence[Sequence[Any]], where: Span) -> bool:
    """Whether the moves of a trial in ``path`` (``[line, mode, spans]`` each, as
    the run's ``neutralised`` names them) take the code at ``where`` (first line,
    column, last line, end column; code points) out of the capture: it is inside
    an expression moved alone, or in a statement moved whole (``span``)."""
    real = os.path.realpath(path)
    taken, spans = _moves(moves)
    tree = _parsed(real)
    alone = _moved_alone(tree, taken, spans, real) if tree is not None else {}
    text = _text(real)
    for line, mode in taken.items():
        found = statement_at(tree, line) if tree is not None else None
        if found is not None and id(found) in alone:
            if any(_inside(where, _span(e, text)) for e, _ in alone[id(found)]):
                return True
            continue
        first, last = span(path, line, mode)
        if first <= where[0] <= last:
            return True
    return False


def _span(node: ast.expr, text: tuple[bytes, ...]) -> Span:
    """Where ``node`` is, its columns in code points."""
    end = node.end_lineno or node.lineno
    return (
        node.lineno,
        _points(text, node.lineno, node.col_offset),
        end,
        _points(text, end, node.end_col_offset or 0),
    )


def _inside(inner: Span, outer: Span) -> bool:
    return outer[:2] <= inner[:2] and inner[2:] <= outer[2:]


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
    real = os.path.realpath(path)
    return rewrite(parsed, taken, real, spans_of(path)) if parsed else None


HOIST = "__graphlint_hoist__"  # the builtin a rewritten statement calls
VALUES: dict[str, Any] = {}  # by "path:line": the value last computed eagerly


# While capturing, what a moved expression whose value no run outside the capture
# kept stands for: a branch not taken, an assertion that holds, nothing to iterate
# (a loop that ends), no value. A failure that a stand-in causes is not a capture's
# failure, and confirms nothing (``report``).
_AS_IS = ("value", "iter")  # kinds whose value is kept as computed, not as a bool
# an operand of ``and``/``or`` before the last, whose value may be the result: Python
# reads its truth, so a tensor is kept as a bool (that read is the sync), a host
# value (``a.item() or 1.0``) as computed
OPERAND = "operand"
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
    if kind == OPERAND:  # a tensor's truth is read where it stands, a scalar's not
        VALUES[key] = value = bool(value) if _is_tensor(value) else value
    elif kind in _AS_IS:
        VALUES[key] = value
    elif kind != "effect":  # a dropped value need not be kept
        VALUES[key] = value = bool(value)
    return value


def _is_tensor(value: Any) -> bool:
    return hasattr(value, "numel") and hasattr(value, "device")


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
    capture reaching them would give them stand-ins. Not an assignment to names
    that nothing else in the file reads: no code reads its stand-in, as none would
    read a value a fix dropped."""
    taken = lines_of(path)
    real = os.path.realpath(path)
    tree = _parsed(real) if taken else None
    if tree is None:
        return []
    keys: list[str] = []
    alone = _moved_alone(tree, taken, spans_of(path), real)
    for line, mode in sorted(taken.items()):
        found = statement_at(tree, line)
        if mode != HOISTED or found is None or not first <= found.lineno <= last:
            continue
        if id(found) in alone:
            keys.extend(_key(real, found, e) for e, _ in alone[id(found)])
            continue
        kind = _MOVED.get(type(found), ("", "effect"))[1]
        if kind not in ("effect", "loop") and _read(tree, found):
            keys.append(_key(real, found))
    return list(dict.fromkeys(k for k in keys if k not in VALUES))


def _read(tree: ast.Module, statement: ast.stmt) -> bool:
    """Whether code other than ``statement`` may read what it computes: its value,
    when it is no assignment to plain names (``x = ...``, ``x: T = ...``), else a
    read of one of those names anywhere else in the file (after the region, in
    another region, in a function it calls: each would read the stand-in)."""
    targets = (
        statement.targets
        if isinstance(statement, ast.Assign)
        else [statement.target]
        if isinstance(statement, ast.AnnAssign)
        else []
    )
    names = set()
    for target in targets:
        if not isinstance(target, ast.Name):
            return True  # an attribute, an item or unpacking: kept, as before
        names.add(target.id)
    if not names:
        return True
    own = {id(node) for node in ast.walk(statement)}
    return any(
        isinstance(node, ast.Name)
        and node.id in names
        and isinstance(node.ctx, ast.Load)
        and id(node) not in own
        for node in ast.walk(tree)
    )


def _key(path: str, statement: ast.stmt, alone: ast.expr | None = None) -> str:
    """What ``hoist`` keeps a moved value under: "path:line" for a statement's;
    for one expression of it moved alone, "path:line:col:end_line:end_col" (its
    own lines, columns in bytes: no two expressions share them)."""
    if alone is None:
        return f"{path}:{statement.lineno}"
    end = f"{alone.end_lineno or alone.lineno}:{alone.end_col_offset or 0}"
    return f"{path}:{alone.lineno}:{alone.col_offset}:{end}"


def _moved_alone(
    tree: ast.Module, taken: Taken, spans: Spans, path: str
) -> dict[int, list[tuple[ast.expr, str]]]:
    """By statement (its id), the expressions of each hoisted statement that move
    alone (``_alone``): the spans of all its lines together; none where a line of
    it names no span (the whole statement moves)."""
    named: dict[int, tuple[ast.stmt, list[Span]]] = {}
    whole: set[int] = set()
    for line, mode in taken.items():
        found = statement_at(tree, line)
        if found is None or mode != HOISTED:
            continue
        where = spans.get(line, ())
        if not where:
            whole.add(id(found))
        named.setdefault(id(found), (found, []))[1].extend(where)
    text = _text(path) if path else ()
    moved = {
        key: _alone(found, where, text)
        for key, (found, where) in named.items()
        if key not in whole
    }
    return {key: found for key, found in moved.items() if found}


@functools.lru_cache(maxsize=64)
def _text(path: str) -> tuple[bytes, ...]:
    """``path``'s lines, as bytes (``ast`` counts columns in UTF-8 bytes)."""
    try:
        with open(path, "rb") as handle:
            return tuple(handle.read().splitlines())
    except OSError:
        return ()


def _points(text: tuple[bytes, ...], line: int, offset: int) -> int:
    """A UTF-8 byte offset on ``line`` (1-based) as code points."""
    if not 0 < line <= len(text):
        return offset
    return len(text[line - 1][:offset].decode("utf-8", "replace"))


# Scopes inside an expression: a value computed in one depends on its own names
# (a comprehension's variable), so no single value kept for it would do.
_INNER = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
# What computes: an expression with none of these (a name, an attribute, a
# constant) gives what it holds, and moving it out would change nothing.
_COMPUTES = (ast.Call, ast.Compare, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Subscript)


def _alone(
    statement: ast.stmt, spans: Sequence[Span], text: tuple[bytes, ...]
) -> list[tuple[ast.expr, str]]:
    """The expressions of ``statement``'s moved part (``_MOVED``) at ``spans`` that
    can move alone, each with how its value is used (``hoist``'s kind: a test's,
    kept as a bool, where its truth is what the statement reads): not the whole
    part (that moves as the statement does), not in an inner scope or a loop's
    condition, movable into a lambda, computing something. Empty when any span
    finds none: the statement then moves whole, as without spans."""
    field = _MOVED.get(type(statement), ("", ""))[0]
    part = getattr(statement, field, None) if field else None
    if not spans or not isinstance(part, ast.expr) or isinstance(statement, ast.While):
        return []
    found: dict[Span, tuple[ast.expr, str]] = {}
    inside: set[Span] = set()  # spans in an expression that moves: they move with it
    # how the part's value is used: only its truth, or its value
    use = "test" if _MOVED[type(statement)][1] in ("test", "assert") else "value"
    stack: list[tuple[ast.AST, str, bool]] = [(part, use, False)]
    while stack:
        node, use, moved = stack.pop()
        if isinstance(node, _INNER):
            continue
        matched = False
        if isinstance(node, ast.expr) and node is not part:
            where = _span(node, text)
            if where in spans and moved:
                inside.add(where)
            elif (
                where in spans
                and _movable(node)
                and not _stored(node)
                and any(isinstance(n, _COMPUTES) for n in ast.walk(node))
            ):
                found.setdefault(where, (node, use))
                matched = True
        stack.extend(
            (child, _use(node, child, use), moved or matched)
            for child in ast.iter_child_nodes(node)
        )
    if any(s not in found and s not in inside for s in spans):
        return []
    return sorted(found.values(), key=lambda e: (e[0].lineno, e[0].col_offset))


def _use(parent: ast.AST, child: ast.AST, use: str) -> str:
    """How ``child``'s value is used, ``use`` saying how ``parent``'s is: only its
    truth ("test": the operand of ``not``, the test of ``a if t else b``, every
    operand of an ``and``/``or`` whose truth alone is read); as an ``and``/``or``
    operand before the last, whose value may be the result (``OPERAND``); else as a
    value (the last operand, a branch of ``a if t else b``, as ``parent``'s)."""
    if isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not):
        return "test"
    if isinstance(parent, ast.IfExp):
        return "test" if child is parent.test else use
    if isinstance(parent, ast.BoolOp):
        if use == "test":
            return "test"
        return "value" if child is parent.values[-1] else OPERAND
    return "value"


def _stored(node: ast.expr) -> bool:
    """A target, or a starred item: not a value to keep."""
    return isinstance(node, ast.Starred) or isinstance(
        getattr(node, "ctx", None), (ast.Store, ast.Del)
    )


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

    def __init__(
        self,
        statements: dict[int, tuple[str, int]],
        path: str,
        alone: Mapping[int, list[tuple[ast.expr, str]]] | None = None,
    ) -> None:
        self.modes = statements  # id(statement) -> (HOISTED or UNGRAPHED, line)
        self.path = path
        self.alone = alone or {}  # id(statement) -> its expressions moved alone

    def _hoisted(
        self,
        node: ast.stmt,
        value: ast.expr,
        kind: str = "value",
        alone: ast.expr | None = None,
    ) -> ast.expr:
        call = ast.Call(
            func=ast.Name(HOIST, ast.Load()),
            args=[
                ast.Constant(_key(self.path, node, alone)),
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
        alone = self.alone.get(id(node))
        if alone and isinstance(node, ast.stmt):
            _Replace(
                {id(e): self._hoisted(node, e, kind, alone=e) for e, kind in alone}
            ).visit(node)
            return node
        field, kind = _MOVED.get(type(node), ("", ""))
        value = getattr(node, field, None) if field else None
        if (
            isinstance(node, ast.stmt)
            and isinstance(value, ast.expr)
            and _movable(value)
        ):
            setattr(node, field, self._hoisted(node, value, kind))
        return node  # nothing it computes can move: the variant changes nothing


class _Replace(ast.NodeTransformer):
    """Puts each expression of ``by`` (by id) in place of the one it was made for."""

    def __init__(self, by: Mapping[int, ast.expr]) -> None:
        self.by = by

    def visit(self, node: ast.AST) -> Any:
        made = self.by.get(id(node))
        return made if made is not None else self.generic_visit(node)


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


def rewrite(
    tree: ast.Module, taken: Taken, path: str = "", spans: Spans | None = None
) -> ast.Module:
    """``tree`` with the statement holding each line of ``taken`` moved out of the
    capture (``_TakeOut``); of a hoisted line with ``spans``, the expressions
    there alone, where they can move alone."""
    statements = {
        id(found): (mode, line)
        for line, mode in taken.items()
        if (found := statement_at(tree, line)) is not None
    }
    alone = _moved_alone(tree, taken, spans or {}, path)
    if not statements:
        return tree
    for line, mode in taken.items():  # a capture_begin() goes with its capture_end()
        begin = statement_at(tree, line)
        end = _capture_end_of(tree, begin) if mode == UNGRAPHED and begin else None
        if end is not None:
            statements[id(end)] = (UNGRAPHED, end.lineno)
    changed = _TakeOut(statements, path, alone).visit(tree)
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
