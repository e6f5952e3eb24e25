"""Fixes of the capture set-up rules (GL703, GL705, GL706, GL708): the edit each
finding carries, that the fixed source parses and no longer has the finding nor any
other new one, and the shapes that get no edit."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from graphlint.diagnostics import Applicability, Diagnostic
from graphlint.engine import lint_source
from tests.test_fixes import apply


def _found(source: str, code: str) -> list[Diagnostic]:
    return [d for d in lint_source(source) if d.code == code]


def fixed(source: str, code: str, applicability: Applicability) -> str:
    """``source`` with the fix of its one ``code`` finding applied, checked: it
    parses, the finding is gone (so applying fixes again changes nothing) and no
    other code appears."""
    (found,) = _found(source, code)
    assert found.edits
    assert found.applicability is applicability
    after = apply(source, found.edits)
    cst.parse_module(after)
    compile(after, "<fixed>", "exec")
    codes = {d.code for d in lint_source(after)}
    assert code not in codes
    assert codes <= {d.code for d in lint_source(source)}
    return after


def no_fix(source: str, code: str) -> None:
    found = _found(source, code)
    assert found
    assert all(d.edits == () and d.applicability is None for d in found)


# -- GL706: autocast's cast cache off around make_graphed_callables ------------------

AUTOCAST = """\
import torch

model = torch.nn.Linear(8, 8).cuda()
x = torch.randn(4, 8, device="cuda", requires_grad=True)
with {autocast}:
    graphed = torch.cuda.make_graphed_callables(model, (x,))
"""


@pytest.mark.parametrize(
    ("autocast", "after"),
    [
        (
            'torch.autocast("cuda", dtype=torch.bfloat16)',
            'torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False)',
        ),
        (
            'torch.autocast("cuda", cache_enabled=True)',
            'torch.autocast("cuda", cache_enabled=False)',
        ),
        (
            'torch.amp.autocast("cuda", cache_enabled=None, dtype=torch.float16)',
            'torch.amp.autocast("cuda", cache_enabled=False, dtype=torch.float16)',
        ),
        ("torch.cuda.amp.autocast()", "torch.cuda.amp.autocast(cache_enabled=False)"),
        (
            'torch.autocast(\n    "cuda",\n    dtype=torch.bfloat16,\n)',
            'torch.autocast(\n    "cuda",\n    dtype=torch.bfloat16,\n'
            "    cache_enabled=False,\n)",
        ),
        (
            'torch.autocast(\n    "cuda",\n)',
            'torch.autocast(\n    "cuda",\n    cache_enabled=False,\n)',
        ),
    ],
)
def test_gl706_turns_the_cast_cache_off(autocast: str, after: str) -> None:
    source = AUTOCAST.format(autocast=autocast)
    assert fixed(source, "GL706", Applicability.SAFE) == source.replace(autocast, after)


def test_gl706_fixes_the_block_of_a_function() -> None:
    source = textwrap.dedent("""\
        import torch


        def build(layer, sample):
            with torch.no_grad(), torch.autocast("cuda"):
                return torch.cuda.make_graphed_callables(layer, (sample,))
        """)
    after = fixed(source, "GL706", Applicability.SAFE)
    assert 'torch.no_grad(), torch.autocast("cuda", cache_enabled=False):' in after


@pytest.mark.parametrize(
    "autocast",
    [
        'torch.autocast("cuda", cache_enabled=cache)',  # the project's setting
        'torch.autocast("cuda", **options)',
        'torch.autocast("cuda", torch.bfloat16, True, True)',  # by position
        "torch.cuda.amp.autocast(True, torch.float16, True)",
        'torch.autocast(\n    "cuda",\n    dtype=torch.bfloat16\n)',  # no layout
    ],
)
def test_gl706_offers_no_edit_it_cannot_be_sure_of(autocast: str) -> None:
    head = "cache = True\noptions = {}\n"
    no_fix(head + AUTOCAST.format(autocast=autocast), "GL706")
