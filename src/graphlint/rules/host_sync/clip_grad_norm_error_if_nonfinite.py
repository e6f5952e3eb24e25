"""GL107: clip_grad_norm_(error_if_nonfinite=True) checks the norm on the host."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Applicability, Outcome
from graphlint.facts.syntax import is_true, keyword
from graphlint.rule import Rule
from graphlint.signatures import SYNC

_CLIPPERS = frozenset(
    {
        "torch.nn.utils.clip_grad_norm_",
        "torch.nn.utils.clip_grad_norm",
        "torch.nn.utils.get_total_norm",
    }
)


class ClipGradNormErrorIfNonfinite(Rule):
    """`clip_grad_norm_(..., error_if_nonfinite=True)` reads the norm on the host."""

    code = "GL107"
    fix_applicability = Applicability.SAFE
    message = "`{call}` checks the gradient norm on the host"
    fix_title = (
        "Drop `error_if_nonfinite=True`; check `torch.isfinite(norm)` after `replay()`"
    )
    outcome = Outcome.CAPTURE_ERROR
    # what a capture raises at the line (measured: clip_grad_norm_nonfinite)
    capture_failures = (SYNC,)

    def visit_Call(self, node: cst.Call) -> None:
        region = self.here
        if self.qualname(node.func) in _CLIPPERS and is_true(
            keyword(node, "error_if_nonfinite")
        ):
            fixed = _fixed(node)
            self.report(
                node,
                region,
                call=self.code_of(node),
                fix=[(node, fixed)] if fixed is not None else [],
            )


def _fixed(node: cst.Call) -> cst.Call | None:
    """The call without ``error_if_nonfinite`` (False by default); None where that
    would drop a comment written among the arguments."""
    if any(
        isinstance(part, cst.Comment)
        for a in node.args
        for part in _whitespace_parts(a)
    ):
        return None
    args = [
        a
        for a in node.args
        if not (a.keyword and a.keyword.value == "error_if_nonfinite")
    ]
    if args:  # no comma after what is now the last argument
        args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return node.with_changes(args=args)


def _whitespace_parts(arg: cst.Arg) -> list[cst.CSTNode]:
    """The comments and line breaks around an argument and its comma."""
    found: list[cst.CSTNode] = []
    spaces = [arg.whitespace_after_arg]
    if isinstance(arg.comma, cst.Comma):
        spaces += [arg.comma.whitespace_before, arg.comma.whitespace_after]
    for space in spaces:
        if isinstance(space, cst.ParenthesizedWhitespace):
            found.append(space.first_line.comment or space.first_line)
            found.extend(line.comment or line for line in space.empty_lines)
    return [part for part in found if isinstance(part, cst.Comment)]
