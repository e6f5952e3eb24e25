"""A read-only traversal of LibCST trees for graphlint's visitors.

``node.visit(visitor)`` rebuilds every node it passes (``_visit_and_replace_children``
constructs a copy of each parent, whitespace and punctuation included) and calls the
attribute hooks of every field, even for a visitor that changes nothing: on Megatron-LM
that machinery was most of the analysis time. :func:`walk` calls the same
``on_visit``/``on_leave`` methods (so ``visit_<Type>`` and ``leave_<Type>`` and their
pruning work as in LibCST), in the same order, but reads the children where they are
and never enters the nodes that are only layout: whitespace, comments, operators,
commas, brackets. No visitor of graphlint's looks at those (a test checks that no
``visit_``/``leave_`` method names one), nor at attribute hooks.

:func:`replay_batched` is the rules' walk: every ``visit_<Type>``/``leave_<Type>`` of
every rule, in one pass, never pruned (LibCST's ``visit_batched``), replayed from what
the scope walk recorded at the node types they act on; :func:`replay_together` is
the walk of the visitors that act on every node (the region assignment, host state
and flow), replayed from the scope walk's every step, each with its own pruning.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import libcst as cst
from libcst._nodes import op, whitespace  # the modules of layout-only node types

_Method = Callable[[Any], Any]


def _layout_types() -> frozenset[type[cst.CSTNode]]:
    found: set[type[cst.CSTNode]] = set()
    for module in (op, whitespace):
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, cst.CSTNode):
                found.add(value)
    brackets = (
        cst.LeftParen,
        cst.RightParen,
        cst.LeftSquareBracket,
        cst.RightSquareBracket,
        cst.LeftCurlyBrace,
        cst.RightCurlyBrace,
        cst.Asynchronous,
    )
    return frozenset({*found, *brackets})


LAYOUT: frozenset[type[cst.CSTNode]] = _layout_types()
"""Node types that hold only layout (whitespace, comments, operators, punctuation):
never entered."""


class _FieldRecorder(cst.CSTVisitor):
    """Notes the fields ``_visit_and_replace_children`` visits, in its order."""

    def __init__(self) -> None:
        self.fields: list[str] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        return False

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        self.fields.append(attribute)


_FIELDS: dict[type[cst.CSTNode], tuple[str, ...]] = {}


def _fields(node: cst.CSTNode) -> tuple[str, ...]:
    """The fields of ``node``'s type that may hold nodes, in LibCST's visiting (source)
    order: read once per type from LibCST's own traversal, then the dataclass fields it
    visits only on some nodes (an f-string's ``format_spec``)."""
    kind = type(node)
    found = _FIELDS.get(kind)
    if found is None:
        recorder = _FieldRecorder()
        node._visit_and_replace_children(recorder)
        names = [*recorder.fields, *(f for f in kind.__dataclass_fields__)]
        try:
            hints = typing.get_type_hints(kind)
        except Exception:
            hints = {}
        found = _FIELDS[kind] = tuple(
            name
            for name in dict.fromkeys(names)
            if name not in hints or _may_hold_nodes(hints[name])
        )
    return found


def _may_hold_nodes(hint: object) -> bool:
    """Whether a field that LibCST annotates ``hint`` may hold a node a walk
    enters: not only whitespace, punctuation, strings or sentinels. What the hint
    does not make plain (a type variable, a forward reference) may."""
    if typing.get_origin(hint) is typing.Literal:
        return False  # strings
    args = typing.get_args(hint)
    if args:
        return any(_may_hold_nodes(arg) for arg in args)
    if not isinstance(hint, type):
        return True
    # a layout type's subclasses are layout too (LibCST's whitespace and operators)
    return issubclass(hint, cst.CSTNode) and hint not in LAYOUT


def children(node: cst.CSTNode) -> Iterable[cst.CSTNode]:
    """``node``'s children that are not layout, in source order: those a walk of
    the file found (every node's, once the facts' first walk is done), else read."""
    known = _KIDS.get(id(node))
    return known[1] if known is not None else _read_children(node)


def _read_children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    for name in _fields(node):
        value = getattr(node, name)
        if type(value) is tuple or type(value) is list:
            yield from (item for item in value if _entered(type(item)))
        elif _entered(type(value)):
            yield value


def parents() -> dict[int, cst.CSTNode]:
    """Each node's parent, by the node's id, among the nodes walked so far (every
    node of the file once the facts' first walk is done)."""
    return {id(kid): node for node, kids in _KIDS.values() for kid in kids}


def descendants(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """``node`` and every node under it that is not layout, in source order."""
    yield node
    for child in children(node):
        yield from descendants(child)


def _method(owner: object, name: str) -> Any:
    """``owner``'s ``name``, or None where it has none of its own: LibCST's
    visitors define a no-op ``visit_<Type>`` and ``leave_<Type>`` for every node
    type, which a walk need not call."""
    found = getattr(owner, name, None)
    return None if getattr(found, "_is_no_op", False) else found


def _dispatch(visitor: object, prefix: str) -> Callable[[cst.CSTNode], Any]:
    """``visitor``'s ``<prefix><Type>`` method for a node, looked up once per type."""
    table: dict[type, _Method | None] = {}

    def call(node: cst.CSTNode) -> Any:
        kind = type(node)
        try:
            method = table[kind]
        except KeyError:
            method = table[kind] = _method(visitor, prefix + kind.__name__)
        return None if method is None else method(node)

    return call


# a visitor class's ``visit_<Type>`` function, by (visitor class, node type)
_VISITS: dict[tuple[type, type], Callable[[Any, Any], Any] | None] = {}


def visited(visitor: cst.CSTVisitor, node: cst.CSTNode) -> bool:
    """``CSTVisitor.on_visit``: the visitor's ``visit_<Type>`` for ``node``, and
    whether to enter its children; the method looked up once per visitor class and
    node type (LibCST builds its name and looks it up on every node)."""
    key = (type(visitor), type(node))
    try:
        method = _VISITS[key]
    except KeyError:
        method = _VISITS[key] = _method(key[0], "visit_" + key[1].__name__)
    return method is None or method(visitor, node) is not False


def left(visitor: cst.CSTVisitor, node: cst.CSTNode) -> None:
    """``CSTVisitor.on_leave``: the visitor's ``leave_<Type>`` for ``node``, the
    method looked up once per visitor class and node type."""
    key = (type(visitor), type(node))
    try:
        method = _LEFT[key]
    except KeyError:
        method = _LEFT[key] = _method(key[0], "leave_" + key[1].__name__)
    if method is not None:
        method(visitor, node)


_LEFT: dict[tuple[type, type], Callable[[Any, Any], Any] | None] = {}

Sites = list[tuple[cst.CSTNode, bool]]
"""A walk's events at the nodes of some types, in order: (node, True) where the
walk enters it, (node, False) where it leaves it."""


Subscription = tuple[frozenset[type], frozenset[type]]
"""The node types a visitor acts on where a walk enters them, and where it leaves."""


def subscribed(
    visitor: type[cst.CSTVisitor] | type[cst.BatchableCSTVisitor],
) -> Subscription:
    """The node types a visitor class has a ``visit_<Type>`` of its own for, and
    those it has a ``leave_<Type>`` for: what ``replay`` needs recorded."""
    found: tuple[set[type], set[type]] = (set(), set())
    for name in dir(visitor):
        prefix, _, kind = name.partition("_")
        if prefix not in ("visit", "leave") or _method(visitor, name) is None:
            continue
        node = getattr(cst, kind, None)
        if isinstance(node, type) and issubclass(node, cst.CSTNode):
            found[prefix == "leave"].add(node)
    return frozenset(found[0]), frozenset(found[1])


def joined(*subscriptions: Subscription) -> Subscription:
    """The node types any of ``subscriptions`` acts on, entering and leaving."""
    entered = frozenset().union(*(entered for entered, _ in subscriptions))
    left = frozenset().union(*(left for _, left in subscriptions))
    return entered, left


def covers(recorded: Subscription, wanted: Subscription) -> bool:
    """Whether a walk that recorded ``recorded`` recorded every site of ``wanted``."""
    return wanted[0] <= recorded[0] and wanted[1] <= recorded[1]


def replay(sites: Sites, visitor: cst.CSTVisitor) -> None:
    """The walk of a visitor that never prunes and asks only about the nodes
    ``sites`` recorded: its ``visit_<Type>`` and ``leave_<Type>`` at each, in the
    walk's order, without walking the rest of the tree."""
    for node, entering in sites:
        if entering:
            visited(visitor, node)
        else:
            left(visitor, node)


# whether a visitor class has a ``leave_<Type>`` of its own
_LEAVES: dict[type, bool] = {}


def _leaves(kind: type[cst.CSTVisitor]) -> bool:
    found = _LEAVES.get(kind)
    if found is None:
        found = _LEAVES[kind] = bool(subscribed(kind)[1])
    return found


_Hooks = tuple[Callable[[cst.CSTNode], bool], Callable[[cst.CSTNode], object] | None]


def _hooks(visitor: cst.CSTVisitor) -> _Hooks:
    """``visitor``'s ``on_visit`` and ``on_leave``; LibCST's defaults (which build
    the method's name on every node) replaced by lookups once per node type, and
    no ``on_leave`` at all (None) for a visitor with no ``leave_<Type>``."""
    kind = type(visitor)
    if kind.on_visit is cst.CSTVisitor.on_visit:
        visit = _dispatch(visitor, "visit_")

        def on_visit(node: cst.CSTNode) -> bool:
            return visit(node) is not False

    else:
        on_visit = visitor.on_visit
    on_leave: Callable[[cst.CSTNode], object] | None = visitor.on_leave
    if kind.on_leave is cst.CSTVisitor.on_leave:
        on_leave = _dispatch(visitor, "leave_") if _leaves(kind) else None
    return on_visit, on_leave


def walk(node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    """``node.visit(visitor)`` for a visitor that changes nothing, without layout."""
    on_visit, on_leave = _hooks(visitor)
    if on_leave is None:
        _enter(node, on_visit)
    else:
        _walk(node, on_visit, on_leave)


class _Returns(cst.CSTVisitor):
    """The values a function body returns, not those of functions nested in it."""

    def __init__(self) -> None:
        super().__init__()
        self.values: list[cst.BaseExpression] = []

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None:
            self.values.append(node.value)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False


def returns(body: cst.CSTNode) -> list[cst.BaseExpression]:
    """The values the ``return`` statements of a function's body return, in order:
    not those of functions, lambdas and classes nested in it."""
    collector = _Returns()
    walk(body, collector)
    return collector.values


Events = list[cst.CSTNode | None]
"""A walk of every node, in order: each node where the walk enters it, and None
where it leaves the node last entered and not left (its subtree is done)."""


def replay_together(events: Events, visitors: Sequence[cst.CSTVisitor]) -> None:
    """``walk(node, visitor)`` for each of ``visitors``, in one pass over the
    steps of an earlier walk of the tree (``events``), without walking it again:
    at each node the visitors are called in their order, and a visitor that
    prunes a subtree (its ``visit`` returns False) is left out below it, as its
    own walk would, and called again where the walk leaves that node. A visitor
    may read what an earlier one recorded at this node or above it, never below
    or after it."""
    calls = [_hooks(visitor) for visitor in visitors]
    if not calls:
        return
    visits = [on_visit for on_visit, _ in calls]
    leaves = [on_leave for _, on_leave in calls]
    called = [on_leave for on_leave in leaves if on_leave is not None]
    entered: list[cst.CSTNode] = []  # the nodes entered and not left, in order
    # per visitor, the node whose subtree it pruned; None while it is called
    pruned: list[cst.CSTNode | None] = [None] * len(calls)
    some = False  # whether any visitor is pruned
    for node in events:
        if node is None:  # the walk leaves the node last entered
            leaving = entered.pop()
            if some:
                some = _left_pruned(leaving, leaves, pruned)
            else:
                for on_leave in called:
                    on_leave(leaving)
            continue
        entered.append(node)
        if some:
            _entered_pruned(node, visits, pruned)
            continue
        for index, on_visit in enumerate(visits):
            if not on_visit(node):  # rare: the others go on below
                pruned[index] = node
                some = True


def _entered_pruned(
    node: cst.CSTNode,
    visits: list[Callable[[cst.CSTNode], bool]],
    pruned: list[cst.CSTNode | None],
) -> None:
    """``replay_together``'s step into ``node`` while some visitor is pruned."""
    for index, on_visit in enumerate(visits):
        if pruned[index] is None and not on_visit(node):
            pruned[index] = node


def _left_pruned(
    node: cst.CSTNode,
    leaves: list[Callable[[cst.CSTNode], object] | None],
    pruned: list[cst.CSTNode | None],
) -> bool:
    """``replay_together``'s step out of ``node`` while some visitor is pruned:
    whether one still is."""
    for index, on_leave in enumerate(leaves):
        if pruned[index] is node:
            pruned[index] = None
        if pruned[index] is None and on_leave is not None:
            on_leave(node)
    return any(p is not None for p in pruned)


def node_types(*bases: type) -> frozenset[type]:
    """``bases`` and every node type derived from them, for the walks' hot tests:
    ``type(node) in found`` answers ``isinstance(node, bases)`` without the cost of
    LibCST's abstract base classes (``ABCMeta.__instancecheck__`` on every call)."""
    found: set[type] = set()
    todo = list(bases)
    while todo:
        kind = todo.pop()
        if kind not in found:
            found.add(kind)
            todo.extend(kind.__subclasses__())
    return frozenset(found)


_ENTERED: dict[type, bool] = {}  # whether a value of the type is a node to walk


def _entered(kind: type) -> bool:
    """Whether values of ``kind`` are walked: nodes that are not layout. By type, once
    (``isinstance`` on LibCST's abstract base classes costs more than the walk)."""
    found = _ENTERED.get(kind)
    if found is None:
        found = _ENTERED[kind] = issubclass(kind, cst.CSTNode) and kind not in LAYOUT
    return found


# Each node's children, found on its first walk and read from here on the next:
# a file's facts walk it half a dozen times. By id, with the node itself, which
# keeps the id from being reused; ``forget`` starts another between files (a parse
# kept for the file's project pass keeps its own, ``listed``).
Kids = dict[int, tuple[cst.CSTNode, tuple[cst.CSTNode, ...]]]
_KIDS: Kids = {}
_OWNER: list[cst.Module] = []  # the tree whose nodes ``_KIDS`` lists


def forget(module: cst.Module | None = None, kids: Kids | None = None) -> None:
    """Drop the children found so far: ``module``'s tree is about to be walked,
    whose children an earlier walk of it found are ``kids`` (``listed``). Those of
    the same tree stay (a file's project pass walks the tree of its pass one)."""
    global _KIDS
    if module is not None and _OWNER and _OWNER[0] is module:
        return
    _KIDS = kids if kids is not None else {}
    _OWNER[:] = [module] if module is not None else []


def listed() -> Kids:
    """The children found so far, by their node's id: ``forget``'s ``kids``."""
    return _KIDS


def _kids(node: cst.CSTNode) -> tuple[cst.CSTNode, ...]:
    entered = _ENTERED
    found: list[cst.CSTNode] = []
    names = _FIELDS.get(type(node))
    if names is None:  # not ``or``: most types' tuple is empty (a name's)
        names = _fields(node)
    for name in names:
        value = getattr(node, name)
        kind = type(value)
        if kind is tuple or kind is list:
            for item in value:
                enter = entered.get(type(item))
                if enter or (enter is None and _entered(type(item))):
                    found.append(item)
        else:
            enter = entered.get(kind)
            if enter or (enter is None and _entered(kind)):
                found.append(value)
    kids = tuple(found)
    _KIDS[id(node)] = (node, kids)
    return kids


def _walk(
    node: cst.CSTNode,
    on_visit: Callable[[cst.CSTNode], bool],
    on_leave: Callable[[cst.CSTNode], object],
) -> None:
    if on_visit(node):
        known = _KIDS.get(id(node))
        for child in known[1] if known is not None else _kids(node):
            _walk(child, on_visit, on_leave)
    on_leave(node)


def _enter(node: cst.CSTNode, on_visit: Callable[[cst.CSTNode], bool]) -> None:
    """``_walk`` for a visitor that does nothing on leaving a node."""
    if on_visit(node):
        known = _KIDS.get(id(node))
        for child in known[1] if known is not None else _kids(node):
            _enter(child, on_visit)


def replay_batched(sites: Sites, visitors: Iterable[cst.BatchableCSTVisitor]) -> None:
    """``cst.visit_batched`` for visitors that change nothing, from what an earlier
    walk recorded (``sites``, of every node type the visitors act on): each
    visitor's ``visit_<Type>`` and ``leave_<Type>``, no pruning, without walking
    the tree again."""
    on_visit, on_leave = _batched(visitors)
    for node, entering in sites:
        if entering:
            on_visit(node)
        else:
            on_leave(node)


def _batched(
    visitors: Iterable[cst.BatchableCSTVisitor],
) -> tuple[Callable[[cst.CSTNode], bool], Callable[[cst.CSTNode], None]]:
    """The ``on_visit`` and ``on_leave`` of a batch: each visitor's methods for a
    node's type, looked up once per type."""
    visits: dict[str, list[_Method]] = {}
    leaves: dict[str, list[_Method]] = {}
    for visitor in visitors:
        for name, method in visitor.get_visitors().items():
            prefix, _, kind = name.partition("_")
            table = visits if prefix == "visit" else leaves
            table.setdefault(kind, []).append(method)
    by_type: dict[type, tuple[tuple[_Method, ...], tuple[_Method, ...]]] = {}
    empty: tuple[_Method, ...] = ()

    def methods(node: cst.CSTNode) -> tuple[tuple[_Method, ...], tuple[_Method, ...]]:
        kind = type(node)
        found = by_type.get(kind)
        if found is None:
            name = kind.__name__
            found = by_type[kind] = (
                tuple(visits.get(name, empty)),
                tuple(leaves.get(name, empty)),
            )
        return found

    def on_visit(node: cst.CSTNode) -> bool:
        for method in methods(node)[0]:
            method(node)
        return True

    def on_leave(node: cst.CSTNode) -> None:
        for method in methods(node)[1]:
            method(node)

    return on_visit, on_leave


__all__ = [
    "LAYOUT",
    "Events",
    "Kids",
    "Sites",
    "Subscription",
    "children",
    "covers",
    "descendants",
    "forget",
    "joined",
    "left",
    "listed",
    "node_types",
    "parents",
    "replay",
    "replay_batched",
    "replay_together",
    "returns",
    "subscribed",
    "visited",
    "walk",
]
