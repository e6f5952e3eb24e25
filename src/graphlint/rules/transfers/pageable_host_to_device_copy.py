"""GL601: a copy from pageable host memory to the device under capture."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Confidence, Outcome
from graphlint.facts.syntax import keyword, method, positional
from graphlint.facts.values import Device, Value
from graphlint.rule import Rule, Scope
from graphlint.signatures import PAGEABLE_COPY, SYNC

_CONSTRUCTORS = frozenset({"torch.tensor", "torch.as_tensor", "torch.asarray"})


class PageableHostToDeviceCopy(Rule):
    """Host data copied to the device under capture (`torch.tensor(..., device=)`)."""

    code = "GL601"
    message = "`{call}` copies host memory to the device while capturing"
    fix_title = (
        "Allocate a static device buffer before capture and fill it outside the "
        "region, or copy from a pinned host buffer with `non_blocking=True`"
    )
    outcome = Outcome.CAPTURE_ERROR
    # torch.compile's CUDA graphs take host copies in their stride (measured:
    # ``compiled_cpu_vector_input`` replays one graph per call)
    sees = Scope.CAPTURED
    # what a capture raises at the line (measured: tensor_from_list, cpu_to_cuda,
    # copy_from_pageable, ... (a pageable copy); pinned_to_cuda_blocking (a blocking
    # copy waits))
    capture_failures = (PAGEABLE_COPY, SYNC)

    def visit_Call(self, node: cst.Call) -> None:
        region = self.here
        found = self.copies(node)
        if found is not None:
            self.report(node, region, confidence=found, call=self.code_of(node))

    def copies(self, node: cst.Call) -> Confidence | None:
        """How sure it is that ``node`` copies host memory to the device: HIGH where
        both ends are known; MEDIUM for a host tensor moved with ``.to(t.device)``
        where ``t``'s device is unknown (in a region, nearly always the GPU)."""
        if self.host_to_device(node):
            return Confidence.HIGH
        found = method(node)
        if found is None or found[1] != "to" or not self.from_host(node, found[0]):
            return None
        if self.value(node).device is Device.UNKNOWN:
            target = keyword(node, "device") or next(iter(positional(node)), None)
            if isinstance(target, cst.Attribute) and target.attr.value == "device":
                return Confidence.MEDIUM
        return None

    def host_to_device(self, node: cst.Call) -> bool:
        q = self.qualname(node.func)
        if q is not None:
            if q in _CONSTRUCTORS:
                device = keyword(node, "device")
                values = self.context.facts.values
                return device is not None and values.device_of_spec(device) is (
                    Device.CUDA
                )
            name = q.rsplit(".", 1)[-1]
            return (
                q.startswith("torch.cuda.")
                and name.endswith("Tensor")
                and (bool(node.args))
            )
        found = method(node)
        if found is None:
            return False
        receiver, name = found
        if name in ("cuda", "to"):
            return self.from_host(node, receiver) and self.value(node).device is (
                Device.CUDA
            )
        if name == "copy_":
            args = positional(node)
            return (
                bool(args)
                and self.value(receiver).on_device
                and self.pageable(self.value(args[0]))
            )
        return False

    def from_host(self, node: cst.Call, receiver: cst.BaseExpression) -> bool:
        """``receiver.to(...)``/``.cuda(...)`` copies from the host in a way capture
        rejects: a pageable tensor, or a pinned one without ``non_blocking=True``
        (measured: ``pinned_to_cuda_blocking`` fails, a non-blocking copy is fine)."""
        value = self.value(receiver)
        if not value.is_tensor or value.device is not Device.CPU:
            return False
        if not value.pinned:
            return True
        blocking = keyword(node, "non_blocking")  # a variable may be True: not known
        return blocking is None or (
            isinstance(blocking, cst.Name) and blocking.value == "False"
        )

    def pageable(self, value: Value) -> bool:
        """A CPU tensor that is not pinned (pinned ones copy fine asynchronously)."""
        return value.is_tensor and value.device is Device.CPU and not value.pinned
