"""Functions compiled through a wrapper that another module defines.

``foo = get_compile_fn(backend)(foo)``, ``@compile_fn``,
``@get_compile_fn("max-autotune")`` and ``fast = compile_fn(step)``, where the
wrapper is imported: whether it compiles
with CUDA graphs is written in its own module (``ModuleSummary.compilers``,
``FunctionSummary.compiles`` and ``returns_compiler``), which the project pass
reads. Pass one lists the candidates of every file from CPython's tree, which the
pre-screen already made: it costs one walk, and a file needs no capture text of
its own to compile through a helper.
"""

from __future__ import annotations

import ast
from dataclasses import replace

from graphlint.columns import ByteColumns
from graphlint.diagnostics import CompileSite
from graphlint.project.summary import ModuleSummary, dotted, imported


def defines_wrapper(module: ModuleSummary) -> bool:
    """Whether a module defines something that compiles what it is given: a name
    bound to a compiler, or a function that compiles its argument or returns a
    compiler (with CUDA graphs, or with a mode its caller passes)."""
    return bool(module.compilers) or any(
        fn.compiles or fn.returns_compiler for fn in module.functions.values()
    )


# statements with no statement lists inside (most of them: skipped at once)
_SIMPLE = (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return, ast.Pass)

# a candidate: the call or decorator, the enclosing function's path, the decorated
# function's name as that code sees it (for a decorator)
_Candidate = tuple[ast.expr, "str | None", "str | None"]


def compile_sites(
    tree: ast.Module, path: str, module: str, text: str = ""
) -> list[CompileSite]:
    """The functions of a module handed to wrappers it imports. Names the module
    binds otherwise too (assigned, defined) are its own, not imported, and left to
    the file's own analysis. Only statements are walked, not every expression: a
    call counts where it is a statement's value (``foo = wrap(b)(foo)``, ``return
    compile_fn(m)``), which keeps this cheap enough for every file. ``text``, the
    tree's source, turns CPython's byte offsets into code-point columns (without
    it they stay bytes, the same on ASCII lines)."""
    package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
    imports: dict[str, str] = {}
    bound: set[str] = set()  # assigned or defined here: not (only) imported
    defined: set[str] = set()  # the module's functions and classes, by name
    candidates: list[_Candidate] = []
    # statements to visit, with the enclosing (name, is a function) path
    todo: list[tuple[list[ast.stmt], tuple[tuple[str, bool], ...]]] = [(tree.body, ())]
    while todo:
        body, stack = todo.pop()
        function = _function(stack)
        for statement in body:
            if isinstance(statement, (ast.Import, ast.ImportFrom)):
                imports.update(imported(statement, package or None))
            elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                defined.add(statement.name)
                # a method is named through its class, a nested function by its name
                classes = [n for n, _ in stack[len(_function_stack(stack)) :]]
                target = ".".join([*classes, statement.name])
                candidates.extend(
                    (d, function, target) for d in statement.decorator_list
                )
                todo.append((statement.body, (*stack, (statement.name, True))))
            elif isinstance(statement, ast.ClassDef):
                defined.add(statement.name)
                todo.append((statement.body, (*stack, (statement.name, False))))
            else:
                value = _value(statement, bound)
                if isinstance(value, ast.Call):
                    candidates.append((value, function, None))
                if not isinstance(statement, _SIMPLE):
                    todo.extend((block, stack) for block in _blocks(statement))
    imports = {k: v for k, v in imports.items() if k not in bound | defined}
    sites: list[CompileSite] = []
    columns = ByteColumns(text)
    for node, function, decorated in candidates:
        try:
            site = _site(node, function, decorated, imports, defined)
        except RecursionError:  # an attribute chain too long to name: not one
            continue
        if site is not None:
            compiler, called, target, call = site
            found = _make(path, module, function, node, compiler, called, target, call)
            sites.append(replace(found, col=columns(found.line, found.col)))
    return sorted(sites, key=lambda site: (site.line, site.col))


def _site(
    node: ast.expr,
    function: str | None,
    decorated: str | None,
    imports: dict[str, str],
    defined: set[str],
) -> tuple[str, bool, str, ast.Call | None] | None:
    """(wrapper, called, target, the wrapper's call) when ``node`` hands a function
    to an imported wrapper."""
    if decorated is not None:  # @compile_fn, @get_compile_fn("max-autotune")
        call = node if isinstance(node, ast.Call) else None
        compiler = _wrapper(call.func if call is not None else node, imports)
        return (compiler, call is not None, decorated, call) if compiler else None
    assert isinstance(node, ast.Call)
    target = node.args[0] if node.args else _keyword(node, "model")
    name = dotted(target) if target is not None else None
    if name is None:
        return None
    if isinstance(node.func, ast.Call):  # get_compile_fn(backend)(fn)
        compiler = _wrapper(node.func.func, imports)
        return (compiler, True, name, node.func) if compiler else None
    if name in defined:  # compile_fn(step), step defined here
        compiler = _wrapper(node.func, imports)
        return (compiler, False, name, None) if compiler else None
    return None


def _make(
    path: str,
    module: str,
    function: str | None,
    node: ast.expr,
    compiler: str,
    called: bool,
    target: str,
    call: ast.Call | None,
) -> CompileSite:
    positional: list[str | None] = []
    for arg in call.args if call is not None else []:
        if isinstance(arg, ast.Starred):
            break  # the positions after it are not known
        positional.append(_literal(arg))
    keywords = tuple(
        (kw.arg, _literal(kw.value))
        for kw in (call.keywords if call is not None else [])
        if kw.arg is not None
    )
    return CompileSite(
        path,
        module,
        function,
        node.lineno,
        node.col_offset,
        compiler,
        called,
        target,
        tuple(positional),
        keywords,
    )


def _wrapper(node: ast.expr, imports: dict[str, str]) -> str | None:
    """The qualified name of an imported wrapper."""
    name = dotted(node)
    if name is None:
        return None
    head, dot, rest = name.partition(".")
    base = imports.get(head)
    return f"{base}{dot}{rest}" if base is not None else None


def _function_stack(
    stack: tuple[tuple[str, bool], ...],
) -> tuple[tuple[str, bool], ...]:
    """The stack up to the innermost function."""
    last = max((i for i, (_, fn) in enumerate(stack) if fn), default=-1)
    return stack[: last + 1]


def _function(stack: tuple[tuple[str, bool], ...]) -> str | None:
    """The path of the innermost enclosing function ("Cls.method.inner")."""
    return ".".join(name for name, _ in _function_stack(stack)) or None


def _value(statement: ast.stmt, bound: set[str]) -> ast.expr | None:
    """A simple statement's value; the names it binds go to ``bound``."""
    targets: list[ast.expr] = []
    value: ast.expr | None = None
    if isinstance(statement, ast.Assign):
        targets, value = statement.targets, statement.value
    elif isinstance(statement, (ast.AnnAssign, ast.AugAssign)):
        targets, value = [statement.target], statement.value
    elif isinstance(statement, (ast.Expr, ast.Return)):
        value = statement.value
    elif isinstance(statement, (ast.For, ast.AsyncFor)):
        targets = [statement.target]
    elif isinstance(statement, (ast.With, ast.AsyncWith)):
        targets = [i.optional_vars for i in statement.items if i.optional_vars]
    for target in targets:
        for node in [target, *(target.elts if isinstance(target, ast.Tuple) else [])]:
            if isinstance(node, ast.Name):
                bound.add(node.id)
    return value


def _blocks(statement: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists inside a compound statement."""
    found = [
        block
        for name in ("body", "orelse", "finalbody")
        if isinstance(block := getattr(statement, name, None), list)
    ]
    for handler in getattr(statement, "handlers", []):
        found.append(handler.body)
    for case in getattr(statement, "cases", []):
        found.append(case.body)
    return found


def _literal(node: ast.expr) -> str | None:
    """A string written out, else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((kw.value for kw in call.keywords if kw.arg == name), None)


__all__ = ["CompileSite", "compile_sites"]
