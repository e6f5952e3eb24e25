"""GL704: capture_begin() on the default stream."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Confidence, Outcome
from graphlint.rule import Rule, Scope
from graphlint.signatures import DEFAULT_STREAM


class CaptureOnDefaultStream(Rule):
    """`g.capture_begin()` outside any `with torch.cuda.stream(...)` block."""

    code = "GL704"
    message = "`{call}` starts a capture on the default stream"
    fix_title = (
        "Use `with torch.cuda.graph(g):`, which captures on a side stream, or call "
        "`capture_begin()` inside `with torch.cuda.stream(s):`"
    )
    outcome = Outcome.CAPTURE_ERROR
    sees = Scope.FILE  # a check of the module's captures, from ``visit_Module``
    # what a capture raises at the line (CUDAGraph::capture_begin's own check)
    capture_failures = (DEFAULT_STREAM,)

    def visit_Module(self, node: cst.Module) -> None:
        for region in self.context.facts.all_regions():
            root = region.root
            if (
                not region.begin_end
                or not isinstance(root, cst.Expr)
                or region.open  # a primitive: its caller chooses the stream
                or (region.graph or "").startswith("super(")  # a CUDAGraph subclass
                or not self.flow.off_stream(region)
            ):
                continue
            site = self.flow.sites[root]
            self.report(
                root,
                region,
                confidence=Confidence.HIGH
                if isinstance(site.function, cst.Module)
                else Confidence.MEDIUM,
                call=self.code_of(root),
            )
