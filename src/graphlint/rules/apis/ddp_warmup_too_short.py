"""GL705: DistributedDataParallel warmed up for fewer than 11 iterations."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Outcome, RegionKind
from graphlint.rule import Rule

DDP_WARMUP = 11


class DdpWarmupTooShort(Rule):
    """DDP needs 11 warm-up iterations before capture; fewer are visible here."""

    code = "GL705"
    message = (
        "{count} warm-up iterations before a capture of DistributedDataParallel code; "
        "it needs at least 11"
    )
    fix_title = "Warm up for 11 iterations on the side stream before capturing"
    outcome = Outcome.CAPTURE_ERROR
    # measured on an H100 (PyTorch 2.11, one-process NCCL group, 3 warm-ups): DDP's
    # backward syncs while the graph is captured, wherever the region calls it
    region_failures = ("operation not permitted when stream is capturing",)

    def visit_Module(self, node: cst.Module) -> None:
        setup = self.context.facts.setup
        if not setup.ddp:
            return
        for region in self.context.facts.all_regions():
            if region.kind is not RegionKind.MANUAL or region.via:
                continue
            if not any(  # the warm-up count matters for a captured DDP model
                self.value(call.func).origin in setup.ddp
                for call in self.flow.region_calls(region)
            ):
                continue
            for block in setup.warmups_before(region):
                count = block.iterations
                if count is not None and count < DDP_WARMUP and block.loop is not None:
                    self.report(block.loop, region, count=count)
