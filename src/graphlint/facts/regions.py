"""Which code runs under CUDA-graph capture, and of which kind.

Computed once per file, in two walks: the first finds region roots (``with
torch.cuda.graph`` bodies, ``capture_begin``/``capture_end`` spans, functions handed to
``make_graphed_callables`` or compiled in a CUDA-graph mode, marked regions) and
exclusions (branches that do not run during capture); the second assigns every node
its innermost region. Rules only ask ``region_of(node)``.
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterable, Iterator, Mapping, Sequence, ValuesView
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TypeVar, cast, overload

import libcst as cst
from libcst.metadata import CodeRange

from graphlint.diagnostics import Confidence, RegionKind, RegionRef
from graphlint.facts import guards
from graphlint.facts.region import FULLGRAPH, Region
from graphlint.facts.scopes import ClassInfo, Scope, ScopeBuilder
from graphlint.facts.syntax import dotted, first_arg, is_true, keyword, source
from graphlint.facts.torchapi import (
    BUILTIN_MARKERS,
    CUDAGRAPHS_OPTION,
    CUDAGRAPHS_SWITCH,
    cudagraph_keyword,
)
from graphlint.facts.values import Kind, Value, Values, tensor_slots
from graphlint.facts.walk import (
    covers,
    node_types,
    parents,
    replay,
    subscribed,
    walk,
)

CAPTURE_CONTEXTS = frozenset({"torch.cuda.graph"})
GRAPHED_CALLABLES = frozenset(
    {
        "torch.cuda.make_graphed_callables",
        "transformer_engine.pytorch.make_graphed_callables",
        "transformer_engine.pytorch.graph.make_graphed_callables",
    }
)
# PyTorch's own; another library's (Transformer Engine's) is labelled with its name:
# it runs the backward pass its own way (``torch.autograd.backward``, not ``grad``)
TORCH_GRAPHED = "torch.cuda.make_graphed_callables"
DECLARED_LABEL = "capture root"  # a function named in ``capture-roots``
_STACK_CLOSES = ("close", "__exit__")  # what ends an exit stack's contexts


def graphed_label(qualified: str | None) -> str:
    """The label of a region ``make_graphed_callables`` makes: PyTorch's, or another
    library's, named (``make_graphed_callables of transformer_engine``)."""
    label = RegionKind.GRAPHED.value
    if qualified is not None and qualified != TORCH_GRAPHED:
        label += f" of {qualified.partition('.')[0]}"
    return label


TRITON_CONFIG, CUDAGRAPHS_FLAG = "torch._inductor.config.triton", "cudagraphs"
INDUCTOR_PATCH = frozenset({"torch._inductor.config.patch"})
# unittest.mock spellings of the switch: patch("torch._inductor.config.triton.
# cudagraphs", True) and patch.object(config.triton, "cudagraphs", True)
MOCK_PATCH = frozenset({"unittest.mock.patch", "mock.patch"})
MOCK_PATCH_OBJECT = frozenset({"unittest.mock.patch.object", "mock.patch.object"})
PARTIAL = frozenset({"functools.partial"})
# methods a test framework runs before each test (or once before a class's tests):
# what they switch on stays on while the test runs
SET_UP = ("setUp", "asyncSetUp", "setUpClass", "setup_method", "setup_class")
_COMPILER_DEPTH = 6  # helpers returning helpers returning a compiler
_COMPILER_STEPS = 20_000  # compile-wrapper questions one file may ask

# a helper's parameters -> the arguments a call passes
Env = Mapping[str, cst.BaseExpression]
_NO_ENV: Env = MappingProxyType({})
Label = tuple[str, Confidence]  # a CUDA-graph compile's label, and how sure
Bound = cst.BaseExpression | cst.FunctionDef  # what a name stands for


Callable = cst.FunctionDef | cst.Lambda


class RegionFinder(cst.CSTVisitor):
    """First walk: region roots and exclusions."""

    def __init__(
        self,
        scopes: ScopeBuilder,
        values: Values,
        positions: Mapping[cst.CSTNode, CodeRange],
        markers: frozenset[str],
        checks: frozenset[str] = frozenset(),
    ) -> None:
        super().__init__()
        self.checks = checks
        self.scopes = scopes
        self.values = values
        self.positions = positions
        self.markers = BUILTIN_MARKERS | markers
        self.roots: dict[cst.CSTNode, Region] = {}
        self.excluded: set[cst.CSTNode] = set()
        # functions that regions elsewhere reach, with the parameters their calls
        # settle; what a test of those keeps out of capture, there only
        self.settled: dict[cst.CSTNode, dict[str, guards.Settled]] = {}
        self.settled_out: set[cst.CSTNode] = set()
        # Inductor's triton.cudagraphs: on for the module, and scopes patching it on
        self.switched = False
        self._patched = 0
        self._patched_nodes: set[cst.CSTNode] = set()
        # the tests each block or statement runs under (``entry_conditions``)
        self.conditions: dict[cst.CSTNode, list[tuple[cst.BaseExpression, bool]]] = {}
        # statements between ``capture_begin()`` and ``capture_end()``
        self.spans: dict[cst.CSTNode, Region] = {}
        self.graphed_calls: list[cst.Call] = []  # resolvable targets or not
        # compile wrappers: functions by what they compile, and what they return
        self._compiles: dict[tuple[Callable, bool], Label | None] = {}
        self._compilers: dict[tuple[Bound, bool], Label | None] = {}
        self._compiler_steps = 0
        self._returns: dict[cst.FunctionDef, list[Bound]] = {}
        # make_graphed_callables / compile targets not defined in this file
        self.unresolved: list[tuple[cst.Call, cst.BaseExpression, Region]] = []
        # what makes a CUDA-graph-compiled callable: the compile call, or the
        # function a compile decorator replaces
        self.compiled: dict[cst.CSTNode, Region] = {}

    def line(self, node: cst.CSTNode) -> int:
        return self.positions[node].start.line

    def end(self, node: cst.CSTNode) -> int:
        return self.positions[node].end.line

    # -- with torch.cuda.graph(...) / with graphlint.capture_region() ----------------
    def visit_With(self, node: cst.With) -> None:
        self.enter_patched(node, [item.item for item in node.items])
        for item in node.items:
            found = self.capture_context(item.item, set())
            if found is not None:
                kind, label, confidence, graph = found
                self.roots.setdefault(
                    node.body,
                    Region(
                        RegionRef(kind, self.line(node), label, confidence=confidence),
                        end_line=self.end(node),
                        root=node,
                        graph=source(graph) if graph is not None else None,
                        graph_expr=graph,
                    ),
                )
                return

    def capture_context(
        self, expr: cst.BaseExpression, seen: set[cst.CSTNode]
    ) -> tuple[RegionKind, str, Confidence, cst.BaseExpression | None] | None:
        if expr in seen:
            return None
        seen.add(expr)
        if type(expr) is cst.IfExp:
            found = self.capture_context(expr.body, seen) or self.capture_context(
                expr.orelse, seen
            )
            if found is not None:
                return found[0], found[1], Confidence.MEDIUM, found[3]
            return None
        if type(expr) is cst.Call:
            q = self.values.qualify(expr.func)
            if q in CAPTURE_CONTEXTS:
                graph = first_arg(expr, "cuda_graph")
                return RegionKind.MANUAL, "torch.cuda.graph", Confidence.HIGH, graph
            if q in self.markers:
                return RegionKind.MARKED, "marked", Confidence.HIGH, None
            return None
        if type(expr) is cst.Name:
            scope = self.values.scope_of.get(expr)
            for binding in (scope.lookup(expr.value) or []) if scope else []:
                if binding.how == "assign" and binding.value is not None:
                    found = self.capture_context(binding.value, seen)
                    if found is not None:
                        return found
        return None

    # -- decorators ----------------------------------------------------------------
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.enter_patched(node, [d.decorator for d in node.decorators])
        for decorator in node.decorators:
            found = self.decorator_region(decorator.decorator)
            if found is not None:
                kind, label, confidence = found
                region = Region(
                    RegionRef(kind, self.line(decorator), label, confidence=confidence),
                    end_line=self.end(node),
                    root=node,
                )
                self.mark(node, region)
                if kind is RegionKind.COMPILE:
                    self.compiled[node] = region
                return

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        """A marker on a class (``@support_torch_compile class Model(nn.Module)``)
        marks its ``forward``. A class whose decorators or set-up switch
        Inductor's ``triton.cudagraphs`` on compiles with CUDA graphs inside."""
        info = self.scopes.class_infos.get(node)
        self.enter_patched(
            node,
            [d.decorator for d in node.decorators],
            also=info is not None and self.set_up_switches_on(info),
        )
        for decorator in node.decorators:
            expr = decorator.decorator
            q = self.values.qualify(expr.func if type(expr) is cst.Call else expr)
            forward = self.method(info, "forward") if info is not None else None
            if q in self.markers and forward is not None:
                region = Region(
                    RegionRef(RegionKind.MARKED, self.line(decorator), "marked"),
                    end_line=self.end(forward),
                    root=forward,
                )
                self.mark(forward, region, inputs=False)
                return

    def decorator_region(
        self, expr: cst.BaseExpression
    ) -> tuple[RegionKind, str, Confidence] | None:
        q = self.values.qualify(expr.func if type(expr) is cst.Call else expr)
        if q in self.markers:
            return RegionKind.MARKED, "marked", Confidence.HIGH
        if q == "torch.compile":
            label = self.cudagraph_label(expr if type(expr) is cst.Call else None)
            if label is not None:
                return RegionKind.COMPILE, label, Confidence.HIGH
            return None
        found = self.compiler(expr)  # @compile_fn, @get_compile_fn("reduce-overhead")
        if found is not None:
            return RegionKind.COMPILE, found[0], found[1]
        return None

    def cudagraph_label(self, call: cst.Call | None, env: Env = _NO_ENV) -> str | None:
        """The label of a ``torch.compile`` that uses CUDA graphs: by its own
        arguments (``env``: the arguments a helper's parameters stand for), or
        because Inductor's ``triton.cudagraphs`` is switched on for the module or
        the enclosing scope."""
        found = compile_label(call, env) if call is not None else None
        if found is None and (self.switched or self._patched):
            full = call is not None and is_true(keyword(call, "fullgraph"))
            return (
                f"torch.compile({FULLGRAPH}, triton.cudagraphs on)"
                if full
                else ("torch.compile (triton.cudagraphs on)")
            )
        return found

    # -- compile wrappers: partial(torch.compile, mode=...), helpers returning one --
    def compiler(self, expr: Bound, env: Env = _NO_ENV, depth: int = 0) -> Label | None:
        """What calling ``expr`` with a function does, when it compiles the function
        in a CUDA-graph mode: ``torch.compile(mode=...)``, ``functools.partial(
        torch.compile, mode=...)``, a function or lambda that compiles its argument
        so, a name bound to one, or a call of a helper of this file that returns one
        (``get_compile_fn(backend)``; a mode that depends on the helper's argument
        counts when the argument is written out). One helper whose returns do not
        all compile with CUDA graphs is a region of medium confidence. A file has a
        budget of steps for these questions (``_COMPILER_STEPS``): names bound many
        times to calls of helpers with many returns could fan out without bound."""
        if depth > _COMPILER_DEPTH or self._compiler_steps >= _COMPILER_STEPS:
            return None
        self._compiler_steps += 1
        key = (expr, self._patched > 0)
        if env:
            return self._compiler(expr, env, depth)
        if key not in self._compilers:
            self._compilers[key] = self._compiler(expr, env, depth)
        return self._compilers[key]

    def _compiler(self, expr: Bound, env: Env, depth: int) -> Label | None:
        if type(expr) is cst.FunctionDef or type(expr) is cst.Lambda:
            return self.compiles_argument(expr, depth)
        if type(expr) is cst.Call:
            q = self.values.qualify(expr.func)
            if q == "torch.compile":
                if first_arg(expr, "model") is not None:
                    return None  # torch.compile(fn, ...) is the compiled function
                return _sure(self.cudagraph_label(expr, env))
            if q in PARTIAL:
                wrapped = first_arg(expr, "func")
                if wrapped is None or self.values.qualify(wrapped) != "torch.compile":
                    return None
                return _sure(self.cudagraph_label(expr, env))
            return self.returned_compiler(expr, env, depth)
        if not (type(expr) is cst.Name or type(expr) is cst.Attribute):
            return None
        if self.values.qualify(expr) == "torch.compile":
            return _sure(self.cudagraph_label(None))
        return _combined(
            [
                self.compiler(value, _NO_ENV, depth + 1)
                for value in self.bound_values(expr)
            ]
        )

    def bound_values(self, expr: cst.Name | cst.Attribute) -> list[Bound]:
        """What a name (or ``self.attr``) is bound to: the values assigned and the
        functions defined, each once."""
        if isinstance(expr, cst.Attribute):
            found: list[Bound] = []
            info = self.self_class(expr)
            for cls in self.values.bases(info) if info is not None else []:
                method = cls.methods.get(expr.attr.value)
                if method is not None:
                    return [method]
                found.extend(value for value, _ in cls.attrs.get(expr.attr.value, []))
            return found
        scope = self.values.scope_of.get(expr)
        bindings = scope.lookup(expr.value) if scope is not None else None
        found = []
        for binding in bindings or []:
            if binding.how == "def" and type(binding.node) is cst.FunctionDef:
                found.append(binding.node)
            elif binding.how == "assign" and binding.value is not None:
                if binding.path:
                    return []  # a, b = ...: not followed
                found.append(binding.value)
            else:
                return []  # a parameter, an import, a loop variable: unknown
        return found

    def self_class(self, expr: cst.Attribute) -> ClassInfo | None:
        """The class of ``self`` in ``self.attr``, inside a method."""
        scope = self.values.scope_of.get(expr)
        function = scope.function() if scope is not None else None
        if (
            function is not None
            and function.cls is not None
            and type(expr.value) is cst.Name
            and expr.value.value == function.self_name
        ):
            return function.cls
        return None

    def compiles_argument(
        self, fn: cst.FunctionDef | cst.Lambda, depth: int
    ) -> Label | None:
        """A function or lambda that returns its first argument compiled in a
        CUDA-graph mode (``lambda m: torch.compile(m, mode="reduce-overhead")``)."""
        key = (fn, self._patched > 0)  # a scoped switch changes a plain compile
        if key in self._compiles:
            return self._compiles[key]
        self._compiles[key] = None  # recursion
        params = self.positional(fn)
        found: list[Label | None] = []
        if params:
            for returned in self.returned(fn):
                found.append(
                    self.compiles(returned, params[0].name.value, depth + 1)
                    if type(returned) is cst.Call
                    else None
                )
        result = _combined(found) if found else None
        self._compiles[key] = result
        return result

    def compiles(self, call: cst.Call, param: str, depth: int) -> Label | None:
        """Whether ``call`` compiles the parameter ``param`` in a CUDA-graph mode."""
        target = first_arg(call, "model")
        if not (type(target) is cst.Name and target.value == param):
            return None
        if self.values.qualify(call.func) == "torch.compile":
            return _sure(self.cudagraph_label(call))
        return self.compiler(call.func, _NO_ENV, depth + 1)

    def returned_compiler(self, call: cst.Call, env: Env, depth: int) -> Label | None:
        """A call of a helper of this file that returns a compiler; the helper's
        parameters stand for the call's arguments."""
        func = call.func
        if not (type(func) is cst.Name or type(func) is cst.Attribute):
            return None
        found: list[Label | None] = []
        for fn in self.bound_values(func):
            if not (type(fn) is cst.FunctionDef or type(fn) is cst.Lambda):
                return None  # a helper bound some other way: unknown
            inner = self.arguments(fn, call, env)
            found.extend(
                self.compiler(returned, inner, depth + 1)
                for returned in self.returned(fn)
            )
        return _combined(found)

    def positional(self, fn: cst.FunctionDef | cst.Lambda) -> list[cst.Param]:
        """A function's positional parameters, less a method's ``self``."""
        params = [*fn.params.posonly_params, *fn.params.params]
        scope = self.scopes.functions.get(fn)
        return params[1:] if scope is not None and scope.self_name else params

    def arguments(
        self, fn: cst.FunctionDef | cst.Lambda, call: cst.Call, env: Env
    ) -> dict[str, cst.BaseExpression]:
        """What each parameter of ``fn`` stands for in ``call``: the argument, else
        its default; nothing after a ``*args`` or ``**kwargs``."""
        positional = self.positional(fn)
        bound = {
            p.name.value: p.default
            for p in [*positional, *fn.params.kwonly_params]
            if p.default is not None
        }
        index = 0
        for arg in call.args:
            if arg.star:
                break
            value = arg.value
            if type(value) is cst.Name and value.value in env:
                value = env[value.value]
            if arg.keyword is not None:
                bound[arg.keyword.value] = value
            elif index < len(positional):
                bound[positional[index].name.value] = value
                index += 1
        return bound

    def returned(self, fn: cst.FunctionDef | cst.Lambda) -> list[Bound]:
        """What a function returns: its ``return`` values (not those of functions
        nested in it), a lambda's body; a name returned that is bound once in the
        function stands for its value (``compiled = torch.compile(m, ...); return
        compiled``)."""
        if isinstance(fn, cst.Lambda):
            return [fn.body]
        if fn in self._returns:
            return self._returns[fn]
        collector = _Returns()
        walk(fn.body, collector)
        found: list[Bound] = []
        for value in collector.values:
            if type(value) is cst.Name:
                scope = self.values.scope_of.get(value)
                bindings = scope.lookup(value.value) if scope is not None else None
                if (
                    bindings
                    and len(bindings) == 1
                    and bindings[0].scope is self.scopes.functions.get(fn)
                ):
                    binding = bindings[0]
                    if binding.how == "assign" and binding.value is not None:
                        if not binding.path:
                            value = binding.value
                    elif binding.how == "def" and type(binding.node) is cst.FunctionDef:
                        # ``def inner(m): ...; return inner``
                        found.append(binding.node)
                        continue
            found.append(value)
        self._returns[fn] = found
        return found

    # -- torch._inductor.config: triton.cudagraphs switched on ---------------------
    def switches_on(self, call: cst.BaseExpression) -> bool:
        """``config.patch({"triton.cudagraphs": True})`` and its other spellings,
        ``mock.patch.object(config.triton, "cudagraphs", True)`` among them."""
        if type(call) is not cst.Call:
            return False
        q = self.values.qualify(call.func)
        values = [a.value for a in call.args]
        if q in MOCK_PATCH:
            return (
                len(values) >= 2
                and _is_string(values[0], CUDAGRAPHS_SWITCH)
                and is_true(values[1])
            )
        if q in MOCK_PATCH_OBJECT:
            return (
                len(values) >= 3
                and self.values.qualify(values[0]) == TRITON_CONFIG
                and _is_string(values[1], CUDAGRAPHS_FLAG)
                and is_true(values[2])
            )
        if q not in INDUCTOR_PATCH:
            return False
        if len(values) == 2 and _is_string(values[0], CUDAGRAPHS_OPTION):
            return is_true(values[1])
        return any(
            type(value) is cst.Dict and _dict_switches_on(value) for value in values
        )

    def enter_patched(
        self,
        node: cst.CSTNode,
        items: Sequence[cst.BaseExpression],
        *,
        also: bool = False,
    ) -> None:
        if also or any(self.switches_on(item) for item in items):
            self._patched += 1
            self._patched_nodes.add(node)

    def set_up_switches_on(self, info: ClassInfo) -> bool:
        """Whether the set-up that runs before each test of the class (``setUp``,
        ``setUpClass``, pytest's ``setup_method``) switches ``triton.cudagraphs`` on
        for the test: ``self._stack.enter_context(config.patch(...))``,
        ``config.patch(...).__enter__()``, a patcher entered or started
        (``self.p = patch.object(config.triton, "cudagraphs", True); self.p.start()``)
        or the switch assigned, in the method's own statements (not under a
        condition or a ``with``). A set-up inherited from a class of this file
        counts, and so does one an override calls (``super().setUp()``)."""
        for name in SET_UP:
            for cls in self.values.bases(info):
                method = cls.methods.get(name)
                if method is None:
                    continue
                statements = _top_level(method)
                if self.statements_switch_on(statements):
                    return True
                if not any(_calls_super(small, name) for small in statements):
                    break
        return False

    def statements_switch_on(
        self, statements: Sequence[cst.BaseSmallStatement]
    ) -> bool:
        patchers: set[str] = set()  # what the switch was bound to, as written
        for small in statements:
            if type(small) is cst.Assign:
                if self.switches_on(small.value):
                    patchers.update(source(t.target) for t in small.targets)
                elif is_true(small.value) and any(
                    self.values.qualify(t.target) == CUDAGRAPHS_SWITCH
                    for t in small.targets
                ):
                    return True
                continue
            if not (type(small) is cst.Expr and type(small.value) is cst.Call):
                continue
            call = small.value
            func = call.func
            if type(func) is not cst.Attribute:
                continue
            method = func.attr.value
            entered = first_arg(call, "cm") if method == "enter_context" else func.value
            if method in ("enter_context", "__enter__", "start") and (
                entered is not None
                and (self.switches_on(entered) or source(entered) in patchers)
            ):
                return True
        return False

    def exit_patched(self, node: cst.CSTNode) -> None:
        if node in self._patched_nodes:
            self._patched_nodes.discard(node)
            self._patched -= 1

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.exit_patched(original_node)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.exit_patched(original_node)

    def leave_With(self, original_node: cst.With) -> None:
        self.exit_patched(original_node)

    # -- make_graphed_callables(...), torch.compile(fn, mode=...), m.compile(...) ----
    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        q = self.values.qualify(func)
        target: cst.BaseExpression | None = None
        region: Region | None = None
        if q in GRAPHED_CALLABLES:
            self.graphed_calls.append(node)
            target = first_arg(node, "callables", "modules")
            region = Region(
                RegionRef(RegionKind.GRAPHED, self.line(node), graphed_label(q))
            )
        elif q == "torch.compile":
            label = self.cudagraph_label(node)
            target = first_arg(node, "model")
            if label is not None:
                region = Region(RegionRef(RegionKind.COMPILE, self.line(node), label))
        elif (
            type(func) is cst.Call and self.values.qualify(func.func) == "torch.compile"
        ):
            # torch.compile(mode=...)(fn)
            label = self.cudagraph_label(func)
            target = first_arg(node, "model")
            if label is not None:
                region = Region(RegionRef(RegionKind.COMPILE, self.line(node), label))
        elif type(func) is cst.Attribute and func.attr.value == "compile":
            kind = self.values.of(func.value).kind
            # an instance of a class from another module is unknown: only its own
            # arguments tell its compile from ``re.compile``, not a switch
            label = (
                self.cudagraph_label(node)
                if kind is Kind.MODULE
                else compile_label(node)
                if kind is Kind.UNKNOWN
                else None
            )
            if label is not None:
                target = func.value
                region = Region(RegionRef(RegionKind.COMPILE, self.line(node), label))
        else:
            # compile_fn(model), get_compile_fn(backend)(fn): a compile wrapper
            found = self.compiler(func)
            if found is not None:
                target = first_arg(node, "model")
                label, confidence = found
                region = Region(
                    RegionRef(
                        RegionKind.COMPILE,
                        self.line(node),
                        label,
                        confidence=confidence,
                    )
                )
        if target is None or region is None:
            return
        if region.kind is RegionKind.COMPILE:
            self.compiled[node] = region
        if not self.callables(target):
            self.unresolved.append((node, target, region))
        for fn in self.callables(target):
            self.mark(
                fn,
                replace(region, end_line=self.end(fn), root=fn),
            )

    def callables(self, expr: cst.BaseExpression) -> list[Callable]:
        """The functions a callable or module expression stands for, when resolvable."""
        if type(expr) is cst.Tuple or type(expr) is cst.List:
            return [fn for el in expr.elements for fn in self.callables(el.value)]
        if type(expr) is cst.Lambda:
            return [expr]
        found: list[Callable] = []
        for value in self.candidates(expr):
            if value.function is not None:
                found.append(value.function)
            elif value.kind is Kind.MODULE and value.local is not None:
                forward = self.method(value.local, "forward")
                if forward is not None:
                    found.append(forward)
        return list(dict.fromkeys(found))

    def candidates(self, expr: cst.BaseExpression) -> list[Value]:
        """Each value a name was bound to, separately (``m = M(); m = graphed(m)``)."""
        if type(expr) is cst.Name:
            scope = self.values.scope_of.get(expr)
            bindings = scope.lookup(expr.value) if scope else None
            if bindings:
                return [self.values.binding(b) for b in bindings]
        return [self.values.of(expr)]

    def method(self, info: ClassInfo, name: str) -> cst.FunctionDef | None:
        for cls in self.values.bases(info):
            if name in cls.methods:
                return cls.methods[name]
        return None

    def mark(self, fn: Callable, region: Region, *, inputs: bool = True) -> None:
        """Make ``fn``'s body a region; ``inputs``: the capture API passes its
        arguments (only the graphed or compiled callable itself, not what it calls)."""
        if fn.body in self.roots:
            return
        self.roots[fn.body] = region
        if inputs:
            self.values.captured.setdefault(fn, region.kind)

    # -- capture guards: ``if not is_capturing():``, early exits ---------------------
    def visit_If(self, node: cst.If) -> None:
        self.guard(node)

    def visit_While(self, node: cst.While) -> None:
        self.guard(node)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self.guard(node)

    def visit_Module(self, node: cst.Module) -> None:
        self.guard(node)

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        """``not is_capturing() and loss.item() > 0``: the right operand is not
        evaluated while capturing (``a and b and c`` nests: each level counts)."""
        self.exclude(node.right, node.left, type(node.operator) is cst.And)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        """``a.item() if grid is None else b``: one branch is evaluated."""
        self.exclude(node.body, node.test, True)
        self.exclude(node.orelse, node.test, False)

    def guard(self, node: cst.CSTNode) -> None:
        """Record the conditions under which the blocks and statements in ``node``
        run; one that cannot hold while capturing is excluded from capture."""
        for block, test, holds in entry_conditions(node):
            self.conditions.setdefault(block, []).append((test, holds))
            self.exclude(block, test, holds)

    def exclude(self, part: cst.CSTNode, test: cst.BaseExpression, holds: bool) -> None:
        """Keep ``part``, which runs only where ``test`` is ``holds``, out of capture
        when the test cannot be so while capturing: by the capture checks, or, in
        a function that regions elsewhere reach, by what their calls pass it."""
        value = self.under_capture(test)
        if value is not None:
            if value is not holds:
                self.excluded.add(part)
        elif self.settled and self.under_capture(test, settled=True) is (not holds):
            self.settled_out.add(part)

    def under_capture(
        self, test: cst.BaseExpression, *, settled: bool = False
    ) -> bool | None:
        return guards.under_capture(self.formula(test, settled=settled), self.is_check)

    def is_check(self, name: str) -> bool:
        return name in self.checks

    def formula(
        self, expr: cst.BaseExpression, depth: int = 0, *, settled: bool = False
    ) -> guards.Formula:
        """The guard formula of a test (see ``graphlint.facts.guards``); with
        ``settled``, a test of a settled parameter for None is a constant."""
        if depth > guards.MAX_DEPTH:
            return guards.UNKNOWN
        if type(expr) is cst.Call:
            name = self.values.qualify(expr.func) or dotted(expr.func)
            return ["call", name] if name else guards.UNKNOWN
        if type(expr) is cst.UnaryOperation and type(expr.operator) is cst.Not:
            return guards.negate(
                self.formula(expr.expression, depth + 1, settled=settled)
            )
        if type(expr) is cst.BooleanOperation:
            op = "and" if type(expr.operator) is cst.And else "or"
            return [
                op,
                self.formula(expr.left, depth + 1, settled=settled),
                self.formula(expr.right, depth + 1, settled=settled),
            ]
        tested = _tested_for_none(expr) if settled else None
        if tested is not None:
            none = self.is_none(tested[0])
            return guards.UNKNOWN if none is None else ["const", none is tested[1]]
        if type(expr) is cst.Name:
            if expr.value in ("True", "False"):
                return ["const", expr.value == "True"]
            truth = self.truth(expr) if settled else None
            if truth is not None:  # ``if fused:``, every call passing ``fused=True``
                return ["const", truth]
            # ``capturing = is_capturing()`` once, then ``if not capturing:``
            scope = self.values.scope_of.get(expr)
            bindings = scope.lookup(expr.value) if scope is not None else None
            if (
                bindings
                and len(bindings) == 1
                and bindings[0].how == "assign"
                and not bindings[0].path
                and bindings[0].value is not None
                and bindings[0].scope.kind != "module"
            ):
                return self.formula(bindings[0].value, depth + 1, settled=settled)
        return guards.UNKNOWN

    def is_none(self, name: cst.Name) -> bool | None:
        """Whether ``name``, read in a function that regions elsewhere reach, is a
        parameter that every call under capture passes None (True) or a value
        that cannot be None (False), and still holds it."""
        fact = self._settled_fact(name)
        return fact.none if fact is not None else None

    def truth(self, name: cst.Name) -> bool | None:
        """The truth of the constant that every call under capture passes the
        parameter ``name`` (``fused=True``), where it still holds it."""
        fact = self._settled_fact(name)
        return fact.truth if fact is not None else None

    def _settled_fact(self, name: cst.Name) -> guards.Settled | None:
        scope = self.values.scope_of.get(name)
        function = scope.function() if scope is not None else None
        if function is None or scope is None or scope.owner(name.value) is not function:
            return None
        fact = self.settled.get(function.node, {}).get(name.value)
        return fact if fact is not None and fact.holds(self.line(name)) else None


def _tested_for_none(expr: cst.BaseExpression) -> tuple[cst.Name, bool] | None:
    """The name in ``name is None`` (True) or ``name is not None`` (False)."""
    if not (type(expr) is cst.Comparison and len(expr.comparisons) == 1):
        return None
    target = expr.comparisons[0]
    if not (type(target.operator) is cst.Is or type(target.operator) is cst.IsNot):
        return None
    for name, other in ((expr.left, target.comparator), (target.comparator, expr.left)):
        if type(name) is cst.Name and type(other) is cst.Name and other.value == "None":
            return name, type(target.operator) is cst.Is
    return None


Condition = tuple[cst.CSTNode, cst.BaseExpression, bool]


def entry_conditions(node: cst.CSTNode) -> list[Condition]:
    """What must hold for each part of ``node`` to run: (part, test, value). The
    blocks of an ``if`` or ``while``; in a statement list, the statements after an
    early exit (``if test: return``, ``assert test``) run only when it did not exit."""
    if type(node) is cst.If or type(node) is cst.While:
        found: list[Condition] = [(node.body, node.test, True)]
        if node.orelse is not None:  # ``while ... else`` runs once the test fails
            found.append((node.orelse, node.test, False))
        return found
    if not (type(node) is cst.IndentedBlock or type(node) is cst.Module):
        return []
    found = []
    exits: list[tuple[cst.BaseExpression, bool]] = []
    for statement in node.body:
        found.extend((statement, test, holds) for test, holds in exits)
        exits.extend(_exit_of(statement))
    return found


def _exit_of(statement: cst.BaseStatement) -> list[tuple[cst.BaseExpression, bool]]:
    """The condition under which code after ``statement`` still runs."""
    if type(statement) is cst.SimpleStatementLine:
        return [(s.test, True) for s in statement.body if type(s) is cst.Assert]
    if type(statement) is cst.If:
        if leaves(statement.body):
            return [(statement.test, False)]
        if type(statement.orelse) is cst.Else and leaves(statement.orelse.body):
            return [(statement.test, True)]
    if (  # an exit inside ``with torch.cuda.device(d):`` leaves the block too
        type(statement) is cst.With
        and type(statement.body) is cst.IndentedBlock
        and not any(_suppresses(item.item) for item in statement.items)
    ):
        return [found for inner in statement.body.body for found in _exit_of(inner)]
    return []


def _suppresses(manager: cst.BaseExpression) -> bool:
    """``contextlib.suppress(...)``: a context manager that swallows an exception
    raised in its block, so the code after it runs anyway."""
    called = manager.func if type(manager) is cst.Call else manager
    name = called.attr if type(called) is cst.Attribute else called
    return type(name) is cst.Name and name.value == "suppress"


def leaves(block: cst.BaseSuite) -> bool:
    """Whether a block always ends by leaving it: ``return``, ``raise``, ``continue``
    or ``break`` (the rest of the enclosing block is then skipped)."""
    if type(block) is cst.SimpleStatementSuite:
        return any(isinstance(s, _LEAVE) for s in block.body)
    if type(block) is not cst.IndentedBlock or not block.body:
        return False
    last = block.body[-1]
    if type(last) is cst.SimpleStatementLine:
        return any(isinstance(s, _LEAVE) for s in last.body)
    return type(last) is cst.If and _every_branch_leaves(last)


def _every_branch_leaves(node: cst.If) -> bool:
    """``if``/``elif``/``else`` where each branch leaves."""
    orelse = node.orelse
    if not leaves(node.body) or orelse is None:
        return False
    if type(orelse) is cst.If:
        return _every_branch_leaves(orelse)
    return leaves(orelse.body)


_LEAVE = (cst.Return, cst.Raise, cst.Continue, cst.Break)


# where the region finder's walk visits and leaves, which the scope walk records
FINDER_SITES = subscribed(RegionFinder)


@dataclass
class _Span:
    """A capture opened by a statement and not yet closed: by ``g.capture_begin()``,
    or by a capture context entered on an exit stack
    (``stack.enter_context(torch.cuda.graph(g))``)."""

    begin: cst.CSTNode  # the statement that opens it
    graph: cst.BaseExpression | None
    kind: RegionKind = RegionKind.MANUAL
    label: str = "capture_begin()"
    confidence: Confidence = Confidence.HIGH
    begin_end: bool = True  # by ``capture_begin()``: on the stream its caller chose
    nodes: list[cst.CSTNode] = field(default_factory=list)  # what runs under it


class BeginEndScanner:
    """Captures opened and closed by statements of one function, in order:
    ``g.capture_begin()`` ... ``g.capture_end()``, and a capture context entered on
    an exit stack (``stack.enter_context(torch.cuda.graph(g))``) until the stack
    closes (``stack.close()``, or the end of ``with ExitStack() as stack:``)."""

    def __init__(self, finder: RegionFinder) -> None:
        self.finder = finder
        self.open: dict[str, _Span] = {}  # by the receiver's source (``g``, ``stack``)

    def scan(
        self, body: Sequence[cst.BaseStatement] | Sequence[cst.BaseSmallStatement]
    ) -> None:
        for statement in body:
            self.statement(statement)

    def finish(self) -> None:
        """Spans never closed run to their last statement."""
        for receiver in list(self.open):
            self.close(receiver, None)

    def statement(self, node: cst.CSTNode) -> None:
        if type(node) is cst.SimpleStatementLine:
            for small in node.body:
                if not self.toggle(small) and self.open:
                    self.add(small)
            return
        if type(node) is cst.FunctionDef or type(node) is cst.ClassDef:
            return  # bodies are scanned as their own functions
        if self.open:
            for header in headers(node):
                self.add(header)
        for block in blocks(node):
            if type(block) is cst.SimpleStatementSuite:
                for small in block.body:
                    if not self.toggle(small) and self.open:
                        self.add(small)
            elif type(block) is cst.IndentedBlock:
                self.scan(block.body)
        if type(node) is cst.With:  # ``with ExitStack() as stack:`` closes it
            for item in node.items:
                name = item.asname.name if item.asname is not None else None
                if type(name) is cst.Name and name.value in self.open:
                    self.close(name.value, node)

    def toggle(self, small: cst.BaseSmallStatement) -> bool:
        if not (type(small) is cst.Expr and type(small.value) is cst.Call):
            return False
        call = small.value
        func = call.func
        if type(func) is not cst.Attribute:
            return False
        receiver = source(func.value)
        method = func.attr.value
        if method == "capture_begin":
            self.open.setdefault(receiver, _Span(small, func.value))
            return True
        if method == "enter_context" and call.args:
            found = self.finder.capture_context(call.args[0].value, set())
            if found is None:
                return False
            kind, label, confidence, graph = found
            entered = _Span(small, graph, kind, label, confidence, begin_end=False)
            self.open.setdefault(receiver, entered)
            return True
        span = self.open.get(receiver)
        if span is None:
            return False
        if method in (("capture_end",) if span.begin_end else _STACK_CLOSES):
            self.close(receiver, small)
            return True
        return False

    def add(self, node: cst.CSTNode) -> None:
        first = min(self.open.values(), key=lambda o: self.finder.line(o.begin))
        first.nodes.append(node)

    def close(self, receiver: str, end: cst.CSTNode | None) -> None:
        span = self.open.pop(receiver)
        nodes = span.nodes
        last = end if end is not None else (nodes[-1] if nodes else span.begin)
        graph = span.graph
        region = Region(
            RegionRef(
                span.kind,
                self.finder.line(span.begin),
                span.label,
                confidence=span.confidence,
            ),
            end_line=self.finder.end(last),
            root=span.begin,
            graph=source(graph) if graph is not None else None,
            graph_expr=graph,
            begin_end=span.begin_end,
            open=end is None,
        )
        for node in nodes:
            self.finder.spans.setdefault(node, region)


def headers(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The parts of a compound statement evaluated before its blocks."""
    if type(node) is cst.If or type(node) is cst.While:
        return [node.test]
    if type(node) is cst.For:
        return [node.target, node.iter]
    if type(node) is cst.With:
        return list(node.items)
    return []


def blocks(node: cst.CSTNode) -> list[cst.BaseSuite]:
    """The statement blocks of a compound statement, in source order."""
    found: list[cst.BaseSuite] = []
    body = getattr(node, "body", None)
    if isinstance(body, cst.BaseSuite):
        found.append(body)
    for handler in getattr(node, "handlers", ()):
        found.extend(blocks(handler))
    orelse = getattr(node, "orelse", None)
    if type(orelse) is cst.If:
        found.extend([*blocks(orelse)])
    elif orelse is not None and isinstance(
        getattr(orelse, "body", None), cst.BaseSuite
    ):
        found.append(orelse.body)
    final = getattr(node, "finalbody", None)
    if final is not None:
        found.append(final.body)
    return found


class Assignment(cst.CSTVisitor, Mapping[cst.CSTNode, Region]):
    """Every node under capture -> the innermost region it runs in.

    Not a walk of its own: the first visitor of the facts' shared replay of the
    scope walk (``facts.walk.replay_together``), it decides each node as the
    replay enters it, from the region its parent runs in. A node the replay has
    not reached yet (a write's target, a definition later in a loop) is decided
    on the spot, down from its nearest decided ancestor, as the replay will
    decide it. ``present``: the regions some node runs in, known before the
    replay, in the order of their lines.

    Being a ``Mapping``, it compares by its contents and cannot be hashed."""

    def __init__(
        self,
        module: cst.Module,
        finder: RegionFinder,
        pragmas: Sequence[tuple[int, int]],
    ) -> None:
        super().__init__()
        self.module = module
        self.finder = finder
        self.pragmas = pragmas
        # what each node decided runs there (a region, _EXCLUDED or None): its
        # children start from it
        self._tops: dict[cst.CSTNode, Region | object | None] = {}
        self._stack: list[Region | object | None] = [None]
        self._regions: dict[cst.CSTNode, Region] = {}  # in the walk's order
        self._complete = False
        self._parents: dict[int, cst.CSTNode] | None = None
        # the types of the nodes the finder decided something of: no other node
        # is looked up in its tables
        self._decided = frozenset(
            type(node)
            for table in (
                finder.roots,
                finder.excluded,
                finder.settled_out,
                finder.spans,
            )
            for node in table
        )
        self.present = self._candidates()
        if not self.present:  # nothing runs under capture: nothing to walk
            self._complete = True

    # -- the walk ----------------------------------------------------------------
    def on_visit(self, node: cst.CSTNode) -> bool:
        top = self._tops.get(node, _UNDECIDED)
        if top is _UNDECIDED:
            top = self._tops[node] = self._decide(node, self._stack[-1])
        self._stack.append(top)
        if isinstance(top, Region):
            self._regions[node] = top
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self._stack.pop()
        if original_node is self.module:  # every answer is in _regions now
            self._complete = True
            self._tops, self._parents = {}, None

    def needs_walk(self) -> bool:
        """Whether the shared replay must visit the file for this: some node runs
        under capture."""
        return not self._complete

    # -- the mapping -------------------------------------------------------------
    def __getitem__(self, node: cst.CSTNode) -> Region:
        found = self.get(node)
        if found is None:
            raise KeyError(node)
        return found

    @overload
    def get(self, node: cst.CSTNode, /) -> Region | None: ...

    @overload
    def get(self, node: cst.CSTNode, /, default: Region | _T) -> Region | _T: ...

    def get(self, node: cst.CSTNode, /, default: object = None) -> object:
        if self._complete:
            return self._regions.get(node, default)
        top = self._tops.get(node, _UNDECIDED)
        if top is _UNDECIDED:
            top = self._top(node)
        return top if isinstance(top, Region) else default

    def __contains__(self, node: object) -> bool:
        return self.get(cast(cst.CSTNode, node)) is not None

    def __iter__(self) -> Iterator[cst.CSTNode]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())

    def items(self) -> ItemsView[cst.CSTNode, Region]:
        return self._all().items()

    def values(self) -> ValuesView[Region]:
        return self._all().values()

    def _all(self) -> dict[cst.CSTNode, Region]:
        if not self._complete:  # asked before the walk: walk for it
            walk(self.module, self)
        return self._regions

    # -- deciding ------------------------------------------------------------------
    def _candidates(self) -> tuple[Region, ...]:
        """The regions some node runs in: those of the roots (each runs in its
        own), of the statements between ``capture_begin()`` and ``capture_end()``
        and of those in a marked span of lines, where nothing keeps them out; in
        the order of their lines."""
        finder = self.finder
        found: set[Region] = set(finder.roots.values())
        nodes: list[cst.CSTNode] = list(finder.spans)
        if self.pragmas:
            nodes.extend(
                node
                for node, place in finder.positions.items()
                if type(node) in _PRAGMA_TYPES
                and any(s < place.start.line < e for s, e in self.pragmas)
            )
        for node in nodes:
            region = self.get(node)
            if region is not None:
                found.add(region)
        return tuple(sorted(found, key=_region_order))

    def _top(self, node: cst.CSTNode) -> Region | object | None:
        """What ``node`` decides (``on_visit``), decided down from its nearest
        decided ancestor where the walk has not reached it."""
        tops = self._tops
        if node in tops:
            return tops[node]
        if self._parents is None:
            self._parents = parents()
        path = [node]
        parent = self._parents.get(id(node))
        while parent is not None and parent not in tops:
            path.append(parent)
            parent = self._parents.get(id(parent))
        if parent is None and path[-1] is not self.module:
            # an ancestor no walk has listed yet, or another tree's node
            return self._all().get(node)
        top = tops[parent] if parent is not None else None
        for step in reversed(path):
            top = tops[step] = self._decide(step, top)
        return top

    def _decide(
        self, node: cst.CSTNode, current: Region | object | None
    ) -> Region | object | None:
        """What runs in ``node``, where its parent runs in ``current``."""
        entry = self._entry(node, current)
        return current if entry is _KEEP else entry

    def _entry(
        self, node: cst.CSTNode, current: Region | object | None
    ) -> Region | object | None:
        finder = self.finder
        kind = type(node)  # by exact type: this runs at every node of the file
        if kind in self._decided:
            if node in finder.roots:
                return finder.roots[node]
            if node in finder.excluded:
                return _EXCLUDED
            if (
                node in finder.settled_out
                and isinstance(current, Region)
                and current.via  # settled by the calls from other regions only
            ):
                return _EXCLUDED
        if kind is cst.FunctionDef or kind is cst.ClassDef:
            # a nested definition runs when called, not where it is written;
            # a pragma span may still cover it as a whole
            return self._pragma(node)
        if current is _EXCLUDED:
            return _KEEP  # spans and pragmas do not reach into a guarded block
        if kind in self._decided and node in finder.spans:
            return finder.spans[node]
        if self.pragmas and kind in _STATEMENTS:
            found = self._pragma(node)
            if found is not None:
                return found
        return _KEEP

    def _pragma(self, node: cst.CSTNode) -> Region | None:
        line = self.finder.positions[node].start.line
        for start, end in self.pragmas:
            if start < line < end:
                return Region(
                    RegionRef(RegionKind.MARKED, start, "marked"), end_line=end
                )
        return None


_KEEP = object()  # the node runs where its parent runs
_EXCLUDED = object()  # a guarded block: never under capture
_UNDECIDED = object()  # not decided yet
_T = TypeVar("_T")


def _region_order(region: Region) -> tuple[int, int, str, str, str]:
    return (
        region.line,
        region.end_line,
        region.kind.value,
        region.label,
        region.graph or "",
    )


_STATEMENTS = node_types(cst.SimpleStatementLine, cst.BaseCompoundStatement)
# the nodes a marked span of lines covers when they start inside it
_PRAGMA_TYPES = _STATEMENTS | {cst.FunctionDef, cst.ClassDef}


@dataclass(frozen=True)
class Found:
    """What the region finder finds in one file, and where each node runs."""

    regions: Assignment  # every node under capture -> its region
    # make_graphed_callables calls: their set-up matters even when their targets
    # cannot be resolved
    graphed_calls: list[cst.Call]
    # graphed or compiled targets not defined in this file (the project pass
    # follows them)
    unresolved: list[tuple[cst.Call, cst.BaseExpression, Region]]
    # the tests each block or statement runs under, and the value each must have
    # (``entry_conditions``)
    conditions: dict[cst.CSTNode, list[tuple[cst.BaseExpression, bool]]]
    # compile calls and compile-decorated functions: their results replay CUDA graphs
    compiles: dict[cst.CSTNode, Region] = field(default_factory=dict)


def typed_by_callers(
    regions: Iterable[Region], scopes: ScopeBuilder, values: Values
) -> dict[cst.CSTNode, frozenset[str]]:
    """The parameters of each function that makes a capture (``with
    torch.cuda.graph(g): y = model(x)`` in ``def capture(model, x)``) that every
    call of it in this file passes a device tensor, a container of them, a host
    tensor or a module: what the captured code is given, marked as
    ``Entry.tensors`` marks them ("x", "xs*", "mask!", "model~")."""
    found: dict[cst.CSTNode, frozenset[str]] = {}
    for region in regions:
        if region.kind is not RegionKind.MANUAL or region.root is None or region.via:
            continue
        scope = scopes.scope_of.get(region.root)
        owner = scope.function() if scope is not None else None
        function = owner.node if owner is not None else None
        if owner is None or type(function) is not cst.FunctionDef:
            continue
        if function in found:
            continue
        marks = [
            _passed(call, function, owner, values)
            for call in scopes.calls.get(function.name.value, ())
            if values.of(call.func).function is function
        ]
        common = set.intersection(*marks) if marks else set()
        if common:
            found[function] = frozenset(common)
    return found


def _passed(
    call: cst.Call, function: cst.FunctionDef, scope: Scope, values: Values
) -> set[str]:
    """The parameters of ``function`` that ``call`` passes what ``tensor_mark``
    marks, each with its mark."""
    params = function.params
    positional = [p.name.value for p in (*params.posonly_params, *params.params)]
    if scope.self_name is not None and type(call.func) is cst.Attribute:
        positional = positional[1:]  # ``self.capture(x)``: ``self`` is bound
    found: set[str] = set()
    for slot, mark in tensor_slots(call, values):
        if not slot.isdigit():
            found.add(slot + mark)
        elif int(slot) < len(positional):
            found.add(positional[int(slot)] + mark)
    return found


def find_regions(
    module: cst.Module,
    scopes: ScopeBuilder,
    values: Values,
    positions: Mapping[cst.CSTNode, CodeRange],
    pragmas: Sequence[tuple[int, int]],
    markers: frozenset[str],
    external: Mapping[str, Region] | None = None,
    checks: frozenset[str] = frozenset(),
    declared: frozenset[str] = frozenset(),
) -> Found:
    """Find the file's capture regions. ``external`` names functions (by path,
    "Cls.method") that a region in other code reaches; ``checks`` adds project
    functions that ask whether the stream is capturing, by their qualified or local
    names; ``declared`` names the file's functions that the configuration declares
    capture roots (``capture-roots``)."""
    finder = RegionFinder(scopes, values, positions, markers, checks)
    finder.checks = checks | local_checks(finder, scopes)
    finder.switched = switched_on(module, values)
    for function, path in scopes.paths.items():
        how = external.get(path) if external else None
        if how is not None and how.settled:
            finder.settled[function] = {fact.name: fact for fact in how.settled}
        if how is not None and how.tensors:
            values.tensor_params[function] = frozenset(how.tensors)
    if not covers(scopes.recorded, FINDER_SITES):
        raise ValueError("scopes built without the sites of FINDER_SITES")
    replay(scopes.sites, finder)  # the finder's walk, from what the scope walk saw
    for function, path in scopes.paths.items():
        if path in declared:
            region = Region(
                RegionRef(
                    RegionKind.MARKED, finder.line(function.name), DECLARED_LABEL
                ),
                end_line=finder.end(function),
                root=function,
            )
            finder.mark(function, region, inputs=False)
        if external and path in external:
            region = replace(
                external[path], root=function, end_line=finder.end(function)
            )
            finder.mark(function, region, inputs=False)
    scanner = BeginEndScanner(finder)
    scanner.scan(module.body)
    scanner.finish()
    for fn in scopes.functions:
        if type(fn) is cst.FunctionDef and type(fn.body) is cst.IndentedBlock:
            scanner = BeginEndScanner(finder)
            scanner.scan(fn.body.body)
            scanner.finish()
    return Found(
        Assignment(module, finder, pragmas),
        finder.graphed_calls,
        finder.unresolved,
        finder.conditions,
        finder.compiled,
    )


def local_checks(finder: RegionFinder, scopes: ScopeBuilder) -> frozenset[str]:
    """Functions of this file that return a capture check (``def capturing():
    return torch.cuda.is_current_stream_capturing()``), by the names calls use."""
    found: set[str] = set()
    for function, path in scopes.paths.items():
        body = function.body
        if type(body) is not cst.IndentedBlock:
            continue
        statements = list(body.body)
        if len(statements) == 2 and _is_docstring(statements[0]):
            statements = statements[1:]
        if len(statements) != 1:
            continue
        line = statements[0]
        if type(line) is not cst.SimpleStatementLine:
            continue
        returned = line.body[0]
        if (
            type(returned) is cst.Return
            and returned.value is not None
            and finder.under_capture(returned.value) is True
        ):
            name = function.name.value
            method = scopes.functions[function].cls is not None
            found.update({path, f"self.{name}"} if method else {path, name})
    return frozenset(found)


def switched_on(module: cst.Module, values: Values) -> bool:
    """Whether module code sets ``torch._inductor.config.triton.cudagraphs = True``:
    every CUDA-graph-less ``torch.compile`` of the module then captures."""
    for statement in module.body:
        if type(statement) is not cst.SimpleStatementLine:
            continue
        for small in statement.body:
            if type(small) is cst.Assign and is_true(small.value):
                for target in small.targets:
                    if values.qualify(target.target) == CUDAGRAPHS_SWITCH:
                        return True
    return False


def _top_level(function: cst.FunctionDef) -> list[cst.BaseSmallStatement]:
    """The simple statements a function always runs, in order: those of its body,
    not those under a condition, a loop or a ``with``."""
    body = function.body
    if type(body) is cst.SimpleStatementSuite:
        return list(body.body)
    return [
        small
        for statement in body.body
        if type(statement) is cst.SimpleStatementLine
        for small in statement.body
    ]


def _calls_super(small: cst.BaseSmallStatement, name: str) -> bool:
    """``super().setUp()`` (or ``super(Cls, self).setUp()``) as a statement."""
    if not (type(small) is cst.Expr and type(small.value) is cst.Call):
        return False
    func = small.value.func
    return (
        type(func) is cst.Attribute
        and func.attr.value == name
        and type(func.value) is cst.Call
        and dotted(func.value.func) == "super"
    )


def _is_string(expr: cst.BaseExpression, text: str) -> bool:
    return type(expr) is cst.SimpleString and expr.evaluated_value == text


class _Returns(cst.CSTVisitor):
    """The values a function body returns, not those of functions nested in it."""

    def __init__(self) -> None:
        super().__init__()
        self.values: list[cst.BaseExpression] = []

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None:
            self.values.append(node.value)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False


def _sure(label: str | None) -> Label | None:
    return (label, Confidence.HIGH) if label is not None else None


def _combined(found: Sequence[Label | None]) -> Label | None:
    """One label for several possible compilers (the bindings of a name, the returns
    of a helper): sure when every one compiles with CUDA graphs, of medium confidence
    when only some do."""
    labels = [f for f in found if f is not None]
    if not labels:
        return None
    sure = len(labels) == len(found) and all(c is Confidence.HIGH for _, c in labels)
    return labels[0][0], Confidence.HIGH if sure else Confidence.MEDIUM


def _dict_switches_on(value: cst.Dict) -> bool:
    return any(
        type(element) is cst.DictElement
        and type(element.key) is cst.SimpleString
        and element.key.evaluated_value == CUDAGRAPHS_OPTION
        and is_true(element.value)
        for element in value.elements
    )


def _is_docstring(statement: cst.BaseStatement) -> bool:
    return (
        type(statement) is cst.SimpleStatementLine
        and type(statement.body[0]) is cst.Expr
        and isinstance(
            statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString)
        )
    )


def compile_label(call: cst.Call, env: Env = _NO_ENV) -> str | None:
    """A ``torch.compile(mode=...)`` label if the call uses CUDA graphs, else None;
    ``env`` gives the arguments that a helper's parameters (``mode=mode``) stand for.
    ``fullgraph=True`` is part of it: a graph break is then an error."""
    found = _cudagraph_setting(call, env)
    if found is None or not is_true(keyword(call, "fullgraph")):
        return found
    return f"{found[:-1]}, {FULLGRAPH})"


def _cudagraph_setting(call: cst.Call, env: Env) -> str | None:
    for arg in call.args:
        if arg.keyword is None:
            continue
        value = arg.value
        if type(value) is cst.Name and value.value in env:
            value = env[value.value]
        written: str | bool | None = None
        if type(value) is cst.SimpleString:
            text = value.evaluated_value
            written = text if isinstance(text, str) else None
        elif type(value) is cst.Dict:
            written = _dict_switches_on(value)
        label = (
            cudagraph_keyword(arg.keyword.value, written)
            if written is not None
            else None
        )
        if label is not None:
            return label
    return None


__all__ = ["Found", "entry_conditions", "find_regions", "leaves"]
