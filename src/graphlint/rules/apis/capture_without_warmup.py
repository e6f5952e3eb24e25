"""GL703: a manual capture with no warm-up on a side stream before it."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Confidence, Outcome, RegionKind, Severity
from graphlint.facts.regions import Region
from graphlint.rule import Rule


class CaptureWithoutWarmup(Rule):
    """A `torch.cuda.graph` capture with no warm-up iterations on a side stream."""

    code = "GL703"
    message = "capture without warm-up iterations on a side stream before it{extra}"
    fix_title = (
        "Run the captured code 3 times (11 with DDP) inside "
        "`with torch.cuda.stream(s):` before capturing"
    )
    outcome = Outcome.CAPTURE_ERROR
    severity = Severity.WARNING
    consequence = (
        "may fail capture or record one-time set-up work (lazy initialisation, "
        "autotuning, AccumulateGrad streams)"
    )
    # measured on an H100 with PyTorch 2.11 (issue #16): the first cuBLAS or cuDNN
    # call of an unwarmed region creates its handle or workspace during capture
    fixed_by_warmup = True
    region_failures = (
        "CUBLAS_STATUS_NOT_INITIALIZED",
        "cublasCreate",
        "CUDNN_STATUS_INTERNAL_ERROR",
        "INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED",
    )

    def visit_Module(self, node: cst.Module) -> None:
        setup = self.context.facts.setup
        for region in self.context.facts.all_regions():
            if (
                region.kind is not RegionKind.MANUAL
                or region.root is None
                or region.via  # code reached from a capture elsewhere
                or region.open  # a primitive: the captured work is its caller's
                or not self.flow.unwarmed(region)
            ):
                continue
            site = self.flow.sites[region.root]
            self.report(
                self.anchor(region),
                region,
                # module code runs as written; a test may have fixtures that warm up
                confidence=Confidence.HIGH
                if isinstance(site.function, cst.Module)
                else Confidence.MEDIUM,
                extra=(
                    "; `torch.backends.cudnn.benchmark = True` autotunes inside the "
                    "capture"
                    if setup.cudnn_benchmark
                    else ""
                ),
            )

    def anchor(self, region: Region) -> cst.CSTNode:
        root = region.root
        assert root is not None
        if isinstance(root, cst.With):
            return root.items[0].item
        return root
