"""GL503: restoring, under capture, a CUDA RNG state saved before the capture
(ground-truth/rng_restore_probe.py)."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Outcome
from graphlint.facts.scopes import Binding
from graphlint.facts.syntax import positional
from graphlint.rule import Rule, Scope

# Measured on PyTorch 2.11 (ground-truth/h200-torch2.11-rng-restore.jsonl): setting
# the CUDA RNG state under capture records nothing that replays: eager draws the
# restored state's numbers on every call, each replay draws new ones
# (``cuda_set_rng_state_saved``: silent-wrong). A state read in the same capture and
# restored there (a fork, ``torch.random.fork_rng``) replays like eager (ok), and
# ``torch.set_rng_state`` sets the CPU generator, which CUDA kernels do not use.
_SETTERS = frozenset(
    {
        "torch.cuda.set_rng_state",
        "torch.cuda.random.set_rng_state",
        "torch.cuda.set_rng_state_all",
        "torch.cuda.random.set_rng_state_all",
    }
)
_GETTERS = frozenset(
    {
        "torch.cuda.get_rng_state",
        "torch.cuda.random.get_rng_state",
        "torch.cuda.get_rng_state_all",
        "torch.cuda.random.get_rng_state_all",
    }
)


class RngStateRestored(Rule):
    """Restoring under capture a CUDA RNG state saved before it: replays ignore it."""

    code = "GL503"
    message = (
        "`{call}` restores the CUDA RNG state saved at line {line}, before the capture"
    )
    fix_title = (
        "Restore it outside the region before each replay, or use a generator "
        "registered with the graph (`graphsafe_set_state`)"
    )
    outcome = Outcome.SILENT_WRONG
    sees = Scope.CAPTURED  # recorded once for all replays: not torch.compile
    consequence = (
        "replays do not restore it and draw new random numbers, where eager "
        "execution repeats the saved state's"
    )

    def visit_Call(self, node: cst.Call) -> None:
        if self.qualname(node.func) not in _SETTERS:
            return
        region = self.here
        args = positional(node)
        if not args:
            return
        saved = self.saved_before(args[0])
        if saved is not None:
            line = self.context.positions[saved].start.line
            self.report(node, region, call=self.code_of(node), line=line)

    def saved_before(self, state: cst.BaseExpression) -> cst.Call | None:
        """The ``get_rng_state()`` call ``state`` holds, when every value it may hold
        is one read outside any capture; None where any is read under capture (a
        fork and restore) or is anything else (not known: not reported)."""
        calls = [self._getter(v) for v in self._values(state)]
        if not calls or any(c is None or self.in_region_code(c) for c in calls):
            return None
        return calls[0]

    def _values(self, state: cst.BaseExpression) -> list[cst.BaseExpression | None]:
        """The expressions a name or ``self.attr`` is bound to; [None] if unknown."""
        facts = self.context.facts.values
        if isinstance(state, cst.Name):
            scope = facts.scope_of.get(state)
            bindings = scope.lookup(state.value) if scope is not None else None
            return [_assigned(b) for b in bindings or []] or [None]
        if isinstance(state, cst.Attribute):
            owner = facts.of(state.value)
            if owner.local is not None and not owner.is_class:
                for cls in facts.bases(owner.local):
                    if state.attr.value in cls.attrs:
                        return [value for value, _ in cls.attrs[state.attr.value]]
        return [None]

    def _getter(self, value: cst.BaseExpression | None) -> cst.Call | None:
        if isinstance(value, cst.Call) and self.qualname(value.func) in _GETTERS:
            return value
        return None


def _assigned(binding: Binding) -> cst.BaseExpression | None:
    if binding.how == "assign" and not binding.path:
        return binding.value
    return None
