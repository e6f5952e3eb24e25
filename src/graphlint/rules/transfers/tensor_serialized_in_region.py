"""GL603: torch.save / torch.load under capture."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Outcome
from graphlint.rule import Rule
from graphlint.signatures import PAGEABLE_COPY

_SERIALIZERS = frozenset({"torch.save", "torch.load"})


class TensorSerializedInRegion(Rule):
    """`torch.save`/`torch.load` under capture copy tensors between host and device."""

    code = "GL603"
    message = "`{call}` moves tensors between the device and a file while capturing"
    fix_title = "Save or load outside the region (after `replay()` for outputs)"
    outcome = Outcome.CAPTURE_ERROR
    # what a capture raises at the line (measured: torch_save)
    capture_failures = (PAGEABLE_COPY,)

    def visit_Call(self, node: cst.Call) -> None:
        region = self.here
        if self.qualname(node.func) in _SERIALIZERS:
            self.report(node, region, call=self.code_of(node))
