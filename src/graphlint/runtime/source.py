"""The body of a ``with`` block as code that can run again: the runtime checker warms
up, captures and re-runs eagerly the body of a marked block or of a
``torch.cuda.graph`` block, with the names the block sees."""

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
    names: set[str] = set()
    assigned: set[str] = set()
    stack: list[ast.AST] = list(found.body)
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
    end = found.end_lineno or found.lineno
    module = ast.Module(body=found.body, type_ignores=[])
    try:
        code: CodeType | None = compile(module, path, "exec")
        reason = ""
    except SyntaxError as error:  # `return`, `yield`, `break` out of the block
        code, reason = None, f"its body cannot run on its own ({error.msg})"
    return Block(found.lineno, end, code, reason, frozenset(names), frozenset(assigned))
