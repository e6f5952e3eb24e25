"""GL202: a Python loop whose trip count comes from a tensor."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Outcome
from graphlint.facts.syntax import method, positional
from graphlint.facts.values import Kind
from graphlint.rule import Rule
from graphlint.signatures import SYNC

_CONVERSIONS = frozenset({"int", "float", "round"})


class TensorLoopBound(Rule):
    """`range(int(t))`, `range(t.item())`: a loop count read from a tensor."""

    code = "GL202"
    message = "`{call}` reads a loop count from a device tensor"
    fix_title = (
        "Use a fixed trip count (pad and mask with `torch.where`), or capture "
        "one graph per count"
    )
    outcome = Outcome.CAPTURE_ERROR
    # what a capture raises at the line (measured: range_item)
    capture_failures = (SYNC,)

    def visit_Call(self, node: cst.Call) -> None:
        if self.builtin(node) != "range":
            return
        region = self.here
        if any(self.from_tensor(a) for a in positional(node)):
            self.report(node, region, call=self.code_of(node))

    def from_tensor(self, expr: cst.BaseExpression) -> bool:
        if self.value(expr).on_device:
            return True
        if not isinstance(expr, cst.Call):
            return False
        if self.builtin(expr) in _CONVERSIONS:
            args = positional(expr)
            return len(args) == 1 and self.value(args[0]).on_device
        found = method(expr)
        if found is not None and found[1] == "item":
            value = self.value(found[0])
            return value.on_device or value.kind is Kind.UNKNOWN
        return False
