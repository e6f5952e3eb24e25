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


# -- GL708: non-reentrant checkpointing in graphed callables -------------------------

CHECKPOINT = """\
import torch
from torch.utils.checkpoint import checkpoint, checkpoint_sequential


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return {call}


x = torch.randn(4, 8, device="cuda", requires_grad=True)
block = torch.cuda.make_graphed_callables(Block().cuda(), (x,))
"""


@pytest.mark.parametrize(
    ("call", "after"),
    [
        (
            "checkpoint(self.fc, x, use_reentrant=True)",
            "checkpoint(self.fc, x, use_reentrant=False)",
        ),
        (
            "torch.utils.checkpoint.checkpoint(\n"
            "            self.fc, x, use_reentrant=True, preserve_rng_state=False\n"
            "        )",
            "torch.utils.checkpoint.checkpoint(\n"
            "            self.fc, x, use_reentrant=False, preserve_rng_state=False\n"
            "        )",
        ),
        (
            "checkpoint_sequential([self.fc], 1, x, use_reentrant=True)",
            "checkpoint_sequential([self.fc], 1, x, use_reentrant=False)",
        ),
    ],
)
def test_gl708_checkpoints_without_reentrancy(call: str, after: str) -> None:
    source = CHECKPOINT.format(call=call)
    assert fixed(source, "GL708", Applicability.UNSAFE) == source.replace(call, after)


OWN_CHECKPOINT = """\
import torch


class Checkpoint(torch.autograd.Function):
    @staticmethod
    def forward(ctx, run, x):
        ctx.run = run
        ctx.save_for_backward(x)
        with torch.no_grad():
            return run(x)

    @staticmethod
    def backward(ctx, grad):
        if not torch.autograd._is_checkpoint_valid():
            raise RuntimeError("not compatible with .grad()")
        (x,) = ctx.saved_tensors
        x = x.detach().requires_grad_()
        with torch.enable_grad():
            out = ctx.run(x)
        torch.autograd.backward(out, grad)
        return None, x.grad


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return Checkpoint.apply(self.fc, x)


x = torch.randn(4, 8, device="cuda", requires_grad=True)
block = torch.cuda.make_graphed_callables(Block().cuda(), (x,))
"""


def test_gl708_leaves_a_projects_own_checkpoint_to_its_authors() -> None:
    no_fix(OWN_CHECKPOINT, "GL708")


# -- GL705: 11 warm-up iterations before capturing DDP -------------------------------

DDP = """\
import torch
from torch.nn.parallel import DistributedDataParallel as DDP

model = DDP(torch.nn.Linear(8, 8).cuda())
x = torch.randn(4, 8, device="cuda")
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range({count}):
        model(x).sum().backward()
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    model(x).sum().backward()
"""


@pytest.mark.parametrize("count", ["3", "0x3", "( 10 )"])
def test_gl705_warms_up_for_11_iterations(count: str) -> None:
    source = DDP.format(count=count)
    after = fixed(source, "GL705", Applicability.UNSAFE)
    assert after == DDP.format(count=count.replace(count.strip("( )"), "11"))


def test_gl705_needs_a_literal_count() -> None:
    source = "steps = 3\n" + DDP.format(count="steps")
    assert not _found(source, "GL705")
