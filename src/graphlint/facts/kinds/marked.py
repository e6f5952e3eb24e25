"""Regions a user marks with a marker (graphlint's own, or a framework's the
configuration names): ``with graphlint.capture_region():``, a marked function, a
marked class (its ``forward``)."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Confidence, RegionKind, RegionRef
from graphlint.facts.kinds.base import Decorated, Opened, Recogniser

LABEL = "marked"


class Marked(Recogniser):
    def context(self, call: cst.Call, qualified: str | None) -> Opened | None:
        if qualified in self.finder.markers:
            return RegionKind.MARKED, LABEL, Confidence.HIGH, None
        return None

    def decorator(
        self, expression: cst.BaseExpression, qualified: str | None
    ) -> Decorated | None:
        if qualified in self.finder.markers:
            return RegionKind.MARKED, LABEL, Confidence.HIGH
        return None

    def decorated_class(
        self, decorator: cst.Decorator, qualified: str | None
    ) -> RegionRef | None:
        """``@support_torch_compile class Model(nn.Module)`` marks its ``forward``."""
        if qualified in self.finder.markers:
            return RegionRef(RegionKind.MARKED, self.finder.line(decorator), LABEL)
        return None


__all__ = ["LABEL", "Marked"]
