"""GL702: GradScaler.step() under capture for a non-fused optimizer."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Confidence, Outcome
from graphlint.matchers import is_true, keyword, method, positional
from graphlint.rule import Rule


class GradScalerStepInRegion(Rule):
    """`scaler.step(opt)` under capture reads `found_inf` on the host."""

    code = "GL702"
    message = "`{call}` checks for inf/NaN gradients with `.item()` while capturing"
    fix_title = (
        "Capture only `scaler.scale(loss).backward()` and call `scaler.step(opt)` and "
        "`scaler.update()` after `replay()`, or use a fused optimizer (`fused=True`)"
    )
    outcome = Outcome.CAPTURE_ERROR

    def visit_Call(self, node: cst.Call) -> None:
        found = method(node)
        if found is None or found[1] != "step":
            return
        region = self.captured(node)
        if region is None or self.value(found[0]).cls != "torch.amp.GradScaler":
            return
        args = positional(node)
        origin = self.value(args[0]).origin if args else None
        if origin is not None and is_true(keyword(origin, "fused")):
            return  # fused optimizers unscale on the device: no host read
        self.report(
            node,
            region,
            confidence=Confidence.HIGH if origin is not None else Confidence.MEDIUM,
            call=self.code_of(node),
        )
