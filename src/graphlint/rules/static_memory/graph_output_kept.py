"""GL303: a graph's output tensor stored across replays without a copy."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import (
    Applicability,
    Confidence,
    Outcome,
    RegionKind,
    Severity,
)
from graphlint.facts.flow import Site
from graphlint.facts.region import Region
from graphlint.facts.syntax import method, positional
from graphlint.facts.values import Kind
from graphlint.rule import Rule, RuleContext, Scope
from graphlint.signatures import OUTPUT_OVERWRITTEN

_STORE_METHODS = frozenset({"append", "extend", "insert", "add", "appendleft"})


class GraphOutputKept(Rule):
    """A graph output is kept across replays or compiled calls without `.clone()`."""

    code = "GL303"
    fix_applicability = Applicability.SAFE
    message = "`{expr}` is an output of {graph}: {what}"
    fix_title = "Keep a copy: `{expr}.clone()`"
    outcome = Outcome.SILENT_WRONG
    sees = Scope.FILE  # outputs are stored and read outside regions
    # under torch.compile, reading the kept output raises (measured)
    capture_failures = (OUTPUT_OVERWRITTEN,)
    severity = Severity.ERROR  # a wrong result (or an error) under torch.compile too
    consequence = "results alias one reused buffer"

    def __init__(self, context: RuleContext) -> None:
        super().__init__(context)
        self._reported: set[tuple[cst.CSTNode, int]] = set()

    def visit_Call(self, node: cst.Call) -> None:
        if node in self.flow.compiled_calls:
            self.fed_back(node)
        found = method(node)
        if found is None or found[1] not in _STORE_METHODS:
            return
        for arg in positional(node):
            elements = (
                [el.value for el in arg.elements]
                if isinstance(arg, (cst.List, cst.Tuple))
                else [arg]
            )
            for element in elements:
                self.check(element, node)

    def visit_Name(self, node: cst.Name) -> None:
        """``a = f(x1); b = f(x2); use(a)``: ``a`` is read after the next call of
        its compiled callable (measured: silently holds ``b``'s values)."""
        if not self.flow.compiled_calls or not self.state.reads_variable(node):
            return
        found = self.flow.overwritten(node)
        if found is None or self.in_region_code(node):
            return
        first, later, region = found
        confidence = self.before_backward(first, later)
        if confidence is None:
            return
        line = self.context.positions[node].start.line
        if (first.node, line) in self._reported:  # ``out + out``: once a line
            return
        self._reported.add((first.node, line))
        self.report(
            node,
            region,
            confidence=confidence,
            related=[(later.node, "the call that overwrites it")],
            expr=node.value,
            graph=self.callable_of(first, region),
            what=f"the call at line {later.line} reuses its memory before this read, "
            "so it holds that call's result",
        )

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if isinstance(target.target, cst.Subscript):
                self.check(node.value, target.target)
                return

    def check(self, expr: cst.BaseExpression, statement: cst.CSTNode) -> None:
        if self.in_region_code(statement):
            return
        value = self.value(expr)
        if not value.is_tensor and value.kind is not Kind.UNKNOWN:
            return
        confidence = Confidence.HIGH if value.is_tensor else Confidence.MEDIUM
        if self.compiled(expr, statement):
            return
        key = self.state.key_of(expr)
        if key is None or not self.flow.in_replay_loop(statement):
            return
        for region in self.state.region_writes:
            if (
                region.kind is RegionKind.MANUAL
                and key in self.state.outputs(region)
                and self.state.bound_in(expr, region) is not False
            ):
                self.report(
                    expr,
                    region,
                    confidence=confidence,
                    expr=self.code_of(expr),
                    graph=f"the graph captured at line {region.line}",
                    what="the next replay overwrites it in place, so every stored "
                    "entry ends up equal",
                    fix=_clone(expr),
                    # an output that may not be a tensor (a module's: a tuple, a
                    # dict) may have no ``.clone()``
                    applicability=Applicability.SAFE
                    if value.is_tensor
                    else Applicability.UNSAFE,
                )
                return

    def compiled(self, expr: cst.BaseExpression, statement: cst.CSTNode) -> bool:
        """CUDA-graph trees reuse a compiled callable's output memory on its next
        call (measured: reading the kept tensor raises, or silently holds the newer
        result). Reported when the store and the call share a loop."""
        found = self.flow.compiled_output(expr)
        site = self.flow.sites.get(statement)
        if found is None or site is None:
            return False
        call, region = found
        if call.function is not site.function or not set(call.loops) & set(site.loops):
            return False
        self.report(
            expr,
            region,
            confidence=self.evidence(call),
            expr=self.code_of(expr),
            graph=self.callable_of(call, region),
            what=f"its next call (line {call.line}, in the same loop) overwrites it "
            "in place, so every stored entry ends up equal",
            # unsafe: the output may not be a tensor, and the copy is taken where
            # it is stored: a call or a backward between the two may already
            # have overwritten it
            fix=_clone(expr),
            applicability=Applicability.UNSAFE,
        )
        return True

    def fed_back(self, node: cst.Call) -> None:
        """``x = f(x)`` in a loop: the next call overwrites the output it reads
        (measured: "accessing tensor output of CUDAGraphs that has been overwritten
        by a subsequent run")."""
        call = self.flow.sites[node]
        if not call.loops or self.in_region_code(node):
            return
        for arg in node.args:
            found = self.flow.compiled_output(arg.value)
            if found is None or found[0].node is not node:
                continue
            region = found[1]
            # a copy of the argument, taken before this call overwrites the
            # output it holds (not of the binding: ``token, p = f(token)``
            # unpacks). Unsafe: a callable that updates its argument in place
            # now updates the copy
            self.report(
                arg.value,
                region,
                confidence=self.evidence(call),
                expr=self.code_of(arg.value),
                graph=self.callable_of(call, region),
                what="it is passed back into the next call in this loop, which "
                "overwrites the output it reads",
                fix=_clone(arg.value),
                applicability=Applicability.UNSAFE,
            )

    def before_backward(self, first: Site, later: Site) -> Confidence | None:
        """How sure a read of ``first``'s output after ``later`` is wrong: high when
        ``first`` ran with autograd off, or a backward ran between the two calls;
        None (quiet) in a training loop where none did (measured: an output whose
        backward has not run yet is not overwritten by the next call,
        ``compiled_train_forward_without_backward_read``); medium otherwise."""
        if self.flow.without_grad(first):
            return Confidence.HIGH
        events = self.flow.events.get(first.function)
        backwards = events.backwards if events is not None else []
        if any(first.end <= b.start and b.end <= later.start for b in backwards):
            return Confidence.HIGH
        if self.flow.backward_in_loop(first) or any(
            later.end <= b.start for b in backwards
        ):
            return None
        return Confidence.MEDIUM

    def evidence(self, call: Site) -> Confidence:
        """High when autograd is off or a backward runs in the loop: measured, the
        only run that kept its outputs had autograd on and no backward yet."""
        if self.flow.without_grad(call) or self.flow.backward_in_loop(call):
            return Confidence.HIGH
        return Confidence.MEDIUM

    def callable_of(self, call: Site, region: Region) -> str:
        callee = call.node.func if isinstance(call.node, cst.Call) else call.node
        return (
            f"`{self.code_of(callee)}` (compiled with CUDA graphs at line "
            f"{region.line})"
        )


def _clone(expr: cst.BaseExpression) -> list[tuple[cst.CSTNode, cst.Call]]:
    """``out`` -> ``out.clone()``. What is reported is a name, an attribute, a view
    ``out[0]`` or a call: ``.clone()`` follows each as it is written."""
    return [(expr, cst.Call(func=cst.Attribute(value=expr, attr=cst.Name("clone"))))]
