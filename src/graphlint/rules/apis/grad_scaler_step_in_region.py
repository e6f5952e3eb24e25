"""GL702: GradScaler.step() under capture for a non-fused optimizer."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Confidence, Outcome
from graphlint.facts.region import Region
from graphlint.facts.syntax import method, positional
from graphlint.rule import RuleContext
from graphlint.rules.apis._options import OptionsRule
from graphlint.signatures import SYNC


class GradScalerStepInRegion(OptionsRule):
    """`scaler.step(opt)` under capture reads `found_inf` on the host."""

    code = "GL702"
    message = "`{call}` checks for inf/NaN gradients with `.item()` while capturing"
    fix_title = (
        "Capture only `scaler.scale(loss).backward()` and call `scaler.step(opt)` and "
        "`scaler.update()` after `replay()`, or use a fused optimizer (`fused=True`)"
    )
    outcome = Outcome.CAPTURE_ERROR
    # what a capture raises at the line (measured: grad_scaler_step (its inf check reads
    # the device))
    capture_failures = (SYNC,)

    def __init__(self, context: RuleContext) -> None:
        super().__init__(context)
        # reported at the end of the file: a later line may still set the option
        self._steps: list[tuple[cst.Call, Region, cst.BaseExpression | None]] = []

    def visit_Call(self, node: cst.Call) -> None:
        super().visit_Call(node)
        found = method(node)
        if found is None or found[1] != "step":
            return
        region = self.captured(node)
        if region is None or self.value(found[0]).cls != "torch.amp.GradScaler":
            return
        args = positional(node)
        self._steps.append((node, region, args[0] if args else None))

    def leave_Module(self, original_node: cst.Module) -> None:
        for node, region, optimizer in self._steps:
            origin = self.value(optimizer).origin if optimizer is not None else None
            fused = self.option(origin, "fused", optimizer) if origin else False
            if fused is not False:
                continue  # fused optimizers unscale on the device: no host read
            self.report(
                node,
                region,
                confidence=Confidence.HIGH if origin is not None else Confidence.MEDIUM,
                call=self.code_of(node),
            )
