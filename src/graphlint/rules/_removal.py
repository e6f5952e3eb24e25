"""Fixes that remove a call statement from a capture region (GL103, GL401).

A call that runs once at capture, or fails it, goes: the statement is deleted with
its line, or becomes ``pass`` where it would leave its block empty. Only a whole
statement of the region's own code is removed: code a region reaches through a call
runs eagerly elsewhere too, and under ``torch.compile`` the call still runs on every
call of the compiled function.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from graphlint.facts.syntax import method, plain
from graphlint.rule import Replacement, Rule, RuleContext, file_wide

if TYPE_CHECKING:
    from collections.abc import Callable

    from graphlint.facts.region import Region

# what the removing rules may remove (print, logging, synchronize): a block made of
# such statements only keeps a ``pass``, for when all their fixes apply together
_REMOVED_METHODS = frozenset(
    {
        "debug",
        "info",
        "warning",
        "warn",
        "error",
        "critical",
        "exception",
        "log",
        "synchronize",
    }
)


class StatementRemoval(Rule):
    """A rule whose fix removes the call statement it reports."""

    abstract = True

    def __init__(self, context: RuleContext) -> None:
        super().__init__(context)
        self._statements: dict[cst.Call, cst.SimpleStatementLine] = {}
        self._kept: set[cst.BaseStatement] = set()  # become ``pass``

    # what a fix removes is found over the whole file: a statement between
    # ``capture_begin()`` and ``capture_end()`` is region code, its line and its
    # block are not
    @file_wide
    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        if all(_removable(statement) for statement in node.body):
            self._kept.add(node.body[0])

    @file_wide
    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        call = _call_statement(node)
        if call is not None:
            self._statements[call] = node

    def removal(
        self,
        call: cst.Call,
        region: Region,
        calls: Callable[[cst.Call], bool] | None = None,
    ) -> list[tuple[cst.CSTNode, Replacement]]:
        """The fix removing ``call``'s statement; none where the call is not a whole
        statement of the region's own code, or where its receiver or arguments may
        do something (``calls`` accepts the calls they may make)."""
        statement = self._statements.get(call)
        if (
            statement is None
            or region.via
            or region.origin is not None
            or region.kind.is_compile
            or not plain(call, lambda c: c is call or (calls is not None and calls(c)))
        ):
            return []
        if statement in self._kept:
            return [(statement, "pass")]
        return [(statement, cst.RemovalSentinel.REMOVE)]


def _call_statement(node: cst.BaseStatement) -> cst.Call | None:
    """The call a statement line is made of, alone."""
    if (
        type(node) is cst.SimpleStatementLine
        and len(node.body) == 1
        and type(node.body[0]) is cst.Expr
        and type(node.body[0].value) is cst.Call
    ):
        return node.body[0].value
    return None


def _removable(node: cst.BaseStatement) -> bool:
    """Whether a removing rule may remove the statement (by its shape alone)."""
    call = _call_statement(node)
    if call is None:
        return False
    if type(call.func) is cst.Name:
        return call.func.value == "print"
    found = method(call)
    return found is not None and found[1] in _REMOVED_METHODS
