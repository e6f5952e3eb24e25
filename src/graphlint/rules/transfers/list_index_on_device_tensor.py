"""GL602: indexing a device tensor with a Python list under capture."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Outcome
from graphlint.rule import Rule
from graphlint.signatures import PAGEABLE_COPY


class ListIndexOnDeviceTensor(Rule):
    """`x[[0, 2, 5]]` copies the index list from the host to the device."""

    code = "GL602"
    message = (
        "`{expr}` indexes a device tensor with a Python list, copied from the host"
    )
    fix_title = (
        "Build the index once, before capture, as a device tensor "
        "(`idx = torch.tensor([...], device='cuda')`) and index with it"
    )
    outcome = Outcome.CAPTURE_ERROR
    # what a capture raises at the line (measured: index_python_list)
    capture_failures = (PAGEABLE_COPY,)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        region = self.here
        if not self.value(node.value).on_device:
            return
        if any(self.is_list(element.slice) for element in node.slice):
            self.report(node, region, expr=self.code_of(node))

    def is_list(self, index: cst.BaseSlice) -> bool:
        if not isinstance(index, cst.Index):
            return False
        expr = index.value
        if isinstance(expr, cst.List):
            return True
        if isinstance(expr, cst.Name):
            scope = self.context.facts.values.scope_of.get(expr)
            bindings = scope.lookup(expr.value) if scope is not None else None
            return bool(bindings) and all(
                b.how == "assign" and not b.path and isinstance(b.value, cst.List)
                for b in bindings or ()
            )
        return False
