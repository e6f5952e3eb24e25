"""``torch.compile`` in a mode that captures CUDA graphs: the compiled callable
(or the decorated function) runs under CUDA-graph capture when it is called."""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, TypeAlias

from graphlint import lazy
from graphlint.diagnostics import Confidence, RegionKind, RegionRef
from graphlint.facts.kinds.base import Decorated, Looker, Made, Recogniser, Screen
from graphlint.facts.torchapi import (
    CUDAGRAPH_COMPILE_MODES,
    CUDAGRAPHS_OPTION,
    CUDAGRAPHS_SWITCH,
    cudagraph_keyword,
)

if TYPE_CHECKING:
    import libcst as cst

    from graphlint.facts import region, syntax, values, walk
    from graphlint.facts.regions import RegionFinder
    from graphlint.facts.scopes import ClassInfo
else:
    cst = lazy.module("libcst", __name__)
    region = lazy.module("graphlint.facts.region", __name__)
    syntax = lazy.module("graphlint.facts.syntax", __name__)
    values = lazy.module("graphlint.facts.values", __name__)
    walk = lazy.module("graphlint.facts.walk", __name__)

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
Env: TypeAlias = "Mapping[str, cst.BaseExpression]"
_NO_ENV: Env = MappingProxyType({})
Label: TypeAlias = tuple[str, Confidence]  # a CUDA-graph compile's label, and how sure
Bound: TypeAlias = "cst.BaseExpression | cst.FunctionDef"  # what a name stands for
Callable: TypeAlias = "cst.FunctionDef | cst.Lambda"


_AUTOTUNE = "max-autotune"  # a mode that captures, unless "-no-cudagraphs" follows
_NO_CUDAGRAPHS = "-no-cudagraphs"
_CUDAGRAPHS_WORD = re.compile(r"cudagraphs")
# Inductor's CUDA-graph switch written out (an option, the backend, an assignment)
_CUDAGRAPHS = re.compile(
    r"triton\.cudagraphs|[\"']cudagraphs[\"']|\bcudagraphs\s*=[^=]"
)
# strings that make torch.compile capture, written out: modes, the backend, the
# Inductor option (in ``options``, ``config.patch``, ``patch.object``)
_SETTINGS = CUDAGRAPH_COMPILE_MODES | {
    CUDAGRAPHS_FLAG,
    CUDAGRAPHS_OPTION,
    CUDAGRAPHS_SWITCH,
}


class CompiledScreen(Screen):
    """A CUDA-graph mode written out (``max-autotune``, not
    ``max-autotune-no-cudagraphs``), the ``cudagraphs`` backend, Inductor's
    ``triton.cudagraphs``; in the code, the strings, or the switch assigned."""

    letters = ("reduce-overhead", _AUTOTUNE, "graph")
    pattern = (
        r"reduce-overhead|max-autotune(?!-no-cudagraphs)"
        r"|triton\.cudagraphs|[\"']cudagraphs[\"']"
    )
    looks_at = (ast.Call, ast.Attribute, ast.Constant)

    def text(self, source: str) -> bool:
        if _names_a_mode(source):
            return True
        for match in _CUDAGRAPHS_WORD.finditer(source):
            start, end = match.span()
            if source[start - 1 : start] in ("'", '"') and source[end : end + 1] in (
                "'",
                '"',
            ):
                return True
            if source[max(0, start - 7) : start] == "triton.":
                return True
        return False

    def looker(self, source: str) -> Looker | None:
        skipped: set[int] = set()  # strings in calls that cannot switch anything

        def shows(node: ast.AST) -> bool:
            if isinstance(node, ast.Call) and len(node.args) + len(node.keywords) < 3:
                # "cudagraphs" alone names Inductor's switch as the attribute of a
                # patch or setattr (three arguments), or as a backend (a keyword);
                # passed to a call of two arguments it is something else (a
                # logger's name): the tree is walked breadth first, a call before
                # its arguments
                skipped.update(
                    id(arg)
                    for arg in node.args
                    if isinstance(arg, ast.Constant) and arg.value == CUDAGRAPHS_FLAG
                )
            elif isinstance(node, ast.Attribute):
                # Inductor's switch, set (read, it makes none)
                return node.attr == CUDAGRAPHS_FLAG and isinstance(node.ctx, ast.Store)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                return node.value in _SETTINGS and id(node) not in skipped
            return False

        return shows


def writes_compile_setting(source: str) -> bool:
    """Whether the text may set a compile mode that captures CUDA graphs (a mode, the
    backend, Inductor's switch): a project with none anywhere compiles nothing so
    through a wrapper."""
    if _names_a_mode(source):
        return True
    return "cudagraphs" in source and bool(_CUDAGRAPHS.search(source))


def _names_a_mode(source: str) -> bool:
    """Whether the text names a compile mode that captures CUDA graphs."""
    return "reduce-overhead" in source or _autotunes(source)


def _autotunes(source: str) -> bool:
    """Whether the text names the mode ``max-autotune``, which captures, and not
    only ``max-autotune-no-cudagraphs``, which does not."""
    at = source.find(_AUTOTUNE)
    while at >= 0:
        end = at + len(_AUTOTUNE)
        if not source.startswith(_NO_CUDAGRAPHS, end):
            return True
        at = source.find(_AUTOTUNE, end)
    return False


class Compiled(Recogniser):
    """Regions of ``torch.compile`` in a mode that captures CUDA graphs: the mode,
    the ``cudagraphs`` backend, Inductor's ``triton.cudagraphs`` switched on (for
    the module, or patched on around the code), through compile wrappers
    (``functools.partial(torch.compile, mode=...)``, helpers that return one)."""

    screen = CompiledScreen

    def __init__(self, finder: RegionFinder) -> None:
        super().__init__(finder)
        # Inductor's triton.cudagraphs: on for the module, and scopes patching it on
        self.switched = False
        self._patched = 0
        self._patched_nodes: set[cst.CSTNode] = set()
        # compile wrappers: functions by what they compile, and what they return
        self._compiles: dict[tuple[Callable, bool], Label | None] = {}
        self._compilers: dict[tuple[Bound, bool], Label | None] = {}
        self._compiler_steps = 0
        self._returns: dict[cst.FunctionDef, list[Bound]] = {}

    # -- the finder's questions ------------------------------------------------------
    def module(self, module: cst.Module) -> None:
        self.switched = switched_on(module, self.values)

    def entering(
        self, node: cst.CSTNode, expressions: Sequence[cst.BaseExpression]
    ) -> None:
        """A ``with config.patch(...)``, a decorator that patches, or a class whose
        set-up switches ``triton.cudagraphs`` on: on inside it."""
        info = self.scopes.class_infos.get(node) if type(node) is cst.ClassDef else None
        self.enter_patched(
            node, expressions, also=info is not None and self.set_up_switches_on(info)
        )

    def leaving(self, node: cst.CSTNode) -> None:
        self.exit_patched(node)

    def decorator(
        self, expression: cst.BaseExpression, qualified: str | None
    ) -> Decorated | None:
        if qualified == "torch.compile":
            call = expression if type(expression) is cst.Call else None
            label = self.cudagraph_label(call)
            if label is not None:
                return RegionKind.COMPILE, label, Confidence.HIGH
            return None
        found = self.compiler(expression)  # @compile_fn, @get_compile_fn("...")
        if found is not None:
            return RegionKind.COMPILE, found[0], found[1]
        return None

    def call(self, call: cst.Call, qualified: str | None) -> Made | None:
        """``torch.compile(fn, mode=...)``, ``torch.compile(mode=...)(fn)``,
        ``m.compile(...)``, a compile wrapper's ``compile_fn(model)``."""
        func = call.func
        if qualified == "torch.compile":  # torch.compile(fn, mode=...)
            label = self.cudagraph_label(call)
            target = syntax.first_arg(call, "model")
            if label is None:
                return target, None
            return target, self.region(call, label)
        if type(func) is cst.Call and self.values.qualify(func.func) == "torch.compile":
            label = self.cudagraph_label(func)  # torch.compile(mode=...)(fn)
            target = syntax.first_arg(call, "model")
            if label is None:
                return target, None
            return target, self.region(call, label)
        if type(func) is cst.Attribute and func.attr.value == "compile":
            kind = self.values.of(func.value).kind
            # an instance of a class from another module is unknown: only its own
            # arguments tell its compile from ``re.compile``, not a switch
            label = (
                self.cudagraph_label(call)
                if kind is values.Kind.MODULE
                else compile_label(call)
                if kind is values.Kind.UNKNOWN
                else None
            )
            if label is None:
                return None, None
            return func.value, self.region(call, label)
        found = self.compiler(func)  # compile_fn(model), get_compile_fn(backend)(fn)
        if found is None:
            return None
        label, confidence = found
        return syntax.first_arg(call, "model"), self.region(call, label, confidence)

    def region(
        self, call: cst.Call, label: str, confidence: Confidence = Confidence.HIGH
    ) -> RegionRef:
        return RegionRef(
            RegionKind.COMPILE, self.finder.line(call), label, confidence=confidence
        )

    def cudagraph_label(self, call: cst.Call | None, env: Env = _NO_ENV) -> str | None:
        """The label of a ``torch.compile`` that uses CUDA graphs: by its own
        arguments (``env``: the arguments a helper's parameters stand for), or
        because Inductor's ``triton.cudagraphs`` is switched on for the module or
        the enclosing scope."""
        found = compile_label(call, env) if call is not None else None
        if found is None and (self.switched or self._patched):
            full = call is not None and syntax.is_true(
                syntax.keyword(call, "fullgraph")
            )
            return (
                f"torch.compile({region.FULLGRAPH}, triton.cudagraphs on)"
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
                if syntax.first_arg(expr, "model") is not None:
                    return None  # torch.compile(fn, ...) is the compiled function
                return _sure(self.cudagraph_label(expr, env))
            if q in PARTIAL:
                wrapped = syntax.first_arg(expr, "func")
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
        target = syntax.first_arg(call, "model")
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
        found: list[Bound] = []
        for value in walk.returns(fn.body):
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
                and syntax.is_true(values[1])
            )
        if q in MOCK_PATCH_OBJECT:
            return (
                len(values) >= 3
                and self.values.qualify(values[0]) == TRITON_CONFIG
                and _is_string(values[1], CUDAGRAPHS_FLAG)
                and syntax.is_true(values[2])
            )
        if q not in INDUCTOR_PATCH:
            return False
        if len(values) == 2 and _is_string(values[0], CUDAGRAPHS_OPTION):
            return syntax.is_true(values[1])
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
                    patchers.update(syntax.source(t.target) for t in small.targets)
                elif syntax.is_true(small.value) and any(
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
            entered = (
                syntax.first_arg(call, "cm")
                if method == "enter_context"
                else func.value
            )
            if method in ("enter_context", "__enter__", "start") and (
                entered is not None
                and (self.switches_on(entered) or syntax.source(entered) in patchers)
            ):
                return True
        return False

    def exit_patched(self, node: cst.CSTNode) -> None:
        if node in self._patched_nodes:
            self._patched_nodes.discard(node)
            self._patched -= 1


def switched_on(module: cst.Module, known: values.Values) -> bool:
    """Whether module code sets ``torch._inductor.config.triton.cudagraphs = True``:
    every CUDA-graph-less ``torch.compile`` of the module then captures."""
    for statement in module.body:
        if type(statement) is not cst.SimpleStatementLine:
            continue
        for small in statement.body:
            if type(small) is cst.Assign and syntax.is_true(small.value):
                for target in small.targets:
                    if known.qualify(target.target) == CUDAGRAPHS_SWITCH:
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
        and syntax.dotted(func.value.func) == "super"
    )


def _is_string(expr: cst.BaseExpression, text: str) -> bool:
    return type(expr) is cst.SimpleString and expr.evaluated_value == text


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
        and syntax.is_true(element.value)
        for element in value.elements
    )


def compile_label(call: cst.Call, env: Env = _NO_ENV) -> str | None:
    """A ``torch.compile(mode=...)`` label if the call uses CUDA graphs, else None;
    ``env`` gives the arguments that a helper's parameters (``mode=mode``) stand for.
    ``fullgraph=True`` is part of it: a graph break is then an error."""
    found = _cudagraph_setting(call, env)
    if found is None or not syntax.is_true(syntax.keyword(call, "fullgraph")):
        return found
    return f"{found[:-1]}, {region.FULLGRAPH})"


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


__all__ = [
    "Compiled",
    "CompiledScreen",
    "compile_label",
    "switched_on",
    "writes_compile_setting",
]
