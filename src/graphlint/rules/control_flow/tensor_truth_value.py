"""GL201: Python control flow decided by the truth value of a tensor."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Outcome
from graphlint.facts.values import element_of
from graphlint.matchers import builtin, on_device, positional
from graphlint.rule import Rule, RuleContext


class TensorTruthValue(Rule):
    """`if`/`while`/`assert`/`and`/`not`/`any()` on a tensor value."""

    code = "GL201"
    message = "`{expr}` takes the truth value of a device tensor"
    fix_title = (
        "Compute both branches and select with `torch.where(cond, a, b)`, or capture "
        "one graph per branch (`torch.cond` fails under manual capture)"
    )
    outcome = Outcome.CAPTURE_ERROR
    fullgraph_error = "Data-dependent branching"

    def __init__(self, context: RuleContext) -> None:
        super().__init__(context)
        self._done: set[cst.CSTNode] = set()  # and/or/not already decomposed

    def visit_If(self, node: cst.If) -> None:
        self.truth(node.test)

    def visit_While(self, node: cst.While) -> None:
        self.truth(node.test)

    def visit_Assert(self, node: cst.Assert) -> None:
        self.truth(node.test)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self.truth(node.test)

    def visit_CompIf(self, node: cst.CompIf) -> None:
        self.truth(node.test)

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
        if isinstance(node.operator, cst.Not) and node not in self._done:
            self.truth(node.expression)

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        # outside a test, `a and b` only truth-tests `a`
        if node not in self._done:
            self._done.add(node)
            self.truth(node.left)

    def truth(self, expr: cst.BaseExpression) -> None:
        """Report the tensors whose truth value ``expr``, used as a condition, takes."""
        if isinstance(expr, cst.BooleanOperation):
            self._done.add(expr)
            self.truth(expr.left)
            self.truth(expr.right)
        elif isinstance(expr, cst.UnaryOperation) and isinstance(
            expr.operator, cst.Not
        ):
            self._done.add(expr)
            self.truth(expr.expression)
        elif on_device(self.value(expr)):
            region = self.region(expr)
            if region is not None:
                self.report(expr, region, expr=self.code_of(expr))

    def visit_Call(self, node: cst.Call) -> None:
        if self.qualname(node.func) in _COND:
            self.cond(node)
            return
        if builtin(self.context.facts, node) not in ("any", "all"):
            return
        args = positional(node)
        if len(args) != 1:
            return
        region = self.region(node)
        if region is not None and on_device(element_of(self.value(args[0]))):
            self.report(node, region, expr=self.code_of(node))

    def cond(self, node: cst.Call) -> None:
        """``torch.cond(pred, ...)`` evaluates ``pred`` on the host unless compiled."""
        region = self.region(node)
        args = positional(node)
        if region is None or region.kind.is_compile or not args:
            return
        if on_device(self.value(args[0])):
            self.report(args[0], region, expr=self.code_of(args[0]))


_COND = frozenset({"torch.cond", "torch._higher_order_ops.cond.cond"})
