"""GL101: a device tensor copied to the host inside a capture region."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Confidence, Outcome
from graphlint.facts.region import Region
from graphlint.facts.syntax import is_true, keyword, method, positional
from graphlint.facts.values import Device, Kind
from graphlint.facts.walk import descendants
from graphlint.rule import Rule, RuleContext, Scope, file_wide, seeing
from graphlint.signatures import DATA_DEPENDENT_COMPILE, PAGEABLE_COPY, SYNC

_READ_METHODS = frozenset({"item", "tolist", "numpy", "cpu"})
_CONVERSIONS = frozenset({"float", "int", "bool", "complex"})
_NUMPY_CONVERSIONS = frozenset({"numpy.asarray", "numpy.array"})
# what fullgraph=True raises when Python branches on an ``.item()`` (measured)
_GUARD_ERROR = "Could not guard on data-dependent expression"


class DeviceToHostCopy(Rule):
    """A device tensor is copied to the host (`.item()`, `.cpu()`, `float(t)` ...)."""

    code = "GL101"
    message = "`{call}` copies a device tensor to the host"
    fix_title = (
        "Keep the value on the device (tensor ops, `torch.where`), or read it after "
        "`replay()`"
    )
    outcome = Outcome.CAPTURE_ERROR
    # what a capture raises at the line (measured: item_sync, float_tensor (a wait);
    # cpu_sync, tolist_sync (a pageable copy); compiled_fullgraph_item_branch
    # (fullgraph=True))
    capture_failures = (SYNC, PAGEABLE_COPY, DATA_DEPENDENT_COMPILE)

    def __init__(self, context: RuleContext) -> None:
        super().__init__(context)
        self._loop_bounds: set[cst.CSTNode] = set()  # reported by GL202 instead
        self._tested: set[cst.CSTNode] = set()  # ``.item()`` calls Python branches on

    # the test of an ``if``/``while`` between ``capture_begin()`` and ``capture_end()``
    # is region code, the statement is not: these see the file and ask about the test
    # (and the next two, all region code, recorded at capture or not)
    @file_wide
    def visit_If(self, node: cst.If) -> None:
        self.tested(node.test)

    @file_wide
    def visit_While(self, node: cst.While) -> None:
        self.tested(node.test)

    @seeing(Scope.REGION_CODE)
    def visit_IfExp(self, node: cst.IfExp) -> None:
        self.tested(node.test)

    @seeing(Scope.REGION_CODE)
    def visit_Assert(self, node: cst.Assert) -> None:
        self.tested(node.test)

    def tested(self, test: cst.BaseExpression) -> None:
        """Under ``fullgraph=True`` an ``.item()`` compiles into the graph unless
        Python branches on it (measured on 2.11): remember the ones a test reads."""
        region = self.region(test)
        if region is not None and region.fullgraph:
            self._tested.update(n for n in descendants(test) if _item_call(n))

    def visit_Call(self, node: cst.Call) -> None:
        region = self.here
        if node in self._loop_bounds:
            return
        name = self.builtin(node)
        if name == "range":
            self._loop_bounds.update(positional(node))
            return
        if name in _CONVERSIONS:
            args = positional(node)
            if len(args) == 1 and self.value(args[0]).on_device:
                self.report(node, region, call=self.code_of(node))
            return
        if self.qualname(node.func) in _NUMPY_CONVERSIONS:
            args = positional(node)
            if args and self.value(args[0]).on_device:
                self.report(node, region, call=self.code_of(node))
            return
        found = method(node)
        if found is None:
            return
        receiver, attr = found
        if attr == "to":
            if self.copies_to_cpu(node):
                self.report_receiver(node, receiver, region)
        elif attr == "item" and region.fullgraph:
            if node in self._tested:
                self.report_receiver(node, receiver, region, _GUARD_ERROR)
        elif attr in _READ_METHODS:
            self.report_receiver(node, receiver, region)

    def copies_to_cpu(self, node: cst.Call) -> bool:
        """A blocking ``.to("cpu")``; ``non_blocking=True`` (pinned) captures fine."""
        args = positional(node)
        target = keyword(node, "device") or (args[0] if args else None)
        if target is None or is_true(keyword(node, "non_blocking")):
            return False
        return self.context.facts.values.device_of_spec(target) is Device.CPU

    def report_receiver(
        self,
        node: cst.Call,
        receiver: cst.BaseExpression,
        region: Region,
        fullgraph_error: str | None = None,
    ) -> None:
        value = self.value(receiver)
        if value.is_tensor and value.device is not Device.CPU:
            confidence = Confidence.HIGH
        elif (
            value.kind in (Kind.UNKNOWN, Kind.BOTTOM) and value.device is not Device.CPU
        ):
            confidence = Confidence.MEDIUM
        else:
            return
        self.report(
            node,
            region,
            confidence=confidence,
            fullgraph_error=fullgraph_error,
            call=self.code_of(node),
        )


def _item_call(node: cst.CSTNode) -> bool:
    """``<anything>.item()``."""
    return (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == "item"
    )
