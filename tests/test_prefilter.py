"""The substring test in front of the candidate pattern never rules out a file
the pattern would take."""

from __future__ import annotations

import pytest

from graphlint import engine
from tests.conftest import FIXTURES

SAMPLES = [
    "with torch.cuda.graph(g):",
    "from torch.cuda import graph",
    "with graph(g):",
    "g.capture_begin()",
    "torch.cuda.make_graphed_callables(m, (x,))",
    "@graphlint.capture_region",
    'torch.compile(m, mode="reduce-overhead")',
    "torch.compile(m, mode='max-autotune')",
    'options={"triton.cudagraphs": True}',
    'backend="cudagraphs"',
    "print('nothing here')",
    "graph = build()",
]


@pytest.mark.parametrize(
    "text",
    [
        *SAMPLES,
        *(p.read_text(encoding="utf-8") for p in sorted(FIXTURES.rglob("*.py"))),
    ],
)
def test_prefilter_agrees_with_the_pattern(text: str) -> None:
    assert engine._candidate(text) == bool(engine._CANDIDATE.search(text))
