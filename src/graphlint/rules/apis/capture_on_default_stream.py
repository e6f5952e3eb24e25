"""GL704: capture_begin() on the default stream."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Confidence, Outcome
from graphlint.rule import Rule


class CaptureOnDefaultStream(Rule):
    """`g.capture_begin()` outside any `with torch.cuda.stream(...)` block."""

    code = "GL704"
    message = "`{call}` starts a capture on the default stream"
    fix_title = (
        "Use `with torch.cuda.graph(g):`, which captures on a side stream, or call "
        "`capture_begin()` inside `with torch.cuda.stream(s):`"
    )
    outcome = Outcome.CAPTURE_ERROR

    def visit_Module(self, node: cst.Module) -> None:
        setup = self.context.facts.setup
        for region in self.context.facts.all_regions():
            root = region.root
            if region.label != "capture_begin()" or not isinstance(root, cst.Expr):
                continue
            home = self.state.region_function(region)
            if (
                any(b.encloses(home, region.line) for b in setup.side_streams)
                or home in setup.stream_switches
                or (region.graph or "").startswith("super(")
            ):
                continue  # on a side stream, or a CUDAGraph subclass's own method
            self.report(
                root,
                region,
                # a function may be called under a stream context
                confidence=Confidence.HIGH if home is node else Confidence.MEDIUM,
                call=self.code_of(root),
            )
