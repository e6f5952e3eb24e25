"""Steady and settled tests: branches under capture whose outcome is known.

A training loop often captures at one iteration and replays at the later ones:
``for step in range(n): ... if step == K: capture ... else: replay``. A test of
``step`` inside the captured code (``if step == 0:``) is then evaluated once, at
``step == K``, and the replays run at ``step >= K``: when the test has the same
value over all of those iterations, the branch taken at capture is the one every
replay wants. The counter must be the index of ``for step in range(...)`` (it only
grows, by a positive step) and nothing else may write it; the capture's iteration
must be pinned by an ``==`` test of the counter on the capture's path (on the
``with`` itself, or on the binding of the context it enters).

A block that settles its own test (``if cache["dirty"]: ...; cache["dirty"] =
False``, ``if p != cache["p"]: cache["p"] = p``, lazy set-up behind ``is None``,
``not hasattr`` or ``k not in``) is run by warm-up, which leaves the test false: the
capture skips it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import libcst as cst

from graphlint.facts.reaching import Reaching
from graphlint.facts.region import Region
from graphlint.facts.state import HostState, Key, subscript_index
from graphlint.facts.syntax import is_none, source
from graphlint.facts.values import Values

Condition = tuple[cst.BaseExpression, bool]
_FLIP = {
    cst.Equal: "==",
    cst.NotEqual: "!=",
    cst.LessThan: ">",
    cst.LessThanEqual: ">=",
    cst.GreaterThan: "<",
    cst.GreaterThanEqual: "<=",
}
_OPS = {
    cst.Equal: "==",
    cst.NotEqual: "!=",
    cst.LessThan: "<",
    cst.LessThanEqual: "<=",
    cst.GreaterThan: ">",
    cst.GreaterThanEqual: ">=",
}


class Steady:
    """Answers ``value(test, capture)``; built by ``Flow`` once its walk is done."""

    def __init__(
        self,
        values: Values,
        state: HostState,
        guard_tests: Mapping[cst.CSTNode, Sequence[Condition]],
        loops_of: Callable[[cst.CSTNode], Sequence[cst.CSTNode]],
    ) -> None:
        self.values = values
        self.state = state
        self.reaching: Reaching = state.reaching
        self.guard_tests = guard_tests
        self.loops_of = loops_of  # the loops around a node, outermost first

    def value(self, test: cst.BaseExpression, capture: Region) -> bool | None:
        """The value ``test`` has at the capture and at every replay after it, when
        a loop counter settles it; None otherwise."""
        compared = _compared(test)
        if compared is None:
            return None
        name, op, other = compared
        bound = self._constant(other)
        key = self.state.key_of(name)
        if bound is None or key is None or not self._counter(key, capture):
            return None
        at = self._captured_at(key, capture)
        if at is None:
            return None
        # the capture runs at ``at``, the replays at ``at`` and after
        if op == "==":
            return False if bound < at else None
        if op == "!=":
            return True if bound < at else None
        if op in ("<", "<="):
            return False if bound < at or (op == "<" and bound == at) else None
        return True if bound < at or (op == ">=" and bound == at) else None

    def _counter(self, key: Key, capture: Region) -> bool:
        """Whether ``key`` is only ever written as the index of a ``for ... in
        range(...)`` with a positive step that encloses the capture."""
        writes = self.state.writes.get(key, [])
        if len(writes) != 1 or writes[0].how != "iterate":
            return False
        loops = self.loops_of(writes[0].target)
        loop = loops[-1] if loops else None
        if type(loop) is not cst.For or loop.target is not writes[0].target:
            return False
        root = capture.root
        if root is None or loop not in self.loops_of(root):
            return False
        call = loop.iter
        if not (
            type(call) is cst.Call
            and type(call.func) is cst.Name
            and call.func.value == "range"
            and not self._bound(call.func)  # the builtin
        ):
            return False
        if len(call.args) == 3:
            step = self._constant(call.args[2].value)
            return step is not None and step > 0
        return 1 <= len(call.args) <= 2 and all(a.keyword is None for a in call.args)

    def _bound(self, name: cst.Name) -> bool:
        scope = self.values.scope_of.get(name)
        return scope is None or scope.lookup(name.value) is not None

    def _captured_at(self, key: Key, capture: Region) -> int | None:
        """The counter's value whenever the capture runs: an ``==`` test of it that
        must hold on the way to the capture."""
        root = capture.root
        if root is None:
            return None
        conditions = list(self.guard_tests.get(root, ()))
        if type(root) is cst.With:  # ``ctx = torch.cuda.graph(g)`` ... ``with ctx:``
            for item in root.items:
                if type(item.item) is cst.Name:
                    for binding in self.reaching.of(item.item) or ():
                        made = self.reaching.value(binding)
                        if made is not None:
                            conditions.extend(self.guard_tests.get(made, ()))
        for test, want in conditions:
            for part, holds in _facts(test, want):
                compared = _compared(part)
                if compared is None:
                    continue
                name, op, other = compared
                if (op, holds) in (("==", True), ("!=", False)) and self.state.key_of(
                    name
                ) == key:
                    found = self._constant(other)
                    if found is not None:
                        return found
        return None

    def _constant(self, expr: cst.BaseExpression) -> int | None:
        """An integer literal, or a name whose every binding it can see is one
        literal (``CAPTURE_ITERATION = 11``)."""
        if type(expr) is cst.Integer:
            return int(expr.evaluated_value)
        if type(expr) is cst.UnaryOperation and type(expr.operator) is cst.Minus:
            inner = self._constant(expr.expression)
            return -inner if inner is not None else None
        if type(expr) is not cst.Name:
            return None
        defs = self.reaching.of(expr)
        values: list[cst.CSTNode | None]
        if defs is None:
            scope = self.values.scope_of.get(expr)
            bindings = scope.lookup(expr.value) if scope is not None else None
            values = [b.value if b.how == "assign" else None for b in bindings or ()]
        else:
            values = [self.reaching.value(d) for d in defs]
        found = {
            int(v.evaluated_value) if type(v) is cst.Integer else None for v in values
        }
        if len(found) != 1:
            return None
        return found.pop()


def _compared(
    test: cst.BaseExpression,
) -> tuple[cst.Name, str, cst.BaseExpression] | None:
    """``name OP other`` (or ``other OP name``, turned round), one comparison."""
    if type(test) is not cst.Comparison or len(test.comparisons) != 1:
        return None
    target = test.comparisons[0]
    left, right = test.left, target.comparator
    if type(left) is cst.Name and type(target.operator) in _OPS:
        return left, _OPS[type(target.operator)], right
    if type(right) is cst.Name and type(target.operator) in _FLIP:
        return right, _FLIP[type(target.operator)], left
    return None


def _facts(
    test: cst.BaseExpression, want: bool
) -> list[tuple[cst.BaseExpression, bool]]:
    """Parts of ``test`` whose value is known when ``test`` has value ``want``: the
    operands of a true ``and`` (a false ``or``) hold (fail), ``not`` turns round."""
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        return _facts(test.expression, not want)
    if type(test) is cst.BooleanOperation:
        joins = type(test.operator) is cst.And
        if joins == want:  # a true ``and``, a false ``or``: both sides have ``want``
            return [*_facts(test.left, want), *_facts(test.right, want)]
        return []
    return [(test, want)]


class Settled:
    """Blocks that settle their own test: ``if cache["dirty"]: ...;
    cache["dirty"] = False``. Warm-up runs such a block and leaves its test false;
    the capture then skips it. (A reset between replays is GL203's, on the test.)"""

    def __init__(
        self,
        state: HostState,
        conditions: Mapping[cst.CSTNode, Sequence[Condition]],
    ) -> None:
        self.state = state
        self.reaching = state.reaching
        # each test, with the value it must have, -> the block that runs then
        self.blocks: dict[tuple[cst.BaseExpression, bool], cst.CSTNode] = {}
        # after an early exit (``if k in seen: return``), the statements that run
        # when it is not taken
        self.rest: dict[tuple[cst.BaseExpression, bool], list[cst.CSTNode]] = {}
        # each test's answer, once: every call and write behind it asks again
        self._settles: dict[tuple[cst.BaseExpression, bool], bool] = {}
        for block, tests in conditions.items():
            for test, holds in tests:
                if type(block) is cst.IndentedBlock or type(block) is cst.Else:
                    self.blocks.setdefault((test, holds), block)
                elif type(block) is cst.SimpleStatementLine:
                    self.rest.setdefault((test, holds), []).append(block)

    def settles(self, test: cst.BaseExpression, holds: bool) -> bool:
        """Whether the block that runs when ``test`` is ``holds`` makes it false."""
        known = self._settles.get((test, holds))
        if known is None:
            known = self._settles[test, holds] = self._settle(test, holds)
        return known

    def _settle(self, test: cst.BaseExpression, holds: bool) -> bool:
        block = self.blocks.get((test, holds))
        if block is None:
            body: Sequence[cst.CSTNode] = self.rest.get((test, holds), [])
        else:
            if type(block) is cst.Else:
                block = block.body
            if type(block) is not cst.IndentedBlock:
                return False
            body = block.body
        writes = [
            small
            for line in body
            if type(line) is cst.SimpleStatementLine
            for small in line.body
        ]
        return self._settled_by(test, holds, writes)

    def _settled_by(
        self,
        test: cst.BaseExpression,
        holds: bool,
        writes: Sequence[cst.BaseSmallStatement],
    ) -> bool:
        """Whether ``writes``, run when ``test`` is ``holds``, leave it not so; of
        ``a and b`` (``a or b``), the parts each writes settles: ``if self.ready and
        self.key == key: return`` then ``self.ready = True; self.key = key``."""
        if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
            return self._settled_by(test.expression, not holds, writes)
        if type(test) is cst.BooleanOperation:
            parts = [
                self._settled_by(part, holds, writes)
                for part in (test.left, test.right)
            ]
            # a false ``and`` is made true by making every part true; a true one
            # false by making one part false (``or`` the other way round)
            every = (type(test.operator) is cst.And) != holds
            return all(parts) if every else any(parts)
        return any(self._undoes(test, holds, w) for w in writes)

    def _undoes(
        self, test: cst.BaseExpression, holds: bool, write: cst.BaseSmallStatement
    ) -> bool:
        """Whether ``write``, run when ``test`` is ``holds``, leaves it not so."""
        if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
            return self._undoes(test.expression, not holds, write)
        if type(write) is cst.Expr and type(write.value) is cst.Call:
            return self._adds(test, holds, write.value)
        if type(write) is not cst.Assign or len(write.targets) != 1:
            return False
        target, value = write.targets[0].target, write.value
        if type(test) is cst.Comparison and len(test.comparisons) == 1:
            op = test.comparisons[0].operator
            left, right = test.left, test.comparisons[0].comparator
            if (
                type(op) is cst.Is
                or type(op) is cst.Equal
                or type(op) is cst.IsNot
                or type(op) is cst.NotEqual
            ):
                missing = (type(op) is cst.Is or type(op) is cst.Equal) == holds
                if is_none(right) and self._same(left, target):
                    return missing and not is_none(value)  # ``x is None``
                if not missing:  # ``a != cache["key"]``: store it, then equal
                    return any(
                        self._same(mine, target) and source(other) == source(value)
                        for mine, other in ((left, right), (right, left))
                    )
                return False
            if type(op) is cst.In or type(op) is cst.NotIn:  # ``k not in cache``
                absent = (type(op) is cst.NotIn) == holds
                return (
                    absent
                    and type(target) is cst.Subscript
                    and self._same(right, target.value)
                    and (index := subscript_index(target)) is not None
                    and source(index) == source(left)
                )
            return False
        if type(test) is cst.Call and source(test.func) == "hasattr":
            args = test.args
            return (
                not holds
                and len(args) == 2
                and type(target) is cst.Attribute
                and type(args[1].value) is cst.SimpleString
                and args[1].value.evaluated_value == target.attr.value
                and self._same(args[0].value, target.value)
            )
        truth = _truth(value)  # ``if dirty: ...; dirty = False``
        return truth is not None and truth is not holds and self._same(test, target)

    def _adds(self, test: cst.BaseExpression, holds: bool, call: cst.Call) -> bool:
        """``if k not in seen: ...; seen.add(k)``."""
        func = call.func
        if not (
            type(test) is cst.Comparison
            and len(test.comparisons) == 1
            and isinstance(test.comparisons[0].operator, (cst.In, cst.NotIn))
            and type(func) is cst.Attribute
            and func.attr.value in ("add", "append", "setdefault")
            and call.args
        ):
            return False
        absent = (type(test.comparisons[0].operator) is cst.NotIn) == holds
        return (
            absent
            and self._same(test.comparisons[0].comparator, func.value)
            and source(call.args[0].value) == source(test.left)
        )

    def _same(self, a: cst.BaseExpression, b: cst.BaseExpression) -> bool:
        """Two expressions naming one location (``self.ready``, ``cache["k"]``);
        ``cache.get(k)`` reads the entry ``cache[k]`` names."""
        if type(a) is cst.Call or type(b) is cst.Call:
            first, second = _entry(a), _entry(b)
            return (
                first is not None
                and second is not None
                and self._same(first[0], second[0])
                and source(first[1]) == source(second[1])
            )
        key = self.state.key_of(a)
        return (
            key is not None and key == self.state.key_of(b) and source(a) == source(b)
        )


def _entry(
    expr: cst.BaseExpression,
) -> tuple[cst.BaseExpression, cst.BaseExpression] | None:
    """The container and the index of ``d[k]`` or ``d.get(k)`` (``d.get(k, v)``)."""
    if type(expr) is cst.Subscript:
        index = subscript_index(expr)
        return (expr.value, index) if index is not None else None
    if (
        type(expr) is cst.Call
        and type(expr.func) is cst.Attribute
        and expr.func.attr.value == "get"
        and 1 <= len(expr.args) <= 2
        and all(a.keyword is None and not a.star for a in expr.args)
    ):
        return expr.func.value, expr.args[0].value
    return None


def _truth(expr: cst.BaseExpression) -> bool | None:
    """The truth value of a literal: ``False``, ``None``, ``0``, ``""``, ``[]``..."""
    if type(expr) is cst.Name and expr.value in ("True", "False", "None"):
        return expr.value == "True"
    if type(expr) is cst.Integer or type(expr) is cst.Float:
        return float(expr.evaluated_value) != 0
    if type(expr) is cst.SimpleString:
        return bool(expr.evaluated_value)
    if (
        type(expr) is cst.List
        or type(expr) is cst.Tuple
        or type(expr) is cst.Set
        or type(expr) is cst.Dict
    ):
        return bool(expr.elements)
    return None


__all__ = ["Settled", "Steady"]
