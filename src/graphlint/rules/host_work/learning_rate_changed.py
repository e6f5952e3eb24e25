"""GL407: the learning rate of an optimizer whose step a graph captured changes."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Confidence, Outcome
from graphlint.matchers import keyword, method, positional
from graphlint.rule import Rule

_HYPERPARAMETERS = frozenset({"'lr'", "'momentum'", "'weight_decay'", "'betas'"})


class LearningRateChanged(Rule):
    """A scheduler or `group["lr"] = ...` changes a float lr a graph captured."""

    code = "GL407"
    message = (
        "`{stmt}` changes a Python float hyper-parameter of the optimizer whose "
        "`step()` the graph at line {line} captured"
    )
    fix_title = (
        "Build the optimizer with `capturable=True` and a tensor `lr` "
        "(`lr=torch.tensor(0.01, device='cuda')`); schedulers then update it in place"
    )
    outcome = Outcome.SILENT_WRONG
    consequence = "replays keep the value seen at capture"

    def visit_Call(self, node: cst.Call) -> None:
        found = method(node)
        if found is None or found[1] != "step" or self.in_region_code(node):
            return
        scheduler = self.value(found[0])
        if not (scheduler.cls or "").startswith("torch.optim.lr_scheduler."):
            return
        origin = scheduler.origin
        args = positional(origin) if origin is not None else []
        target = keyword(origin, "optimizer") if origin is not None else None
        self.check(node, target or (args[0] if args else None))

    def visit_Assign(self, node: cst.Assign) -> None:
        if self.in_region_code(node):
            return
        for target in node.targets:
            t = target.target
            key = self.state.key_of(t)
            if (
                isinstance(t, cst.Subscript)
                and key is not None
                and key[0] == "item"
                and key[2] in _HYPERPARAMETERS
            ):
                self.check(node, self.optimizer_of_group(t.value))

    def optimizer_of_group(
        self, group: cst.BaseExpression
    ) -> cst.BaseExpression | None:
        """``opt`` for ``opt.param_groups[0]`` or a loop over ``opt.param_groups``."""
        if isinstance(group, cst.Subscript):
            group = group.value
        elif isinstance(group, cst.Name):
            scope = self.context.facts.values.scope_of.get(group)
            bindings = scope.lookup(group.value) if scope else None
            if not bindings or len(bindings) != 1 or bindings[0].how != "iterate":
                return None
            iterable = bindings[0].value
            if iterable is None:
                return None
            group = iterable
        if isinstance(group, cst.Attribute) and group.attr.value == "param_groups":
            return group.value
        return None

    def check(self, stmt: cst.CSTNode, optimizer: cst.BaseExpression | None) -> None:
        if optimizer is None:
            return
        origin = self.value(optimizer).origin
        region = self.state.stepped.get(origin) if origin is not None else None
        if region is None:
            return
        args = positional(origin) if origin is not None else []
        lr = keyword(origin, "lr") if origin is not None else None
        lr = lr or (args[1] if len(args) > 1 else None)
        if lr is not None and self.value(lr).is_tensor:
            return  # a tensor lr is updated in place
        after = (
            self.state.function_of(stmt) is self.state.region_function(region)
            and self.context.positions[stmt].start.line > region.end_line
        )
        self.report(
            stmt,
            region,
            confidence=Confidence.HIGH if after else Confidence.MEDIUM,
            stmt=self.code_of(stmt),
            line=region.line,
        )
