"""The fix GL301 and GL302 share: an assignment turned into a copy in place."""

from __future__ import annotations

import libcst as cst


def copy_into(
    statement: cst.Assign, into: cst.BaseExpression
) -> list[tuple[cst.CSTNode, cst.Call]]:
    """``target = new`` -> ``into.copy_(new)``: the edit, or none where ``new`` does
    not read the same as one argument (``a, b``, a ``yield``)."""
    value = statement.value
    if isinstance(value, (cst.Yield, cst.Tuple)) and not value.lpar:
        return []
    copy = cst.Call(
        func=cst.Attribute(value=into, attr=cst.Name("copy_")),
        args=[cst.Arg(value=value)],
    )
    return [(statement, copy)]
