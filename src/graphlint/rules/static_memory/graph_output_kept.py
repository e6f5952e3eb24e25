"""GL303: a graph's output tensor stored across replays without a copy."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Confidence, Outcome, RegionKind, Severity
from graphlint.facts.values import Kind
from graphlint.matchers import method, positional
from graphlint.rule import Rule

_STORE_METHODS = frozenset({"append", "extend", "insert", "add", "appendleft"})


class GraphOutputKept(Rule):
    """A graph output is stored across replays (or calls of a compiled callable)
    without `.clone()`."""

    code = "GL303"
    message = (
        "`{expr}` is an output of {graph}: {next} overwrites it in place, so every "
        "stored entry ends up equal"
    )
    fix_title = "Store a copy: `{expr}.clone()`"
    outcome = Outcome.SILENT_WRONG
    severity = Severity.ERROR  # a wrong result under torch.compile too
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
        if self.region(statement) is not None:
            return
        value = self.value(expr)
        if not value.is_tensor and value.kind is not Kind.UNKNOWN:
            return
        confidence = Confidence.HIGH if value.is_tensor else Confidence.MEDIUM
        if self.compiled(expr, statement):
            return
        key = self.state.key_of(expr)
        if key is None or not self.flow.in_replay_loop(statement):
            return
        for region in self.state.region_writes:
            if region.kind is RegionKind.MANUAL and key in self.state.outputs(region):
                self.report(
                    expr,
                    region,
                    confidence=confidence,
                    expr=self.code_of(expr),
                    graph=f"the graph captured at line {region.line}",
                    next="the next replay",
                )
                return

    def compiled(self, expr: cst.BaseExpression, statement: cst.CSTNode) -> bool:
        """CUDA-graph trees reuse a compiled callable's output memory on its next
        call (with autograd off; measured: reading the kept tensor raises, or
        silently holds the newer result). Reported when the store and the call share
        a loop; at medium confidence unless autograd is visibly off."""
        found = self.flow.compiled_output(expr)
        site = self.flow.sites.get(statement)
        if found is None or site is None:
            return False
        call, region = found
        if call.function is not site.function or not set(call.loops) & set(site.loops):
            return False
        callee = call.node.func if isinstance(call.node, cst.Call) else call.node
        self.report(
            expr,
            region,
            # the output of a compiled call is a tensor unless known otherwise
            confidence=Confidence.HIGH
            if self.flow.without_grad(call)
            else Confidence.MEDIUM,
            expr=self.code_of(expr),
            graph=(
                f"`{self.code_of(callee)}` (compiled with CUDA graphs at line "
                f"{region.line})"
            ),
            next=f"its next call (line {call.line}, in the same loop)",
        )
        return True
