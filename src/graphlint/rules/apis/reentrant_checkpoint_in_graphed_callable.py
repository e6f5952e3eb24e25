"""GL708: reentrant activation checkpointing inside a graphed callable."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Outcome, RegionKind
from graphlint.matchers import is_true, keyword
from graphlint.rule import Rule

_CHECKPOINTS = frozenset(
    {
        "torch.utils.checkpoint.checkpoint",
        "torch.utils.checkpoint.checkpoint_sequential",
    }
)


class ReentrantCheckpointInGraphedCallable(Rule):
    """`checkpoint(..., use_reentrant=True)` in code `make_graphed_callables` graphs."""

    code = "GL708"
    message = "`{call}` uses reentrant checkpointing, which graphed callables reject"
    fix_title = "Pass `use_reentrant=False`"
    outcome = Outcome.CAPTURE_ERROR
    # raised by make_graphed_callables' own backward pass, inside torch: it names
    # no line of the user's, so it confirms the finding anywhere in the region
    region_failures = ("use_reentrant=True, torch.utils.checkpoint is incompatible",)

    def visit_Call(self, node: cst.Call) -> None:
        region = self.region(node)
        if region is None or region.kind is not RegionKind.GRAPHED:
            return
        if self.qualname(node.func) in _CHECKPOINTS and is_true(
            keyword(node, "use_reentrant")
        ):
            self.report(node, region, call=self.code_of(node.func) + "(...)")
