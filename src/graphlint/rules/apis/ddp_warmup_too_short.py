"""GL705: DistributedDataParallel warmed up for fewer than 11 iterations."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Applicability, Outcome, RegionKind
from graphlint.facts.region import Region
from graphlint.facts.syntax import positional
from graphlint.rule import Rule, Scope

DDP_WARMUP = 11


class DdpWarmupTooShort(Rule):
    """DDP needs 11 warm-up iterations before capture; fewer are visible here."""

    code = "GL705"
    # the warm-up body runs more times: its side effects too
    fix_applicability = Applicability.UNSAFE
    message = (
        "{count} warm-up iterations before a capture of DistributedDataParallel code; "
        "it needs at least 11"
    )
    fix_title = "Warm up for 11 iterations on the side stream before capturing"
    outcome = Outcome.CAPTURE_ERROR
    sees = Scope.FILE  # a check of the module's captures, from ``visit_Module``
    # measured on an H100 (PyTorch 2.11, one-process NCCL group, 3 warm-ups): DDP's
    # backward syncs while the graph is captured, wherever the region calls it
    region_failures = ("operation not permitted when stream is capturing",)
    failure_caveat = (
        "any wait for the device under capture reads the same: a sync in the region "
        "that no rule flagged would confirm it too"
    )

    def visit_Module(self, node: cst.Module) -> None:
        setup = self.context.facts.setup
        if not setup.ddp:
            return
        for region in self.context.facts.all_regions():
            if region.kind is not RegionKind.MANUAL or region.via:
                continue
            if not captures_ddp(self, region):
                continue
            for block in setup.warmups_before(region):
                count, loop = block.iterations, block.loop
                if count is not None and count < DDP_WARMUP and loop is not None:
                    # ``range(N)`` with a literal N (else no count): the literal
                    bound = positional(loop)[0] if isinstance(loop, cst.Call) else None
                    self.report(
                        loop,
                        region,
                        fix=[(bound, cst.Integer(str(DDP_WARMUP)))]
                        if bound is not None
                        else [],
                        count=count,
                    )


def captures_ddp(rule: Rule, region: Region) -> bool:
    """Whether ``region`` calls a model wrapped in DistributedDataParallel: the
    warm-up count matters for it (GL703's warm-up runs as many iterations)."""
    ddp = rule.context.facts.setup.ddp
    return bool(ddp) and any(
        rule.value(call.func).origin in ddp for call in rule.flow.region_calls(region)
    )
