"""GL304: gradients accumulated across backwards of a CUDA-graph-compiled module."""

from __future__ import annotations

import builtins
import re
from dataclasses import dataclass

import libcst as cst

from graphlint.diagnostics import Confidence, Outcome, Severity
from graphlint.facts.flow import Function, Position, Site
from graphlint.facts.region import Region
from graphlint.facts.syntax import keyword
from graphlint.rule import Rule, RuleContext, Scope

# a call that empties gradients: ``zero_grad()``, ``zero_grad_buffer()``,
# ``clear_grads()``, ``reset_grad()``
_RESETS = re.compile(r"(zero|clear|reset)_?grads?")
_BUILTINS = frozenset(dir(builtins))


@dataclass(frozen=True)
class _Reset:
    """Where gradients are emptied, and under which tests it runs."""

    start: Position
    line: int
    tests: frozenset[object]


class CompiledGradsAccumulated(Rule):
    """A backward adds to the gradients that the last backward of a
    CUDA-graph-compiled module left in its graph's memory."""

    code = "GL304"
    message = "`{expr}` adds to the gradients the last backward of {graph} wrote, {why}"
    fix_title = (
        "Empty the gradients before each backward (`optimizer.zero_grad()`, which "
        "sets them to None), or run one backward of the summed losses"
    )
    outcome = Outcome.CAPTURE_ERROR
    sees = Scope.FILE  # the backwards and resets it judges run outside regions
    severity = Severity.ERROR
    # raised inside the backward, from the compiled module's graph: ``confirm``
    # reports it at the compile, not at the backward's line (the words of
    # ``signatures.OUTPUT_OVERWRITTEN``)
    region_failures = (
        "accessing tensor output of CUDAGraphs that has been overwritten",
    )
    consequence = (
        "they are outputs of that backward's CUDA graph, which its next replay "
        'overwrites: raises "accessing tensor output of CUDAGraphs that has been '
        'overwritten by a subsequent run"'
    )

    def __init__(self, context: RuleContext) -> None:
        super().__init__(context)
        self._grads_set: list[cst.Assign] = []  # ``p.grad = None`` empties one

    def visit_Assign(self, node: cst.Assign) -> None:
        if any(
            isinstance(t.target, cst.Attribute) and t.target.attr.value == "grad"
            for t in node.targets
        ):
            self._grads_set.append(node)

    def leave_Module(self, original_node: cst.Module) -> None:
        for function, events in self.flow.events.items():
            backwards = [b for b in events.backwards if b.loops]
            for backward in backwards:
                self.check(function, backward, backwards, events.compiled)

    def check(
        self,
        function: Function,
        backward: Site,
        backwards: list[Site],
        compiled: list[tuple[Site, Region]],
    ) -> None:
        loop = backward.loops[-1]  # each of its runs runs the backward again
        calls = [
            (call, region)
            for call, region in compiled
            if loop in call.loops
            and not self.flow.without_grad(call)
            and self.holds_parameters(call) is not False
        ]
        if not calls or self.in_region_code(backward.node):
            return
        call, region = calls[0]
        resets = self.resets(function, loop)
        tests = frozenset(self.flow.guard_tests.get(backward.node, ()))
        every = [r for r in resets if r.tests <= tests]  # whenever the backward runs
        if every:
            # another backward earlier in the same run of the loop, with no reset
            # between the two, still adds to what it wrote
            before = max(
                (
                    b
                    for b in backwards
                    if b.loops[-1] is loop and b.end <= backward.start
                ),
                key=lambda b: b.start,
                default=None,
            )
            if before is None or any(
                before.end <= r.start < backward.start for r in every
            ):
                return
            why = (
                f"and the backward at line {before.line}, earlier in the same step, "
                "left them there with no reset in between"
            )
        elif resets:
            why = (
                f"and the reset at line {resets[0].line} does not run before each "
                "backward"
            )
        elif self.zeroed_in_place(function, loop):
            why = "and `zero_grad(set_to_none=False)` only zeroes them in place"
        else:
            why = "and nothing empties them between the backward passes of this loop"
        callee = call.node.func if isinstance(call.node, cst.Call) else call.node
        confidence = self.evidence(function, loop)
        if self.holds_parameters(call) is None:
            confidence = Confidence.MEDIUM
        self.report(
            backward.node,
            region,
            confidence=confidence,
            related=[(call.node, "the call of the compiled module")],
            expr=self.code_of(backward.node),
            graph=f"`{self.code_of(callee)}` (compiled with CUDA graphs at line "
            f"{region.line})",
            why=why,
        )

    def holds_parameters(self, call: Site) -> bool | None:
        """Whether what was compiled has parameters whose gradients its backward
        writes: a module (measured) yes; a PyTorch function (a loss, an activation)
        no; a function of this file may or may not call a module (None)."""
        made = self.flow.compiled_by.get(call.node)
        if isinstance(made, cst.FunctionDef):
            return None
        if isinstance(made, cst.Call) and made.args:
            target = made.args[0].value
            if (self.qualname(target) or "").startswith("torch.") and not (
                self.value(target).cls
            ):
                return False
        return True

    def resets(self, function: Function, loop: cst.CSTNode) -> list[_Reset]:
        """What empties gradients in ``loop``: a reset call (not one that zeroes
        them in place), a call of a function of this file that makes one, and a
        ``.grad =`` assignment; in source order."""
        found: list[_Reset] = []
        events = self.flow.events.get(function)
        for site, name in events.named if events else ():
            if loop in site.loops and _resets(site.node, name):
                found.append(self._reset(site.node, site.start))
        for site, callees in events.calls if events else ():
            if loop in site.loops and any(
                _resets(inner.node, name)
                for callee in callees
                for reached in self.flow.reach(callee)
                for inner, name in self._named(reached)
            ):
                found.append(self._reset(site.node, site.start))
        span = self.context.positions[loop]
        for node in self._grads_set:
            at = self.context.positions[node].start
            if self.state.function_of(node) is function and (
                span.start.line,
                span.start.column,
            ) < (at.line, at.column) <= (span.end.line, span.end.column):
                found.append(self._reset(node, (at.line, at.column)))
        return sorted(found, key=lambda r: r.start)

    def _reset(self, node: cst.CSTNode, start: Position) -> _Reset:
        return _Reset(start, start[0], frozenset(self.flow.guard_tests.get(node, ())))

    def _named(self, function: Function) -> list[tuple[Site, str]]:
        events = self.flow.events.get(function)
        return events.named if events else []

    def zeroed_in_place(self, function: Function, loop: cst.CSTNode) -> bool:
        return any(
            loop in site.loops
            and isinstance(site.node, cst.Call)
            and _RESETS.search(name.rsplit(".", 1)[-1]) is not None
            and not _resets(site.node, name)
            for site, name in self._named(function)
        )

    def evidence(self, function: Function, loop: cst.CSTNode) -> Confidence:
        """High when every call in the loop is one graphlint can see through
        (PyTorch's, a builtin, a method of a tensor or of a PyTorch object, the
        compiled module, a function of this file): none empties the gradients out
        of sight. Medium otherwise."""
        events = self.flow.events.get(function)
        seen = {site.node for site, _ in (events.calls if events else ())}
        seen.update(self.flow.compiled_calls)
        for site, _ in self._named(function):
            node = site.node
            if (
                loop in site.loops
                and isinstance(node, cst.Call)
                and node not in seen
                and not self.known(node.func)
            ):
                return Confidence.MEDIUM
        return Confidence.HIGH

    def known(self, func: cst.BaseExpression) -> bool:
        if (self.qualname(func) or "").startswith("torch."):
            return True
        if isinstance(func, cst.Name):
            return func.value in _BUILTINS
        if isinstance(func, cst.Attribute):
            receiver = self.value(func.value)
            return (
                receiver.is_tensor
                or (receiver.cls or "").startswith("torch.")
                or func.attr.value == "backward"
            )
        return False


def _resets(call: cst.CSTNode, name: str) -> bool:
    """A call that sets gradients to None: ``zero_grad()``, not
    ``zero_grad(set_to_none=False)`` (measured: zeroing in place still raises)."""
    if not isinstance(call, cst.Call) or not _RESETS.search(name.rsplit(".", 1)[-1]):
        return False
    flag = keyword(call, "set_to_none")
    return not (isinstance(flag, cst.Name) and flag.value == "False")
