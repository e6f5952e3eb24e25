"""What a rule sees (``Rule.sees``): the traversal calls a region-code rule's
``visit_*``/``leave_*`` methods only for nodes of region code, a file rule's and a
``@file_wide`` method's for every node."""

from __future__ import annotations

import textwrap
from typing import ClassVar

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from graphlint.facts.analysis import FileFacts, analyse
from graphlint.facts.walk import descendants, joined, replay_batched, subscribed
from graphlint.rule import Rule, RuleContext, Scope, file_wide, replay_rules, tree_rules

SOURCE = """\
import torch

def outside(x):
    if x:
        return print(x)

def train(g, x, opt):
    print("set-up")
    with torch.cuda.graph(g):
        y = torch.relu(x)
        if y:
            print(y)
    g.capture_begin()
    while y:
        z = y.sum()
    g.capture_end()
    opt.step()
"""


class _Probe(Rule):
    """Records the nodes its methods are called for."""

    abstract = True

    def __init__(self, context: RuleContext) -> None:
        super().__init__(context)
        self.seen: list[cst.CSTNode] = []
        self.left: list[cst.CSTNode] = []

    def visit_Call(self, node: cst.Call) -> None:
        self.seen.append(node)

    def leave_Call(self, original_node: cst.Call) -> None:
        self.left.append(original_node)


class _InRegions(_Probe):
    """Sees region code (the default)."""

    abstract = True

    def __init__(self, context: RuleContext) -> None:
        super().__init__(context)
        self.statements: list[cst.CSTNode] = []

    @file_wide
    def visit_While(self, node: cst.While) -> None:
        self.statements.append(node)


class _InFile(_Probe):
    """Sees the whole file."""

    abstract = True
    sees = Scope.FILE


def _walked(*probes: type[_Probe]) -> tuple[cst.Module, FileFacts, list[_Probe]]:
    module = cst.parse_module(textwrap.dedent(SOURCE))
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    facts = analyse(module, positions, sites=joined(*map(subscribed, probes)))
    context = RuleContext("<test>", facts, positions, {})
    rules = [probe(context) for probe in probes]
    replay_batched(facts.tree.scopes.sites, rules)
    return module, facts, rules


def _of(module: cst.Module, kind: type[cst.CSTNode]) -> list[cst.CSTNode]:
    return [node for node in descendants(module) if isinstance(node, kind)]


def test_a_region_code_rule_is_called_for_region_code_only() -> None:
    module, facts, [rule] = _walked(_InRegions)
    calls = _of(module, cst.Call)
    inside = [call for call in calls if facts.region_of(call) is not None]
    assert rule.seen, "the probe saw nothing: no region found"
    assert all(facts.region_of(node) is not None for node in rule.seen)
    assert rule.seen == inside  # every call of region code, in order
    assert rule.left == inside
    # not the set-up calls, nor those of ``outside``, nor the capture's own
    code = cst.Module([]).code_for_node
    assert [code(node) for node in rule.seen] == [
        "torch.relu(x)",
        "print(y)",
        "y.sum()",
    ]
    assert len(calls) == 9


def test_a_file_rule_sees_every_node() -> None:
    module, _, [rule] = _walked(_InFile)
    calls = _of(module, cst.Call)
    assert rule.seen == calls
    assert rule.left == calls


def test_a_file_wide_method_of_a_region_code_rule_sees_every_node() -> None:
    module, facts, [rule] = _walked(_InRegions)
    whiles = _of(module, cst.While)
    assert isinstance(rule, _InRegions)
    assert rule.statements == whiles
    # the ``while`` between capture_begin() and capture_end(): its test is region
    # code, the statement is not, which is why such a method sees the file
    [loop] = whiles
    assert isinstance(loop, cst.While)
    assert facts.region_of(loop) is None
    assert facts.region_of(loop.test) is not None


def test_rules_of_both_scopes_in_one_traversal() -> None:
    module, _, [inside, everywhere] = _walked(_InRegions, _InFile)
    assert len(inside.seen) < len(everywhere.seen) == len(_of(module, cst.Call))


# The rules that look at code around and outside regions: set-up, stores and
# backwards between replays, schedulers, the options of an optimizer. A rule moved
# from one list to the other changes what it is shown: say why in its class.
FILE_RULES = {
    "GL301",
    "GL302",
    "GL303",
    "GL304",
    "GL407",
    "GL701",
    "GL702",
    "GL703",
    "GL704",
    "GL705",
    "GL706",
    "GL707",
}


def test_each_rule_declares_what_it_sees() -> None:
    scopes = {rule.code: rule.sees for rule in tree_rules()}
    assert {code for code, scope in scopes.items() if scope is Scope.FILE} == (
        FILE_RULES
    )


GUARDED = """\
import torch

def train(g, x, step):
    s = torch.cuda.Stream()
    for step in range(10):
        if step == 3:
            with torch.cuda.graph(g):
                y = torch.relu(x)
                if step == 0:
                    print(y)
"""


class _Settled(_Probe):
    """Sees the region code a capture records (the default), with its region."""

    abstract = True

    def __init__(self, context: RuleContext) -> None:
        super().__init__(context)
        self.regions: list[object] = []

    def visit_Call(self, node: cst.Call) -> None:
        super().visit_Call(node)
        self.regions.append(self.here)


class _AllRegionCode(_Settled):
    """Sees all region code, recorded at capture or not."""

    abstract = True
    sees = Scope.REGION_CODE


def test_a_region_rule_is_handed_its_region_and_not_called_behind_a_false_test() -> (
    None
):
    module = cst.parse_module(GUARDED)
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    probes = (_Settled, _AllRegionCode)
    facts = analyse(module, positions, sites=joined(*map(subscribed, probes)))
    context = RuleContext("<test>", facts, positions, {})
    settled, everything = _Settled(context), _AllRegionCode(context)
    replay_batched(facts.tree.scopes.sites, [settled, everything])
    code = cst.Module([]).code_for_node
    # ``print(y)`` is region code, behind ``step == 0``: false at the capture made at
    # ``step == 3``, so Rule.region() is None there and the call is not made
    [printed] = [n for n in everything.seen if code(n) == "print(y)"]
    assert facts.region_of(printed) is not None
    assert settled.region(printed) is None
    assert printed not in settled.seen
    assert [code(n) for n in settled.seen] == ["torch.relu(x)"]
    # each call made is handed the region Rule.region() gives
    assert settled.regions == [settled.region(n) for n in settled.seen]
    assert everything.regions == [facts.region_of(n) for n in everything.seen]
    assert all(region is not None for region in settled.regions)


def test_the_default_scope_is_the_settled_region() -> None:
    assert Rule.sees is Scope.REGION
    scopes = {rule.sees for rule in tree_rules()}
    assert scopes <= set(Scope)


COMPILED = """\
import torch

@torch.compile(mode="reduce-overhead")
def step(x, flag):
    y = x.sum()
    if flag:
        print(y)
    return y.item()
"""


class _Logged(Rule):
    """Logs each call of its methods, in the order of all the rules' calls."""

    abstract = True
    log: ClassVar[list[tuple[str, str, cst.CSTNode, object]]] = []

    def _logged(self, how: str, node: cst.CSTNode) -> None:
        self.log.append((type(self).__name__, how, node, getattr(self, "here", None)))

    def visit_Call(self, node: cst.Call) -> None:
        self._logged("visit", node)

    def leave_Call(self, original_node: cst.Call) -> None:
        self._logged("leave", original_node)

    @file_wide
    def visit_If(self, node: cst.If) -> None:
        self._logged("if", node)


class _LoggedCaptured(_Logged):
    abstract = True
    sees = Scope.CAPTURED


class _LoggedCode(_Logged):
    abstract = True
    sees = Scope.REGION_CODE


class _LoggedFile(_Logged):
    abstract = True
    sees = Scope.FILE


@pytest.mark.parametrize("source", [SOURCE, GUARDED, COMPILED])
def test_the_rules_walk_calls_what_each_rules_gate_would(source: str) -> None:
    """``replay_rules`` asks a node's region once for all the region methods of its
    type: it calls what ``replay_batched`` of the rules' own gated methods calls, in
    the same order, with the same regions."""
    probes = (_Logged, _LoggedCaptured, _LoggedCode, _LoggedFile)
    module = cst.parse_module(source)
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    facts = analyse(module, positions, sites=joined(*map(subscribed, probes)))
    logs = []
    for both in (False, True):
        _Logged.log = []
        context = RuleContext("<test>", facts, positions, {})
        rules: list[Rule] = [probe(context) for probe in probes]
        if both:
            replay_rules(facts.tree.scopes.sites, rules, facts)
        else:
            replay_batched(facts.tree.scopes.sites, rules)
        logs.append(_Logged.log)
    gated, batched = logs
    assert gated == batched
    assert {name for name, *_ in gated} == {p.__name__ for p in probes}
