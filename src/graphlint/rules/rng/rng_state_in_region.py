"""GL502: RNG state calls under capture that failed on older PyTorch versions."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Outcome, Severity
from graphlint.matchers import keyword
from graphlint.rule import Rule

_STATE_CALLS = frozenset(
    {
        "torch.manual_seed",
        "torch.random.manual_seed",
        "torch.seed",
        "torch.get_rng_state",
        "torch.set_rng_state",
        "torch.cuda.manual_seed",
        "torch.cuda.manual_seed_all",
        "torch.cuda.get_rng_state",
        "torch.cuda.set_rng_state",
        "torch.cuda.get_rng_state_all",
        "torch.cuda.set_rng_state_all",
    }
)
_CHECKPOINTS = frozenset({"torch.utils.checkpoint.checkpoint"})


class RngStateInRegion(Rule):
    """Seeding or saving RNG state under capture: fine on 2.11, an error before."""

    code = "GL502"
    message = "`{call}` touches the RNG state while capturing"
    fix_title = (
        "Seed outside the region; to save and restore state under capture use "
        "`generator.graphsafe_get_state()` / `graphsafe_set_state()`"
    )
    outcome = Outcome.VERSION_DEPENDENT
    severity = Severity.INFORMATION
    default_enabled = False

    def visit_Call(self, node: cst.Call) -> None:
        region = self.captured(node)
        if region is None:
            return
        q = self.qualname(node.func)
        if q in _STATE_CALLS:
            self.report(node, region, call=self.code_of(node))
        elif q in _CHECKPOINTS:
            preserve = keyword(node, "preserve_rng_state")
            if not (isinstance(preserve, cst.Name) and preserve.value == "False"):
                self.report(node, region, call=self.code_of(node))
