"""Regions a user marks with a marker (graphlint's own, or a framework's the
configuration names): ``with graphlint.capture_region():``, a marked function, a
marked class (its ``forward``)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from graphlint.diagnostics import Confidence, RegionKind, RegionRef
from graphlint.facts.kinds.base import Decorated, Opened, Recogniser, Screen
from graphlint.facts.torchapi import BUILTIN_MARKERS

if TYPE_CHECKING:
    import libcst as cst

LABEL = "marked"
# a span marked in comments: only the text shows it
_PRAGMA = re.compile(r"#\s*graphlint:\s*capture-(?:begin|end)\b", re.I)


class MarkedScreen(Screen):
    """graphlint's name (its markers, the comments that mark a span), or the last
    part of a marker the configuration names (``support_torch_compile``)."""

    pattern = "graphlint"

    def __init__(self, markers: frozenset[str]) -> None:
        super().__init__(markers)
        self.letters = ("graph", *(_last(m) for m in sorted(markers)))

    def text(self, source: str) -> bool:
        return "graphlint" in source or has_marker(source, self.markers)

    def shown(self, source: str) -> bool:
        return _PRAGMA.search(source) is not None

    def names(self, source: str) -> frozenset[str]:
        return frozenset(_last(m) for m in BUILTIN_MARKERS | self.markers)


def has_marker(source: str, markers: frozenset[str]) -> bool:
    """Whether the text holds the last part of one of the configured markers."""
    return any(_last(m) in source for m in markers)


def _last(marker: str) -> str:
    """A marker's last part (``support_torch_compile``), as code names it."""
    return marker.rsplit(".", 1)[-1]


class Marked(Recogniser):
    screen = MarkedScreen

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


__all__ = ["LABEL", "Marked", "MarkedScreen", "has_marker"]
