"""GL701: optimizer.step() under capture for an optimizer built without capturable."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Applicability, Outcome
from graphlint.facts.region import Region
from graphlint.facts.syntax import method, positional
from graphlint.facts.torchapi import CAPTURE_CHECKED_OPTIMIZERS
from graphlint.rule import RuleContext
from graphlint.rules.apis._options import OptionsRule, with_keyword
from graphlint.signatures import NOT_CAPTURABLE


class OptimizerNotCapturable(OptionsRule):
    """`opt.step()` under capture for Adam & co. built without `capturable=True`."""

    code = "GL701"
    fix_applicability = Applicability.SAFE
    message = "`{call}` steps `{cls}` built without `capturable=True` (line {line})"
    fix_title = "Build it with `capturable=True` (and a tensor `lr` if it is scheduled)"
    outcome = Outcome.CAPTURE_ERROR
    # what a capture raises at the line (measured: adam_not_capturable,
    # adam_fused_not_capturable, scaler_step_fused)
    capture_failures = (NOT_CAPTURABLE,)

    def __init__(self, context: RuleContext) -> None:
        super().__init__(context)
        # reported at the end of the file: a later line may still set the option
        self._steps: list[tuple[cst.Call, Region, cst.Call, cst.BaseExpression, str]]
        self._steps = []

    def visit_Call(self, node: cst.Call) -> None:
        super().visit_Call(node)
        found = method(node)
        if found is None or found[1] != "step":
            return
        region = self.captured(node)
        if region is None:
            return
        # opt.step() and scaler.step(opt)
        for optimizer in (found[0], *positional(node)[:1]):
            value = self.value(optimizer)
            if value.cls in CAPTURE_CHECKED_OPTIMIZERS and value.origin is not None:
                self._steps.append((node, region, value.origin, optimizer, value.cls))
                return

    def leave_Module(self, original_node: cst.Module) -> None:
        for node, region, origin, optimizer, cls in self._steps:
            if self.option(origin, "capturable", optimizer) is not False:
                continue
            span = self.context.positions[origin]
            fixed = with_keyword(
                origin,
                "capturable",
                cst.Name("True"),
                one_line=span.start.line == span.end.line,
            )
            self.report(
                node,
                region,
                call=self.code_of(node),
                cls=cls.rsplit(".", 1)[-1],
                line=self.context.positions[origin].start.line,
                fix=[(origin, fixed)] if fixed is not None else [],
            )
