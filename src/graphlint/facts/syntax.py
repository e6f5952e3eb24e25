"""Shape helpers: small questions about the syntax of calls and expressions,
asked the same way everywhere. They read the tree alone (no scopes, no values)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import libcst as cst


def dotted(node: cst.BaseExpression | cst.ImportFrom) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    if type(node) is cst.Name:
        return node.value
    if type(node) is cst.Attribute:
        base = dotted(node.value)
        return None if base is None else f"{base}.{node.attr.value}"
    return None


def is_true(expr: cst.BaseExpression | None) -> bool:
    """``True`` written out."""
    return type(expr) is cst.Name and expr.value == "True"


def keyword(call: cst.Call, name: str) -> cst.BaseExpression | None:
    """The value of ``name=`` in ``call``, if given."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    return None


def argument_of(
    call: cst.Call, function: cst.FunctionDef, name: str
) -> cst.BaseExpression | None:
    """What ``call`` passes to the parameter ``name`` of ``function``, by keyword
    or by position (a method's ``self`` is not counted, nor a constructor's)."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    params = [*function.params.posonly_params, *function.params.params]
    names = [p.name.value for p in params]
    bound = type(call.func) is cst.Attribute or function.name.value == "__init__"
    if names and names[0] in ("self", "cls") and bound:
        names = names[1:]
    positional = [a for a in call.args if a.keyword is None and not a.star]
    if name in names and names.index(name) < len(positional):
        return positional[names.index(name)].value
    return None


def is_none(expr: cst.BaseExpression | None) -> bool:
    """``None`` written out."""
    return type(expr) is cst.Name and expr.value == "None"


def method(call: cst.Call) -> tuple[cst.BaseExpression, str] | None:
    """``(receiver, name)`` for ``receiver.name(...)``."""
    if type(call.func) is cst.Attribute:
        return call.func.value, call.func.attr.value
    return None


def positional(call: cst.Call) -> list[cst.BaseExpression]:
    """What ``call`` passes by position, without what ``*args`` unpacks."""
    return [a.value for a in call.args if a.keyword is None and not a.star]


def plain(
    expr: cst.BaseExpression, call: Callable[[cst.Call], bool] | None = None
) -> bool:
    """Whether evaluating ``expr`` only reads: names, attributes, numbers, strings,
    subscripts and operators over such parts, and calls that ``call`` accepts (with
    such arguments). A fix may evaluate it more often, or drop it, without effect."""
    if isinstance(expr, _CONSTANTS):
        return True
    if type(expr) is cst.Attribute:
        return plain(expr.value, call)
    if type(expr) is cst.UnaryOperation:
        return plain(expr.expression, call)
    if type(expr) is cst.BinaryOperation:
        return plain(expr.left, call) and plain(expr.right, call)
    if type(expr) is cst.Comparison:
        return plain(expr.left, call) and all(
            plain(c.comparator, call) for c in expr.comparisons
        )
    if type(expr) is cst.ConcatenatedString:
        return plain(expr.left, call) and plain(expr.right, call)
    if type(expr) is cst.FormattedString:
        return _plain_parts(expr.parts, call)
    if type(expr) is cst.Subscript:
        return plain(expr.value, call) and all(
            _plain_slice(element.slice, call) for element in expr.slice
        )
    if type(expr) is cst.Call:
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
        type(part) is not cst.FormattedStringExpression
        or (plain(part.expression, call) and _plain_parts(part.format_spec or (), call))
        for part in parts
    )


def _plain_slice(part: cst.BaseSlice, call: Callable[[cst.Call], bool] | None) -> bool:
    if type(part) is cst.Index:
        return part.star is None and plain(part.value, call)
    if type(part) is cst.Slice:
        bounds = (part.lower, part.upper, part.step)
        return all(bound is None or plain(bound, call) for bound in bounds)
    return False


def source(node: cst.CSTNode) -> str:
    """The source text of ``node``, as written."""
    return cst.Module([]).code_for_node(node)


def first_arg(call: cst.Call, *keywords: str) -> cst.BaseExpression | None:
    """A call's first positional argument, or its argument by one of ``keywords``,
    whichever comes first."""
    for arg in call.args:
        if arg.keyword is None and not arg.star:
            return arg.value
        if arg.keyword is not None and arg.keyword.value in keywords:
            return arg.value
    return None


__all__ = [
    "argument_of",
    "dotted",
    "first_arg",
    "is_none",
    "is_true",
    "keyword",
    "method",
    "plain",
    "positional",
    "source",
]
