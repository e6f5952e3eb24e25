"""GL102: a tensor formatted as text (print, f-string, str, logging) under capture."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from graphlint.diagnostics import Outcome
from graphlint.facts.region import Region
from graphlint.facts.syntax import method
from graphlint.rule import Rule
from graphlint.signatures import PAGEABLE_COPY, SYNC

_TEXT_BUILTINS = frozenset({"print", "str", "repr", "format", "ascii"})
_LOG_METHODS = frozenset(
    {"debug", "info", "warning", "warn", "error", "critical", "exception", "log"}
)


class TensorFormattedOnHost(Rule):
    """A tensor is turned into text, which reads its values on the host."""

    code = "GL102"
    message = "`{call}` formats a device tensor as text"
    fix_title = "Log after `replay()`, outside the region, or log a cloned output"
    outcome = Outcome.CAPTURE_ERROR
    # what a capture raises at the line (measured: print_tensor, fstring_log_tensor,
    # str_tensor, logging_info_enabled); formatting reads the values on the host,
    # which fails as GL101's reads do, by a wait or by a copy to pageable memory
    capture_failures = (SYNC, PAGEABLE_COPY)

    def visit_Call(self, node: cst.Call) -> None:
        region = self.here
        name = self.builtin(node)
        if name in _TEXT_BUILTINS:
            self.check_args(node, node.args, region)
            return
        found = method(node)
        if found is None:
            return
        receiver, attr = found
        if (
            attr == "format"
            and isinstance(receiver, (cst.SimpleString, cst.ConcatenatedString))
        ) or (attr in _LOG_METHODS and self.is_logger(receiver)):
            self.check_args(node, node.args, region)

    def is_logger(self, receiver: cst.BaseExpression) -> bool:
        if self.qualname(receiver) == "logging":
            return True
        return self.value(receiver).cls == "logging.Logger"

    def check_args(
        self, node: cst.Call, args: Sequence[cst.Arg], region: Region
    ) -> None:
        if any(self.value(a.value).on_device for a in args):
            self.report(node, region, call=self.code_of(node))

    def visit_FormattedString(self, node: cst.FormattedString) -> None:
        region = self.here
        for part in node.parts:
            if (
                isinstance(part, cst.FormattedStringExpression)
                and self.value(part.expression).on_device
            ):
                self.report(node, region, call=self.code_of(node))
                return

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if not isinstance(node.operator, cst.Modulo):
            return
        if not isinstance(node.left, (cst.SimpleString, cst.ConcatenatedString)):
            return
        region = self.here
        right = node.right
        operands = (
            [el.value for el in right.elements]
            if isinstance(right, cst.Tuple)
            else [right]
        )
        if any(self.value(op).on_device for op in operands):
            self.report(node, region, call=self.code_of(node))
