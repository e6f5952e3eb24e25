"""GL203: Python control flow under capture decided by host state that changes."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Outcome
from graphlint.facts.values import Kind
from graphlint.rule import Rule, Scope, file_wide


class HostStateBranch(Rule):
    """An `if`/`while`/ternary under capture tests host state that changes later."""

    code = "GL203"
    message = "`{expr}` branches on `{name}`, which {change}"
    fix_title = (
        "Decide outside the region, capture one graph per branch, or keep the value "
        "in a device tensor and select with `torch.where`"
    )
    outcome = Outcome.SILENT_WRONG
    consequence = "the branch taken at capture is replayed every time"
    sees = Scope.REGION_CODE  # it asks about the test, not the node it is called for

    # the test of an ``if``/``while`` between ``capture_begin()`` and ``capture_end()``
    # is region code, the statement is not: these see the file and ask about the test
    @file_wide
    def visit_If(self, node: cst.If) -> None:
        self.check(node.test)

    @file_wide
    def visit_While(self, node: cst.While) -> None:
        self.check(node.test)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self.check(node.test)

    def check(self, test: cst.BaseExpression) -> None:
        region = self.captured(test)
        if region is None or self.flow.steady(test, region) is not None:
            return
        for read in self.state.tests.get(test, ()):
            key = self.state.reads.get(read)
            if key is None or self.value(read).kind not in _HOST_KINDS:
                continue
            change = self.flow.changes(key, region)
            if change is not None:
                self.report(
                    test,
                    region,
                    confidence=change.confidence,
                    expr=self.code_of(test),
                    name=self.code_of(read),
                    change=change.describe(),
                )
                return


# Tensors are GL201's; modules and objects are not tested for their value.
_HOST_KINDS = frozenset({Kind.PYTHON, Kind.UNKNOWN})
