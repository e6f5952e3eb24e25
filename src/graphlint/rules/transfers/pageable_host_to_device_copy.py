"""GL601: a copy from pageable host memory to the device under capture."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Outcome
from graphlint.facts.values import Device, Value
from graphlint.matchers import keyword, method, on_device, positional
from graphlint.rule import Rule

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

    def visit_Call(self, node: cst.Call) -> None:
        region = self.region(node)
        # torch.compile's CUDA graphs take host copies in their stride (measured:
        # ``compiled_cpu_vector_input`` replays one graph per call)
        if region is None or region.kind.is_compile:
            return
        if self.copies(node):
            self.report(node, region, call=self.code_of(node))

    def copies(self, node: cst.Call) -> bool:
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
            return self.pageable(self.value(receiver)) and self.value(node).device is (
                Device.CUDA
            )
        if name == "copy_":
            args = positional(node)
            return (
                bool(args)
                and on_device(self.value(receiver))
                and self.pageable(self.value(args[0]))
            )
        return False

    def pageable(self, value: Value) -> bool:
        """A CPU tensor that is not pinned (pinned ones copy fine asynchronously)."""
        return value.is_tensor and value.device is Device.CPU and not value.pinned
