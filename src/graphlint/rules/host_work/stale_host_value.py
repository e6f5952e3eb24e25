"""GL406: a Python value read under capture that changes between replays."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Confidence, Outcome
from graphlint.facts.state import Key
from graphlint.facts.syntax import method
from graphlint.facts.values import Kind
from graphlint.rule import Rule, Scope

_SCHEDULER_READS = frozenset({"get_last_lr", "get_lr"})


class StaleHostValue(Rule):
    """A Python number read under capture is baked in, though it changes later."""

    code = "GL406"
    message = "`{expr}` is read once, while capturing, but {why}"
    fix_title = (
        "Keep it in a device tensor updated with `.fill_()` before `replay()` (for a "
        "learning rate: `capturable=True` and a tensor `lr`)"
    )
    outcome = Outcome.SILENT_WRONG
    sees = Scope.CAPTURED  # recorded once for all replays: not torch.compile
    consequence = "replays reuse the value from capture"

    def visit_Name(self, node: cst.Name) -> None:
        self.check(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.check(node)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        self.check(node)

    def check(self, node: cst.BaseExpression) -> None:
        key = self.state.reads.get(node)
        if key is None or node in self.state.in_test:  # tests are GL203's
            return
        if node in self.state.in_key:  # ``outs[bs] = y`` files the output: GL404's
            return
        region = self.here
        value = self.value(node)
        if not (
            value.kind is Kind.PYTHON
            or (value.kind is Kind.UNKNOWN and self.python_valued(key))
        ):
            return
        if value.function is not None or value.is_class:
            return
        change = self.flow.changes(key, region)
        if change is not None:
            self.report(
                node,
                region,
                confidence=change.confidence,
                expr=self.code_of(node),
                why=change.describe("it"),
            )

    def python_valued(self, key: Key) -> bool:
        """Whether a location of unknown kind holds Python values: some write binds
        it to one (``scale = 1.0``), none to anything else graphlint knows
        (``scale = v`` with ``v`` a parameter is unknown, not evidence)."""
        kinds = set()
        for write in self.state.writes.get(key, ()):
            if write.how == "assign" and write.value is not None:
                kinds.add(self.value(write.value).kind)
        return Kind.PYTHON in kinds and kinds <= {Kind.PYTHON, Kind.UNKNOWN}

    def visit_Call(self, node: cst.Call) -> None:
        found = method(node)
        if found is None or found[1] not in _SCHEDULER_READS:
            return
        region = self.here
        is_scheduler = (self.value(found[0]).cls or "").startswith(
            "torch.optim.lr_scheduler."
        )
        self.report(
            node,
            region,
            confidence=Confidence.HIGH if is_scheduler else Confidence.MEDIUM,
            expr=self.code_of(node),
            why="the scheduler changes the learning rate at every step",
        )
