"""GL303: a graph's output tensor stored across replays without a copy."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Confidence, Outcome, RegionKind
from graphlint.facts.values import Kind
from graphlint.matchers import method, positional
from graphlint.rule import Rule

_STORE_METHODS = frozenset({"append", "extend", "insert", "add", "appendleft"})


class GraphOutputKept(Rule):
    """A graph output is stored in a replay loop without `.clone()`."""

    code = "GL303"
    message = (
        "`{expr}` is an output of the graph captured at line {line}: the next "
        "replay overwrites it in place, so every stored entry ends up equal"
    )
    fix_title = "Store a copy: `{expr}.clone()`"
    outcome = Outcome.SILENT_WRONG
    consequence = "stored results alias one buffer"

    def visit_Call(self, node: cst.Call) -> None:
        found = method(node)
        if found is None or found[1] not in _STORE_METHODS:
            return
        for arg in positional(node):
            elements = (
                [el.value for el in arg.elements]
                if isinstance(arg, (cst.List, cst.Tuple))
                else [arg]
            )
            for element in elements:
                self.check(element, node)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if isinstance(target.target, cst.Subscript):
                self.check(node.value, target.target)
                return

    def check(self, expr: cst.BaseExpression, statement: cst.CSTNode) -> None:
        if self.region(statement) is not None or not self.flow.in_replay_loop(
            statement
        ):
            return
        key = self.state.key_of(expr)
        if key is None:
            return
        value = self.value(expr)
        if not value.is_tensor and value.kind is not Kind.UNKNOWN:
            return
        for region in self.state.region_writes:
            if region.kind is RegionKind.MANUAL and key in self.state.outputs(region):
                self.report(
                    expr,
                    region,
                    confidence=Confidence.HIGH
                    if value.is_tensor
                    else Confidence.MEDIUM,
                    expr=self.code_of(expr),
                    line=region.line,
                )
                return
