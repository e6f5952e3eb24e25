"""GL501: a custom torch.Generator used under capture without registering it."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Outcome
from graphlint.matchers import keyword
from graphlint.rule import Rule


class UnregisteredGenerator(Rule):
    """A custom generator is used under capture but never registered with the graph."""

    code = "GL501"
    message = "`{gen}` is a custom generator the capturing graph does not know about"
    fix_title = "Register it before capture: `{graph}.register_generator_state({gen})`"
    outcome = Outcome.CAPTURE_ERROR

    def visit_Call(self, node: cst.Call) -> None:
        generator = keyword(node, "generator")
        if generator is None:
            return
        region = self.captured(node)
        if region is None or self.value(generator).cls != "torch.Generator":
            return
        if not self.state.is_registered(generator, region):
            self.report(
                generator,
                region,
                gen=self.code_of(generator),
                graph=region.graph or "graph",
            )
