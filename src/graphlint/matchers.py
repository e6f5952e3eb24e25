"""Shared shape helpers for rules: small questions about calls, asked the same way."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from graphlint.facts.names import argument_of, is_true, keyword
from graphlint.facts.values import Device, Value

if TYPE_CHECKING:
    from graphlint.facts.analysis import FileFacts


def method(call: cst.Call) -> tuple[cst.BaseExpression, str] | None:
    """``(receiver, name)`` for ``receiver.name(...)``."""
    if isinstance(call.func, cst.Attribute):
        return call.func.value, call.func.attr.value
    return None


def builtin(facts: FileFacts, call: cst.Call) -> str | None:
    """The builtin a call invokes (``float`` in ``float(t)``), unless shadowed."""
    func = call.func
    if not isinstance(func, cst.Name):
        return None
    scope = facts.values.scope_of.get(func)
    if scope is not None and scope.lookup(func.value) is not None:
        return None
    return func.value


def positional(call: cst.Call) -> list[cst.BaseExpression]:
    return [a.value for a in call.args if a.keyword is None and not a.star]


def on_device(value: Value) -> bool:
    """A tensor that is not known to live on the host."""
    return value.is_tensor and value.device is not Device.CPU


__all__ = [
    "argument_of",
    "builtin",
    "is_true",
    "keyword",
    "method",
    "on_device",
    "positional",
]
