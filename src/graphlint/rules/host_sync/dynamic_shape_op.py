"""GL105: an operation whose output shape depends on tensor values, under capture."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Confidence, Outcome
from graphlint.facts.syntax import keyword, method, positional
from graphlint.facts.values import Kind
from graphlint.rule import Rule, RuleContext, Scope, seeing
from graphlint.signatures import SYNC

_FUNCTIONS = frozenset(
    {
        "torch.nonzero",
        "torch.argwhere",
        "torch.masked_select",
        "torch.unique",
        "torch.unique_consecutive",
    }
)
_METHODS = frozenset(
    {"nonzero", "argwhere", "masked_select", "unique", "unique_consecutive"}
)


class DynamicShapeOp(Rule):
    """The output shape depends on the data (`nonzero`, `x[mask]`, `unique` ...)."""

    code = "GL105"
    message = "`{call}` has an output shape that depends on tensor values"
    fix_title = (
        "Use a fixed-shape form: `torch.where(mask, x, 0)`, `masked_fill`, "
        "`nonzero_static(size=...)`, `repeat_interleave(..., output_size=n)`"
    )
    outcome = Outcome.CAPTURE_ERROR
    # what a capture raises at the line (measured: nonzero, bool_mask_index, unique,
    # repeat_interleave_tensor, where_one_arg)
    capture_failures = (SYNC,)

    def __init__(self, context: RuleContext) -> None:
        super().__init__(context)
        self._stores: set[cst.CSTNode] = set()  # x[mask] = v writes in place: fine

    def visit_Call(self, node: cst.Call) -> None:
        region = self.here
        q = self.qualname(node.func)
        args = positional(node)
        if q in _FUNCTIONS or (q == "torch.where" and len(node.args) == 1):
            self.report(node, region, call=self.code_of(node))
        elif q == "torch.repeat_interleave":
            if len(args) >= 2 and self.tensor_repeats(node, args[1]):
                self.report(node, region, call=self.code_of(node))
        elif q is None and (found := method(node)) is not None:
            receiver, attr = found
            confidence = self.confidence(receiver)
            if confidence is None:
                return
            if attr in _METHODS or (
                attr == "repeat_interleave"
                and args
                and self.tensor_repeats(node, args[0])
            ):
                self.report(
                    node, region, confidence=confidence, call=self.code_of(node)
                )

    def confidence(self, receiver: cst.BaseExpression) -> Confidence | None:
        """High for a device tensor; medium for a receiver of unknown type, as
        GL101 does for ``.item()``; None for anything else."""
        value = self.value(receiver)
        if value.on_device:
            return Confidence.HIGH
        if value.kind in (Kind.UNKNOWN, Kind.BOTTOM):
            return Confidence.MEDIUM
        return None

    def tensor_repeats(self, node: cst.Call, repeats: cst.BaseExpression) -> bool:
        return self.value(repeats).is_tensor and keyword(node, "output_size") is None

    # the stores are recorded in all region code, recorded at capture or not
    @seeing(Scope.REGION_CODE)
    def visit_Assign(self, node: cst.Assign) -> None:
        self._stores.update(t.target for t in node.targets)

    @seeing(Scope.REGION_CODE)
    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._stores.add(node.target)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if node in self._stores:
            return
        region = self.here
        confidence = self.confidence(node.value)
        if confidence is None:
            return
        for element in node.slice:
            index = element.slice
            if isinstance(index, cst.Index) and self.value(index.value).boolean:
                self.report(
                    node, region, confidence=confidence, call=self.code_of(node)
                )
                return
