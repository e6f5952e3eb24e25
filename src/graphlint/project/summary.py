"""Phase one of the project analysis: a small summary of one module, from ``ast``.

A summary holds what call resolution needs and nothing else: imports, functions
(with the calls they make and what their local names hold), classes (bases, methods,
``self.`` attributes) and module-level names. It is computed from CPython's ``ast``
(about ten times cheaper than LibCST), independently per file, and is cached by
content hash. Phase two (``graphlint.project.reach``) resolves calls across
summaries; only the files a capture region reaches are then analysed with LibCST.
"""

from __future__ import annotations

import ast
import bisect
import builtins
import contextlib
import copy
import functools
import itertools
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from graphlint.columns import ByteColumns, lines_with_breaks
from graphlint.diagnostics import Diagnostic, shorten
from graphlint.facts import guards
from graphlint.facts.torchapi import (
    CPU_FACTORIES,
    CUDAGRAPHS_OPTION,
    FACTORIES,
    HYPERPARAMETERS,
    MODULE_SELF_METHODS,
    NEVER_NONE_BUILTINS,
    NEVER_NONE_GENERICS,
    STREAM_CONTEXTS,
    cudagraph_keyword,
    returns_tensor,
)
from graphlint.read import (
    RUNNING,
    Version,
    decode,
    prescreen,
    skip_statements,
    too_deep,
    tool_diagnostic,
)
from graphlint.tool_codes import ParserLimitExceeded


@dataclass(frozen=True)
class Ref:
    """What a name holds, symbolically, to be resolved in phase two.

    ``kind`` is "instance" (of the class ``target`` names, with ``items`` for
    containers such as ``nn.Sequential(Block(), Block())``), "declared" (an instance
    of that class or of one derived from it: a parameter annotated with the class),
    "name" (whatever the dotted name ``target`` is: a function, a class, another
    variable), "items" (a list, tuple or dict of ``items``), "calls" (a lambda:
    calling it runs what ``items`` name) or "element" (what iterating ``items[0]``
    yields). The resolver makes two more: "either" (one of ``items``) and "scoped"
    (``items[0]`` as the function ``target`` of the same module sees it).
    An instance also keeps the arguments it was built with (``Arguments``): they
    are what its ``__init__``'s parameters hold (``Wrapper(step)``). A callee of a
    lambda's call keeps the call's ``line``: the enclosing function's summary
    records the call (``CallSite``), with what it passes.
    """

    kind: str
    target: str = ""
    items: tuple[Ref, ...] = ()
    arguments: Arguments | None = None
    line: int = 0


@dataclass(frozen=True)
class Arguments:
    """What a call passes that may be project code, by position (None: a value
    that is not, or after a ``*args``) and by keyword."""

    positional: tuple[Ref | None, ...] = ()
    keywords: tuple[tuple[str, Ref], ...] = ()


def arguments_of(call: ast.Call) -> Arguments | None:
    """The arguments of a call as ``Arguments``; None when none may be project
    code."""
    return _arguments(call, *_argument_refs(call))


def _argument_refs(
    call: ast.Call,
) -> tuple[list[Ref | None], list[tuple[str | None, Ref | None]]]:
    """The refs of a call's positional and keyword arguments, each computed once
    (nested calls would otherwise be summarised once per use, exponentially)."""
    positional = [
        ref_of(a.value if isinstance(a, ast.Starred) else a) for a in call.args
    ]
    keywords = [(kw.arg, ref_of(kw.value)) for kw in call.keywords]
    return positional, keywords


def _arguments(
    call: ast.Call,
    refs: list[Ref | None],
    keyword_refs: list[tuple[str | None, Ref | None]],
) -> Arguments | None:
    positional: list[Ref | None] = []
    for arg, ref in zip(call.args, refs, strict=True):
        if isinstance(arg, ast.Starred):  # the positions after it are unknown
            break
        positional.append(ref)
    while positional and positional[-1] is None:
        positional.pop()
    keywords = tuple(
        (name, ref)
        for name, ref in keyword_refs
        if name is not None and ref is not None
    )
    if not positional and not keywords:
        return None
    return Arguments(tuple(positional), keywords)


# What an argument is, as far as None goes: the literal None, a value that cannot be
# None, the caller's parameter as it was passed (``CALLER + name``), an instance of
# whatever class the dotted name after ``NEW`` is (``Config(...)``), an attribute
# that the class of the object before it declares not None (``FIELD + "meta.grid"``),
# or anything else. The project pass resolves the names. Codes joined by ``OR``: the
# argument is one of them (a name bound several times).
NONE, SOME, CALLER, NEW, FIELD, MAYBE, OR = "none", "some", "=", "()", ".", "", "|"
TRUE, FALSE = "true", "false"  # the constants: not None, and a known truth
# a value that is None exactly when a test fails (``WHEN``: ``x if test else None``)
# or holds (``UNLESS``: ``None if test else x``), followed by the test's text
WHEN, UNLESS = "?", "!"


@dataclass(frozen=True)
class Nullness:
    """Whether a call's arguments may be None, by position and by keyword (the
    codes above); ``open`` when it passes ``*args`` or ``**kwargs``, which may
    fill any parameter it does not name."""

    positional: tuple[str, ...] = ()
    keywords: tuple[tuple[str, str], ...] = ()
    open: bool = False


@dataclass(frozen=True)
class CallSite:
    line: int
    col: int
    callee: str  # dotted, as written: "self.att", "block", "mod.fn"
    # conditions the call runs under, as encoded guard formulas (``facts.guards``):
    # only those that call something, which may be a capture check
    guards: tuple[str, ...] = ()
    # the callee is not a dotted name (``self.layers[i](x)``, ``make()(x)``):
    # ``callee`` is its source, shortened, and the call cannot be followed
    computed: bool = False
    # what it passes (``step(model, loss_fn)``): what the callee's parameters hold
    arguments: Arguments | None = None
    # whether what it passes may be None (None: a call without arguments)
    nullness: Nullness | None = None
    # made in a block that settles its own test (``if self.mgr is None: self.mgr =
    # Manager()``, ``if key not in memo: memo[key] = fn(*args)``): warm-up runs it
    # and leaves the test false, so the capture does not (``_settles``)
    settled: bool = False
    # the arguments that are tensors made on the host (``torch.tensor([k])`` with no
    # device, or a local bound once to one), by position up to a ``*args`` and by
    # keyword; and those made on the GPU (``torch.zeros(n, device="cuda")``,
    # ``x.cuda()``)
    host: tuple[str, ...] = ()
    device: tuple[str, ...] = ()


@dataclass(frozen=True)
class Store:
    """A value written to an attribute of an object other than the method's own
    ``self`` (``config.finalize_func = finalize``): a callable installed where a
    call of that attribute elsewhere, on an object the resolver cannot type, may
    find it. ``written``: the target as written, for the chain."""

    ref: Ref
    line: int
    col: int
    written: str


@dataclass
class Blocks:
    """The loops and side-stream blocks (``with torch.cuda.stream(s):``) of a
    function's own code, each as its first and last line: a call of a function that
    captures runs after a warm-up when one of them holds it or, of a side stream,
    ends before it."""

    loops: list[tuple[int, int]] = field(default_factory=list)
    streams: list[tuple[int, int]] = field(default_factory=list)


@dataclass(eq=False)
class FunctionSummary:
    path: str  # "fn", "Cls.method", "outer.inner"
    line: int
    calls: list[CallSite] = field(default_factory=list)
    names: dict[str, list[Ref]] = field(default_factory=dict)  # locals
    decorators: list[str] = field(default_factory=list)
    # what it returns, when its body is one ``return`` of a test that calls
    # something (``return torch.cuda.is_current_stream_capturing()``): an encoded
    # guard formula, so that callers can tell a capture check
    returns: str = ""
    params: list[str] = field(default_factory=list)  # argument names
    # names it declares ``global``: its bindings of them are the module's, which
    # hold what the module binds too (``global fwd; fwd = torch.compile(fwd)``
    # compiles the function ``fwd`` the module imports)
    shared: list[str] = field(default_factory=list)
    # local names bound, somewhere, to a value ``names`` does not model (``h = x +
    # y``, ``a, b = f()``, a parameter without a class annotation)
    untracked: list[str] = field(default_factory=list)
    positional: int = 0  # how many of them can be passed by position
    defaults: dict[str, str] = field(default_factory=dict)  # string defaults
    # compile wrappers, one entry per ``return`` (see ``Compiler``): what calling
    # the function on another compiles it with (``def wrap(m): return
    # torch.compile(m, mode=...)``), and what calling it returns
    # (``get_compile_fn(backend)`` returning ``partial(torch.compile, ...)``)
    compiles: list[str] = field(default_factory=list)
    returns_compiler: list[str] = field(default_factory=list)
    # the named parameters (not ``*args``, ``**kwargs``) with what a call that omits
    # one passes, as far as None goes (NONE, SOME or MAYBE: no default, or another)
    omitted: dict[str, str] = field(default_factory=dict)
    # those whose annotation rules None out: SOME, or the dotted name of what may be
    # a class (``cfg: Config``), which the project pass resolves
    annotated: dict[str, str] = field(default_factory=dict)
    # the parameters it tests for None (``if grid is None:``) before rebinding them,
    # and the line from which a parameter may no longer hold what was passed
    tested: list[str] = field(default_factory=list)
    rebound: dict[str, int] = field(default_factory=dict)
    # what calling it gives, where every ``return`` gives something the summaries
    # model (``return forward_backward_no_pipelining``, a local bound to functions,
    # ``return Spec(module=Layer)``, ``return REGISTRY[name]``): those, resolved in
    # the function; empty when one returns anything else
    results: list[Ref] = field(default_factory=list)
    # the line of the statement making each binding in ``names``, in its order
    bound_at: dict[str, list[int]] = field(default_factory=dict)
    # what calling it gives that comes from what it is passed, where some ``return``
    # calls a parameter or an attribute of one (a factory: ``return cls(*args)``,
    # ``module = spec.module; return module(**kwargs)``): "spec.module()" (an
    # instance made by calling it), "spec.module" (returned as passed)
    made: list[str] = field(default_factory=list)
    # what it sets a hyper-parameter of (``group["lr"] = v`` over ``x.param_groups``):
    # the parameter or ``self.`` attribute holding each such optimizer, with the
    # line of the first such write
    sets_hyperparameters: dict[str, int] = field(default_factory=dict)
    # the class its return annotation names (``-> MegatronOptimizer``), if any
    returns_class: str = ""
    # callables it installs on other objects, by attribute name (``Store``)
    stores: dict[str, list[Store]] = field(default_factory=dict)
    # what may warm up a capture its calls make (``project.warmup``)
    blocks: Blocks = field(default_factory=Blocks)


@dataclass(eq=False)
class ClassSummary:
    name: str
    bases: list[str]
    methods: dict[str, str] = field(default_factory=dict)  # name -> function path
    attrs: dict[str, list[Ref]] = field(default_factory=dict)
    # the method and line of the statement making each binding in ``attrs``
    attrs_at: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    # ``self.`` attributes bound to a value ``attrs`` does not model
    untracked: list[str] = field(default_factory=list)
    # attributes declared in the class body with an annotation that rules None out
    # (a dataclass field ``grid: Tuple[int, ...]``): SOME or a class name, as for
    # ``FunctionSummary.annotated``
    fields: dict[str, str] = field(default_factory=dict)
    # ``self.`` attributes that the set-up settles: ``if self.a is None: self.a = v``
    # in ``__init__`` or a method it calls, and no method but ``__init__`` sets
    # them to None again
    settled: list[str] = field(default_factory=list)
    # a dataclass's fields, in order (its ``__init__``'s parameters), with the
    # defaults that may be project code
    dataclass: list[str] = field(default_factory=list)
    defaults: dict[str, Ref] = field(default_factory=dict)
    # the properties that return one expression, with its text (``dp_size`` ->
    # ``self.config.size``): a test in a subclass elsewhere is written out with them
    properties: dict[str, str] = field(default_factory=dict)


@dataclass(eq=False)
class ModuleSummary:
    name: str  # dotted module name
    path: str
    imports: dict[str, str] = field(default_factory=dict)  # local name -> qualified
    functions: dict[str, FunctionSummary] = field(default_factory=dict)
    classes: dict[str, ClassSummary] = field(default_factory=dict)
    names: dict[str, list[Ref]] = field(default_factory=dict)  # module level
    calls: list[CallSite] = field(default_factory=list)  # module-level code
    # module-level names bound to a CUDA-graph compiler (``compile_fn =
    # functools.partial(torch.compile, mode="reduce-overhead")``): their labels
    compilers: dict[str, str] = field(default_factory=dict)
    # callables module-level code installs on other objects (``Store``)
    stores: dict[str, list[Store]] = field(default_factory=dict)
    blocks: Blocks = field(default_factory=Blocks)  # of module-level code
    # it imports relatively (``from . import x``): its imports depend on its name;
    # else only ``name`` does (``renamed``)
    relative: bool = False

    def renamed(self, name: str) -> ModuleSummary | None:
        """The summary of the same file under another module name (a file in a
        namespace package is ``core.x`` from one source root, ``megatron.core.x``
        from another), where only ``name`` differs: without relative imports."""
        return None if self.relative else replace(self, name=name)


def dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr}" if base is not None else None
    literal = _getattr_literal(node)
    if literal is not None:  # ``getattr(self, "helper")`` is ``self.helper``
        return literal
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "super"
        and not node.args
    ):
        return "super()"
    return None


def _getattr_literal(node: ast.expr) -> str | None:
    """``obj.name`` for ``getattr(obj, "name")`` (with or without a default)."""
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "getattr"
        and len(node.args) in (2, 3)
        and not node.keywords
    ):
        return None
    name = node.args[1]
    if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
        return None
    base = dotted(node.args[0])
    if base is None or not name.value.isidentifier():
        return None
    return f"{base}.{name.value}"


# the values an attribute write records (``Store``): those that may be a callback
# (a function or bound method by name, a lambda)
_STORED = frozenset({"name", "calls"})


def ref_of(node: ast.expr) -> Ref | None:
    """What an expression evaluates to, symbolically (None: nothing callable)."""
    literal = _getattr_literal(node)
    if literal is not None:
        return Ref("name", literal)
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in MODULE_SELF_METHODS:
            inner = ref_of(func.value)
            if inner is not None and inner.kind == "instance":
                return inner  # model.cuda() is the model
        target = dotted(func)
        if target is None:
            return None
        refs, keyword_refs = _argument_refs(node)
        items = list(refs)
        for arg, ref in zip(node.args, refs, strict=True):  # nn.ModuleList([...])
            if isinstance(arg, (ast.List, ast.Tuple, ast.Dict)) and ref is not None:
                items.extend(ref.items)
        if target == "dict":  # dict(wte=nn.Embedding(...), h=nn.ModuleList(...))
            items.extend(ref for _, ref in keyword_refs)
        members = tuple(i for i in items if i is not None)
        arguments = _arguments(node, refs, keyword_refs)
        return Ref("instance", target, members, arguments)
    if isinstance(node, (ast.Name, ast.Attribute)):
        target = dotted(node)
        return Ref("name", target) if target is not None else None
    if isinstance(node, (ast.List, ast.Tuple)):
        members = tuple(r for r in (ref_of(el) for el in node.elts) if r is not None)
        return Ref("items", items=members) if members else None
    if isinstance(node, ast.Dict):  # ``{"fwd": step, "bwd": backward}``
        members = tuple(r for r in (ref_of(v) for v in node.values) if r is not None)
        return Ref("items", items=members) if members else None
    if isinstance(node, ast.Lambda):  # calling it runs what its body calls
        calls = _lambda_calls(node)
        return Ref("calls", items=calls) if calls else None
    if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
        inner = ref_of(node.elt)
        return Ref("items", items=(inner,)) if inner is not None else None
    if isinstance(node, ast.Subscript):
        inner = ref_of(node.value)
        return Ref("element", items=(inner,)) if inner is not None else None
    return None


def _lambda_calls(node: ast.Lambda) -> tuple[Ref, ...]:
    """The callees of the calls in a lambda's body, by name (not those of its own
    parameters, whose values come from its callers)."""
    own = {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
    found: list[Ref] = []
    for inner in ast.walk(node.body):
        if isinstance(inner, ast.Call):
            callee = dotted(inner.func)
            if callee is not None and callee.split(".")[0] not in own:
                found.append(Ref("name", callee, line=inner.lineno))
    return tuple(dict.fromkeys(found))


# each node type's method of ``_Summarizer`` (``_Summarizer.visit``)
_VISITS: dict[type[ast.AST], Callable[[Any, Any], None]] = {}


class _Summarizer(ast.NodeVisitor):
    def __init__(self, module: ModuleSummary, package: str | None) -> None:
        self.module = module
        self.package = package
        self.stack: list[str] = []  # enclosing class and function names
        self.functions: list[FunctionSummary] = []
        self.classes: list[ClassSummary | None] = []  # per stack entry
        self.guards: list[str] = []
        # the enclosing functions, and (computed when a test needs them) their
        # names assigned exactly once, with their values
        self.enclosing: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
        self._bindings: dict[ast.AST, _Bindings] = {}
        # the lines where a ``:=`` starts, in order (summarize says)
        self.walrus: Sequence[int] = ()
        self.param_groups = True  # ... and name an optimizer's ``param_groups``
        self.shares = True  # ... and say ``global`` or ``nonlocal``
        self._deferred = 0  # inside a lambda: runs later, when called
        self._settled = 0  # inside blocks that settle their own test
        self._shared: dict[ast.AST, set[str]] = {}  # ``global``/``nonlocal`` names
        self._aliases: dict[str, ast.expr] = {}  # module-level ``Name = value``
        self.line = 0  # of the statement being summarised
        self._class_nodes: list[ast.ClassDef] = []  # the enclosing classes
        self._class_named: dict[str, ast.ClassDef] = {}  # the module's, by name
        self._properties: dict[ast.ClassDef, dict[str, ast.expr]] = {}
        self.columns = ByteColumns("")  # CPython's byte offsets to code points

    # -- definitions -----------------------------------------------------------------
    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        name = ".".join([*self.stack, node.name])
        bases = [b for b in (dotted(base) for base in node.bases) if b is not None]
        summary = ClassSummary(
            name, bases, settled=_settled_attributes(node), properties=_properties(node)
        )
        if any(self._is_dataclass(d) for d in node.decorator_list):
            summary.dataclass, summary.defaults = _fields(node)
        self.module.classes[name] = summary
        self.bind(node.name, Ref("name", name))
        self.stack.append(node.name)
        self.classes.append(summary)
        self._class_nodes.append(node)
        self._class_named.setdefault(name, node)
        self.block(node.body)
        self._class_nodes.pop()
        self.classes.pop()
        self.stack.pop()

    def _is_dataclass(self, decorator: ast.expr) -> bool:
        """``@dataclass``, ``@dataclasses.dataclass(frozen=True)``."""
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        name = dotted(target)
        return name is not None and (self.qualify(target) or name) in _DATACLASS

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        path = ".".join([*self.stack, node.name])
        summary = FunctionSummary(path, node.lineno)
        arguments = node.args
        every = [
            *arguments.posonlyargs,
            *arguments.args,
            *arguments.kwonlyargs,
            *(x for x in (arguments.vararg, arguments.kwarg) if x is not None),
        ]
        summary.params = [a.arg for a in every]
        if self.shares:
            summary.shared = _declared(node.body, (ast.Global,))
        summary.positional = len(arguments.posonlyargs) + len(arguments.args)
        positional = [*arguments.posonlyargs, *arguments.args]
        defaults: dict[str, ast.expr | None] = dict.fromkeys(
            a.arg for a in [*positional, *arguments.kwonlyargs]
        )
        for arg, default in [
            *zip(
                positional[len(positional) - len(arguments.defaults) :],
                arguments.defaults,
                strict=True,
            ),
            *zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True),
        ]:
            defaults[arg.arg] = default
            if isinstance(default, ast.Constant) and isinstance(default.value, str):
                summary.defaults[arg.arg] = default.value
        for arg in [*positional, *arguments.kwonlyargs]:
            default = defaults[arg.arg]
            omitted = _nullness(default) if default is not None else MAYBE
            summary.omitted[arg.arg] = omitted
            # ``x: Tensor = None`` is Optional all the same
            rules_out = self.annotation(arg.annotation) if omitted != NONE else MAYBE
            if rules_out != MAYBE:
                summary.annotated[arg.arg] = rules_out
        for arg in every:  # ``model: Transformer`` holds an instance of it
            annotated = _annotated_class(arg.annotation)
            if annotated is not None:  # ... or of a class derived from it
                summary.names.setdefault(arg.arg, []).append(Ref("declared", annotated))
                summary.bound_at.setdefault(arg.arg, []).append(node.lineno)
            else:
                summary.untracked.append(arg.arg)
        summary.returns_class = _annotated_class(node.returns) or ""
        summary.decorators = [
            d
            for d in (
                dotted(dec.func if isinstance(dec, ast.Call) else dec)
                for dec in node.decorator_list
            )
            if d is not None
        ]
        owner = self.classes[-1] if self.classes else None
        if owner is not None:
            owner.methods[node.name] = path
        else:
            self.bind(node.name, Ref("name", path))
        self.module.functions[path] = summary
        for dec in node.decorator_list:
            self.visit(dec)
        self.stack.append(node.name)
        self.classes.append(None)
        self.functions.append(summary)
        saved, self.guards = self.guards, []
        settled, self._settled = self._settled, 0  # a call of it runs it anew
        self.enclosing.append(node)
        returns = _returned(node)
        results = [ref_of(r) for r in returns]
        if all(r is not None for r in results):
            summary.results = [r for r in results if r is not None]
        summary.made = _made(returns, summary.params, self._bound(node))
        if self.param_groups:
            summary.sets_hyperparameters = _sets_hyperparameters(node)
        returned = _only_return(node.body)
        if returned is not None:
            test = formula(returned, self.local)
            if guards.mentions_call(test):
                summary.returns = guards.encode(test)
        self.block(node.body)
        summary.untracked = list(dict.fromkeys(summary.untracked))
        bindings = self._bindings.get(node)
        rebound = bindings.first if bindings is not None else {}
        summary.rebound = {p: rebound[p] for p in summary.tested if p in rebound}
        if owner is None:  # methods are not followed as compile wrappers
            self.compile_facts(returns, summary)
        self.enclosing.pop()
        self.guards = saved
        self._settled = settled
        self.functions.pop()
        self.classes.pop()
        self.stack.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._deferred += 1
        self.generic_visit(node)  # calls in a lambda count for the enclosing code
        self._deferred -= 1

    # -- names -----------------------------------------------------------------------
    def bind(self, name: str, ref: Ref) -> None:
        if self.functions:
            fn = self.functions[-1]
            fn.names.setdefault(name, []).append(ref)
            fn.bound_at.setdefault(name, []).append(self.line)
        else:
            self.module.names.setdefault(name, []).append(ref)

    def assign(self, target: ast.expr, value: ast.expr | None) -> None:
        ref = ref_of(value) if value is not None else None
        if isinstance(target, ast.Name) and ref is not None:
            self.bind(target.id, ref)
        elif isinstance(target, ast.Name):
            self.untracked(target.id)
        elif isinstance(target, ast.Attribute):
            cls = self.method_class()
            if cls is not None and dotted(target.value) == "self":
                if ref is not None:
                    cls.attrs.setdefault(target.attr, []).append(ref)
                    at = (self.functions[-1].path, self.line)
                    cls.attrs_at.setdefault(target.attr, []).append(at)
                elif target.attr not in cls.untracked:
                    cls.untracked.append(target.attr)
            elif ref is not None and ref.kind in _STORED:
                self.store(target, ref)
        elif isinstance(target, (ast.Tuple, ast.List, ast.Starred)):
            elements = target.elts if not isinstance(target, ast.Starred) else [target]
            for element in elements:
                self.assign(
                    element.value if isinstance(element, ast.Starred) else element,
                    None,
                )

    def store(self, target: ast.Attribute, ref: Ref) -> None:
        """``obj.attr = value`` of a value that may be project code (``Store``)."""
        written = dotted(target) or f"(...).{target.attr}"
        col = self.columns(target.lineno, target.col_offset)
        store = Store(ref, target.lineno, col, written)
        where = self.functions[-1].stores if self.functions else self.module.stores
        where.setdefault(target.attr, []).append(store)

    def untracked(self, name: str) -> None:
        """A local bound to a value that is not modelled (kept to say why a call of
        it is not followed)."""
        if self.functions:
            self.functions[-1].untracked.append(name)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Store):  # ``for``/``with`` targets, ``:=``
            self.untracked(node.id)

    def method_class(self) -> ClassSummary | None:
        """The class of the method being summarised (``self`` is its instance)."""
        if len(self.classes) >= 2 and self.classes[-1] is None:
            return self.classes[-2]
        return None

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self.assign(target, node.value)
            self.field(target)
            if isinstance(target, ast.Name) and not self.stack:
                self._aliases[target.id] = node.value
                label = self.compiler(node.value, None)
                if label.startswith(Compiler.LABEL):
                    self.module.compilers[target.id] = label
                else:
                    self.module.compilers.pop(target.id, None)
        self.visit(node.value)

    # -- compile wrappers --------------------------------------------------------------
    def qualify(self, node: ast.expr) -> str | None:
        """The qualified name of an imported name (``partial`` ->
        ``functools.partial``); None for anything not imported."""
        name = dotted(node)
        if name is None:
            return None
        head, dot, rest = name.partition(".")
        base = self.module.imports.get(head)
        return f"{base}{dot}{rest}" if base is not None else None

    def compile_facts(self, returns: list[ast.expr], summary: FunctionSummary) -> None:
        """What the function compiles its first argument with, and what compiler it
        returns, per ``return`` (``returns``: what they give)."""
        returned = [self.local_value(r) for r in returns]
        params = summary.params[: summary.positional]
        if params:
            summary.compiles = [_compiles(self, r, params[0]) for r in returned]
        summary.returns_compiler = [self.compiler(r, summary) for r in returned]
        if not any(summary.compiles):
            summary.compiles = []
        if not any(summary.returns_compiler):
            summary.returns_compiler = []

    def local_value(self, expr: ast.expr) -> ast.expr:
        """A name returned that the function assigns once stands for its value."""
        if isinstance(expr, ast.Name):
            value = self.local(expr.id)
            if value is not None:
                return value
        return expr

    def compiler(self, expr: ast.expr, fn: FunctionSummary | None) -> str:
        """What calling ``expr`` on a function compiles it with (``Compiler``):
        ``torch.compile(mode=...)``, ``functools.partial(torch.compile, ...)``, a
        lambda that compiles its argument, a function ``fn`` defines that does."""
        params = fn.params if fn is not None else []
        if isinstance(expr, ast.Call):
            q = self.qualify(expr.func)
            if q == "torch.compile" and not expr.args and not _keyword(expr, "model"):
                return _label(expr, params)
            if (
                q == "functools.partial"
                and expr.args
                and self.qualify(expr.args[0]) == "torch.compile"
            ):
                return _label(expr, params)
            return ""
        if isinstance(expr, ast.Lambda):
            names = [a.arg for a in (*expr.args.posonlyargs, *expr.args.args)]
            return _compiles(self, expr.body, names[0]) if names else ""
        if isinstance(expr, ast.Name) and fn is not None:
            nested = self.module.functions.get(f"{fn.path}.{expr.id}")
            if nested is not None:
                return Compiler.combined(nested.compiles)[0]
        return ""

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.field(node.target)
        cls = self.classes[-1] if self.classes else None
        default = _nullness(node.value) if node.value is not None else MAYBE
        if cls is not None and isinstance(node.target, ast.Name) and default != NONE:
            annotated = self.annotation(node.annotation)
            if annotated != MAYBE:
                cls.fields[node.target.id] = annotated
        if node.value is not None:
            self.assign(node.target, node.value)
            self.visit(node.value)
        elif isinstance(node.target, ast.Name):
            self.untracked(node.target.id)

    def field(self, target: ast.expr) -> None:
        """A name bound in a class body (``x: torch.Tensor``, a dataclass field):
        an attribute whose value is not tracked."""
        cls = self.classes[-1] if self.classes else None
        if (
            cls is not None
            and isinstance(target, ast.Name)
            and target.id not in cls.untracked
        ):
            cls.untracked.append(target.id)

    @property
    def blocks(self) -> Blocks:
        """The loops and side-stream blocks of the code being summarised."""
        return self.functions[-1].blocks if self.functions else self.module.blocks

    def visit_With(self, node: ast.With | ast.AsyncWith) -> None:
        if any(
            isinstance(item.context_expr, ast.Call)
            and self.qualify(item.context_expr.func) in STREAM_CONTEXTS
            for item in node.items
        ):
            self.blocks.streams.append(_lines(node))
        self.generic_visit(node)

    visit_AsyncWith = visit_With

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self.blocks.loops.append(_lines(node))
        iterable, target = node.iter, node.target
        if (  # ``for i, layer in enumerate(self.layers):``
            isinstance(iterable, ast.Call)
            and dotted(iterable.func) == "enumerate"
            and iterable.args
            and isinstance(target, ast.Tuple)
            and len(target.elts) == 2
        ):
            iterable, target = iterable.args[0], target.elts[1]
        inner = ref_of(iterable)
        if isinstance(target, ast.Name) and inner is not None:
            self.bind(target.id, Ref("element", items=(inner,)))
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        self.module.imports.update(imported(node, self.package))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        self.module.imports.update(imported(node, self.package))
        self.module.relative = self.module.relative or node.level > 0

    # -- calls and guards ------------------------------------------------------------
    def visit(self, node: ast.AST) -> None:
        """``NodeVisitor.visit``, with the method looked up once per node type, and
        nothing done for the nodes that hold no other node and have no method (a
        name's ``Load``, an operator, a constant): most of a module's nodes."""
        kind = type(node)
        method = _VISITS.get(kind)
        if method is None:
            method = _VISITS[kind] = getattr(
                _Summarizer, "visit_" + kind.__name__, _Summarizer.generic_visit
            )
        if method is not _Summarizer.generic_visit or kind._fields:
            method(self, node)

    def generic_visit(self, node: ast.AST) -> None:
        for name in node._fields:
            value = getattr(node, name, None)
            if type(value) is list:
                if value and isinstance(value[0], ast.stmt):
                    self.block(value)
                else:
                    for item in value:
                        if isinstance(item, ast.AST):
                            self.visit(item)
            elif isinstance(value, ast.AST):
                self.visit(value)

    def block(self, body: list[ast.stmt]) -> None:
        """Statements in order; after an early exit under a condition (``if
        is_capturing(): return``, ``assert not is_capturing()``) the rest of the
        block runs only when that condition does not hold."""
        depth = len(self.guards)
        settled = False
        for index, statement in enumerate(body):
            self.line = statement.lineno
            self.visit(statement)
            after = _guard_after(statement, self.local, self.tested)
            if after is not None:
                self.guards.append(after)
            if not settled and _exit_settled(
                statement, body[index + 1 :], self.persistent
            ):
                settled = True  # ``if k in seen: return``; ``seen.add(k)``; ...
                self._settled += 1
        self._settled -= settled
        del self.guards[depth:]

    def visit_If(self, node: ast.If) -> None:
        self.visit(node.test)
        test = formula(node.test, self.local, passed=self.tested)
        settles = partial(_settles, node.test, persistent=self.persistent)
        self.guarded_block(node.body, test, settles(True, node.body))
        self.guarded_block(
            node.orelse, guards.negate(test), settles(False, node.orelse)
        )

    visit_AsyncFor = visit_For

    def visit_While(self, node: ast.While) -> None:
        self.blocks.loops.append(_lines(node))
        self.visit(node.test)
        test = formula(node.test, self.local, passed=self.tested)
        self.guarded_block(node.body, test)
        self.guarded_block(node.orelse, guards.negate(test))

    def visit_IfExp(self, node: ast.IfExp) -> None:
        """``a() if grid is None else b()`` evaluates one branch, as an ``if``."""
        self.visit(node.test)
        test = formula(node.test, self.local, passed=self.tested)
        self.guarded_block(node.body, test)
        self.guarded_block(node.orelse, guards.negate(test))

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        """``grid is not None and f(grid)``: an operand is evaluated only where
        those before it are true (of an ``or``, false)."""
        depth = len(self.guards)
        for value in node.values:
            self.visit(value)
            test = formula(value, self.local, passed=self.tested)
            if guards.mentions_call(test, or_none=True):
                held = test if isinstance(node.op, ast.And) else guards.negate(test)
                self.guards.append(guards.encode(held))
        del self.guards[depth:]

    def outer(self, name: str) -> ast.expr | None:
        """The value of a name that the function enclosing this one assigns exactly
        once (a closure's variable)."""
        return self._assigned(name, 2)

    def condition(self, test: ast.expr) -> str | None:
        """A test's text, with ``self.name`` of a property of the enclosing class that
        returns one expression written out (``self.dp_size`` -> ``self.config.size``),
        so that callers and callees that test the same thing say it alike; None when
        it is too long or holds the ``OR`` of codes."""
        properties = (
            self._properties_of(self._class_nodes[-1]) if self._class_nodes else {}
        )
        text = ast.unparse(_Rewrite({}, properties).visit(copy.deepcopy(test)))
        return text if OR not in text and len(text) <= _CONDITION_LENGTH else None

    def _properties_of(self, node: ast.ClassDef, depth: int = 0) -> dict[str, ast.expr]:
        """The properties of a class and of its bases in this module that return one
        expression, the class's own first."""
        found = self._properties.get(node)
        if found is None:
            found = self._properties[node] = {}  # a cycle of bases adds nothing
            for base in reversed(node.bases):
                named = self._class_named.get(dotted(base) or "")
                if named is not None and depth < _BASES_DEPTH:
                    found.update(self._properties_of(named, depth + 1))
            found.update(_returned_by_properties(node))
        return found

    def local(self, name: str) -> ast.expr | None:
        """The value of an enclosing function's name assigned exactly once (``live =
        is_capturing()``); the function is read for it only when a test asks."""
        return self._assigned(name, 1)

    def _assigned(self, name: str, level: int) -> ast.expr | None:
        """What the ``level``-th enclosing function (1: the innermost) assigns to
        ``name``, where it does so exactly once."""
        if len(self.enclosing) < level:
            return None
        function = self.enclosing[-level]
        values = self._bound(function).values.get(name)
        if values is None or len(values) != 1 or _is_param(function, name):
            return None
        return values[0]

    def passed(self, node: ast.Name) -> bool:
        """Whether ``node`` is a parameter of the enclosing function that still
        holds what the call passed: not rebound before it, nor in a loop around it,
        nor read in a lambda (which runs later)."""
        if not self.functions or self._deferred or not self.enclosing:
            return False
        if node.id not in self.functions[-1].omitted:
            return False
        first = self.bindings().first
        return node.lineno < first.get(node.id, node.lineno + 1)

    def bindings(self) -> _Bindings:
        """How the enclosing function binds its names (read once, when asked)."""
        function = self.enclosing[-1]
        return self._bound(function)

    def _bound(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> _Bindings:
        found = self._bindings.get(function)
        if found is None:
            found = self._bindings[function] = _bindings(function, self.walrus)
        return found

    def persistent(self, location: ast.expr) -> bool:
        """Whether ``location`` (``x``, ``x.a``, ``x[k]``) outlives a call of the
        enclosing function, so that a block settling a test of it stays settled for
        the next call: not a local name, nor an item of a local the function binds
        (``d = {}; d[k] = ...``); an attribute of a local is (``slot.buf`` of
        ``slot = self.slots[i]``)."""
        if not self.enclosing:
            return True  # module-level code: its names are the module's
        root, attribute = location, False
        while isinstance(root, (ast.Attribute, ast.Subscript)):
            attribute = attribute or isinstance(root, ast.Attribute)
            root = root.value
        if not isinstance(root, ast.Name):
            return False
        function = self.enclosing[-1]
        shared = self._shared.get(function) if self.shares else set()
        if shared is None:
            shared = self._shared[function] = set(
                _declared(function.body, (ast.Global, ast.Nonlocal))
            )
        if root.id in shared:
            return True
        bound = self.bindings().values
        if root is location:
            return root.id not in bound and root.id not in self.functions[-1].params
        return attribute or root.id not in bound

    def tested(self, node: ast.Name) -> bool:
        """``passed``, for a test of the parameter, which the summary then lists."""
        found = self.passed(node)
        if found and node.id not in self.functions[-1].tested:
            self.functions[-1].tested.append(node.id)
        return found

    def nullness(self, expr: ast.expr, depth: int = 0) -> str:
        """Whether an argument may be None (the codes above): literals and
        operators; calls of PyTorch, of builtin types and of what may be a project
        class; attributes; the caller's parameters, and its locals by the values
        they are bound to."""
        found = _nullness(expr)
        if found != MAYBE or depth > _NULLNESS_DEPTH:
            return found
        if isinstance(expr, ast.Call):
            name = dotted(expr.func)
            qualified = self.qualify(expr.func) or ""
            if returns_tensor(qualified) or name in NEVER_NONE_BUILTINS:
                return SOME
            return NEW + name if name is not None and "(" not in name else MAYBE
        if isinstance(expr, ast.BoolOp):  # ``a or b`` is b where a is None
            parts = expr.values if isinstance(expr.op, ast.And) else expr.values[-1:]
            return _either([self.nullness(v, depth + 1) for v in parts])
        if isinstance(expr, ast.IfExp):
            body, orelse = (
                self.nullness(v, depth + 1) for v in (expr.body, expr.orelse)
            )
            text = self.condition(expr.test)
            body, orelse = (SOME if c in (TRUE, FALSE) else c for c in (body, orelse))
            if text is not None and {body, orelse} == {SOME, NONE}:
                return (WHEN if body == SOME else UNLESS) + text
            return _either([body, orelse])
        if isinstance(expr, ast.Attribute):
            name = dotted(expr)
            return FIELD + name if name is not None and "(" not in name else MAYBE
        if isinstance(expr, ast.Name) and self.enclosing and self.functions:
            if self.passed(expr):
                return CALLER + expr.id
            # what it was passed or any value it is bound to
            entry = [CALLER + expr.id] if expr.id in self.functions[-1].omitted else []
            values = self.bindings().values.get(expr.id)
            if values is None and not entry:  # a closure's: bound once around it
                outer = self.outer(expr.id)
                if outer is not None:
                    return self.nullness(outer, depth + 1)
            values = values or [None]
            return _either(
                [
                    *entry,
                    *(
                        self.nullness(v, depth + 1) if v is not None else MAYBE
                        for v in values
                    ),
                ]
            )
        return MAYBE

    def nullness_of(self, call: ast.Call) -> Nullness | None:
        """Whether a call's arguments may be None. A call that passes ``self`` first
        (``Base.forward(self, x)``) may fill the callee's ``self`` with it: its
        positions are not known."""
        if not call.args and not call.keywords:
            return None
        head = (self.qualify(call.func) or "").partition(".")[0]
        if head in ("torch", "builtins") or (
            isinstance(call.func, ast.Name) and call.func.id in _BUILTIN_NAMES
        ):
            return None  # no project function tests what these pass
        opened = any(kw.arg is None for kw in call.keywords)
        positional: list[str] = []
        first = call.args[0] if call.args else None
        if isinstance(first, ast.Name) and first.id == "self":
            opened = True
        else:
            for arg in call.args:
                if isinstance(arg, ast.Starred):
                    opened = True
                    break
                positional.append(self.nullness(arg))
        keywords = [(kw.arg, self.nullness(kw.value)) for kw in call.keywords if kw.arg]
        return Nullness(tuple(positional), tuple(keywords), opened)

    def annotation(self, expr: ast.expr | None, depth: int = 0) -> str:
        """Whether an annotation rules None out: SOME (``Tensor``, ``int``,
        ``Tuple[int, ...]``), the dotted name of what may be a class, else
        MAYBE (``Optional[...]``, ``Any``, a type variable)."""
        if expr is None or depth > _NULLNESS_DEPTH:
            return MAYBE
        if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
            with contextlib.suppress(SyntaxError, ValueError):
                return self.annotation(ast.parse(expr.value, mode="eval").body, depth)
            return MAYBE
        if isinstance(expr, ast.Subscript):
            head = (dotted(expr.value) or "").rpartition(".")[2]
            if head == "Annotated" and isinstance(expr.slice, ast.Tuple):
                return self.annotation(expr.slice.elts[0], depth + 1)
            return SOME if head in NEVER_NONE_GENERICS else MAYBE
        if isinstance(expr, (ast.Name, ast.Attribute)):
            name = dotted(expr)
            qualified = self.qualify(expr) or ""
            if name is None or qualified.startswith(("typing.", "typing_extensions.")):
                return MAYBE
            if qualified.startswith("torch.") or name in NEVER_NONE_BUILTINS:
                return SOME
            if name in self._aliases:  # ``Bounds = Tuple[...]``, ``T = TypeVar("T")``
                return self.annotation(self._aliases[name], depth + 1)
            return MAYBE if name in _MAYBE_NONE else name
        return MAYBE

    def guarded_block(
        self,
        body: list[ast.stmt] | ast.expr,
        test: guards.Formula,
        settled: bool = False,
    ) -> None:
        """A block (or an expression) run where ``test`` holds; ``settled``: the
        block settles its test (``_settles``)."""
        kept = guards.mentions_call(test, or_none=True)
        if kept:
            self.guards.append(guards.encode(test))
        self._settled += settled
        if isinstance(body, list):
            self.block(body)
        else:
            self.visit(body)
        self._settled -= settled
        if kept:
            self.guards.pop()

    def placed_arguments(
        self, call: ast.Call
    ) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """``CallSite.host`` and ``CallSite.device``: the arguments that are tensors
        made on the host, and on the GPU."""
        slots = [
            (str(position), arg)
            for position, arg in enumerate(
                itertools.takewhile(lambda a: not isinstance(a, ast.Starred), call.args)
            )
        ]
        slots.extend((k.arg, k.value) for k in call.keywords if k.arg is not None)
        placed = [(slot, self.placement(arg)) for slot, arg in slots]
        return (
            tuple(slot for slot, where in placed if where == _HOST),
            tuple(slot for slot, where in placed if where == _GPU),
        )

    def placement(self, expr: ast.expr, depth: int = 0) -> str | None:
        """Where ``expr`` is a tensor made: on the host (a PyTorch factory with no
        device or ``device="cpu"``, ``x.cpu()``), on the GPU (one with
        ``device="cuda..."``, ``t.cuda()`` or ``t.to("cuda...")`` of a tensor), or
        a local assigned once to one; None when not known."""
        if isinstance(expr, ast.Name) and depth < 2:
            value = self.local(expr.id)
            return None if value is None else self.placement(value, depth + 1)
        if not isinstance(expr, ast.Call):
            return None
        func = expr.func
        if isinstance(func, ast.Attribute) and func.attr == "cpu" and not expr.args:
            return _HOST
        if isinstance(func, ast.Attribute) and func.attr in ("cuda", "to"):
            moved = _moved_to(func.attr, expr)
            if moved is None or self.placement(func.value, depth) is None:
                return None  # a module's ``.cuda()``, a ``.to(dtype)``
            return moved
        qualified = self.qualify(func) or ""
        name = qualified.rpartition(".")[2]
        if not (
            qualified in CPU_FACTORIES
            or (
                qualified.startswith("torch.")
                and name in FACTORIES
                and name not in _PASS_THROUGH
            )
        ):
            return None
        device = _keyword(expr, "device")
        if device is None:
            return _HOST
        return _device_named(device)

    def visit_Call(self, node: ast.Call) -> None:
        callee = dotted(node.func)
        where = (node.lineno, self.columns(node.lineno, node.col_offset))
        if callee is not None:
            host, device = self.placed_arguments(node)
            site = CallSite(
                *where,
                callee,
                tuple(self.guards),
                arguments=arguments_of(node),
                nullness=self.nullness_of(node),
                settled=bool(self._settled) and not self._deferred,
                host=host,
                device=device,
            )
        elif _is_computed(node.func):
            text = shorten(ast.unparse(node.func))
            site = CallSite(*where, text, tuple(self.guards), computed=True)
        else:
            site = None
        if site is not None and self.functions:
            self.functions[-1].calls.append(site)
        elif site is not None:
            self.module.calls.append(site)
        self.generic_visit(node)


_BUILTIN_NAMES = frozenset(dir(builtins))


def _lines(node: ast.stmt) -> tuple[int, int]:
    """A statement's first and last line."""
    return node.lineno, node.end_lineno or node.lineno


def _is_computed(func: ast.expr) -> bool:
    """A callee that is an expression rather than a name, and may be project code:
    ``self.layers[i]``, ``make()``, ``(f or g)``. A method of a computed value
    (``x.float().sum``) is not one: the value is almost always a tensor."""
    return not isinstance(func, (ast.Name, ast.Attribute, ast.Lambda))


def imported(node: ast.Import | ast.ImportFrom, package: str | None) -> dict[str, str]:
    """The names an import binds, with the qualified names they stand for
    (relative imports resolved against ``package``)."""
    found: dict[str, str] = {}
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                found[alias.asname] = alias.name
            else:
                head = alias.name.split(".")[0]
                found[head] = head
        return found
    base = node.module or ""
    if node.level:
        parts = package.split(".") if package else []
        if node.level > 1:
            parts = parts[: len(parts) - (node.level - 1)]
        base = ".".join([*parts, *([base] if base else [])])
    for alias in node.names:
        if alias.name != "*":
            local = alias.asname or alias.name
            found[local] = f"{base}.{alias.name}" if base else alias.name
    return found


Local = Callable[[str], "ast.expr | None"]  # a name's value, assigned once
Passed = Callable[[ast.Name], bool]  # a parameter still holding what was passed


def formula(
    test: ast.expr,
    local: Local | None = None,
    depth: int = 0,
    passed: Passed | None = None,
) -> guards.Formula:
    """The guard formula of a test (see ``graphlint.facts.guards``); ``local`` gives
    the value of a name assigned once in the enclosing function, ``passed`` says
    which names are parameters that a test of None may settle."""
    if depth > guards.MAX_DEPTH:
        return guards.UNKNOWN
    if isinstance(test, ast.Call):
        name = dotted(test.func)
        return ["call", name] if name is not None else guards.UNKNOWN
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return guards.negate(formula(test.operand, local, depth + 1, passed))
    if isinstance(test, ast.BoolOp):
        op = "and" if isinstance(test.op, ast.And) else "or"
        return [op, *(formula(v, local, depth + 1, passed) for v in test.values)]
    if isinstance(test, ast.Constant) and isinstance(test.value, bool):
        return ["const", test.value]
    attribute = _attribute_tested_for_none(test)
    if attribute is not None:  # ``self.a is None``, which the set-up may settle
        atom: guards.Formula = ["none", attribute[0]]
        return atom if attribute[1] else guards.negate(atom)
    tested = _tested_for_none(test)
    if tested is not None and passed is not None and passed(tested[0]):
        atom = ["none", tested[0].id]
        return atom if tested[1] else guards.negate(atom)
    if isinstance(test, ast.Name) and passed is not None and passed(test):
        return ["flag", test.id]  # ``if fused:``, which a caller's constant settles
    value = local(test.id) if isinstance(test, ast.Name) and local else None
    if value is not None:
        return formula(value, None, depth + 1, passed)
    if isinstance(test, ast.Compare):  # known where a caller's argument says it
        text = ast.unparse(test)
        if len(text) <= _CONDITION_LENGTH:
            return ["test", text]
    return guards.UNKNOWN


_CONDITION_LENGTH = 200  # longer tests are not kept as text
_BASES_DEPTH = 8  # base classes read for properties


class _Rewrite(ast.NodeTransformer):
    """Writes out names (``cfg`` -> ``self.config``) and ``self.name`` attributes
    (a property returning one expression) as the expressions given for them."""

    def __init__(
        self, names: Mapping[str, ast.expr], attributes: Mapping[str, ast.expr]
    ) -> None:
        self.names = names
        self.attributes = attributes

    def visit_Name(self, node: ast.Name) -> ast.AST:
        found = self.names.get(node.id)
        return copy.deepcopy(found) if found is not None else node

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        found = self.attributes.get(node.attr)
        value = node.value
        if found is not None and isinstance(value, ast.Name) and value.id == "self":
            return copy.deepcopy(found)
        return self.generic_visit(node)


@functools.lru_cache(maxsize=1024)
def rewritten(
    text: str,
    names: tuple[tuple[str, str], ...],
    attributes: tuple[tuple[str, str], ...] = (),
) -> str | None:
    """A test's text with names written as other expressions' texts (a callee's
    ``cfg.size > 1`` as its caller passes ``cfg``: ``self.config.size > 1``), and
    ``self.`` attributes too (properties); None when a text does not parse."""
    try:
        tree = ast.parse(text, mode="eval")
        given = {n: ast.parse(t, mode="eval").body for n, t in names}
        properties = {n: ast.parse(t, mode="eval").body for n, t in attributes}
    except (SyntaxError, ValueError, RecursionError):
        return None
    return ast.unparse(_Rewrite(given, properties).visit(tree))


def _returned_by_properties(node: ast.ClassDef) -> Iterator[tuple[str, ast.expr]]:
    """The properties a class body defines that return one expression."""
    for f in node.body:
        if (
            isinstance(f, ast.FunctionDef)
            and any(dotted(d) == "property" for d in f.decorator_list)
            and (returned := _only_return(f.body)) is not None
        ):
            yield f.name, returned


def _properties(node: ast.ClassDef) -> dict[str, str]:
    """``ClassSummary.properties``: those whose expression's text is short."""
    found = {}
    for name, returned in _returned_by_properties(node):
        text = ast.unparse(returned)
        if OR not in text and len(text) <= _CONDITION_LENGTH:
            found[name] = text
    return found


def _attribute_tested_for_none(test: ast.expr) -> tuple[str, bool] | None:
    """``self.a is None`` (True) or ``self.a is not None`` (False): ("self.a", ...)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    left, right, op = test.left, test.comparators[0], test.ops[0]
    if (
        isinstance(op, (ast.Is, ast.IsNot))
        and isinstance(right, ast.Constant)
        and right.value is None
        and isinstance(left, ast.Attribute)
        and isinstance(left.value, ast.Name)
        and left.value.id == "self"
    ):
        return f"self.{left.attr}", isinstance(op, ast.Is)
    return None


def _settled_attributes(node: ast.ClassDef) -> list[str]:
    """The ``self.`` attributes a class's set-up settles (``ClassSummary.settled``):
    ``if self.a is None: ...; self.a = value`` in ``__init__`` or in a method
    ``__init__`` calls, and no other method sets ``self.a = None``."""
    methods = {
        f.name: f
        for f in node.body
        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    init = methods.get("__init__")
    if init is None:
        return []
    setup = {"__init__"} | {
        call.func.attr
        for call in ast.walk(init)
        if isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id == "self"
    }
    found: set[str] = set()
    for name in setup & set(methods):
        for branch in ast.walk(methods[name]):
            if not isinstance(branch, ast.If):
                continue
            tested = _attribute_tested_for_none(branch.test)
            if tested is None or not tested[1]:
                continue
            attr = tested[0].partition(".")[2]
            if any(_sets_self(s, attr, none=False) for s in branch.body):
                found.add(attr)
    if not found:
        return []
    unsettled = {
        attr
        for name, method in methods.items()
        if name != "__init__"
        for statement in ast.walk(method)
        for attr in found
        if _sets_self(statement, attr, none=True)
    }
    return sorted(found - unsettled)


def _sets_self(node: ast.AST, attr: str, *, none: bool) -> bool:
    """Whether ``node`` is ``self.attr = value`` with a value that is None
    (``none``) or is not a None literal."""
    if not isinstance(node, ast.Assign) or len(node.targets) != 1:
        return False
    target = node.targets[0]
    is_none = isinstance(node.value, ast.Constant) and node.value.value is None
    return (
        isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and target.value.id == "self"
        and target.attr == attr
        and is_none == none
    )


def _tested_for_none(test: ast.expr) -> tuple[ast.Name, bool] | None:
    """The name in ``name is None`` (True) or ``name is not None`` (False)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    left, right, op = test.left, test.comparators[0], test.ops[0]
    if not isinstance(op, (ast.Is, ast.IsNot)):
        return None
    for name, other in ((left, right), (right, left)):
        if (
            isinstance(name, ast.Name)
            and isinstance(other, ast.Constant)
            and other.value is None
        ):
            return name, isinstance(op, ast.Is)
    return None


_NULLNESS_DEPTH = 4  # locals assigned from locals, aliases of aliases
# displays, comprehensions, f-strings, operators: never None
_VALUES = (
    ast.List,
    ast.Tuple,
    ast.Dict,
    ast.Set,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
    ast.JoinedStr,
    ast.Lambda,
    ast.BinOp,
    ast.UnaryOp,
    ast.Compare,
)
_MAYBE_NONE = frozenset({"Any", "object", "None", "NoneType", "Optional", "Union"})


def _nullness(expr: ast.expr) -> str:
    """Whether an expression is None whatever names it reads: a literal, a display,
    an operator (MAYBE: it depends)."""
    if isinstance(expr, ast.Constant):
        if isinstance(expr.value, bool):
            return TRUE if expr.value else FALSE
        return NONE if expr.value is None else SOME
    return SOME if isinstance(expr, _VALUES) else MAYBE


def _either(codes: list[str]) -> str:
    """The code of a value that is any one of values with these codes."""
    unique = list(dict.fromkeys(codes))
    if MAYBE in unique or not unique:
        return MAYBE
    return OR.join(unique)


@dataclass
class _Bindings:
    """How a function binds its names (anywhere in its body, nested functions
    included): from which line each may hold something else than on entry (its
    first binding, or the start of the outermost loop around one: the loop comes
    back to code written before the binding), and the values bound (None: bound
    otherwise than by ``name = value``)."""

    first: dict[str, int] = field(default_factory=dict)
    values: dict[str, list[ast.expr | None]] = field(default_factory=dict)


def _bindings(
    function: ast.FunctionDef | ast.AsyncFunctionDef, walrus: Sequence[int] = ()
) -> _Bindings:
    """How ``function`` binds its own names: statement by statement (nested
    functions and classes bind their name only); ``walrus``: the lines where the
    module's ``:=`` start, in order, the only binding inside an expression worth
    searching for: each statement that spans one is walked for it."""
    found = _Bindings()

    def bind(name: str, value: ast.expr | None, line: int) -> None:
        found.first[name] = min(found.first.get(name, line), line)
        found.values.setdefault(name, []).append(value)

    def store(target: ast.expr, value: ast.expr | None, line: int) -> None:
        if isinstance(target, ast.Name):
            bind(target.id, value, line)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                store(element, None, line)
        elif isinstance(target, ast.Starred):
            store(target.value, None, line)

    def statements(body: list[ast.stmt], loop: int | None) -> None:
        for statement in body:
            line = loop if loop is not None else statement.lineno
            if _spans(statement, walrus):
                for node in ast.walk(statement):
                    if isinstance(node, ast.NamedExpr):
                        store(node.target, node.value, line)
            if isinstance(statement, ast.Assign):
                for target in statement.targets:
                    store(target, statement.value, line)
            elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
                store(statement.target, statement.value, line)
            elif isinstance(statement, (ast.AugAssign, ast.For, ast.AsyncFor)):
                inner = line if isinstance(statement, ast.AugAssign) else loop
                store(statement.target, None, inner or statement.lineno)
            elif isinstance(statement, ast.Delete):
                for target in statement.targets:
                    store(target, None, line)
            elif isinstance(statement, (ast.With, ast.AsyncWith)):
                for item in statement.items:
                    if item.optional_vars is not None:
                        store(item.optional_vars, None, line)
            elif isinstance(statement, (ast.Import, ast.ImportFrom)):
                for alias in statement.names:
                    bind((alias.asname or alias.name).split(".")[0], None, line)
            elif isinstance(statement, _DEFINITIONS):
                bind(statement.name, None, line)
                continue  # its body binds in a scope of its own
            elif isinstance(statement, ast.Match):
                for case in statement.cases:
                    for node in ast.walk(case.pattern):
                        for name in _bound_by(node):
                            bind(name, None, line)
            elif isinstance(statement, (ast.Try, *_TRY_STAR)):
                for handler in getattr(statement, "handlers", ()):
                    if handler.name:
                        bind(handler.name, None, line)
            inner = loop
            if loop is None and isinstance(
                statement, (ast.For, ast.AsyncFor, ast.While)
            ):
                inner = statement.lineno
            for part_name in ("body", "orelse", "finalbody"):
                block = getattr(statement, part_name, None)
                if isinstance(block, list):
                    statements(block, inner)
            for part in getattr(statement, "handlers", None) or ():
                statements(part.body, inner)
            if isinstance(statement, ast.Match):
                for case in statement.cases:
                    statements(case.body, inner)

    statements(function.body, None)
    return found


def _spans(statement: ast.stmt, lines: Sequence[int]) -> bool:
    """Whether one of ``lines`` (in order) lies within ``statement``'s: where a
    ``:=`` starts, a walk of the statement may find it (one on the same line in
    another statement it does not)."""
    at = bisect.bisect_left(lines, statement.lineno)
    return at < len(lines) and lines[at] <= (statement.end_lineno or statement.lineno)


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_TRY_STAR: tuple[type[ast.stmt], ...] = (
    (ast.TryStar,) if hasattr(ast, "TryStar") else ()
)


def _bound_by(node: ast.AST) -> list[str]:
    """The names a node binds (or deletes)."""
    if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
        return [node.id]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.alias):
        return [(node.asname or node.name).split(".")[0]]
    if isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)):
        return [node.name] if node.name else []
    if isinstance(node, ast.MatchMapping):
        return [node.rest] if node.rest else []
    return []


class Compiler:
    """How a summary writes down a compile wrapper: a region label
    (``torch.compile(mode="reduce-overhead")``), ``@mode:NAME`` or ``@backend:NAME``
    for a mode the wrapper's parameter ``NAME`` gives, or "" for a ``return`` that
    is not a CUDA-graph compiler."""

    LABEL = "torch.compile"
    PARAMETER = "@"

    @staticmethod
    def resolve(encoded: str, arguments: dict[str, str]) -> str:
        """The label, once the parameters' literal ``arguments`` are known."""
        if not encoded.startswith(Compiler.PARAMETER):
            return encoded
        keyword, _, name = encoded[1:].partition(":")
        value = arguments.get(name)
        return (cudagraph_keyword(keyword, value) or "") if value is not None else ""

    @staticmethod
    def combined(labels: list[str]) -> tuple[str, bool]:
        """One label for several returns, and whether every return has it (else a
        region of medium confidence)."""
        found = [label for label in labels if label.startswith(Compiler.LABEL)]
        if not found:
            return "", False
        return found[0], len(found) == len(labels)


def _label(call: ast.Call, params: list[str]) -> str:
    """A ``torch.compile``'s (or a partial's) keywords as a ``Compiler`` entry."""
    for kw in call.keywords:
        value = kw.value
        if kw.arg is None:
            continue
        if isinstance(value, ast.Name) and value.id in params:
            if kw.arg in ("mode", "backend"):
                return f"{Compiler.PARAMETER}{kw.arg}:{value.id}"
            continue
        written: str | bool | None = None
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            written = value.value
        elif isinstance(value, ast.Dict):
            written = any(
                isinstance(k, ast.Constant)
                and k.value == CUDAGRAPHS_OPTION
                and isinstance(v, ast.Constant)
                and v.value is True
                for k, v in zip(value.keys, value.values, strict=True)
            )
        label = cudagraph_keyword(kw.arg, written) if written is not None else None
        if label is not None:
            return label
    return ""


def _compiles(summarizer: _Summarizer, expr: ast.expr, param: str) -> str:
    """The label when ``expr`` is ``torch.compile(param, <a CUDA-graph mode>)``."""
    if not (
        isinstance(expr, ast.Call) and summarizer.qualify(expr.func) == "torch.compile"
    ):
        return ""
    target = expr.args[0] if expr.args else _keyword(expr, "model")
    if not (isinstance(target, ast.Name) and target.id == param):
        return ""
    return _label(expr, [])


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((kw.value for kw in call.keywords if kw.arg == name), None)


def _returned(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.expr]:
    """The values a function returns, not those of functions nested in it: a
    ``return`` is a statement, so only statements are looked into (breadth first,
    in the order of the source at each depth)."""
    found: list[ast.expr] = []
    todo: deque[ast.AST] = deque(function.body)
    while todo:
        node = todo.popleft()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(node, ast.Return):
            if node.value is not None:
                found.append(node.value)
            continue
        for block in _BLOCKS:
            todo.extend(getattr(node, block, ()))
    return found


# the fields of statements (and of ``except`` and ``case`` clauses) that hold
# statements
_BLOCKS = ("body", "handlers", "orelse", "finalbody", "cases")


_DATACLASS = frozenset({"dataclass", "dataclasses.dataclass"})
# factories that keep a tensor they are given where it is
_PASS_THROUGH = frozenset({"as_tensor", "asarray"})
_HOST, _GPU = "host", "gpu"  # where a tensor is made (``placement``)


def _device_named(device: ast.expr) -> str | None:
    """The place a device spec names: ``"cpu"``, ``"cuda:0"``,
    ``torch.device("cuda")``; None for any other expression."""
    if isinstance(device, ast.Call) and dotted(device.func) in (
        "torch.device",
        "device",
    ):
        device = device.args[0] if device.args else device
    if isinstance(device, ast.Constant) and isinstance(device.value, str):
        kind = device.value.partition(":")[0]
        return _HOST if kind == "cpu" else _GPU if kind == "cuda" else None
    return None


def _moved_to(method: str, call: ast.Call) -> str | None:
    """Where ``t.cuda()`` or ``t.to(spec)`` puts a tensor; None for a ``.to()``
    whose target is not a device spec the code spells out."""
    if method == "cuda":
        return _GPU
    target = call.args[0] if call.args else _keyword(call, "device")
    return _device_named(target) if target is not None else None


def _fields(node: ast.ClassDef) -> tuple[list[str], dict[str, Ref]]:
    """A dataclass's fields that its ``__init__`` takes, in order, and the defaults
    that name or make something (``attention: type = Identity``); ``ClassVar`` ones
    are no fields, and ``field(init=False)`` ones no parameters."""
    names: list[str] = []
    defaults: dict[str, Ref] = {}
    for statement in node.body:
        if not (
            isinstance(statement, ast.AnnAssign)
            and isinstance(statement.target, ast.Name)
        ):
            continue
        annotation = statement.annotation
        outer = (
            annotation.value if isinstance(annotation, ast.Subscript) else annotation
        )
        if (dotted(outer) or "").rpartition(".")[2] == "ClassVar" or _not_init(
            statement.value
        ):
            continue
        names.append(statement.target.id)
        ref = ref_of(statement.value) if statement.value is not None else None
        if ref is not None and not _is_field_call(statement.value):
            defaults[statement.target.id] = ref
    return names, defaults


def _not_init(value: ast.expr | None) -> bool:
    """``field(init=False)``: a field that ``__init__`` does not take."""
    if not _is_field_call(value):
        return False
    assert isinstance(value, ast.Call)
    given = _keyword(value, "init")
    return isinstance(given, ast.Constant) and given.value is False


def _is_field_call(value: ast.expr | None) -> bool:
    """``field(default_factory=...)``: no value of the class body."""
    return (
        isinstance(value, ast.Call)
        and (dotted(value.func) or "").rpartition(".")[2] == "field"
    )


def _made(returns: list[ast.expr], params: list[str], bound: _Bindings) -> list[str]:
    """``FunctionSummary.made``: what the returns give from the parameters, where
    one of them calls a parameter or an attribute of one; else nothing."""
    found: list[str] = []
    for value in returns:
        called = isinstance(value, ast.Call)
        name = dotted(value.func if isinstance(value, ast.Call) else value)
        for source in _from_params(name, params, bound):
            found.append(f"{source}()" if called else source)
    if not any(m.endswith("()") for m in found):
        return []
    return list(dict.fromkeys(found))


def _from_params(name: str | None, params: list[str], bound: _Bindings) -> list[str]:
    """The dotted names of parameters (``spec.module``) that ``name`` may hold: a
    parameter's attribute path, or a local bound to one (one step)."""
    if name is None:
        return []
    head, dot, rest = name.partition(".")
    found = [name] if head in params else []
    for value in bound.values.get(head, ()):
        inner = dotted(value) if value is not None else None
        if inner is not None and inner.partition(".")[0] in params:
            found.append(f"{inner}{dot}{rest}")
    return found


def _is_param(function: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    arguments = function.args
    return any(
        a is not None and a.arg == name
        for a in (
            *arguments.posonlyargs,
            *arguments.args,
            arguments.vararg,
            *arguments.kwonlyargs,
            arguments.kwarg,
        )
    )


_UNTYPED = frozenset({"Callable", "Any"})  # annotations that name no class


def _annotated_class(annotation: ast.expr | None) -> str | None:
    """The class an annotation names: ``Transformer``, ``mod.Block``,
    ``"Transformer"``, ``Optional[Block]``, ``Block | None``; none for
    ``Callable`` and ``Any`` (``_UNTYPED``), which say nothing of the code."""
    if annotation is None:
        return None
    name: str | None
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        text = annotation.value.strip()
        name = text if text.replace(".", "").replace("_", "").isalnum() else None
    elif isinstance(annotation, ast.Subscript):
        outer = dotted(annotation.value) or ""
        if outer.rsplit(".", 1)[-1] == "Optional":
            return _annotated_class(annotation.slice)
        return None
    elif isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        for side in (annotation.left, annotation.right):
            if not (isinstance(side, ast.Constant) and side.value is None):
                return _annotated_class(side)
        return None
    else:
        name = dotted(annotation)
    # ``fn: Callable``, ``x: Any``: no class whose code a call runs, but whatever the
    # callers pass (a wrapper's stored callable: ``self.fn = fn``)
    return None if name is None or name.rpartition(".")[2] in _UNTYPED else name


def _declared(
    body: list[ast.stmt], kinds: tuple[type[ast.Global | ast.Nonlocal], ...]
) -> list[str]:
    """The names a function's own ``global`` (or ``nonlocal``, as ``kinds`` says)
    statements declare, not those of the functions and classes it defines."""
    found: set[str] = set()
    todo: list[ast.stmt] = list(body)
    while todo:
        node = todo.pop()
        if isinstance(node, kinds):
            found.update(node.names)
        elif not isinstance(
            node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        ):
            todo.extend(
                n for n in ast.iter_child_nodes(node) if isinstance(n, ast.stmt)
            )
    return sorted(found)


def _only_return(body: list[ast.stmt]) -> ast.expr | None:
    """``X`` when a body is ``return X`` (after a docstring, if any)."""
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
    ):
        body = body[1:]
    if len(body) == 1 and isinstance(body[0], ast.Return):
        return body[0].value
    return None


def _guard_after(statement: ast.stmt, local: Local, passed: Passed) -> str | None:
    """What must hold for code after ``statement`` to run, when it exits early."""
    found = _exit_formula(statement, local, passed)
    if found is None or not guards.mentions_call(found, or_none=True):
        return None
    return guards.encode(found)


def _swallows(manager: ast.expr) -> bool:
    """``contextlib.suppress(...)``: the code after its block runs anyway."""
    called = manager.func if isinstance(manager, ast.Call) else manager
    return (dotted(called) or "").rpartition(".")[2] == "suppress"


def _exit_formula(
    statement: ast.stmt, local: Local, passed: Passed
) -> guards.Formula | None:
    """``_guard_after``'s formula, before it is kept or not; an exit inside a
    ``with`` block (``with torch.cuda.device(d): if capturing(): raise``) leaves
    the block too, unless its manager swallows exceptions (``suppress``)."""
    if isinstance(statement, ast.Assert):
        return formula(statement.test, local, passed=passed)
    if isinstance(statement, ast.If):
        if _always_exits(statement.body):
            return guards.negate(formula(statement.test, local, passed=passed))
        if _always_exits(statement.orelse):
            return formula(statement.test, local, passed=passed)
    if isinstance(statement, (ast.With, ast.AsyncWith)) and not any(
        _swallows(item.context_expr) for item in statement.items
    ):
        inner = [
            found
            for each in statement.body
            if (found := _exit_formula(each, local, passed)) is not None
        ]
        return ["and", *inner] if len(inner) > 1 else inner[0] if inner else None
    return None


def _exit_settled(
    statement: ast.stmt, rest: list[ast.stmt], persistent: Callable[[ast.expr], bool]
) -> bool:
    """Whether ``statement`` is an early exit (``if k in seen: return``) that the
    statements after it settle (``seen.add(k)``): warm-up runs them and leaves the
    exit taken, so the capture does not run them."""
    if not isinstance(statement, ast.If) or not rest:
        return False
    if _always_exits(statement.body) and not statement.orelse:
        return _settles(statement.test, False, rest, persistent)
    return False


def _settles(
    test: ast.expr,
    holds: bool,
    body: list[ast.stmt],
    persistent: Callable[[ast.expr], bool],
) -> bool:
    """Whether the block ``body``, run when ``test`` is ``holds``, makes it not so
    by a statement of its own: ``if self.mgr is None: ...; self.mgr = Manager()``,
    ``if key not in memo: memo[key] = fn(*args)``, ``if k not in seen: seen.add(k)``,
    ``if not hasattr(o, "a"): o.a = ...``, ``if dirty: ...; dirty = False``, ``if p
    != cache["p"]: cache["p"] = p``, and of ``a and b`` (``a or b``) the parts the
    block settles each. Warm-up runs it and leaves the test false; the
    capture skips it. The same patterns as the file pass's ``facts.steady.Settled``,
    on ``ast`` and by source text, of locations that outlive the call
    (``persistent``): ``if sizes is None: sizes = ...`` settles nothing for the
    next call."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _settles(test.operand, not holds, body, persistent)
    if isinstance(test, ast.BoolOp):  # ``if self.ready and self.key == key: return``
        parts = [_settles(value, holds, body, persistent) for value in test.values]
        every = isinstance(test.op, ast.And) != holds  # as ``Settled._settled_by``
        return all(parts) if every else any(parts)
    return any(
        _undoes(test, holds, statement)
        and all(persistent(t) for t in _written(statement))
        for statement in body
    )


def _written(statement: ast.stmt) -> list[ast.expr]:
    """The locations a settling statement writes: its target, or an item of the
    container ``seen.add(k)`` adds to (``seen`` may be a parameter: the object
    passed outlives the call)."""
    if isinstance(statement, ast.Assign):
        return list(statement.targets)
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        func = statement.value.func
        if isinstance(func, ast.Attribute):
            return [ast.Subscript(func.value, ast.Constant(None), ast.Load())]
    return []


def _undoes(test: ast.expr, holds: bool, statement: ast.stmt) -> bool:
    """Whether ``statement``, run when ``test`` is ``holds``, leaves it not so."""
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        return _adds(test, holds, statement.value)
    if not isinstance(statement, ast.Assign) or len(statement.targets) != 1:
        return False
    target, value = statement.targets[0], statement.value
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        op, left, right = test.ops[0], test.left, test.comparators[0]
        if isinstance(op, (ast.Is, ast.Eq, ast.IsNot, ast.NotEq)):
            missing = isinstance(op, (ast.Is, ast.Eq)) == holds
            if _is_none(right) and _same(left, target):
                return missing and not _is_none(value)  # ``x is None``
            if not missing:  # ``a != cache["key"]``: store it, then equal
                return any(
                    _same(mine, target) and ast.unparse(other) == ast.unparse(value)
                    for mine, other in ((left, right), (right, left))
                )
            return False
        if isinstance(op, (ast.In, ast.NotIn)):  # ``k not in cache``
            absent = isinstance(op, ast.NotIn) == holds
            return (
                absent
                and isinstance(target, ast.Subscript)
                and _same(right, target.value)
                and ast.unparse(target.slice) == ast.unparse(left)
            )
        return False
    if isinstance(test, ast.Call) and dotted(test.func) == "hasattr":
        args = test.args
        return (
            not holds
            and len(args) == 2
            and isinstance(target, ast.Attribute)
            and isinstance(args[1], ast.Constant)
            and args[1].value == target.attr
            and _same(args[0], target.value)
        )
    truth = _truth(value)  # ``if dirty: ...; dirty = False``
    return truth is not None and truth is not holds and _same(test, target)


def _adds(test: ast.expr, holds: bool, call: ast.Call) -> bool:
    """``if k not in seen: ...; seen.add(k)``."""
    func = call.func
    if not (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], (ast.In, ast.NotIn))
        and isinstance(func, ast.Attribute)
        and func.attr in ("add", "append", "setdefault")
        and call.args
    ):
        return False
    absent = isinstance(test.ops[0], ast.NotIn) == holds
    return (
        absent
        and _same(test.comparators[0], func.value)
        and ast.unparse(call.args[0]) == ast.unparse(test.left)
    )


def _same(a: ast.expr, b: ast.expr) -> bool:
    """Two expressions naming one location (``self.ready``, ``cache["k"]``);
    ``cache.get(k)`` reads the entry ``cache[k]`` names."""
    a, b = _as_entry(a), _as_entry(b)
    return (
        isinstance(a, (ast.Name, ast.Attribute, ast.Subscript))
        and isinstance(b, (ast.Name, ast.Attribute, ast.Subscript))
        and ast.unparse(a) == ast.unparse(b)
    )


def _as_entry(expr: ast.expr) -> ast.expr:
    """``d.get(k)`` (``d.get(k, v)``) as the entry ``d[k]`` it reads."""
    if (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Attribute)
        and expr.func.attr == "get"
        and 1 <= len(expr.args) <= 2
        and not expr.keywords
        and not any(isinstance(a, ast.Starred) for a in expr.args)
    ):
        return ast.Subscript(expr.func.value, expr.args[0], ast.Load())
    return expr


def _is_none(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is None


def _truth(expr: ast.expr) -> bool | None:
    """The truth value of a literal: ``False``, ``None``, ``0``, ``""``, ``[]``..."""
    if isinstance(expr, ast.Constant) and (
        expr.value is None or isinstance(expr.value, (bool, int, float, str))
    ):
        return bool(expr.value)
    if isinstance(expr, (ast.List, ast.Tuple, ast.Set)):
        return bool(expr.elts)
    if isinstance(expr, ast.Dict):
        return bool(expr.keys)
    return None


def _always_exits(body: list[ast.stmt]) -> bool:
    """Whether a block always ends by leaving it: ``return``, ``raise``, ``continue``
    or ``break`` (the rest of the enclosing block is then skipped)."""
    if not body:
        return False
    last = body[-1]
    if isinstance(last, (ast.Return, ast.Raise, ast.Continue, ast.Break)):
        return True
    return (
        isinstance(last, ast.If)
        and _always_exits(last.body)
        and _always_exits(last.orelse)
    )


def summarize(
    tree: ast.Module,
    name: str,
    path: str,
    package: str | None,
    text: str | None = None,
) -> ModuleSummary:
    """The summary of one parsed module. Its source ``text``, when given, says which
    searches can find nothing and are skipped: ``:=``, ``global``/``nonlocal``
    and ``param_groups`` each take a walk of every function; and it turns CPython's
    byte offsets into the code-point columns of calls (without it they stay bytes,
    the same on ASCII lines)."""
    module = ModuleSummary(name, path)
    summarizer = _Summarizer(module, package)
    if text is None:  # any line may hold one
        last = max((s.end_lineno or s.lineno for s in tree.body), default=0)
        summarizer.walrus = range(1, last + 1)
    elif ":=" in text:  # where the text has one (a string's too: a walk more)
        lines = enumerate(lines_with_breaks(text), 1)
        summarizer.walrus = [number for number, line in lines if ":=" in line]
    if text is not None:
        summarizer.columns = ByteColumns(text)
        summarizer.param_groups = "param_groups" in text
        summarizer.shares = "global" in text or "nonlocal" in text
    summarizer.visit(tree)
    return module


def _sets_hyperparameters(
    function: ast.FunctionDef | ast.AsyncFunctionDef,
) -> dict[str, int]:
    """The optimizers whose hyper-parameters ``function`` itself sets (not a
    function nested in it), by the dotted name that holds each (``opt``,
    ``self.optimizer``), with the line of the first write: ``group["lr"] = v``
    (or ``*=``) in a loop over ``opt.param_groups``, or
    ``opt.param_groups[0]["lr"] = v``."""
    groups: dict[str, str] = {}  # a loop variable -> the optimizer it goes over
    writes: list[tuple[ast.expr, int]] = []
    todo: list[ast.AST] = list(function.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (*_DEFINITIONS, ast.Lambda)):
            continue  # its own code, run when it is called
        if isinstance(node, (ast.For, ast.AsyncFor)) and isinstance(
            node.target, ast.Name
        ):
            holder = _param_groups_of(node.iter)
            if holder is not None:
                groups[node.target.id] = holder
        if isinstance(node, ast.Assign):
            writes.extend((target, node.lineno) for target in node.targets)
        elif isinstance(node, ast.AugAssign):
            writes.append((node.target, node.lineno))
        todo.extend(ast.iter_child_nodes(node))
    found: dict[str, int] = {}
    for target, line in writes:
        if not (
            isinstance(target, ast.Subscript)
            and isinstance(target.slice, ast.Constant)
            and target.slice.value in HYPERPARAMETERS
        ):
            continue
        group = target.value
        holder = None
        if isinstance(group, ast.Name):
            holder = groups.get(group.id)
        elif isinstance(group, ast.Subscript):
            holder = _param_groups_of(group.value)
        if holder is not None:
            found[holder] = min(found.get(holder, line), line)
    return found


def _param_groups_of(expr: ast.expr) -> str | None:
    """``opt`` for ``opt.param_groups``."""
    if isinstance(expr, ast.Attribute) and expr.attr == "param_groups":
        return dotted(expr.value)
    return None


def summarize_source(
    data: bytes, name: str, path: str, target: Version = RUNNING
) -> ModuleSummary | Diagnostic:
    """The summary of a module's source bytes, or the GL0xx outcome that says why
    calls into it cannot be followed. Runs in a worker (``graphlint.runner``), under
    the same limits as checking a file."""
    text = decode(data, path)
    if isinstance(text, Diagnostic):
        return text
    tree = prescreen(text, path, target)
    if tree is None:
        detail = (
            f"its syntax is newer than Python {RUNNING[0]}.{RUNNING[1]}, which runs "
            "graphlint: calls into it are not followed"
        )
        return tool_diagnostic(ParserLimitExceeded, path, detail=detail)
    if isinstance(tree, Diagnostic):
        return tree
    package = name if Path(path).name == "__init__.py" else name.rpartition(".")[0]
    with contextlib.suppress(RecursionError):
        return summarize(tree, name, path, package or None, text)
    # then without the statements the syntax-tree analysis skips too
    skipped = too_deep(tree)
    shallow = (
        prescreen(skip_statements(text, skipped), path, target) if skipped else None
    )
    if isinstance(shallow, ast.Module):
        with contextlib.suppress(RecursionError):
            return summarize(shallow, name, path, package or None, text)
    detail = "nested too deeply to follow calls into it"
    return tool_diagnostic(ParserLimitExceeded, path, detail=detail)


__all__ = [
    "Arguments",
    "CallSite",
    "ClassSummary",
    "Compiler",
    "FunctionSummary",
    "ModuleSummary",
    "Nullness",
    "Ref",
    "Store",
    "dotted",
    "imported",
    "summarize",
    "summarize_source",
]
