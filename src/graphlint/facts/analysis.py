"""A file's facts (``FileFacts``) and the walks that compute them (``analyse``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import CodeRange

from graphlint.facts.flow import Flow
from graphlint.facts.reaching import Reaching
from graphlint.facts.region import Region
from graphlint.facts.regions import (
    FINDER_SITES,
    Assignment,
    find_regions,
    typed_by_callers,
)
from graphlint.facts.scopes import ScopeBuilder
from graphlint.facts.setup import CaptureSetup
from graphlint.facts.state import HostState
from graphlint.facts.values import Value, Values
from graphlint.facts.walk import (
    Subscription,
    covers,
    joined,
    replay,
    replay_together,
    subscribed,
    walk,
)

_NONE: Subscription = (frozenset(), frozenset())
# what the scope walk records for the analysis itself: the region finder's and the
# capture set-up's sites, which both replay
_OWN_SITES = joined(FINDER_SITES, subscribed(CaptureSetup))


@dataclass(frozen=True)
class TreeFacts:
    """What a file's tree and package decide, whatever its regions: its scopes
    (with the events the region finder replays) and the bindings that reach each
    read. Pass one's serve the same tree's project pass (``engine._PARSED``)."""

    module: cst.Module
    package: str | None
    scopes: ScopeBuilder
    reaching: Reaching

    @classmethod
    def of(
        cls, module: cst.Module, package: str | None, sites: Subscription = _NONE
    ) -> TreeFacts:
        """The facts, with the sites of the analysis and of ``sites``."""
        scopes = ScopeBuilder(package, sites=joined(_OWN_SITES, sites))
        walk(module, scopes)
        return cls(module, package, scopes, Reaching(module, scopes.scope_of))


@dataclass(frozen=True)
class FileFacts:
    """What rules may ask about a file; see ``graphlint.rule.Rule``."""

    values: Values
    regions: Assignment  # every node under capture -> its region
    state: HostState
    setup: CaptureSetup
    flow: Flow
    paths: Mapping[cst.FunctionDef, str]  # "Cls.method" for each function
    # graphed or compiled targets defined elsewhere: (call, target, region)
    unresolved: Sequence[tuple[cst.Call, cst.BaseExpression, Region]]
    tree: TreeFacts

    @property
    def captures(self) -> bool:
        """Whether the file captures anything (else region rules have nothing to do):
        a region, a graphed callable, or a call of a CUDA-graph-compiled callable."""
        return bool(
            self.regions.present or self.setup.graphed_calls or self.flow.compiled_calls
        )

    def all_regions(self) -> list[Region]:
        """Each region once, in source order."""
        return list(self.regions.present)

    def region_of(self, node: cst.CSTNode) -> Region | None:
        return self.regions.get(node)

    def value_of(self, expr: cst.BaseExpression) -> Value:
        return self.values.of(expr)

    def qualname(self, expr: cst.BaseExpression) -> str | None:
        return self.values.qualify(expr)


def analyse(
    module: cst.Module,
    positions: Mapping[cst.CSTNode, CodeRange],
    *,
    pragmas: Sequence[tuple[int, int]] = (),
    markers: frozenset[str] = frozenset(),
    package: str | None = None,
    external: Mapping[str, Region] | None = None,
    checks: frozenset[str] = frozenset(),
    path: str | None = None,
    declared: frozenset[str] = frozenset(),
    typed: frozenset[tuple[str, str]] = frozenset(),
    tree: TreeFacts | None = None,
    sites: Subscription = _NONE,
) -> FileFacts:
    """Compute a file's facts: one scope walk, a replay of what it saw for the
    region finder and one for the capture set-up, then one replay of all its steps
    for each node's region, host state and flow;
    ``declared``: the functions the configuration names as capture roots;
    ``typed``: what the calls in other files pass the functions that capture
    (``Job.typed``); ``tree``: the facts of the tree an earlier analysis of it
    computed; ``sites``: the node types whose nodes a later replay of the file's
    walk needs (the rules', ``FileFacts.tree.scopes.sites``)."""
    if (
        tree is None
        or tree.module is not module
        or tree.package != package
        or not covers(tree.scopes.recorded, joined(_OWN_SITES, sites))
    ):
        tree = TreeFacts.of(module, package, sites)
    scopes = tree.scopes
    values = Values(scopes.names, scopes.scope_of, scopes.classes, scopes.class_infos)
    found = find_regions(
        module,
        scopes,
        values,
        positions,
        pragmas,
        markers,
        external,
        checks,
        declared,
    )
    regions = found.regions
    # what the calls of the file (and of the project) pass the functions that
    # capture: their code's inputs
    passed = typed_by_callers(regions.present, scopes, values)
    given: dict[str, set[str]] = {}
    for where, mark in typed:
        given.setdefault(where, set()).add(mark)
    for function, qualified in scopes.paths.items() if given else ():
        if qualified in given:
            passed[function] = passed.get(function, frozenset()) | given[qualified]
    for node, marks in passed.items():
        known = values.tensor_params.get(node, frozenset())
        values.tensor_params[node] = known | marks
    reaching = tree.reaching
    values.reaching = reaching
    values.reset()  # parameters of captured callables are now known; reads, flows
    state = HostState(module, values, regions, positions, reaching)
    setup = CaptureSetup(
        values, state, positions, regions, graphed_calls=found.graphed_calls
    )
    defined = {function.name.value for function in scopes.paths}
    flow = Flow(module, values, state, found, setup, positions, path, defined=defined)
    # set-up asks only about the nodes the scope walk recorded for it, and nothing
    # the replay below finds: it replays them first. Then the scope walk's steps
    # replayed once for the three (the file is walked once):
    # each reads the region the assignment decided at a node or above it, flow
    # what state recorded there (its writes) and what set-up found (side-stream
    # blocks). A file that captures nothing needs none of them; calls of
    # compiled callables need state and flow, graphed callables set-up.
    if regions.present or found.graphed_calls:
        replay(scopes.sites, setup)
    timeline = bool(regions.present or found.compiles)
    walkers = [
        *([regions] if regions.needs_walk() else []),
        *([state, flow] if timeline else []),
    ]
    replay_together(scopes.events, walkers)
    return FileFacts(
        values, regions, state, setup, flow, scopes.paths, found.unresolved, tree
    )


__all__ = [
    "CaptureSetup",
    "FileFacts",
    "Flow",
    "HostState",
    "Region",
    "TreeFacts",
    "analyse",
]
