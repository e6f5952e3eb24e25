"""GL301: a tensor a captured graph reads is rebound instead of updated in place."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Outcome, RegionKind
from graphlint.facts.state import Write
from graphlint.facts.values import element_of
from graphlint.rule import Rule

MANUAL = frozenset({RegionKind.MANUAL})


class StaticInputRebound(Rule):
    """A tensor the graph reads is rebound (`x = new`) instead of copied into."""

    code = "GL301"
    message = (
        "`{target}` rebinds a tensor that the graph captured at line {line} reads, "
        "before the replay at line {replay}{through}"
    )
    fix_title = (
        "Update it in place: `{name}.copy_(new)`, `{name}.fill_(v)` or "
        "`{name}[...] = v`"
    )
    outcome = Outcome.SILENT_WRONG
    consequence = "replays keep reading the old tensor"

    def visit_Name(self, node: cst.Name) -> None:
        self.check(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value != "data":  # GL302
            self.check(node)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if not self.value(node.value).is_tensor:  # t[...] = v is in place
            self.check(node)

    def check(self, target: cst.BaseExpression) -> None:
        write = self.state.write_at.get(target)
        if write is None or write.how == "augment" or not self.holds_tensor(write):
            return
        for region in self.state.readers(write.key, MANUAL):
            change = self.flow.between_replays(write, region)
            if change is not None:
                name = self.code_of(target)
                self.report(
                    target,
                    region,
                    confidence=change.confidence,
                    target=f"{name} = ..." if write.how == "assign" else name,
                    line=region.line,
                    replay=change.replay,
                    through=change.through(),
                    name=name,
                )
                return

    def holds_tensor(self, write: Write) -> bool:
        """Whether the location holds a tensor, by this or any other write to it."""
        for other in self.state.writes.get(write.key, ()):
            if other.value is None:
                continue
            value = self.value(other.value)
            if other.how == "iterate":
                value = element_of(value)
            if value.is_tensor:
                return True
        return False
