"""GL706: make_graphed_callables inside autocast with its cast cache enabled."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Applicability, Outcome, RegionKind, RegionRef
from graphlint.facts.kinds.graphed import graphed_label
from graphlint.facts.region import Region
from graphlint.facts.syntax import keyword, positional
from graphlint.rule import Rule, Scope
from graphlint.rules.apis._options import with_keyword
from graphlint.signatures import AUTOCAST_CACHE

# how many positional parameters come before ``cache_enabled``, by autocast: one
# more written out passes it by position, and the keyword would be given twice
_BEFORE_CACHE = {
    "torch.autocast": 3,  # device_type, dtype, enabled
    "torch.amp.autocast": 3,
    "torch.cuda.amp.autocast": 2,  # enabled, dtype
}


class GraphedCallablesUnderAutocast(Rule):
    """`make_graphed_callables` under `torch.autocast` without `cache_enabled=False`."""

    code = "GL706"
    fix_applicability = Applicability.SAFE
    message = "`{autocast}` keeps its cast cache enabled around `{call}` (line {line})"
    fix_title = (
        "Use `torch.autocast(..., cache_enabled=False)` around graphed callables"
    )
    outcome = Outcome.CAPTURE_ERROR
    sees = Scope.FILE  # ``make_graphed_callables`` and its autocast are set-up code
    # what a capture raises at the line (make_graphed_callables' own check)
    capture_failures = (AUTOCAST_CACHE,)

    def visit_Call(self, node: cst.Call) -> None:
        if node not in self.context.facts.setup.graphed_calls:
            return
        function = self.state.function_of(node)
        line = self.context.positions[node].start.line
        for block in self.context.facts.setup.autocasts:
            if block.cache_enabled and block.encloses(function, line):
                label = graphed_label(self.qualname(node.func))
                region = Region(RegionRef(RegionKind.GRAPHED, line, label))
                anchor = block.item or block.node
                call = self.code_of(node.func) + "(...)"
                fixed = self.uncached(anchor) if isinstance(anchor, cst.Call) else None
                self.report(
                    anchor,
                    region,
                    related=[(node, f"{call} graphs callables here")],
                    fix=[(anchor, fixed)] if fixed is not None else [],
                    autocast=self.code_of(anchor),
                    call=call,
                    line=line,
                )
                return

    def uncached(self, autocast: cst.Call) -> cst.Call | None:
        """``autocast`` with ``cache_enabled=False``; None where the cache flag is
        an expression of the project's (a setting it may want) or may be passed by
        position or in ``**options``."""
        before = _BEFORE_CACHE.get(self.qualname(autocast.func) or "")
        if before is None or len(positional(autocast)) > before:
            return None
        given = keyword(autocast, "cache_enabled")
        # None is autocast's default: torch.is_autocast_cache_enabled(), on
        if given is not None and not (
            isinstance(given, cst.Name) and given.value in ("True", "None")
        ):
            return None
        span = self.context.positions[autocast]
        return with_keyword(
            autocast,
            "cache_enabled",
            cst.Name("False"),
            one_line=span.start.line == span.end.line,
        )
