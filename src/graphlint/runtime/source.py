"""The body of a ``with`` block as code that can run again: the runtime checker warms
up, captures and re-runs eagerly the body of a marked block or of a
``torch.cuda.graph`` block, with the names the block sees; and the statements
between a ``capture_begin()`` and its ``capture_end()``, as a block of their own."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from types import CodeType

from graphlint.runtime import neutral

_SCOPES = (  # names bound inside these are not the block's outputs
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.Lambda,
    ast.ClassDef,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)


@dataclass(frozen=True)
class Block:
    """A ``with`` statement's body, compiled with its file's name and line numbers."""

    line: int  # the ``with``
    end_line: int
    code: CodeType | None  # None when the body cannot run on its own
    reason: str  # why not, when ``code`` is None
    names: frozenset[str]  # every name the body reads or writes
    assigned: frozenset[str]  # names the body binds: its outputs


def block_at(path: str, line: int) -> Block | None:
    """The innermost ``with`` block whose header holds ``line``."""
    tree = neutral.tree_of(path)
    if tree is None:
        return None
    found: ast.With | None = None
    for node in ast.walk(tree):
        if not isinstance(node, ast.With):
            continue
        header = node.lineno <= line < node.body[0].lineno
        if header and (found is None or node.lineno > found.lineno):
            found = node
    if found is None:
        return None
    return _block(path, found.lineno, found.end_lineno or found.lineno, found.body)


def span_at(path: str, line: int) -> Block | None:
    """The statements between ``g.capture_begin()`` at ``line`` and the first
    ``g.capture_end()`` after it in the same list of statements (the region that
    pair captures), as a block; None when they are not in one list."""
    tree = neutral.tree_of(path)
    begin = neutral.statement_at(tree, line) if tree is not None else None
    graph = neutral.graph_call(begin, "capture_begin") if begin else None
    if tree is None or begin is None or graph is None:
        return None
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            statements = getattr(node, field, None)
            if not isinstance(statements, list) or not any(
                s is begin for s in statements
            ):
                continue
            after = statements[[id(s) for s in statements].index(id(begin)) + 1 :]
            for number, statement in enumerate(after):
                if neutral.graph_call(statement, "capture_end") == graph:
                    end = statement.end_lineno or statement.lineno
                    return _block(path, begin.lineno, end, after[:number])
            return None
    return None


def _block(path: str, line: int, end: int, body: list[ast.stmt]) -> Block:
    """``body`` (the statements a capture runs, from ``line`` to ``end``) as a
    block: its code and the names it reads and binds."""
    names: set[str] = set()
    assigned: set[str] = set()
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name):
            names.add(node.id)
            if isinstance(node.ctx, ast.Store):
                assigned.add(node.id)
        if isinstance(node, _SCOPES):
            names.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name))
            continue
        stack.extend(ast.iter_child_nodes(node))
    module = ast.Module(body=body, type_ignores=[])
    try:
        code: CodeType | None = compile(module, path, "exec")
        reason = ""
    except SyntaxError as error:  # `return`, `yield`, `break` out of the block
        code, reason = None, f"its body cannot run on its own ({error.msg})"
    return Block(line, end, code, reason, frozenset(names), frozenset(assigned))
