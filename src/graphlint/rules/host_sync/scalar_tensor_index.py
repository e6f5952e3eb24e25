"""GL106: indexing with a 0-d tensor, or slicing with bounds held in device tensors,
which reads the index on the host."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Outcome
from graphlint.facts.syntax import keyword, method, positional
from graphlint.facts.values import Device
from graphlint.rule import Rule
from graphlint.signatures import SYNC

# ``x.narrow(dim, start, length)`` / ``torch.narrow(x, dim, start, length)``: the
# arguments that are read on the host when they are tensors (measured:
# ``narrow_tensor_start``, ``narrow_tensor_length``)
_NARROW_BOUNDS = (("start", 1), ("length", 2))


class ScalarTensorIndex(Rule):
    """A tensor is indexed by a 0-d tensor (`x[t.argmax()]`), read on the host."""

    code = "GL106"
    message = "`{call}` {how}, which is read on the host"
    fix_title = (
        "Index on the device: `x.index_select(0, idx.view(1))` or `torch.gather`; "
        "for a length, slice to a static size and mask the rest"
    )
    outcome = Outcome.CAPTURE_ERROR
    # what a capture raises at the line (measured: tensor_index_by_tensor,
    # slice_bound_*, narrow_tensor_*)
    capture_failures = (SYNC,)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        region = self.here
        if not self.value(node.value).is_tensor:
            return
        for element in node.slice:
            index = element.slice
            if isinstance(index, cst.Slice):
                # ``x[:, :seq_len[i]]``: a slice bound becomes a Python int
                # (measured: ``slice_bound_0d_tensor``, ``slice_bound_tensor_element``)
                bounds = (index.lower, index.upper, index.step)
                if any(b is not None and self.device_scalar(b) for b in bounds):
                    how = "takes a slice bound from a device tensor"
                    self.report(node, region, call=self.code_of(node), how=how)
                    return
                continue
            if not isinstance(index, cst.Index):
                continue
            value = self.value(index.value)
            if value.on_device and value.zero_dim and not value.boolean:
                how = "indexes with a 0-d tensor"
                self.report(node, region, call=self.code_of(node), how=how)
                return

    def visit_Call(self, node: cst.Call) -> None:
        found = method(node)
        args = positional(node)
        if self.qualname(node.func) == "torch.narrow":
            args = args[1:]
        elif (
            found is None or found[1] != "narrow" or not self.value(found[0]).is_tensor
        ):
            return
        region = self.here
        for name, at in _NARROW_BOUNDS:
            bound = keyword(node, name)
            if bound is None and at < len(args):
                bound = args[at]
            if bound is not None and self.device_scalar(bound):
                how = f"takes the `narrow` {name} from a device tensor"
                self.report(node, region, call=self.code_of(node), how=how)
                return

    def device_scalar(self, expr: cst.BaseExpression) -> bool:
        """A tensor known to live on the device (a bound must hold one number);
        one of unknown device may be a host tensor, which is fine, and is skipped."""
        value = self.value(expr)
        return value.is_tensor and value.device is Device.CUDA and not value.boolean
