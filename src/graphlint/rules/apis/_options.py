"""Optimizer options read from where they are written: keywords of the constructor,
a dict of options passed as ``**options`` (a literal or ``dict(...)`` and the stores
into it), param groups (``[{"params": p, "capturable": True}]``) and, after
construction, ``group["capturable"] = True`` over ``opt.param_groups``. Shared by the
rules that ask (GL701, GL702); collected during their traversal and answered at the
end of the file, since a later line may set an option. Also the edit that sets a
keyword argument of a call (GL701's ``capturable=True``, GL706's
``cache_enabled=False``)."""

from __future__ import annotations

import libcst as cst

from graphlint.facts.syntax import is_true, keyword, method, positional
from graphlint.rule import Rule, RuleContext, Scope


class OptionsRule(Rule):
    """A rule that reads an optimizer's options (see the module docstring)."""

    abstract = True
    sees = Scope.FILE  # the options are set anywhere in the file, read at its end

    def __init__(self, context: RuleContext) -> None:
        super().__init__(context)
        # ``name[key] = v`` and ``name.update(...)``, by the name: (key, value),
        # key None for an update that may set anything
        self._stores: dict[str, list[tuple[str | None, cst.BaseExpression | None]]] = {}
        # ``group[key] = True`` on ``opt.param_groups``: (opt's text, key)
        self._groups: set[tuple[str, str]] = set()

    def visit_Call(self, node: cst.Call) -> None:
        found = method(node)
        if found is None or found[1] != "update":
            return
        if type(found[0]) is not cst.Name:
            return
        stores = self._stores.setdefault(found[0].value, [])
        for arg in node.args:
            if arg.keyword is not None:
                stores.append((arg.keyword.value, arg.value))
            elif type(arg.value) is cst.Dict and _keys(arg.value) is not None:
                stores.extend(_items(arg.value))
            else:
                stores.append((None, None))  # ``update(other)``: anything

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            store = target.target
            key = _key_of(store) if type(store) is cst.Subscript else None
            if key is None or type(store) is not cst.Subscript:
                continue
            base = store.value
            if type(base) is cst.Name:
                self._stores.setdefault(base.value, []).append((key, node.value))
                owner = self._group_source(base)
            elif type(base) is cst.Subscript:
                owner = _param_groups_of(base.value)
            else:
                owner = None
            if owner is not None and is_true(node.value):
                self._groups.add((owner, key))

    def _group_source(self, name: cst.Name) -> str | None:
        """``opt`` when ``name`` iterates ``opt.param_groups``."""
        scope = self.context.facts.values.scope_of.get(name)
        for binding in (scope.lookup(name.value) or []) if scope else []:
            if binding.how == "iterate" and binding.value is not None:
                return _param_groups_of(binding.value)
        return None

    def option(
        self, origin: cst.Call, key: str, optimizer: cst.BaseExpression | None
    ) -> bool | None:
        """Whether the optimizer built by ``origin`` (stepped as ``optimizer``) has
        ``key`` on: True, False, or None when graphlint cannot tell (options from
        elsewhere: rules stay silent)."""
        if optimizer is not None and (_text(optimizer), key) in self._groups:
            return True  # set on every param group after construction
        groups = positional(origin)[:1]
        if groups and type(groups[0]) is cst.List and groups[0].elements:
            flags = [
                _entry(el.value, key) if type(el.value) is cst.Dict else None
                for el in groups[0].elements
            ]
            if all(flag is not None and is_true(flag) for flag in flags):
                return True
        found = keyword(origin, key)
        if found is not None:
            return is_true(found)
        for arg in origin.args:
            if arg.star == "**":
                return self._from_dict(arg.value, key)
        return False

    def _from_dict(self, expr: cst.BaseExpression, key: str) -> bool | None:
        """``**options``: the dict literal or ``dict(...)`` it was built from, and the
        stores into it; None when any part is not known."""
        if type(expr) is cst.Dict or type(expr) is cst.Call:
            return _literal_flag(expr, key)
        if type(expr) is not cst.Name:
            return None
        scope = self.context.facts.values.scope_of.get(expr)
        bindings = (scope.lookup(expr.value) or []) if scope else []
        if len(bindings) != 1 or bindings[0].how != "assign":
            return None  # a parameter, or several values
        made = bindings[0].value
        flag = _literal_flag(made, key) if made is not None else None
        stores = self._stores.get(expr.value, [])
        if any(name is None for name, _ in stores):
            return None
        mine = [value for name, value in stores if name == key]
        if mine:
            return all(is_true(value) for value in mine)
        return flag


def _literal_flag(expr: cst.BaseExpression, key: str) -> bool | None:
    """``key`` in ``{...}`` or ``dict(...)``: its value, False when the keys are all
    known and it is not one of them, None otherwise."""
    if type(expr) is cst.Dict:
        keys = _keys(expr)
        if keys is None:
            return None
        return is_true(_entry(expr, key)) if key in keys else False
    if type(expr) is cst.Call and type(expr.func) is cst.Name:
        if expr.func.value != "dict" or any(a.keyword is None for a in expr.args):
            return None
        found = keyword(expr, key)
        return is_true(found) if found is not None else False
    return None


def _items(node: cst.Dict) -> list[tuple[str | None, cst.BaseExpression | None]]:
    return [
        (str(el.key.evaluated_value), el.value)
        for el in node.elements
        if type(el) is cst.DictElement and type(el.key) is cst.SimpleString
    ]


def _keys(node: cst.Dict) -> set[str] | None:
    keys: set[str] = set()
    for element in node.elements:
        if type(element) is not cst.DictElement:
            return None  # ``**other``
        key = element.key
        if type(key) is not cst.SimpleString:
            return None
        keys.add(str(key.evaluated_value))
    return keys


def _entry(node: cst.Dict, name: str) -> cst.BaseExpression | None:
    for element in node.elements:
        if (
            type(element) is cst.DictElement
            and type(element.key) is cst.SimpleString
            and element.key.evaluated_value == name
        ):
            return element.value
    return None


def _key_of(node: cst.Subscript) -> str | None:
    if len(node.slice) != 1:
        return None
    index = node.slice[0].slice
    if type(index) is cst.Index and type(index.value) is cst.SimpleString:
        return str(index.value.evaluated_value)
    return None


def _param_groups_of(expr: cst.BaseExpression) -> str | None:
    """``opt`` for ``opt.param_groups``."""
    if type(expr) is cst.Attribute and expr.attr.value == "param_groups":
        return _text(expr.value)
    return None


def _text(expr: cst.BaseExpression) -> str:
    return cst.Module([]).code_for_node(expr)


def with_keyword(
    call: cst.Call, name: str, value: cst.BaseExpression, *, one_line: bool
) -> cst.Call | None:
    """``call`` with ``name=value``, laid out as its arguments are: the keyword's
    value replaced where it is given, else the keyword added last. None where the
    call's arguments may come from elsewhere (``**options``, ``*args``) or where
    the layout is not clear (arguments over lines with no trailing comma)."""
    if any(a.star for a in call.args):
        return None
    args = list(call.args)
    for index, arg in enumerate(args):
        if arg.keyword is not None and arg.keyword.value == name:
            args[index] = arg.with_changes(value=value)
            return call.with_changes(args=args)
    added = cst.Arg(
        value=value,
        keyword=cst.Name(name),
        equal=cst.AssignEqual(
            whitespace_before=cst.SimpleWhitespace(""),
            whitespace_after=cst.SimpleWhitespace(""),
        ),
    )
    space = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    if args and type(args[-1].comma) is cst.Comma:  # a trailing comma: one a line
        between = args[-2].comma if len(args) > 1 else space
        if (
            len(args) == 1
            and type(call.whitespace_before_args) is cst.ParenthesizedWhitespace
        ):  # on a line of its own: the new one goes on the next, indented alike
            between = cst.Comma(whitespace_after=call.whitespace_before_args)
        added = added.with_changes(comma=args[-1].comma)
        args[-1] = args[-1].with_changes(comma=between)
    elif args and one_line:
        args[-1] = args[-1].with_changes(comma=space)
    elif args:
        return None
    return call.with_changes(args=[*args, added])
