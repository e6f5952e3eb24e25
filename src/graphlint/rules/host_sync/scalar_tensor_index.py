"""GL106: indexing with a 0-d tensor, which reads the index on the host."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Outcome
from graphlint.matchers import on_device
from graphlint.rule import Rule


class ScalarTensorIndex(Rule):
    """A tensor is indexed by a 0-d tensor (`x[t.argmax()]`), read on the host."""

    code = "GL106"
    message = "`{call}` indexes with a 0-d tensor, which is read on the host"
    fix_title = (
        "Index on the device: `x.index_select(0, idx.view(1))` or `torch.gather`"
    )
    outcome = Outcome.CAPTURE_ERROR

    def visit_Subscript(self, node: cst.Subscript) -> None:
        region = self.region(node)
        if region is None or not self.value(node.value).is_tensor:
            return
        for element in node.slice:
            index = element.slice
            if not isinstance(index, cst.Index):
                continue
            value = self.value(index.value)
            if on_device(value) and value.zero_dim and not value.boolean:
                self.report(node, region, call=self.code_of(node))
                return
