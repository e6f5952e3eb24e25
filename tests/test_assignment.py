"""Which region each node runs in is decided in the facts' shared walk, or before it
where a fact asks about a node the walk has not reached (a write's target, a
definition later in a loop): both ways must agree, and the regions known before the
walk must be those the walk finds."""

from __future__ import annotations

import random
import textwrap
from pathlib import Path

import libcst as cst
import pytest

from graphlint.comments import scan
from graphlint.diagnostics import Hop, RegionKind, RegionRef, Settled
from graphlint.facts.positions import positions_of
from graphlint.facts.region import Region
from graphlint.facts.regions import FINDER_SITES, Assignment, find_regions
from graphlint.facts.scopes import ScopeBuilder
from graphlint.facts.values import Values
from graphlint.facts.walk import descendants, forget, walk
from tests.conftest import FIXTURES

FILES = sorted(FIXTURES.rglob("*.py"))


def assignment(
    module: cst.Module, source: str, external: dict[str, Region] | None = None
) -> Assignment:
    """The file's regions as ``facts.analysis.analyse`` finds them, before its
    shared walk."""
    scopes = ScopeBuilder(None, sites=FINDER_SITES)
    walk(module, scopes)
    values = Values(scopes.names, scopes.scope_of, scopes.classes, scopes.class_infos)
    positions = positions_of(module)
    found = find_regions(
        module, scopes, values, positions, scan(source).pragmas, frozenset(), external
    )
    return found.regions


def check(source: str, external: dict[str, Region] | None = None) -> Assignment:
    """Decides every node both ways, and checks that they agree: the walk's, and
    node by node in a shuffled order before any walk. Returns the walked one."""
    module = cst.parse_module(source)
    forget()
    walked = assignment(module, source, external)
    walk(module, walked)  # as the first visitor of the shared walk
    nodes = list(descendants(module))
    asked = assignment(module, source, external)
    shuffled = list(nodes)
    random.Random(0).shuffle(shuffled)
    before = {node: asked.get(node) for node in shuffled}
    assert before == {node: walked.get(node) for node in shuffled}
    assert asked.present == walked.present
    assert frozenset(walked.present) == frozenset(walked.values())
    assert list(walked) == [node for node in nodes if node in walked]  # walk order
    assert list(asked) == list(walked)  # iterated before the walk: it walks
    return walked


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_a_node_asked_before_the_walk_runs_where_the_walk_puts_it(path: Path) -> None:
    check(path.read_text(encoding="utf-8"))


def test_guarded_blocks_spans_and_marked_lines_agree() -> None:
    """What keeps a node out of a region (a capture check's branch) and the regions
    made of statements (``capture_begin()`` spans, marked lines) rather than one
    root, each asked from a node deep inside, first."""
    source = textwrap.dedent(
        """\
        import torch

        def step(g, x):
            g.capture_begin()
            for i in range(3):
                if not torch.cuda.is_current_stream_capturing():
                    y = x.item()
                z = x * i
            g.capture_end()

        def other(x):
            # graphlint: capture-begin
            w = x + 1
            if w.sum() > 0:
                v = [w for _ in range(2)]
            # graphlint: capture-end
            return w
        """
    )
    walked = check(source)
    assert {region.kind for region in walked.present} == {
        RegionKind.MANUAL,
        RegionKind.MARKED,
    }
    names = {
        node.value: region.kind
        for node, region in walked.items()
        if isinstance(node, cst.Name) and node.value in "yzwv"
    }
    assert names == {
        "z": RegionKind.MANUAL,
        "w": RegionKind.MARKED,
        "v": RegionKind.MARKED,
    }


def test_a_function_reached_from_another_file_is_a_region() -> None:
    """An external region (pass two) roots at the function it reaches; a test the
    calls from there settle keeps its branch out."""
    source = textwrap.dedent(
        """\
        def helper(x, grid=None):
            if grid is None:
                return x.item()
            return x * 2
        """
    )
    hop = Hop("train.py", 9, 8, "helper()")
    settled = (Settled("grid", none=False),)  # every call passes a grid
    region = Region(
        RegionRef(RegionKind.MANUAL, 8, "torch.cuda.graph", via=(hop,), settled=settled)
    )
    walked = check(source, {"helper": region})
    assert {r.label for r in walked.present} == {"torch.cuda.graph"}
    under = {n.value for n in walked if isinstance(n, cst.Name)}
    assert "item" not in under  # the branch for no grid is kept out
    assert "x" in under


def test_nothing_under_capture_needs_no_walk() -> None:
    module = cst.parse_module("def f(x):\n    return x.item()\n")
    forget()
    found = assignment(module, "def f(x):\n    return x.item()\n")
    assert not found.needs_walk()
    assert not found.present
    assert dict(found) == {}


def test_a_node_of_another_tree_runs_nowhere() -> None:
    source = "import torch\nwith torch.cuda.graph(g):\n    y = x.sum()\n"
    walked = check(source)
    stranger = cst.parse_expression("x.sum()")
    assert walked.get(stranger) is None
    assert stranger not in walked
