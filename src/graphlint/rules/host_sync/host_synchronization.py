"""GL103: an explicit wait for the device inside a capture region."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Applicability, Confidence, Outcome
from graphlint.facts import torchapi as api
from graphlint.facts.syntax import method
from graphlint.facts.values import Kind
from graphlint.rules._removal import StatementRemoval
from graphlint.signatures import SYNC

_SYNC_FUNCTIONS = frozenset(
    {"torch.cuda.synchronize", "torch.accelerator.synchronize", "torch.cpu.synchronize"}
)
_WAITING_CLASSES = api.STREAM_CLASSES | api.EVENT_CLASSES
# calls a receiver may be made of, and still be dropped with the wait
_STREAM_GETTERS = frozenset({"torch.cuda.current_stream", "torch.cuda.default_stream"})


class HostSynchronization(StatementRemoval):
    """The host waits for the device: `torch.cuda.synchronize()`, `.query()` ..."""

    code = "GL103"
    message = "`{call}` makes the host wait for the device"
    fix_title = (
        "Remove it; order work with `stream.wait_stream()` or `event.wait()`, and "
        "synchronise after `replay()`"
    )
    fix_applicability = Applicability.UNSAFE
    outcome = Outcome.CAPTURE_ERROR
    # what a capture raises at the line (measured: cuda_synchronize, stream_synchronize,
    # event_synchronize, event_query)
    capture_failures = (SYNC,)

    def visit_Call(self, node: cst.Call) -> None:
        region = self.here
        if self.qualname(node.func) in _SYNC_FUNCTIONS:
            self.report(
                node,
                region,
                call=self.code_of(node),
                fix=self.removal(node, region),
            )
            return
        found = method(node)
        if found is None or found[1] not in ("synchronize", "query"):
            return
        receiver = self.value(found[0])
        if receiver.kind is Kind.OBJECT and receiver.cls in _WAITING_CLASSES:
            # a stream's or event's synchronize(); query() has a result to keep
            self.report(
                node,
                region,
                call=self.code_of(node),
                fix=self.removal(node, region, self.getter)
                if found[1] == "synchronize"
                else [],
            )
        elif found[1] == "synchronize" and receiver.kind is Kind.UNKNOWN:
            self.report(
                node, region, confidence=Confidence.MEDIUM, call=self.code_of(node)
            )

    def getter(self, call: cst.Call) -> bool:
        """``torch.cuda.current_stream()``: a receiver it makes may go with the wait."""
        return self.qualname(call.func) in _STREAM_GETTERS
