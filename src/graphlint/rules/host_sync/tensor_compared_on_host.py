"""GL104: tensors compared into a Python value (torch.equal, builtin max)."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Outcome
from graphlint.facts.syntax import method, positional
from graphlint.facts.values import element_of
from graphlint.rule import Rule
from graphlint.signatures import SYNC

_BOOL_FUNCTIONS = frozenset({"torch.equal", "torch.allclose", "torch.is_nonzero"})
_BOOL_METHODS = frozenset({"equal", "allclose", "is_nonzero"})


class TensorComparedOnHost(Rule):
    """Tensors compared into a Python value: `torch.equal`, `allclose`, `max(a, b)`."""

    code = "GL104"
    message = "`{call}` compares tensors into a Python value"
    fix_title = (
        "Keep the result a tensor: `torch.eq(a, b).all()`, `torch.isclose(a, b)`, "
        "`torch.maximum(a, b)`"
    )
    outcome = Outcome.CAPTURE_ERROR
    # what a capture raises at the line (measured: torch_equal, torch_allclose,
    # python_max_tensors)
    capture_failures = (SYNC,)

    def visit_Call(self, node: cst.Call) -> None:
        region = self.here
        if self.qualname(node.func) in _BOOL_FUNCTIONS:
            self.report(node, region, call=self.code_of(node))
            return
        name = self.builtin(node)
        if name in ("max", "min"):
            args = [self.value(a) for a in positional(node)]
            compared = args if len(args) > 1 else [element_of(a) for a in args]
            if any(v.on_device for v in compared):
                self.report(node, region, call=self.code_of(node))
            return
        found = method(node)
        if (
            found is not None
            and found[1] in _BOOL_METHODS
            and self.value(found[0]).on_device
        ):
            self.report(node, region, call=self.code_of(node))
