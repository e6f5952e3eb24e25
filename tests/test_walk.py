"""The read-only traversal visits what LibCST's own does, in the same order, minus
the layout nodes no visitor of graphlint's looks at; positions are LibCST's for every
node that can be asked about."""

from __future__ import annotations

import inspect
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

import graphlint.facts.flow
import graphlint.facts.regions
import graphlint.facts.scopes
import graphlint.facts.setup
import graphlint.facts.state
from graphlint.facts.positions import UNASKED, positions_of
from graphlint.facts.regions import FINDER_SITES, RegionFinder
from graphlint.facts.scopes import ScopeBuilder
from graphlint.facts.walk import (
    LAYOUT,
    joined,
    replay,
    replay_batched,
    replay_together,
    subscribed,
    walk,
)
from graphlint.rule import rule_sites, tree_rules
from tests.conftest import FIXTURES

FILES = sorted(FIXTURES.rglob("*.py"))


class Recorder(cst.CSTVisitor):
    """Every node entered and left; does not enter lambdas (pruning)."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[tuple[str, cst.CSTNode]] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.events.append(("visit", node))
        return not isinstance(node, cst.Lambda)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.events.append(("leave", original_node))


class Batched(cst.BatchableCSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.events: list[tuple[str, cst.CSTNode]] = []

    def visit_Call(self, node: cst.Call) -> None:
        self.events.append(("visit", node))

    def leave_Name(self, original_node: cst.Name) -> None:
        self.events.append(("leave", original_node))


def parse(path: Path) -> cst.Module:
    return cst.parse_module(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_walk_visits_as_libcst_does_without_layout(path: Path) -> None:
    module = parse(path)
    theirs, ours = Recorder(), Recorder()
    module.visit(theirs)
    walk(module, ours)
    expected = [(e, n) for e, n in theirs.events if type(n) not in LAYOUT]
    assert [(e, id(n)) for e, n in ours.events] == [(e, id(n)) for e, n in expected]


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_a_batch_replayed_from_the_scope_walk_sees_what_visit_batched_shows(
    path: Path,
) -> None:
    """The rules' walk is replayed from the sites the scope walk recorded for them
    (``replay_batched``): each method is called where LibCST's ``visit_batched``
    calls it, in the same order."""
    module = parse(path)
    theirs, ours = Batched(), Batched()
    cst.visit_batched(module, [theirs])
    scopes = ScopeBuilder(None, sites=joined(FINDER_SITES, subscribed(Batched)))
    walk(module, scopes)
    replay_batched(scopes.sites, [ours])
    assert [(e, id(n)) for e, n in ours.events] == [
        (e, id(n)) for e, n in theirs.events
    ]


def test_the_scope_walk_records_every_node_a_rule_acts_on() -> None:
    """Each ``visit_``/``leave_`` method of each rule names a node type the scope
    walk records for the rules' replay (``rule_sites``)."""
    entered, left = rule_sites()
    for rule in tree_rules():
        for name in dir(rule):
            prefix, _, kind = name.partition("_")
            if prefix in ("visit", "leave") and not getattr(
                getattr(rule, name), "_is_no_op", False
            ):
                assert getattr(cst, kind) in (entered if prefix == "visit" else left)


class Shared(cst.CSTVisitor):
    """Records each visit and leave in a log it shares with the other visitors of
    one walk, under its name; does not enter what ``prune`` names."""

    def __init__(self, name: str, prune: type, log: list[tuple[str, str, int]]):
        super().__init__()
        self.name, self.prune, self.log = name, prune, log

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.log.append((self.name, "visit", id(node)))
        return not isinstance(node, self.prune)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.log.append((self.name, "leave", id(original_node)))


@pytest.mark.parametrize("path", FILES[:40], ids=lambda p: str(p.relative_to(FIXTURES)))
def test_a_replay_of_the_scope_walk_calls_each_visitor_as_its_own_walk(
    path: Path,
) -> None:
    """Each visitor replayed from the scope walk's steps sees what its own walk
    shows it, pruning included (a pruned visitor is called again where the walk
    leaves the node it pruned at); at a node, the visitors come in their order,
    so a later one may read what an earlier one recorded there (flow reads
    state's writes)."""
    module = parse(path)
    prunes = (cst.Lambda, cst.Call, cst.Import, cst.Module)
    alone: dict[str, list[tuple[str, str, int]]] = {}
    for name, prune in zip("abcd", prunes, strict=True):
        log: list[tuple[str, str, int]] = []
        walk(module, Shared(name, prune, log))
        alone[name] = log
    scopes = ScopeBuilder(None)
    walk(module, scopes)
    together: list[tuple[str, str, int]] = []
    replay_together(
        scopes.events,
        [Shared(n, p, together) for n, p in zip("abcd", prunes, strict=True)],
    )
    for name in "abcd":
        assert [e for e in together if e[0] == name] == alone[name]
    # the visitors at each node, in the order of their visits: a, b, c, then d
    first: dict[int, list[str]] = {}
    for name, event, node in together:
        if event == "visit":
            first.setdefault(node, []).append(name)
    assert all(names == sorted(names) for names in first.values())


def test_a_visitor_given_twice_is_replayed_twice() -> None:
    """Each place in the list is a visitor of its own: a prune of the first is
    not the second's (they are told apart by place, not by their methods)."""
    module = cst.parse_module("def f():\n    g(1)\nx = 2\n")
    alone: list[tuple[str, str, int]] = []
    walk(module, Shared("v", cst.FunctionDef, alone))
    scopes = ScopeBuilder(None)
    walk(module, scopes)
    twice: list[tuple[str, str, int]] = []
    visitor = Shared("v", cst.FunctionDef, twice)
    replay_together(scopes.events, [visitor, visitor])
    assert twice == [event for event in alone for _ in range(2)]


def test_dispatch_by_type_names_prunes_on_false() -> None:
    class Names(cst.CSTVisitor):
        def __init__(self) -> None:
            super().__init__()
            self.names: list[str] = []

        def visit_Name(self, node: cst.Name) -> None:
            self.names.append(node.value)

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

    names = Names()
    walk(cst.parse_module("f(a, lambda b: c)[d]\n"), names)
    assert names.names == ["f", "a", "d"]


def _visitor_classes() -> list[type]:
    modules = [
        graphlint.facts.flow,
        graphlint.facts.regions,
        graphlint.facts.scopes,
        graphlint.facts.setup,
        graphlint.facts.state,
    ]
    found: list[type] = list(tree_rules())
    for module in modules:
        found.extend(
            c
            for _, c in inspect.getmembers(module, inspect.isclass)
            if issubclass(c, cst.CSTVisitor) and c.__module__ == module.__name__
        )
    return found


@pytest.mark.parametrize("cls", _visitor_classes(), ids=lambda c: c.__name__)
def test_visitors_name_node_types_the_walk_enters(cls: type) -> None:
    """A ``visit_X``/``leave_X`` for a layout type, or an attribute hook
    (``visit_Call_func``), would never be called by the walk."""
    layout = {t.__name__ for t in LAYOUT}
    ours = {
        name
        for c in cls.__mro__
        if c.__module__.startswith("graphlint.")
        for name in vars(c)
    }
    hooks = [n for n in ours if n.startswith(("visit_", "leave_"))]
    assert hooks or "on_visit" in ours
    for name in hooks:
        _, _, kind = name.partition("_")
        if kind == "patched":  # RegionFinder's helper, not a hook
            continue
        node_type = getattr(cst, kind, None)
        assert isinstance(node_type, type), f"{cls.__name__}.{name}: no node {kind}"
        assert kind not in layout, f"{cls.__name__}.{name}: layout is never walked"


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_positions_are_libcst_s_for_every_node_that_can_be_asked_about(
    path: Path,
) -> None:
    module = parse(path)
    theirs = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    ours = positions_of(module)
    asked = {n: r for n, r in theirs.items() if type(n) not in UNASKED}
    assert asked == {n: r for n, r in ours.items() if type(n) not in UNASKED}


class Sited(cst.CSTVisitor):
    """Asks about a few node types, entering and leaving, as the region finder
    does."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[tuple[str, cst.CSTNode]] = []

    def visit_Call(self, node: cst.Call) -> None:
        self.events.append(("call", node))

    def visit_With(self, node: cst.With) -> None:
        self.events.append(("with", node))

    def leave_With(self, original_node: cst.With) -> None:
        self.events.append(("/with", original_node))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.events.append(("def", node))

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.events.append(("/def", original_node))

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self.events.append(("block", node))


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_a_replay_of_the_scope_walk_s_sites_is_the_walk(path: Path) -> None:
    """A visitor that asks about a few node types sees, from what the scope walk
    recorded, what its own walk shows it, in the same order."""
    module = parse(path)
    walked = Sited()
    walk(module, walked)
    scopes = ScopeBuilder(None, sites=subscribed(Sited))
    walk(module, scopes)
    replayed = Sited()
    replay(scopes.sites, replayed)
    assert replayed.events == walked.events


def test_the_region_finder_is_replayed_at_every_node_it_asks_about() -> None:
    """Each ``visit_``/``leave_`` method of the finder names a node type the scope
    walk records for it."""
    entered, left = FINDER_SITES
    names = {f"visit_{t.__name__}" for t in entered}
    names |= {f"leave_{t.__name__}" for t in left}
    own = {name for name in vars(RegionFinder) if name.startswith(("visit_", "leave_"))}
    assert own == names
