"""GL701: optimizer.step() under capture for an optimizer built without capturable."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Applicability, Outcome
from graphlint.facts.regions import Region
from graphlint.facts.torchapi import CAPTURE_CHECKED_OPTIMIZERS
from graphlint.matchers import method, positional
from graphlint.rule import RuleContext
from graphlint.rules.apis._options import OptionsRule


class OptimizerNotCapturable(OptionsRule):
    """`opt.step()` under capture for Adam & co. built without `capturable=True`."""

    code = "GL701"
    fix_applicability = Applicability.SAFE
    message = "`{call}` steps `{cls}` built without `capturable=True` (line {line})"
    fix_title = "Build it with `capturable=True` (and a tensor `lr` if it is scheduled)"
    outcome = Outcome.CAPTURE_ERROR

    def __init__(self, context: RuleContext) -> None:
        super().__init__(context)
        # reported at the end of the file: a later line may still set the option
        self._steps: list[tuple[cst.Call, Region, cst.Call, cst.BaseExpression, str]]
        self._steps = []

    def visit_Call(self, node: cst.Call) -> None:
        super().visit_Call(node)
        found = method(node)
        if found is None or found[1] != "step":
            return
        region = self.captured(node)
        if region is None:
            return
        # opt.step() and scaler.step(opt)
        for optimizer in (found[0], *positional(node)[:1]):
            value = self.value(optimizer)
            if value.cls in CAPTURE_CHECKED_OPTIMIZERS and value.origin is not None:
                self._steps.append((node, region, value.origin, optimizer, value.cls))
                return

    def leave_Module(self, original_node: cst.Module) -> None:
        for node, region, origin, optimizer, cls in self._steps:
            if self.option(origin, "capturable", optimizer) is not False:
                continue
            one_line = self.context.positions[origin]
            fixed = _capturable(origin, one_line.start.line == one_line.end.line)
            self.report(
                node,
                region,
                call=self.code_of(node),
                cls=cls.rsplit(".", 1)[-1],
                line=self.context.positions[origin].start.line,
                fix=[(origin, fixed)] if fixed is not None else [],
            )


def _capturable(origin: cst.Call, one_line: bool) -> cst.Call | None:
    """The constructor with ``capturable=True``, laid out as its arguments are; None
    where its options may come from elsewhere (``**options``, ``*args``) or where
    the layout is not clear (arguments over lines with no trailing comma)."""
    if any(a.star for a in origin.args):
        return None
    true = cst.Name("True")
    args = list(origin.args)
    for index, arg in enumerate(args):
        if arg.keyword is not None and arg.keyword.value == "capturable":
            args[index] = arg.with_changes(value=true)
            return origin.with_changes(args=args)
    added = cst.Arg(
        value=true,
        keyword=cst.Name("capturable"),
        equal=cst.AssignEqual(
            whitespace_before=cst.SimpleWhitespace(""),
            whitespace_after=cst.SimpleWhitespace(""),
        ),
    )
    space = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    if args and isinstance(args[-1].comma, cst.Comma):  # a trailing comma: one a line
        between = args[-2].comma if len(args) > 1 else space
        added = added.with_changes(comma=args[-1].comma)
        args[-1] = args[-1].with_changes(comma=between)
    elif args and one_line:
        args[-1] = args[-1].with_changes(comma=space)
    elif args:
        return None
    return origin.with_changes(args=[*args, added])
