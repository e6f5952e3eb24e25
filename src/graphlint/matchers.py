"""Shared shape helpers for rules: small questions about calls, asked the same way."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import libcst as cst

from graphlint.diagnostics import HOST_MARK, MODULE_MARK, TENSORS_MARK
from graphlint.facts.names import argument_of, is_true, keyword
from graphlint.facts.values import Device, Kind, Value, Values, element_of


def method(call: cst.Call) -> tuple[cst.BaseExpression, str] | None:
    """``(receiver, name)`` for ``receiver.name(...)``."""
    if isinstance(call.func, cst.Attribute):
        return call.func.value, call.func.attr.value
    return None


def builtin(values: Values, call: cst.Call) -> str | None:
    """The builtin a call invokes (``float`` in ``float(t)``), unless shadowed in
    the file ``values`` are of."""
    func = call.func
    if not isinstance(func, cst.Name):
        return None
    scope = values.scope_of.get(func)
    if scope is not None and scope.lookup(func.value) is not None:
        return None
    return func.value


def positional(call: cst.Call) -> list[cst.BaseExpression]:
    return [a.value for a in call.args if a.keyword is None and not a.star]


def on_device(value: Value) -> bool:
    """A tensor that is not known to live on the host."""
    return value.is_tensor and value.device is not Device.CPU


def tensor_slots(call: cst.Call, values: Values) -> Iterator[tuple[str, str]]:
    """The arguments of ``call`` that ``tensor_mark`` marks, in order, each as its
    slot (its position, "0", up to the first ``*args``, or its keyword) and its
    mark."""
    position = 0
    for arg in call.args:
        if arg.star:
            if arg.star == "*":
                position = -1  # the positions after it are not known
            continue
        if arg.keyword is not None:
            slot = arg.keyword.value
        elif position >= 0:
            slot, position = str(position), position + 1
        else:
            continue
        mark = tensor_mark(values.of(arg.value))
        if mark is not None:
            yield slot, mark


def tensor_mark(value: Value) -> str | None:
    """How an argument slot is marked for what a call passes there
    (``Entry.tensors``): "" a device tensor, ``*`` a container of them, ``!`` a
    tensor made on the host, ``~`` an ``nn.Module``; None for anything else."""
    if on_device(value):
        return ""
    if value.kind is Kind.PYTHON and on_device(element_of(value)):
        return TENSORS_MARK
    if value.is_tensor and value.device is Device.CPU:
        return HOST_MARK
    if value.kind is Kind.MODULE:
        return MODULE_MARK
    return None


def plain(
    expr: cst.BaseExpression, call: Callable[[cst.Call], bool] | None = None
) -> bool:
    """Whether evaluating ``expr`` only reads: names, attributes, numbers, strings,
    subscripts and operators over such parts, and calls that ``call`` accepts (with
    such arguments). A fix may evaluate it more often, or drop it, without effect."""
    if isinstance(expr, _CONSTANTS):
        return True
    if isinstance(expr, cst.Attribute):
        return plain(expr.value, call)
    if isinstance(expr, cst.UnaryOperation):
        return plain(expr.expression, call)
    if isinstance(expr, cst.BinaryOperation):
        return plain(expr.left, call) and plain(expr.right, call)
    if isinstance(expr, cst.Comparison):
        return plain(expr.left, call) and all(
            plain(c.comparator, call) for c in expr.comparisons
        )
    if isinstance(expr, cst.ConcatenatedString):
        return plain(expr.left, call) and plain(expr.right, call)
    if isinstance(expr, cst.FormattedString):
        return _plain_parts(expr.parts, call)
    if isinstance(expr, cst.Subscript):
        return plain(expr.value, call) and all(
            _plain_slice(element.slice, call) for element in expr.slice
        )
    if isinstance(expr, cst.Call):
        return (
            call is not None
            and call(expr)
            and plain(expr.func, call)
            and all(not arg.star and plain(arg.value, call) for arg in expr.args)
        )
    return False


_CONSTANTS = (
    cst.Name,
    cst.Integer,
    cst.Float,
    cst.Imaginary,
    cst.SimpleString,
    cst.Ellipsis,
)


def _plain_parts(
    parts: Sequence[cst.BaseFormattedStringContent],
    call: Callable[[cst.Call], bool] | None,
) -> bool:
    return all(
        not isinstance(part, cst.FormattedStringExpression)
        or (plain(part.expression, call) and _plain_parts(part.format_spec or (), call))
        for part in parts
    )


def _plain_slice(part: cst.BaseSlice, call: Callable[[cst.Call], bool] | None) -> bool:
    if isinstance(part, cst.Index):
        return part.star is None and plain(part.value, call)
    if isinstance(part, cst.Slice):
        bounds = (part.lower, part.upper, part.step)
        return all(bound is None or plain(bound, call) for bound in bounds)
    return False


__all__ = [
    "argument_of",
    "builtin",
    "is_true",
    "keyword",
    "method",
    "on_device",
    "plain",
    "positional",
]
