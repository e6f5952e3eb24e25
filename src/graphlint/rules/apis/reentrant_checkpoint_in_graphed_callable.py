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
# what a project's own reentrant checkpoint (an autograd Function that reruns the
# forward in its backward) asks before it does, as torch's does: False under
# ``torch.autograd.grad``, which graphed callables run the backward with
_VALIDITY_CHECK = "torch.autograd._is_checkpoint_valid"


class ReentrantCheckpointInGraphedCallable(Rule):
    """`checkpoint(..., use_reentrant=True)` in code `make_graphed_callables` graphs."""

    code = "GL708"
    message = "`{call}` uses reentrant checkpointing, which graphed callables reject"
    fix_title = "Pass `use_reentrant=False`"
    outcome = Outcome.CAPTURE_ERROR
    # raised by make_graphed_callables' own backward pass, inside torch: it names
    # no line of the user's, so it confirms the finding anywhere in the region
    region_failures = (
        "use_reentrant=True, torch.utils.checkpoint is incompatible",
        "not compatible with .grad()",  # the words of projects' own checkpoints
    )

    def visit_Call(self, node: cst.Call) -> None:
        region = self.region(node)
        if region is None or region.kind is not RegionKind.GRAPHED:
            return
        if self.qualname(node.func) in _CHECKPOINTS and is_true(
            keyword(node, "use_reentrant")
        ):
            self.report(node, region, call=self.code_of(node.func) + "(...)")

    def visit_If(self, node: cst.If) -> None:
        """``if not torch.autograd._is_checkpoint_valid(): raise ...`` in the backward
        of a project's own checkpoint: the ``raise`` runs, and is reported."""
        test = node.test
        if not (
            isinstance(test, cst.UnaryOperation)
            and isinstance(test.operator, cst.Not)
            and isinstance(test.expression, cst.Call)
            and self.qualname(test.expression.func) == _VALIDITY_CHECK
        ):
            return
        region = self.region(node)
        site = self.flow.sites.get(test.expression)
        function = site.function if site is not None else None
        if (
            region is None
            or region.kind is not RegionKind.GRAPHED
            or not isinstance(function, cst.FunctionDef)
        ):
            return
        body = node.body  # an indented block, or ``if ...: raise ...`` on one line
        lines = body.body if isinstance(body, cst.IndentedBlock) else [body]
        raised = next(
            (
                small
                for line in lines
                if isinstance(line, (cst.SimpleStatementLine, cst.SimpleStatementSuite))
                for small in line.body
                if isinstance(small, cst.Raise)
            ),
            None,
        )
        if raised is not None:
            owner = self.context.facts.paths.get(function, function.name.value)
            self.report(raised, region, call=owner)
