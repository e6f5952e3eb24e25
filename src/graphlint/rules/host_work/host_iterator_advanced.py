"""GL403: `next()` on a host iterator under capture."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Outcome
from graphlint.facts.region import Region
from graphlint.facts.syntax import method
from graphlint.facts.torchapi import MODULE_ITERATORS
from graphlint.rule import Rule, Scope


class HostIteratorAdvanced(Rule):
    """`next(it)` under capture takes one item, once; replays reuse it."""

    code = "GL403"
    message = "`{call}` advances a host iterator once, while capturing"
    fix_title = (
        "Fetch the next item outside the region and copy it into the static input "
        "with `.copy_()` before each `replay()`"
    )
    outcome = Outcome.SILENT_WRONG
    sees = Scope.CAPTURED  # recorded once for all replays: not torch.compile
    host_work = True
    consequence = "replays reuse the item from capture"

    def visit_Call(self, node: cst.Call) -> None:
        region = self.here
        if self.builtin(node) != "next":
            return
        if node.args and self.fresh(node.args[0].value, region):
            return  # ``next(iter(d.values()))``: the first item, nothing advances
        self.report(node, region, call=self.code_of(node))

    def fresh(self, iterator: cst.BaseExpression, region: Region) -> bool:
        """An iterator made in the same expression (``next(iter(d))``, a module's
        ``next(self.parameters())``), or by the captured code itself: it does not
        outlive the capture, so replays lose nothing."""
        if isinstance(iterator, cst.GeneratorExp):
            return True
        if isinstance(iterator, cst.Call):
            found = method(iterator)
            return self.builtin(iterator) in _FRESH or (
                found is not None and found[1] in MODULE_ITERATORS
            )
        key = self.state.key_of(iterator)
        return key is not None and any(
            write.region == region and write.how == "assign"
            for write in self.state.writes.get(key, ())
        )


_FRESH = frozenset({"iter", "reversed", "enumerate", "zip", "map", "filter"})
