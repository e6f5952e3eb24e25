"""GL502: seeding the RNG under capture (ground-truth/rng_state_probe.py)."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Outcome, Severity
from graphlint.rule import Rule, Scope
from graphlint.signatures import SEED_CHANGED

# Measured on PyTorch 2.11 (ground-truth/h100-torch2.11-rng.jsonl): seeding under
# capture fails unless the seed is the one in force already, and then does nothing;
# `torch.seed()` draws a new seed, so it always fails. Reading or restoring the RNG
# state and `checkpoint`, which preserves it, captured fine: not reported.
_SEEDING = frozenset(
    {
        "torch.manual_seed",
        "torch.random.manual_seed",
        "torch.seed",
        "torch.random.seed",
        "torch.cuda.manual_seed",
        "torch.cuda.manual_seed_all",
        "torch.cuda.seed",
        "torch.cuda.seed_all",
        "torch.cuda.random.manual_seed",
        "torch.cuda.random.manual_seed_all",
    }
)


class RngStateInRegion(Rule):
    """Seeding the RNG under capture fails unless that seed is already set."""

    code = "GL502"
    message = "`{call}` seeds the RNG while capturing"
    fix_title = "Seed once, before the warm-up and the capture"
    outcome = Outcome.CAPTURE_ERROR
    sees = Scope.CAPTURED  # recorded once for all replays: not torch.compile
    # what a capture raises at the line (measured: manual_seed_new_not_warmed,
    # seed_inside)
    capture_failures = (SEED_CHANGED,)
    severity = Severity.WARNING
    consequence = (
        "the capture fails unless that seed is already the one in force, and then "
        "the call does nothing"
    )

    def visit_Call(self, node: cst.Call) -> None:
        region = self.here
        if self.qualname(node.func) in _SEEDING:
            self.report(node, region, call=self.code_of(node))
