"""GL706: make_graphed_callables inside autocast with its cast cache enabled."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Outcome, RegionKind
from graphlint.facts.regions import Region
from graphlint.rule import Rule


class GraphedCallablesUnderAutocast(Rule):
    """`make_graphed_callables` under `torch.autocast` without `cache_enabled=False`."""

    code = "GL706"
    message = "`{autocast}` keeps its cast cache enabled around `{call}` (line {line})"
    fix_title = (
        "Use `torch.autocast(..., cache_enabled=False)` around graphed callables"
    )
    outcome = Outcome.CAPTURE_ERROR

    def visit_Call(self, node: cst.Call) -> None:
        if node not in self.context.facts.setup.graphed_calls:
            return
        function = self.state.function_of(node)
        line = self.context.positions[node].start.line
        for block in self.context.facts.setup.autocasts:
            if block.cache_enabled and block.encloses(function, line):
                region = Region(RegionKind.GRAPHED, line, "make_graphed_callables")
                anchor = block.item or block.node
                call = self.code_of(node.func) + "(...)"
                self.report(
                    anchor,
                    region,
                    related=[(node, f"{call} graphs callables here")],
                    autocast=self.code_of(anchor),
                    call=call,
                    line=line,
                )
                return
