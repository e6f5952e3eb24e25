"""The indexes of host state answer what the scans they replace answered."""

from __future__ import annotations

import itertools
import textwrap

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from graphlint.diagnostics import RegionKind
from graphlint.facts.analysis import analyse
from graphlint.facts.state import Key, loose, same, within

OWNER, OTHER = object(), object()  # two scopes
NAMES: list[Key] = [("name", OWNER, "d"), ("name", OTHER, "d"), ("self", "C", "d")]


def locations() -> list[Key]:
    """Names, and attributes and entries (known and unknown) of them, two deep."""
    found = list(NAMES)
    for _ in range(2):
        found += [
            step
            for base in found
            for step in (
                ("attr", base, "x"),
                ("item", base, "'a'"),
                ("item", base, "*"),
            )
        ]
    return found


def test_same_locations_have_the_same_loose_form() -> None:
    keys = locations()
    for a, b in itertools.product(keys, repeat=2):
        if same(a, b):
            assert loose(a) == loose(b), (a, b)


def test_readers_as_the_scan() -> None:
    source = textwrap.dedent(
        """\
        import torch

        state = {"a": torch.zeros(2), "b": torch.zeros(2)}
        x = torch.zeros(2)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = state["a"] * 2
        h = torch.cuda.CUDAGraph()
        with torch.cuda.graph(h):
            z = x + state[k]
        with torch.cuda.graph(g):
            w = x.t
        state["a"] = torch.ones(2)
        state["b"] = torch.ones(2)
        state = {}
        x = torch.ones(2)
        """
    )
    module = cst.parse_module(source)
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    state = analyse(module, positions).state
    kinds = frozenset({RegionKind.MANUAL})
    assert len(state.region_reads) == 3
    for key in state.writes:
        scan = [
            region
            for region in state.region_reads
            if any(within(read, key) for read in state.inputs(region))
        ]
        assert state.readers(key, kinds) == scan, key
    assert any(state.readers(key, kinds) for key in state.writes)
