"""GL707: module hooks registered before make_graphed_callables."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Outcome, RegionKind, RegionRef
from graphlint.facts.kinds.graphed import graphed_label
from graphlint.facts.region import Region
from graphlint.facts.state import same
from graphlint.facts.syntax import positional
from graphlint.rule import Rule, Scope
from graphlint.signatures import HOOKS_REGISTERED


class HooksBeforeGraphedCallables(Rule):
    """A module handed to `make_graphed_callables` already has hooks registered."""

    code = "GL707"
    message = "`{module}` has a hook registered at line {line} before it is graphed"
    fix_title = "Register hooks after `make_graphed_callables`, on the returned module"
    outcome = Outcome.CAPTURE_ERROR
    sees = Scope.FILE  # ``make_graphed_callables`` and hooks before it: set-up code
    # what a capture raises at the line (make_graphed_callables' own check)
    capture_failures = (HOOKS_REGISTERED,)

    def visit_Call(self, node: cst.Call) -> None:
        setup = self.context.facts.setup
        if node not in setup.graphed_calls:
            return
        args = positional(node)
        if not args:
            return
        first = args[0]
        modules = (
            [el.value for el in first.elements]
            if isinstance(first, (cst.Tuple, cst.List))
            else [first]
        )
        function = self.state.function_of(node)
        line = self.context.positions[node].start.line
        for module in modules:
            key = self.state.key_of(module)
            for hook_key, _, hook_function, hook_line in setup.hooks:
                if (
                    key is not None
                    and same(hook_key, key)
                    and hook_function is function
                    and hook_line < line
                ):
                    label = graphed_label(self.qualname(node.func))
                    region = Region(RegionRef(RegionKind.GRAPHED, line, label))
                    self.report(
                        module, region, module=self.code_of(module), line=hook_line
                    )
                    break
