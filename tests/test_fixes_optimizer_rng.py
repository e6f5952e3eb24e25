"""Fixes of the optimizer hyper-parameter and RNG rules (GL407): the exact edit each
finding carries, that the edited file parses and no longer reports the finding (nor
anything it did not report before), and the shapes that get no edit."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from graphlint.diagnostics import Applicability, Diagnostic
from graphlint.engine import lint_source
from tests.conftest import FIXTURES
from tests.test_fixes import apply

GL407_FILE = """\
import torch
{imports}
model = torch.nn.Linear(8, 8).cuda()
{build}
sched = {scheduler}
x = torch.randn(4, 8, device="cuda")
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    model(x).sum().backward()
    opt.step()
for _ in range(30):
    g.replay()
    sched.step()
{after}"""
STEP_LR = "torch.optim.lr_scheduler.StepLR(opt, step_size=10)"
TENSOR = 'torch.tensor(0.01, device="cuda")'


def _gl407(
    build: str,
    *,
    imports: str = "",
    scheduler: str = STEP_LR,
    after: str = "",
) -> str:
    return GL407_FILE.format(
        imports=imports, build=build, scheduler=scheduler, after=after
    )


def _found(source: str, code: str) -> list[Diagnostic]:
    return [d for d in lint_source(source) if d.code == code]


def _fixed(source: str, code: str) -> str:
    """``source`` with the fix of its first ``code`` finding applied, checked: it
    parses, the finding is gone, and nothing is reported that was not before."""
    first = _found(source, code)[0]
    assert first.applicability is Applicability.UNSAFE
    after = apply(source, first.edits)
    cst.parse_module(after)
    before = {d.code for d in lint_source(source)}
    remaining = [d for d in lint_source(after) if d.code == code]
    assert len(remaining) < len(_found(source, code))
    assert {d.code for d in lint_source(after)} <= before
    return after


# -- GL407 -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("build", "fixed"),
    [
        (
            "opt = torch.optim.Adam(model.parameters(), lr=0.01, capturable=True)",
            f"opt = torch.optim.Adam(model.parameters(), lr={TENSOR}, capturable=True)",
        ),
        (
            "opt = torch.optim.Adam(model.parameters(), lr=0.01)",
            f"opt = torch.optim.Adam(model.parameters(), lr={TENSOR}, capturable=True)",
        ),
        (
            "opt = torch.optim.Adam(model.parameters(), 0.01)",
            f"opt = torch.optim.Adam(model.parameters(), {TENSOR}, capturable=True)",
        ),
        (
            "opt = torch.optim.AdamW(model.parameters(), lr=0.01, capturable=False)",
            f"opt = torch.optim.AdamW(model.parameters(), lr={TENSOR}, capturable=True)",
        ),
        (
            "opt = torch.optim.AdamW(\n    model.parameters(),\n    lr=1e-3,\n)",
            "opt = torch.optim.AdamW(\n    model.parameters(),\n"
            '    lr=torch.tensor(1e-3, device="cuda"),\n    capturable=True,\n)',
        ),
        (
            "opt = torch.optim.Adam(model.parameters(), lr=1)",
            "opt = torch.optim.Adam(model.parameters(), "
            'lr=torch.tensor(1.0, device="cuda"), capturable=True)',
        ),
        (
            "params = list(model.parameters())\n"
            "opt = torch.optim.Adam(params, lr=0.01)",
            "params = list(model.parameters())\n"
            f"opt = torch.optim.Adam(params, lr={TENSOR}, capturable=True)",
        ),
        (
            'opt = torch.optim.Adam([{"params": model.parameters(), "eps": 1e-6}], '
            "lr=0.01)",
            'opt = torch.optim.Adam([{"params": model.parameters(), "eps": 1e-6}], '
            f"lr={TENSOR}, capturable=True)",
        ),
    ],
)
def test_gl407_makes_the_lr_a_device_tensor(build: str, fixed: str) -> None:
    source = _gl407(build)
    after = _fixed(source, "GL407")
    assert after == source.replace(build, fixed)
    assert not {"GL407", "GL701"} & {d.code for d in lint_source(after)}


def test_gl407_names_torch_as_the_file_imports_it() -> None:
    source = _gl407(
        "opt = th.optim.Adam(model.parameters(), lr=0.01)", imports="import torch as th"
    )
    assert (
        'opt = th.optim.Adam(model.parameters(), lr=th.tensor(0.01, device="cuda"), '
        "capturable=True)\n" in _fixed(source, "GL407")
    )
    source = _gl407(
        "opt = Adam(model.parameters(), lr=0.01)",
        imports="from torch.optim import Adam",
    )
    assert f"opt = Adam(model.parameters(), lr={TENSOR}, capturable=True)\n" in _fixed(
        source, "GL407"
    )


def test_gl407_findings_on_one_optimizer_carry_one_fix() -> None:
    source = _gl407(
        "opt = torch.optim.Adam(model.parameters(), lr=0.01)",
        after="plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(opt)\n"
        "plateau.step(1.0)\n",
    )
    first, second = _found(source, "GL407")
    assert first.edits == second.edits
    assert first.edits[0].line == 4
    assert _found(_fixed(source, "GL407"), "GL407") == []


@pytest.mark.parametrize(
    ("build", "scheduler", "after"),
    [
        # SGD has no capturable option, and reads a tensor lr on the host
        ("opt = torch.optim.SGD(model.parameters(), lr=0.01)", STEP_LR, ""),
        ("opt = torch.optim.RMSprop(model.parameters(), lr=0.01)", STEP_LR, ""),
        # no lr: the default is the optimizer's
        ("opt = torch.optim.Adam(model.parameters())", STEP_LR, ""),
        # a name may hold a tensor already, or be shared
        ("opt = torch.optim.Adam(model.parameters(), lr=base)", STEP_LR, ""),
        ("opt = torch.optim.Adam(model.parameters(), lr=0.1 / 8)", STEP_LR, ""),
        # param groups with their own float lr, or that may carry one
        (
            'opt = torch.optim.Adam([{"params": model.parameters(), "lr": 0.1}], '
            "lr=0.01)",
            STEP_LR,
            "",
        ),
        ("opt = torch.optim.Adam(groups(model), lr=0.01)", STEP_LR, ""),
        ("opt = torch.optim.Adam(**options)", STEP_LR, ""),
        # over lines with no trailing comma: the layout is not clear
        (
            "opt = torch.optim.Adam(\n    model.parameters(),\n    lr=0.01\n)",
            STEP_LR,
            "",
        ),
        # schedulers that also cycle momentum or betas as floats
        (
            "opt = torch.optim.Adam(model.parameters(), lr=0.01)",
            "torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=30)",
            "",
        ),
        (
            "opt = torch.optim.Adam(model.parameters(), lr=0.01)",
            "torch.optim.lr_scheduler.CyclicLR(opt, 0.001, 0.1)",
            "",
        ),
        # a write of a float into the group would replace the tensor: no edit
        # hides it, for the scheduler's finding either
        (
            "opt = torch.optim.Adam(model.parameters(), lr=0.01)",
            STEP_LR,
            "for group in opt.param_groups:\n    group['lr'] = 0.001\n",
        ),
        (
            "opt = torch.optim.Adam(model.parameters(), lr=0.01)",
            STEP_LR,
            "opt.param_groups[0]['betas'] = (0.8, 0.9)\n",
        ),
    ],
)
def test_gl407_offers_no_edit_it_cannot_be_sure_of(
    build: str, scheduler: str, after: str
) -> None:
    source = "base = 0.01\noptions = {}\n" + _gl407(
        build, scheduler=scheduler, after=after
    )
    found = _found(source, "GL407")
    assert found
    assert all(d.edits == () and d.applicability is None for d in found)


def test_gl407_needs_torch_in_scope_for_the_tensor() -> None:
    source = textwrap.dedent(
        """\
        from torch import cuda, nn
        from torch.optim import Adam
        from torch.optim.lr_scheduler import StepLR

        model = nn.Linear(8, 8).cuda()
        opt = Adam(model.parameters(), lr=0.01)
        sched = StepLR(opt, step_size=10)
        g = cuda.CUDAGraph()
        with cuda.graph(g):
            opt.step()
        for _ in range(30):
            g.replay()
            sched.step()
        """
    )
    (found,) = _found(source, "GL407")
    assert found.edits == ()


def test_gl407_fixture_is_fixed() -> None:
    path = FIXTURES / "GL407-learning-rate-changed" / "bad_adam_scheduler.py"
    source = path.read_text(encoding="utf-8")
    after = _fixed(source, "GL407")
    assert after == source.replace("lr=0.01,", f"lr={TENSOR},")
