"""GL701: optimizer.step() under capture for an optimizer built without capturable."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Outcome
from graphlint.facts.torchapi import CAPTURE_CHECKED_OPTIMIZERS
from graphlint.matchers import is_true, keyword, method, positional
from graphlint.rule import Rule


class OptimizerNotCapturable(Rule):
    """`opt.step()` under capture for Adam & co. built without `capturable=True`."""

    code = "GL701"
    message = "`{call}` steps `{cls}` built without `capturable=True` (line {line})"
    fix_title = "Build it with `capturable=True` (and a tensor `lr` if it is scheduled)"
    outcome = Outcome.CAPTURE_ERROR

    def visit_Call(self, node: cst.Call) -> None:
        found = method(node)
        if found is None or found[1] != "step":
            return
        region = self.captured(node)
        if region is None:
            return
        args = positional(node)
        # opt.step() and scaler.step(opt)
        for optimizer in (found[0], *args[:1]):
            value = self.value(optimizer)
            origin = value.origin
            if (
                value.cls in CAPTURE_CHECKED_OPTIMIZERS
                and origin is not None
                and not is_true(keyword(origin, "capturable"))
            ):
                self.report(
                    node,
                    region,
                    call=self.code_of(node),
                    cls=(value.cls or "").rsplit(".", 1)[-1],
                    line=self.context.positions[origin].start.line,
                )
                return
