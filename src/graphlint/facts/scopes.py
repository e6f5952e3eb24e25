"""Scopes, bindings and classes of one module, collected in a single walk."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import libcst as cst

from graphlint.facts.names import Names
from graphlint.facts.syntax import dotted
from graphlint.facts.walk import Events, Sites, Subscription, left, visited

ScopeKind = Literal["module", "class", "function", "lambda", "comprehension"]


@dataclass(eq=False)
class Binding:
    """One way a name gets a value.

    ``how`` says which: "assign" (``value`` is the right-hand side, ``path`` the
    position inside a tuple unpacking), "iterate" (``value`` is the iterable of a
    ``for``), "augment" (``x += value``), "param", "def", "class", "import", "opaque".
    """

    how: str
    scope: Scope
    value: cst.BaseExpression | None = None
    path: tuple[int, ...] = ()
    # the Param, FunctionDef or ClassDef; the store target (a Name) of an assignment,
    # a loop or an augmented assignment (what ``Reaching`` says reaches a read)
    node: cst.CSTNode | None = None


@dataclass(eq=False)
class ClassInfo:
    """A class defined in the module: its bases, methods and ``self.`` attributes."""

    node: cst.ClassDef
    name: str
    scope: Scope
    methods: dict[str, cst.FunctionDef] = field(default_factory=dict)
    # self.attr = value, in any method, with the method's scope
    attrs: dict[str, list[tuple[cst.BaseExpression, Scope]]] = field(
        default_factory=dict
    )
    # Cls.attr = value, anywhere in the module (class body bindings are in ``scope``)
    class_attrs: dict[str, list[tuple[cst.BaseExpression, Scope]]] = field(
        default_factory=dict
    )
    # ``self.register_buffer(...)`` or ``register_parameter``: only a module has them
    registers: bool = False


@dataclass(eq=False)
class Scope:
    """A Python scope: module, class body, function, lambda or comprehension."""

    kind: ScopeKind
    node: cst.CSTNode
    parent: Scope | None
    bindings: dict[str, list[Binding]] = field(default_factory=dict)
    cls: ClassInfo | None = None  # for a method: its class; for a class body: itself
    self_name: str | None = None  # for a method: the name of its first parameter
    # names declared ``global`` or ``nonlocal`` here, and the scope they belong to
    declared: dict[str, Scope] = field(default_factory=dict)

    def bind(self, name: str, binding: Binding) -> None:
        owner = self.declared.get(name, self)
        owner.bindings.setdefault(name, []).append(binding)

    def owner(self, name: str) -> Scope | None:
        """The scope whose binding of ``name`` a lookup from here finds."""
        if name in self.declared:
            return self.declared[name]
        scope: Scope | None = self
        first = True
        while scope is not None:
            if (first or scope.kind != "class") and name in scope.bindings:
                return scope
            scope = scope.parent
            first = False
        return None

    def lookup(self, name: str) -> list[Binding] | None:
        """Bindings ``name`` resolves to from here (Python's LEGB, minus builtins)."""
        owner = self.owner(name)
        return owner.bindings.get(name) if owner is not None else None

    def function(self) -> Scope | None:
        """The innermost function scope enclosing this one (itself included)."""
        scope: Scope | None = self
        while scope is not None and scope.kind not in ("function", "lambda"):
            scope = scope.parent
        return scope


class ScopeBuilder(cst.CSTVisitor):
    """One walk over the module: scopes, bindings, classes and import aliases; and
    where the walk enters and leaves the nodes of the types ``sites`` names (entered,
    left), for a later visitor that asks only about those (``walk.replay``); and
    the walk's every step (``events``), for the visitors that act on every node
    (``walk.replay_together``): the file's only walk."""

    def __init__(
        self,
        package: str | None,
        sites: Subscription = (frozenset(), frozenset()),
    ) -> None:
        super().__init__()
        self.package = package
        self.recorded = sites
        self._entered, self._left = sites
        self.sites: Sites = []
        self.events: Events = []
        self.names = Names()
        self.scope_of: dict[cst.CSTNode, Scope] = {}
        self.classes: dict[str, ClassInfo] = {}
        self.class_infos: dict[cst.ClassDef, ClassInfo] = {}
        self.functions: dict[cst.CSTNode, Scope] = {}  # FunctionDef/Lambda -> its scope
        self.paths: dict[cst.FunctionDef, str] = {}  # "Cls.method", "outer.inner"
        # the calls of a name or an attribute, by that name (``f(x)``, ``self.f(x)``)
        self.calls: dict[str, list[cst.Call]] = {}
        self.module_scope: Scope | None = None
        self._stack: list[Scope] = []
        self._class_stores: list[tuple[cst.Name, str, cst.BaseExpression, Scope]] = []

    @property
    def scope(self) -> Scope:
        return self._stack[-1]

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.events.append(node)
        if self._stack:
            self.scope_of[node] = self.scope
        if type(node) in self._entered:
            self.sites.append((node, True))
        return visited(self, node)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.events.append(None)
        left(self, original_node)
        if type(original_node) in self._left:
            self.sites.append((original_node, False))

    # -- scopes --------------------------------------------------------------------
    def visit_Module(self, node: cst.Module) -> None:
        self.module_scope = Scope("module", node, None)
        self._stack.append(self.module_scope)
        self.scope_of[node] = self.module_scope

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        outer = self.scope
        outer.bind(node.name.value, Binding("class", outer, node=node))
        scope = Scope("class", node, outer)
        info = ClassInfo(node, node.name.value, scope)
        scope.cls = info
        # by name, the first definition (module tables); by node, each one
        self.classes.setdefault(node.name.value, info)
        self.class_infos[node] = info
        self._stack.append(scope)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._stack.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        outer = self.scope
        outer.bind(node.name.value, Binding("def", outer, node=node))
        scope = Scope("function", node, outer)
        if outer.kind == "class" and outer.cls is not None:
            outer.cls.methods.setdefault(node.name.value, node)
            positional = [*node.params.posonly_params, *node.params.params]
            is_static = any(
                dotted(d.decorator) == "staticmethod" for d in node.decorators
            )
            if positional and not is_static:
                scope.cls = outer.cls
                scope.self_name = positional[0].name.value
        self._bind_params(node.params, scope)
        self.functions[node] = scope
        names = [
            s.node.name.value
            for s in self._stack
            if (type(s.node) is cst.ClassDef or type(s.node) is cst.FunctionDef)
        ]
        self.paths[node] = ".".join([*names, node.name.value])
        self._stack.append(scope)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._stack.pop()

    def visit_Lambda(self, node: cst.Lambda) -> None:
        scope = Scope("lambda", node, self.scope)
        self._bind_params(node.params, scope)
        self.functions[node] = scope
        self._stack.append(scope)

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        self._stack.pop()

    def _bind_params(self, params: cst.Parameters, scope: Scope) -> None:
        every = [*params.posonly_params, *params.params, *params.kwonly_params]
        for star in (params.star_arg, params.star_kwarg):
            if type(star) is cst.Param:
                scope.bind(star.name.value, Binding("opaque", scope, node=star))
        for param in every:
            scope.bind(param.name.value, Binding("param", scope, node=param))

    def _visit_comprehension(
        self, node: cst.ListComp | cst.SetComp | cst.GeneratorExp | cst.DictComp
    ) -> None:
        scope = Scope("comprehension", node, self.scope)
        comp: cst.CompFor | None = node.for_in
        while comp is not None:
            self._bind_target(comp.target, comp.iter, scope, "iterate", ())
            comp = comp.inner_for_in
        self._stack.append(scope)

    def visit_ListComp(self, node: cst.ListComp) -> None:
        self._visit_comprehension(node)

    def leave_ListComp(self, original_node: cst.ListComp) -> None:
        self._stack.pop()

    def visit_SetComp(self, node: cst.SetComp) -> None:
        self._visit_comprehension(node)

    def leave_SetComp(self, original_node: cst.SetComp) -> None:
        self._stack.pop()

    def visit_GeneratorExp(self, node: cst.GeneratorExp) -> None:
        self._visit_comprehension(node)

    def leave_GeneratorExp(self, original_node: cst.GeneratorExp) -> None:
        self._stack.pop()

    def visit_DictComp(self, node: cst.DictComp) -> None:
        self._visit_comprehension(node)

    def leave_DictComp(self, original_node: cst.DictComp) -> None:
        self._stack.pop()

    # -- bindings ------------------------------------------------------------------
    def _bind_target(
        self,
        target: cst.BaseExpression,
        value: cst.BaseExpression,
        scope: Scope,
        how: str,
        path: tuple[int, ...],
    ) -> None:
        if type(target) is cst.Name:
            binding = Binding(how, scope, value=value, path=path, node=target)
            scope.bind(target.value, binding)
            if how == "assign" and not path:
                self.names.add_assignment(target.value, value)
        elif type(target) is cst.Tuple or type(target) is cst.List:
            for i, element in enumerate(target.elements):
                inner = element.value
                if type(element) is cst.StarredElement and type(inner) is cst.Name:
                    scope.bind(inner.value, Binding("opaque", scope))
                    continue
                self._bind_target(inner, value, scope, how, (*path, i))
        elif type(target) is cst.Attribute and how == "assign" and not path:
            self._bind_attribute(target, value, scope)

    def _bind_attribute(
        self, target: cst.Attribute, value: cst.BaseExpression, scope: Scope
    ) -> None:
        fn = scope.function()
        if (
            fn is not None
            and fn.cls is not None
            and type(target.value) is cst.Name
            and target.value.value == fn.self_name
        ):
            fn.cls.attrs.setdefault(target.attr.value, []).append((value, scope))
        elif type(target.value) is cst.Name:
            # ``Cls.attr = value``: which class (if any) is known once all are bound
            self._class_stores.append((target.value, target.attr.value, value, scope))

    def leave_Module(self, original_node: cst.Module) -> None:
        for name, attr, value, scope in self._class_stores:
            for binding in scope.lookup(name.value) or []:
                if binding.how == "class" and type(binding.node) is cst.ClassDef:
                    info = self.class_infos.get(binding.node)
                    if info is not None:
                        info.class_attrs.setdefault(attr, []).append((value, scope))

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind_target(target.target, node.value, self.scope, "assign", ())

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._bind_target(node.target, node.value, self.scope, "assign", ())
        elif type(node.target) is cst.Name:
            self.scope.bind(
                node.target.value,
                Binding("annotated", self.scope, value=node.annotation.annotation),
            )

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if type(node.target) is cst.Name:
            self.scope.bind(
                node.target.value,
                Binding("augment", self.scope, value=node.value, node=node.target),
            )

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind_target(node.target, node.value, self.scope, "assign", ())

    def visit_For(self, node: cst.For) -> None:
        self._bind_target(node.target, node.iter, self.scope, "iterate", ())

    def visit_Global(self, node: cst.Global) -> None:
        if self.module_scope is not None:
            for item in node.names:
                self.scope.declared[item.name.value] = self.module_scope

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        for item in node.names:
            outer = self.scope.parent
            while outer is not None and (
                outer.kind == "class" or item.name.value not in outer.bindings
            ):
                outer = outer.parent
            if outer is not None and outer.kind != "module":
                self.scope.declared[item.name.value] = outer

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._bind_opaque(node.asname.name)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if node.name is not None:
            self._bind_opaque(node.name.name)

    def _bind_opaque(self, target: cst.BaseExpression) -> None:
        if type(target) is cst.Name:
            self.scope.bind(target.value, Binding("opaque", self.scope))
        elif type(target) is cst.Tuple or type(target) is cst.List:
            for element in target.elements:
                self._bind_opaque(element.value)

    def visit_Import(self, node: cst.Import) -> None:
        self.names.add_import(node)
        for alias in node.names:
            target = alias.asname.name if alias.asname else alias.name
            name = (
                dotted(target)
                if (type(target) is cst.Name or type(target) is cst.Attribute)
                else None
            )
            if name:
                self.scope.bind(name.split(".")[0], Binding("import", self.scope))

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        self.names.add_import_from(node, self.package)
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            target = alias.asname.name if alias.asname else alias.name
            if type(target) is cst.Name:
                self.scope.bind(target.value, Binding("import", self.scope))

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if type(func) is cst.Name or type(func) is cst.Attribute:
            called = func.value if isinstance(func, cst.Name) else func.attr.value
            self.calls.setdefault(called, []).append(node)
        # self.register_buffer("name", tensor) declares a tensor attribute
        if (
            type(func) is cst.Attribute
            and func.attr.value in ("register_buffer", "register_parameter")
            and len(node.args) >= 2
            and type(node.args[0].value) is cst.SimpleString
        ):
            fn = self.scope.function()
            if (
                fn is not None
                and fn.cls is not None
                and type(func.value) is cst.Name
                and func.value.value == fn.self_name
            ):
                fn.cls.registers = True
                name = node.args[0].value.evaluated_value
                if isinstance(name, str):
                    fn.cls.attrs.setdefault(name, []).append((node.args[1].value, fn))
