"""GL501: a custom torch.Generator used under capture without registering it."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Applicability, Outcome, RegionKind
from graphlint.facts.region import Region
from graphlint.facts.syntax import dotted, first_arg, keyword, source
from graphlint.rule import Rule, RuleContext, Scope
from graphlint.signatures import UNREGISTERED_GENERATOR


class UnregisteredGenerator(Rule):
    """A custom generator is used under capture but never registered with the graph."""

    code = "GL501"
    message = "`{gen}` is a custom generator the capturing graph does not know about"
    fix_title = "Register it before capture: `{graph}.register_generator_state({gen})`"
    # register_generator_state is missing before PyTorch 2.4 (see the rule's doc)
    fix_applicability = Applicability.UNSAFE
    outcome = Outcome.CAPTURE_ERROR
    sees = Scope.CAPTURED  # recorded once for all replays: not torch.compile
    # what a capture raises at the line (measured: custom_gen_unregistered)
    capture_failures = (UNREGISTERED_GENERATOR,)

    def __init__(self, context: RuleContext) -> None:
        super().__init__(context)

    def visit_Call(self, node: cst.Call) -> None:
        generator = keyword(node, "generator")
        if generator is None:
            return
        region = self.here
        if self.value(generator).cls != "torch.Generator":
            return
        if not self.state.is_registered(generator, region):
            self.report(
                generator,
                region,
                gen=self.code_of(generator),
                graph=region.graph or "graph",
                fix=self.registration(generator, region),
            )

    def registration(
        self, generator: cst.BaseExpression, region: Region
    ) -> list[tuple[cst.CSTNode, cst.CSTNode | str]]:
        """The edit that registers ``generator`` with the graph on the line before
        ``with torch.cuda.graph(g):``, where both are names or dotted paths the
        ``with`` statement's own function can name, and the generator is bound
        before that statement; none otherwise."""
        capture = region.root
        graph = region.graph_expr
        gen = source(generator)
        if (
            region.kind is not RegionKind.MANUAL
            or not isinstance(capture, cst.With)
            or graph is None
            or not any(
                isinstance(item.item, cst.Call)
                and first_arg(item.item, "cuda_graph") is graph
                for item in capture.items
            )
            or dotted(graph) is None
            or dotted(generator) is None
            or "\n" in gen + source(graph)
            or self.function_of(generator) is not self.function_of(graph)
            or not self.bound_before(generator, capture)
        ):
            return []
        start = self.context.positions[capture].start
        end = self.context.positions[capture].end
        context = self.context  # the file's own text, comments and layout kept
        at = context.offset(start.line, start.column)
        indent = context.source[context.offset(start.line, 0) : at]
        if indent.strip():
            return []
        written = context.source[at : context.offset(end.line, end.column)]
        text = f"{source(graph)}.register_generator_state({gen})\n{indent}{written}"
        return [(capture, text)]

    def function_of(self, expr: cst.BaseExpression) -> cst.CSTNode | None:
        """The function (or the module) whose code reads the root name of the
        dotted path ``expr``."""
        root = _root(expr)
        return self.state.function_of(root) if root is not None else None

    def bound_before(self, generator: cst.BaseExpression, capture: cst.With) -> bool:
        """Whether ``generator`` names, at the ``with`` statement, what it names
        under capture: every binding of its root name that reaches the use comes
        before that statement (a module global read in a function: none is made by
        code the capture runs), and no code the capture runs writes the attribute
        it names."""
        root = _root(generator)
        if root is None:
            return False
        start = self.context.positions[capture].start
        defs = self.state.reaching.of(root)
        if defs is not None:
            where = [self.context.positions[d].start for d in defs]
            if not where or any(
                (p.line, p.column) >= (start.line, start.column) for p in where
            ):
                return False
        else:
            scope = self.context.facts.values.scope_of.get(root)
            owner = scope.owner(root.value) if scope is not None else None
            if owner is None or owner.kind != "module" or owner is scope:
                return False
            bindings = owner.bindings.get(root.value, [])
            if not bindings or any(
                b.node is None or self.in_region_code(b.node) for b in bindings
            ):
                return False
        if generator is root:
            return True
        key = self.state.key_of(generator)
        return key is not None and not any(
            write.region is not None for write in self.state.writes.get(key, [])
        )


def _root(expr: cst.BaseExpression) -> cst.Name | None:
    """``a`` of ``a.b.c``."""
    while isinstance(expr, cst.Attribute):
        expr = expr.value
    return expr if isinstance(expr, cst.Name) else None
