"""GL302: `.data =` replaces the storage of a tensor a captured graph reads."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Outcome, RegionKind
from graphlint.rule import Rule

MANUAL = frozenset({RegionKind.MANUAL})


class StaticInputDataReplaced(Rule):
    """`t.data = new` on a tensor the graph reads swaps its memory under the graph."""

    code = "GL302"
    message = (
        "`{target} = ...` gives new memory to a tensor that the graph captured at "
        "line {line} reads, before the replay at line {replay}{through}"
    )
    fix_title = "Copy into the existing memory: `{base}.copy_(new)`"
    outcome = Outcome.SILENT_WRONG
    consequence = "replays keep reading the old memory"

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value != "data":
            return
        write = self.state.write_at.get(node)
        base = self.state.key_of(node.value)
        if write is None or base is None or write.how != "assign":
            return
        for region in self.state.readers(base, MANUAL):
            change = self.flow.between_replays(write, region)
            if change is not None:
                self.report(
                    node,
                    region,
                    confidence=change.confidence,
                    target=self.code_of(node),
                    line=region.line,
                    replay=change.replay,
                    through=change.through(),
                    base=self.code_of(node.value),
                )
                return
