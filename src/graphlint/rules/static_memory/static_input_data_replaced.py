"""GL302: `.data =` replaces the storage of a tensor a captured graph reads."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Applicability, Outcome, RegionKind
from graphlint.facts.values import Kind
from graphlint.rule import Rule, RuleContext, Scope
from graphlint.rules.static_memory._copy import copy_into

MANUAL = frozenset({RegionKind.MANUAL})


class StaticInputDataReplaced(Rule):
    """`t.data = new` on a tensor the graph reads swaps its memory under the graph."""

    code = "GL302"
    fix_applicability = Applicability.UNSAFE
    message = (
        "`{target} = ...` gives new memory to a tensor that the graph captured at "
        "line {line} reads, before the replay at line {replay}{through}"
    )
    fix_title = "Copy into the existing memory: `{target}.copy_(new)`"
    outcome = Outcome.SILENT_WRONG
    sees = Scope.FILE  # ``.data =`` happens outside regions, between replays
    consequence = "replays keep reading the old memory"

    def __init__(self, context: RuleContext) -> None:
        super().__init__(context)
        # ``t.data = new`` by its target: the statements a fix may turn into a copy
        self._assigns: dict[cst.CSTNode, cst.Assign] = {}

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) == 1:  # not ``a.data = b.data = new``
            self._assigns[node.targets[0].target] = node

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
                    fix=self.fix(node),
                )
                return

    def fix(self, target: cst.Attribute) -> list[tuple[cst.CSTNode, cst.Call]]:
        """``t.data = new`` -> ``t.data.copy_(new)``: through ``.data``, as the
        assignment was, so that autograd does not see it and a parameter (a leaf
        that requires grad, where ``t.copy_`` raises) takes it too. Not for
        unpacking, ``a.data = b.data = new`` or an annotated binding."""
        statement = self._assigns.get(target)
        if statement is None or self.value(statement.value).kind not in {
            Kind.TENSOR,
            Kind.UNKNOWN,
        }:
            return []
        return copy_into(statement, target)
