"""Capture regions in functions the program never calls, called by the checker.

A file of helpers (a training step, a runner class, a module with no
``__main__``) runs under ``graphlint confirm`` without running its regions: every
finding there would be "not executed". Once the program has ended well, the
checker calls each function or method that holds such a region itself (one the
program called, a line of its body having run, is left alone), on stand-in
arguments chosen by what the code says of each parameter:

- its default, where it has one (nothing is passed);
- its annotation: a tensor, a module, a list of tensors, a number, ``None`` for an
  optional one;
- without one, its use in the function: called (``model(x)``) a module, stepped
  (``opt.step()``) an optimizer of that module's parameters, iterated (``for batch
  in batches``) a list of tensors, the bound of a ``range`` a number, anything else
  a tensor; a tensor copied into a buffer (``static_x.copy_(batch)``) is made like
  the buffer.

A method is called on an instance built the same way from its class's
``__init__``, then the methods of that instance that replay the graph it captured.
A function that is the one statement between ``# graphlint: capture-begin`` and
``capture-end`` comments is captured as a marked function is. A parameter none of
these settles (``opt: Optimizer``, ``kind: str``) leaves the function uncalled, and
the verdicts say why. A function of another file is called only where importing
its module runs nothing but definitions; each call may take ``CALL_LIMIT`` seconds.

What such a call can say is limited by its stand-ins (``report``): a capture that
fails as a finding predicts confirms it; one that succeeds, or fails the same way
eagerly, gives no verdict, and a failure no rule predicted is not "missed".

The targets are found statically (``targets``, torch-free, in the driver's
process); ``drive`` calls them in the run's process.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib
import inspect
import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from graphlint import comments
from graphlint.diagnostics import FileResult
from graphlint.read import package_of, source_root
from graphlint.runtime import lines, session
from graphlint.runtime.sites import Capture

STAND_IN_SHAPE = (16, 16)  # each tensor: float32, on the current CUDA device
TENSORS = 3  # the length of a list of tensors
CALL_LIMIT: float = 120  # seconds one call of the checker's may take

# What each kind of stand-in is, as the verdicts say it.
KINDS: dict[str, str] = {
    "tensor": "a random {shape} float32 CUDA tensor",
    "tensors": f"a list of {TENSORS} random {{shape}} float32 CUDA tensors",
    "module": "a module that scales its input by a learnable scalar",
    "optimizer": "an SGD optimizer of the stand-in module's parameters",
    "int": "2",
    "float": "1.0",
    "bool": "True",
    "none": "None",
}
LIKE: dict[str, str] = {  # a tensor made like the buffer the code copies it into
    "tensor": "a random tensor like `{like}`",
    "tensors": f"a list of {TENSORS} random tensors like `{{like}}`",
}
_ANNOTATED = {
    "Tensor": "tensor",
    "Module": "module",
    "int": "int",
    "float": "float",
    "bool": "bool",
    "None": "none",
}
_STEPS = {"step"}  # what code calls on an optimizer (a module has zero_grad too)
_SEQUENCES = {"list", "List", "tuple", "Tuple", "Sequence", "Iterable"}


# ---------------------------------------------------------------------------
# Static: which functions to call, and with what (the driver's process)


def targets(results: Sequence[FileResult], script: Path) -> list[dict[str, Any]]:
    """The functions to call when the program never runs their regions: those
    holding a region of ``script`` or a region its findings are reached from,
    each once, as JSON the run's settings carry (``drive``)."""
    places: dict[tuple[str, int], None] = {}
    real = os.path.realpath(script)
    for result in results:
        if os.path.realpath(result.path) != real:
            continue
        for region in result.regions:
            places[(os.path.realpath(region.path or result.path), region.line)] = None
        for d in result.diagnostics:
            if d.region is not None and d.region.cell is None and d.cell is None:
                path = os.path.realpath(d.region.path or d.path)
                places[(path, d.region.line)] = None
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for path, line in places:
        target = _target(path, line)
        if target is not None:
            found.setdefault((path, target["name"]), {**target, "regions": []})
            found[(path, target["name"])]["regions"].append(line)
    return list(found.values())


@functools.cache
def _tree(path: str) -> tuple[ast.Module, str] | None:
    """``path`` parsed, and its text; None when it cannot be read or parsed."""
    try:
        source = Path(path).read_bytes().decode("utf-8-sig")
        return ast.parse(source, filename=path), source
    except (OSError, SyntaxError, ValueError):
        return None


def _start(node: ast.stmt) -> int:
    decorators: list[ast.expr] = getattr(node, "decorator_list", [])
    return min([node.lineno, *(d.lineno for d in decorators)])


def _enclosing(
    body: Sequence[ast.stmt], line: int
) -> list[ast.ClassDef | ast.FunctionDef]:
    """The classes and the outermost function around ``line``, outside in."""
    for node in body:
        if not _start(node) <= line <= (node.end_lineno or node.lineno):
            continue
        if isinstance(node, ast.FunctionDef):
            return [node]
        if isinstance(node, ast.ClassDef):
            inner = _enclosing(node.body, line)
            return [node, *inner] if inner else []
        if isinstance(node, (ast.If, ast.Try)):  # definitions under a condition
            blocks = [node.body, node.orelse, getattr(node, "finalbody", [])]
            blocks += [h.body for h in getattr(node, "handlers", [])]
            for block in blocks:
                inner = _enclosing(block, line)
                if inner:
                    return inner
        return []
    return []


_ACCESSORS = {"property", "cached_property", "setter", "getter", "deleter"}


def _target(path: str, line: int) -> dict[str, Any] | None:
    """The function (or method) around the region at ``path:line``, with what to
    pass it; None for a region at module level or in a class body."""
    parsed = _tree(path)
    if parsed is None:
        return None
    tree, source = parsed
    chain = _enclosing(tree.body, line)
    marked = None
    if not chain:  # between capture-begin and capture-end comments: a function?
        chain, marked = _marked(tree, source, line), line
    if not chain or not isinstance(chain[-1], ast.FunctionDef):
        return None
    function = chain[-1]
    classes = [node for node in chain[:-1] if isinstance(node, ast.ClassDef)]
    decorators = {_last(d) for d in function.decorator_list}
    if decorators & _ACCESSORS or (marked and "classmethod" in decorators):
        return None
    bound = bool(classes) and "staticmethod" not in decorators
    target: dict[str, Any] = {
        "path": path,
        "name": ".".join(node.name for node in chain),
        "needs": parameters(function, skip_first=bound),
        "keywords": [a.arg for a in function.args.kwonlyargs],
        # its body: a line of it that ran means the program called it (not a
        # body on the line of its ``def``, which runs when it is defined)
        "body": _body(function),
        "init": None,
        "marked": marked,  # the line of its capture-begin comment
    }
    if classes and "staticmethod" not in decorators and "classmethod" not in decorators:
        methods = [n for n in classes[-1].body if isinstance(n, ast.FunctionDef)]
        init = next((n for n in methods if n.name == "__init__"), None)
        target["init"] = {} if init is None else _stored(init, methods)
        target["init_keywords"] = (
            [] if init is None else [a.arg for a in init.args.kwonlyargs]
        )
        # then, on the same instance, the methods that replay the graph it captures
        graphs = _graphs(function)
        target["then"] = [
            {
                "name": n.name,
                "needs": parameters(n, skip_first=True),
                "keywords": [a.arg for a in n.args.kwonlyargs],
            }
            for n in methods
            if n is not function
            and not n.name.startswith("__")
            and not n.decorator_list
            and _replays(n, graphs)
        ]
    return target


def _body(function: ast.FunctionDef) -> list[int]:
    first = _start(function.body[0])
    if first <= function.lineno:
        return []
    return [first, function.end_lineno or function.lineno]


def _marked(
    tree: ast.Module, source: str, line: int
) -> list[ast.ClassDef | ast.FunctionDef]:
    """The function a ``# graphlint: capture-begin`` comment at ``line`` marks: the
    one statement before its ``capture-end``, when it defines a function; [] for
    anything else (other statements there are the region too)."""
    end = next((e for b, e in comments.scan(source).pragmas if b == line), None)
    if end is None:
        return []
    inside = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.stmt) and line < _start(node) and node.lineno < end
    ]
    nested = {
        id(inner)
        for node in inside
        for inner in ast.walk(node)
        if inner is not node and isinstance(inner, ast.stmt)
    }
    outermost = [node for node in inside if id(node) not in nested]
    if len(outermost) != 1 or not isinstance(outermost[0], ast.FunctionDef):
        return []
    start = _start(outermost[0])
    chain = _enclosing(tree.body, start)
    return chain if chain and _start(chain[-1]) == start else []


def _stored(init: ast.FunctionDef, methods: Sequence[ast.FunctionDef]) -> Needs:
    """What ``__init__`` needs, where a parameter it keeps (``self.model =
    model``) and does not annotate is taken by the class's use of the attribute:
    ``self.model(x)`` in any method makes it a module, ``self.opt.step()`` an
    optimizer."""
    needs = parameters(init, skip_first=True)
    kept = {
        node.value.id: target.attr
        for node in ast.walk(init)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name)
        for target in node.targets
        if isinstance(target, ast.Attribute) and _is(target.value, "self")
    }
    annotated = {a.arg for a in init.args.args if a.annotation is not None}
    for name, kind in needs.items():
        if kind != "tensor" or name in annotated or name not in kept:
            continue
        uses = set()
        for method in methods:
            for node in ast.walk(method):
                if not isinstance(node, ast.Call):
                    continue
                if _self_attribute(node.func, kept[name]):
                    uses.add("module")
                elif (
                    isinstance(node.func, ast.Attribute)
                    and node.func.attr in _STEPS
                    and _self_attribute(node.func.value, kept[name])
                ):
                    uses.add("optimizer")
        needs[name] = next((k for k in ("module", "optimizer") if k in uses), kind)
    return needs


def _self_attribute(node: ast.expr, attr: str) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == attr
        and _is(node.value, "self")
    )


def _graphs(function: ast.FunctionDef) -> set[str]:
    """What ``function`` captures into, as dotted names: ``with
    torch.cuda.graph(self.graph)``, ``self.graph.capture_begin()``."""
    found: set[str] = set()
    for node in ast.walk(function):
        if not isinstance(node, ast.Call):
            continue
        if _last(node.func) == "graph" and node.args:
            found.add(_names(node.args[0]))
        elif isinstance(node.func, ast.Attribute) and node.func.attr == "capture_begin":
            found.add(_names(node.func.value))
    return found - {""}


def _replays(function: ast.FunctionDef, graphs: set[str]) -> bool:
    """Whether ``function`` replays one of ``graphs`` (``self.graph.replay()``)."""
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "replay"
        and _names(node.func.value) in graphs
        for node in ast.walk(function)
    )


Needs = dict[str, str | None]  # parameter -> the kind of its stand-in (None: none)


def parameters(function: ast.FunctionDef, skip_first: bool) -> Needs:
    """Each parameter ``function`` needs (no default, not ``*args``/``**kwargs``),
    with the kind of stand-in it gets; None where nothing settles one."""
    arguments = function.args
    positional = [*arguments.posonlyargs, *arguments.args]
    if skip_first:
        positional = positional[1:]
    with_default = positional[max(0, len(positional) - len(arguments.defaults)) :]
    needed = [a for a in positional if a not in with_default]
    needed += [
        a
        for a, default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)
        if default is None
    ]
    return {a.arg: kind_of(a, function) for a in needed}


def kind_of(argument: ast.arg, function: ast.FunctionDef) -> str | None:
    """The stand-in for ``argument``: by its annotation, else by its use. A tensor
    the function copies into a buffer (``static_x.copy_(batch)``, the way captured
    code is fed) is made like that buffer: ``"tensor like self.static_x"``."""
    kind = (
        _annotated(argument.annotation)
        if argument.annotation
        else _used(argument.arg, function)
    )
    if kind in ("tensor", "tensors"):
        like = _buffer(argument.arg, function)
        if like:
            return f"{kind} like {like}"
    return kind


def _used(name: str, function: ast.FunctionDef) -> str:
    """The stand-in for a parameter by its use: called (a module, even where its
    ``zero_grad`` comes first), stepped, iterated, a ``range`` bound, else a tensor."""
    uses = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Call) and _is(node.func, name):
            uses.add("module")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _STEPS
            and _is(node.func.value, name)
        ):
            uses.add("optimizer")
        elif isinstance(node, (ast.For, ast.comprehension)) and _is(node.iter, name):
            uses.add("tensors")
        elif (
            isinstance(node, ast.Call)
            and _is(node.func, "range")
            and any(_is(a, name) for a in node.args)
        ):
            uses.add("int")
    kinds = ("module", "optimizer", "tensors", "int")
    return next((kind for kind in kinds if kind in uses), "tensor")


def _buffer(name: str, function: ast.FunctionDef) -> str:
    """The buffer ``name`` (or each item of it) is copied into: a dotted name."""
    names = {name}
    for node in ast.walk(function):  # the loop variable over it
        if (
            isinstance(node, ast.For)
            and _is(node.iter, name)
            and isinstance(node.target, ast.Name)
        ):
            names.add(node.target.id)
    for node in ast.walk(function):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "copy_"
            and node.args
            and isinstance(node.args[0], ast.Name)
            and node.args[0].id in names
        ):
            return _names(node.func.value)
    return ""


def _names(node: ast.expr) -> str:
    """``self.static_x``: a dotted name, nothing called; "" for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _names(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    return ""


def _is(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _annotated(annotation: ast.expr) -> str | None:
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:  # a postponed annotation: "torch.Tensor"
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return None
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        sides = (annotation.left, annotation.right)
        if any(isinstance(s, ast.Constant) and s.value is None for s in sides):
            return "none"  # X | None: optional
        return None
    if isinstance(annotation, ast.Subscript):
        outer = _last(annotation.value)
        if outer == "Optional":
            return "none"
        inner = annotation.slice
        if isinstance(inner, ast.Tuple) and inner.elts:
            inner = inner.elts[0]
        if outer in _SEQUENCES and _annotated(inner) == "tensor":
            return "tensors"
        return None
    if isinstance(annotation, ast.Constant) and annotation.value is None:
        return "none"
    return _ANNOTATED.get(_last(annotation))


def _last(node: ast.expr) -> str:
    """The name a dotted name, or a call of one, ends with: ``graph`` of
    ``torch.cuda.graph``, ``no_grad`` of ``@torch.no_grad()``; "" for others."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else ""


def described(needs: dict[str, str | None]) -> str:
    """``model``: a module ..., ``x``: a random 16x16 float32 CUDA tensor."""
    shape = "x".join(map(str, STAND_IN_SHAPE))
    said = []
    for name, kind in needs.items():
        if kind is None:
            continue
        kind, _, like = kind.partition(" like ")
        text = LIKE[kind].format(like=like) if like else KINDS[kind]
        said.append(f"`{name}`: {text.format(shape=shape)}")
    return ", ".join(said)


def _missing(needs: dict[str, str | None]) -> str | None:
    return next((name for name, kind in needs.items() if kind is None), None)


# ---------------------------------------------------------------------------
# In the run: call them (torch is imported by then)


def drive(namespace: dict[str, Any], script: str) -> None:
    """Call each target of this run's settings that the program never called
    (``namespace``: the script's globals, where a target of its own file lives).
    A capture that fails stops the run, as the program's own would
    (``session.StopRun``); any other error is the call's, and said; a call that
    runs past ``CALL_LIMIT`` seconds is stopped and said so."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available():
        return
    for target in session.settings().get("drive", []):
        if _called(target):
            continue
        note = _call(target, namespace, script, torch)
        for line in target["regions"]:
            session.DRIVEN[f"{target['path']}:{line}"] = note


def _called(target: dict[str, Any]) -> bool:
    """Whether the program called ``target`` (a line of its body ran) or ran one
    of its regions; a function compiled at import and never called is
    ``compiled.drive``'s to call."""
    path = target["path"]
    if target["body"]:
        first, last = target["body"]
        if any((path, line) in lines.EXECUTED for line in range(first, last + 1)):
            return True
    return any(
        (site.calls or site.kind is Capture.COMPILED) and site.covers(path, line)
        for site in session.SITES.values()
        for line in target["regions"]
    )


class _Said:
    """What a call did, as the verdicts say it, growing as the call goes."""

    def __init__(self, name: str) -> None:
        self.text = f"`{name}` is never called by the program"


class _Late(Exception):
    """A call of the checker's ran past ``CALL_LIMIT`` seconds."""


def _call(
    target: dict[str, Any], namespace: dict[str, Any], script: str, torch: Any
) -> str:
    """Call ``target`` (then, on the same instance, the methods that replay what
    it captured); what it did, as a verdict's note says it."""
    from graphlint.runtime.attribution import first_line  # noqa: PLC0415

    name = target["name"]
    said = _Said(name)
    init = target["init"]
    cls = name.rsplit(".", 1)[0]
    for needs, of in ((target["needs"], name), (init or {}, f"{cls}.__init__")):
        missing = _missing(needs)
        if missing is not None:
            said.text += (
                ", and graphlint confirm has no stand-in for its parameter "
                f"`{missing}` (of `{of}`)"
            )
            return said.text
    how = described(target["needs"])
    said.text += ": graphlint confirm called it " + (
        f"on stand-ins ({how})" if how else "with no arguments"
    )
    if init:
        said.text += f", on a `{cls}` built with {described(init)}"
    before = {key: site.calls for key, site in session.SITES.items()}
    try:
        with _limit():
            _calls(target, namespace, script, torch, said)
    except (session.StopRun, KeyboardInterrupt):
        _mark(before, said.text)
        raise
    except BaseException as error:  # the call's own: the run goes on
        from graphlint.runtime.capture import fail_open  # noqa: PLC0415 - torch

        if fail_open(error):  # between capture_begin() and capture_end()
            _mark(before, said.text)
            raise session.StopRun from error
        if isinstance(error, _Late):
            said.text += f", which was stopped after {CALL_LIMIT} s"
        else:
            said.text += f", which failed ({first_line(error)})"
    _mark(before, said.text)
    return said.text


@contextlib.contextmanager
def _limit() -> Iterator[None]:
    """``CALL_LIMIT`` seconds for what is inside, where the process can tell
    (a Unix main thread): a loop that never ends is the call's, not the run's."""
    if not hasattr(signal, "setitimer") or (
        threading.current_thread() is not threading.main_thread()
    ):
        yield
        return

    def late(signum: int, frame: object) -> None:
        raise _Late

    previous = signal.signal(signal.SIGALRM, late)
    signal.setitimer(signal.ITIMER_REAL, CALL_LIMIT)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _calls(
    target: dict[str, Any],
    namespace: dict[str, Any],
    script: str,
    torch: Any,
    said: _Said,
) -> None:
    scope = _scope(target["path"], namespace, script)
    first, *rest = target["name"].split(".")
    if first not in scope:
        raise LookupError(f"`{first}` is not defined once the script has ended")
    found = scope[first]
    for part in rest[:-1]:
        found = getattr(found, part)
    owner = None
    if target["init"] is not None:  # a method: on an instance
        keywords = target.get("init_keywords", [])
        owner = _invoke(found, target["init"], keywords, torch, None, scope)
        if rest[-1] == "__init__":  # building it was the call
            torch.cuda.synchronize()
            return
        found = owner
    function = getattr(found, rest[-1]) if rest else found
    if target.get("marked"):  # captured as a marked function is
        from graphlint.runtime.capture import FunctionProbe  # noqa: PLC0415

        raw = inspect.unwrap(getattr(function, "__func__", function))
        probe = FunctionProbe(raw, first=target["marked"])
        function = probe if owner is None else probe.__get__(owner)
    _invoke(function, target["needs"], target["keywords"], torch, owner, scope)
    torch.cuda.synchronize()
    for then in target.get("then") or ():
        if _missing(then["needs"]) is not None:
            continue
        how = described(then["needs"])
        said.text += f", then `{then['name']}`" + (
            f" on stand-ins ({how})" if how else ""
        )
        method = getattr(owner, then["name"])
        _invoke(method, then["needs"], then["keywords"], torch, owner, scope)
        torch.cuda.synchronize()


def _invoke(
    function: Any,
    needs: dict[str, str | None],
    keywords: Sequence[str],
    torch: Any,
    owner: Any,
    scope: dict[str, Any],
) -> Any:
    """``function`` called on stand-ins: by position, but for keyword-only ones."""
    made = _stand_ins(needs, torch, owner, scope)
    positional = [value for name, value in made.items() if name not in keywords]
    named = {name: value for name, value in made.items() if name in keywords}
    return function(*positional, **named)


def _mark(before: dict[str, int], said: str) -> None:
    """Tell each site the call reached, and the program never did, that it ran on
    stand-ins."""
    for key, site in session.SITES.items():
        if site.calls and not before.get(key, 0) and not site.driven:
            site.driven = said


def _scope(path: str, namespace: dict[str, Any], script: str) -> dict[str, Any]:
    """The globals ``path``'s functions live in: the script's, or its module's,
    imported, when importing it runs nothing but definitions (a module that trains
    at import is not imported)."""
    if path == os.path.realpath(script):
        return namespace
    parsed = _tree(path)
    if parsed is None or not _quiet(parsed[0]):
        raise ImportError(f"{Path(path).name} runs code when imported")
    root = str(source_root(Path(path)))
    if root not in sys.path:
        sys.path.insert(0, root)
    package = package_of(Path(path))
    stem = Path(path).stem
    if package is None:
        module = stem
    else:
        module = package if stem == "__init__" else f"{package}.{stem}"
    return vars(importlib.import_module(module))


_DEFINING = (
    ast.Import,
    ast.ImportFrom,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Assign,
    ast.AnnAssign,
    ast.Pass,
)


def _quiet(tree: ast.Module) -> bool:
    """Whether a module does nothing at import but define: imports, functions,
    classes, assignments, docstrings, ``if``/``try`` of those, and an ``if
    __name__ == "__main__":`` block (which an import skips)."""

    def quiet(body: Sequence[ast.stmt]) -> bool:
        for node in body:
            if isinstance(node, _DEFINING):
                continue
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
                continue
            if isinstance(node, ast.If):
                if _is(getattr(node.test, "left", node.test), "__name__"):
                    continue  # the main block
                if quiet(node.body) and quiet(node.orelse):
                    continue
            if isinstance(node, ast.Try) and all(
                quiet(block)
                for block in (
                    node.body,
                    node.orelse,
                    node.finalbody,
                    *(h.body for h in node.handlers),
                )
            ):
                continue
            return False
        return True

    return quiet(tree.body)


def _stand_ins(
    needs: dict[str, str | None], torch: Any, owner: Any, scope: dict[str, Any]
) -> dict[str, Any]:
    """A stand-in for each parameter; an optimizer steps the parameters of the
    module passed beside it (or of a module of its own)."""
    made = {
        name: _stand_in(kind, torch, owner, scope)
        for name, kind in needs.items()
        if kind != "optimizer"
    }
    modules = [m for m in made.values() if isinstance(m, torch.nn.Module)]
    for name, kind in needs.items():
        if kind == "optimizer":
            module = modules[0] if modules else _scale(torch)().cuda()
            made[name] = torch.optim.SGD(module.parameters(), lr=0.1)
    return {name: made[name] for name in needs}


def _stand_in(kind: str | None, torch: Any, owner: Any, scope: dict[str, Any]) -> Any:
    kind, _, like = (kind or "").partition(" like ")
    if kind in ("tensor", "tensors"):
        model = _buffer_of(like, owner, scope, torch) if like else None
        made = [_tensor(model, torch) for _ in range(TENSORS)]
        return made[0] if kind == "tensor" else made
    if kind == "module":
        return _scale(torch)().cuda()
    return {"int": 2, "float": 1.0, "bool": True}.get(kind)


def _buffer_of(like: str, owner: Any, scope: dict[str, Any], torch: Any) -> Any:
    """The tensor ``like`` names (``self.x`` on the instance, else a global), read
    by attributes only; None when it names none."""
    first, *rest = like.split(".")
    found = owner if first == "self" else scope.get(first)
    for part in rest:
        found = getattr(found, part, None)
    return found if isinstance(found, torch.Tensor) else None


def _tensor(model: Any, torch: Any) -> Any:
    if model is None:
        return torch.randn(*STAND_IN_SHAPE, device="cuda")
    if model.is_floating_point():
        return torch.randn_like(model)
    return torch.zeros_like(model)


@functools.cache
def _scale(torch: Any) -> type:
    class Scale(torch.nn.Module):  # type: ignore[misc]
        """Any input, times a learnable scalar: works for every shape."""

        def __init__(self) -> None:
            super().__init__()
            self.weight = torch.nn.Parameter(torch.ones(()))

        def forward(self, x: Any, *args: Any, **kwargs: Any) -> Any:
            return x * self.weight

    return Scale
