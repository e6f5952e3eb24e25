"""GL708: reentrant activation checkpointing inside a graphed callable."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Applicability, Outcome, RegionKind
from graphlint.facts.kinds.graphed import TORCH_GRAPHED, graphed_label
from graphlint.facts.region import Region
from graphlint.facts.syntax import is_true, keyword
from graphlint.facts.torchapi import AUTOGRAD_FUNCTIONS
from graphlint.rule import Rule, RuleContext

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
# what such a Function's backward runs on the rerun forward: a backward pass of its
# own, which the one graphed callables run with ``torch.autograd.grad`` cannot see into
_NESTED_BACKWARD = "torch.autograd.backward"
_TORCH_LABEL = graphed_label(TORCH_GRAPHED)  # PyTorch's make_graphed_callables


class ReentrantCheckpointInGraphedCallable(Rule):
    """`checkpoint(..., use_reentrant=True)` in code `make_graphed_callables` graphs."""

    code = "GL708"
    # non-reentrant checkpointing records and recomputes differently (see the page)
    fix_applicability = Applicability.UNSAFE
    message = "`{call}` uses reentrant checkpointing, which graphed callables reject"
    fix_title = "Pass `use_reentrant=False`"
    outcome = Outcome.CAPTURE_ERROR
    # raised by make_graphed_callables' own backward pass, inside torch: it names
    # no line of the user's, so it confirms the finding anywhere in the region
    region_failures = (
        "use_reentrant=True, torch.utils.checkpoint is incompatible",
        "not compatible with .grad()",  # the words of projects' own checkpoints
        # a project's checkpoint with no validity check, whose rerun uses parameters
        # that the graphed callable's own backward pass differentiates
        "One of the differentiated Tensors appears to not have been used in the graph",
    )

    def __init__(self, context: RuleContext) -> None:
        super().__init__(context)
        self._reported: set[cst.FunctionDef] = set()  # backwards, once each

    def visit_Call(self, node: cst.Call) -> None:
        region = self.here
        # PyTorch's: its backward pass is ``torch.autograd.grad``. Transformer
        # Engine's runs ``torch.autograd.backward``, which reentrant checkpoints
        # support.
        if region.kind is not RegionKind.GRAPHED or region.label != _TORCH_LABEL:
            return
        name = self.qualname(node.func)
        reentrant = keyword(node, "use_reentrant") if name in _CHECKPOINTS else None
        if reentrant is not None and is_true(reentrant):
            self.report(
                node,
                region,
                fix=[(reentrant, cst.Name("False"))],
                call=self.code_of(node.func) + "(...)",
            )
        elif name == _NESTED_BACKWARD:
            # a backward that runs a backward pass of its own over a rerun: a
            # reentrant checkpoint, with or without torch's validity check
            self.reentrant(node, node, region)

    def reentrant(self, node: cst.CSTNode, anchor: cst.CSTNode, region: Region) -> None:
        """Report the ``backward`` of an autograd Function around ``anchor`` that
        reruns the forward, once, on ``node``."""
        site = self.flow.sites.get(anchor)
        function = site.function if site is not None else None
        if (
            not isinstance(function, cst.FunctionDef)
            or function.name.value != "backward"
            or function in self._reported
            or not self.of_autograd_function(function)
        ):
            return
        self._reported.add(function)
        owner = self.context.facts.paths.get(function, function.name.value)
        self.report(node, region, call=owner)

    def of_autograd_function(self, function: cst.FunctionDef) -> bool:
        """Whether ``function`` is a method of an autograd Function: a class of the
        file deriving from ``torch.autograd.Function``, directly or through its
        other classes of the file."""
        values = self.context.facts.values
        scope = values.scope_of.get(function)
        if scope is None or scope.cls is None:
            return False
        return any(
            values.qualify(base.value) in AUTOGRAD_FUNCTIONS
            for info in values.bases(scope.cls)
            for base in info.node.bases
        )

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
        region = self.here
        if region.kind is not RegionKind.GRAPHED or region.label != _TORCH_LABEL:
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
            self.reentrant(raised, test.expression, region)
