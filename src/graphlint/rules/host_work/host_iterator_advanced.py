"""GL403: `next()` on a host iterator under capture."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Outcome
from graphlint.matchers import builtin
from graphlint.rule import Rule


class HostIteratorAdvanced(Rule):
    """`next(it)` under capture takes one item, once; replays reuse it."""

    code = "GL403"
    message = "`{call}` advances a host iterator once, while capturing"
    fix_title = (
        "Fetch the next item outside the region and copy it into the static input "
        "with `.copy_()` before each `replay()`"
    )
    outcome = Outcome.SILENT_WRONG
    consequence = "replays reuse the item from capture"

    def visit_Call(self, node: cst.Call) -> None:
        region = self.captured(node)
        if region is not None and builtin(self.context.facts, node) == "next":
            self.report(node, region, call=self.code_of(node))
