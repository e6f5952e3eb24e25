"""GL405: CPU tensor arithmetic under capture."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Outcome
from graphlint.facts.syntax import method
from graphlint.facts.torchapi import FACTORIES
from graphlint.facts.values import Device
from graphlint.rule import Rule, RuleContext, Scope

# Moving data, not computing on it (the transfer rules judge these).
_NOT_MATH = frozenset(
    {"to", "cpu", "cuda", "pin_memory", "copy_", "numpy", "item", "tolist"}
)


class CpuTensorMath(Rule):
    """Arithmetic on CPU tensors under capture is not recorded: it runs once."""

    code = "GL405"
    message = "`{expr}` computes on CPU tensors, which the CUDA graph does not record"
    fix_title = "Compute on the device, or outside the region before `replay()`"
    outcome = Outcome.SILENT_WRONG
    # the operands of a reported expression are recorded before the region is asked,
    # also behind a test false at capture
    sees = Scope.REGION_CODE
    host_work = True
    consequence = "replays reuse its result from capture"

    def __init__(self, context: RuleContext) -> None:
        super().__init__(context)
        self._inside: set[cst.CSTNode] = set()  # operands of a reported expression

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        self.check(node, [node.left, node.right])

    def visit_Call(self, node: cst.Call) -> None:
        q = self.qualname(node.func)
        if q is not None:
            if q.startswith("torch.") and q.rsplit(".", 1)[-1] not in FACTORIES:
                self.check(node, [a.value for a in node.args])
            return
        found = method(node)
        if found is not None and found[1] not in _NOT_MATH:
            self.check(node, [found[0], *(a.value for a in node.args)])

    def check(
        self, node: cst.BaseExpression, operands: list[cst.BaseExpression]
    ) -> None:
        if node in self._inside:
            self._inside.update(operands)
            return
        region = self.captured(node)
        if region is None or not self.on_host(node):
            return
        if any(self.on_host(op) for op in operands):
            self._inside.update(operands)
            self.report(node, region, expr=self.code_of(node))

    def on_host(self, expr: cst.BaseExpression) -> bool:
        value = self.value(expr)
        return value.is_tensor and value.device is Device.CPU and not value.pinned
