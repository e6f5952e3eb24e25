"""Fixes of the optimizer hyper-parameter and RNG rules (GL407, GL501): the exact
edit each finding carries, that the edited file parses and no longer reports the
finding (nor anything it did not report before), and the shapes that get no edit."""

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


def _fixed_all(source: str, code: str) -> str:
    """Every fix of ``code`` applied, one at a time and re-linted in between (as
    a fixer that re-lints would), until none is left; none of ``code`` remains."""
    for _ in range(10):
        if not any(d.edits for d in _found(source, code)):
            break
        source = _fixed(source, code)
    assert _found(source, code) == []
    return source


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


# -- GL501 -------------------------------------------------------------------------


def test_gl501_registers_the_generator_before_the_capture() -> None:
    source = textwrap.dedent(
        """\
        import torch

        gen = torch.Generator(device="cuda")
        g = torch.cuda.CUDAGraph()
        # capture the noise
        with torch.cuda.graph(g):  # the capture
            noise = torch.randn(8, device="cuda", generator=gen)  # here
        g.replay()
        """
    )
    assert _fixed(source, "GL501") == source.replace(
        "# capture the noise\n",
        "# capture the noise\ng.register_generator_state(gen)\n",
    )


def test_gl501_keeps_the_indentation_of_the_capture() -> None:
    source = (
        "import torch\n"
        "\n"
        "def capture(x):\n"
        '\tgen = torch.Generator(device="cuda")\n'
        "\tg = torch.cuda.CUDAGraph()\n"
        "\tif x.is_cuda:\n"
        "\t\twith torch.cuda.graph(g):\n"
        "\t\t\tx.normal_(generator=gen)\n"
        "\t\t\tx.add_(1)  # done\n"
        "\treturn g\n"
    )
    assert _fixed(source, "GL501") == source.replace(
        "\t\twith", "\t\tg.register_generator_state(gen)\n\t\twith"
    )


def test_gl501_names_attributes_as_written() -> None:
    source = textwrap.dedent(
        """\
        import torch

        gen = torch.Generator(device="cuda")


        class Runner:
            def __init__(self):
                self.graph = torch.cuda.CUDAGraph()

            def capture(self, x):
                with torch.cuda.graph(self.graph):
                    x.normal_(generator=gen)
        """
    )
    assert _fixed(source, "GL501") == source.replace(
        "        with", "        self.graph.register_generator_state(gen)\n        with"
    )


def test_gl501_fixture_with_a_class_attribute() -> None:
    """The fix writes what the near-miss fixture has."""
    folder = FIXTURES / "GL501-unregistered-generator"
    source = (folder / "bad_class_attr.py").read_text(encoding="utf-8")
    registered = (
        "g = torch.cuda.CUDAGraph()\n"
        "g.register_generator_state(RandomSTE.generator)\n"
        "with torch.cuda.graph(g):\n"
    )
    assert registered in _fixed(source, "GL501")
    assert registered in (folder / "good_class_attr.py").read_text(encoding="utf-8")


def test_gl501_two_generators_get_one_registration_each() -> None:
    source = (FIXTURES / "GL501-unregistered-generator" / "bad.py").read_text(
        encoding="utf-8"
    )
    fixed = _fixed_all(source, "GL501")
    assert (
        "g.register_generator_state(private)\n"
        "g.register_generator_state(other)\n"
        "with torch.cuda.graph(g):\n" in fixed
    )


@pytest.mark.parametrize(
    "capture",
    [
        # not a ``with torch.cuda.graph(g):`` of its own
        "ctx = torch.cuda.graph(g)\nwith ctx:\n    a = x.normal_(generator=gen)\n",
        "g.capture_begin()\na = x.normal_(generator=gen)\ng.capture_end()\n",
        "graphs = [g]\nwith torch.cuda.graph(graphs[0]):\n"
        "    a = x.normal_(generator=gen)\n",
        # the generator is not a name or a dotted path
        "with torch.cuda.graph(g):\n    a = x.normal_(generator=gens[0])\n",
        # used in a function the capture calls
        "with torch.cuda.graph(g):\n    a = noise(x)\n",
        # bound under capture, or after it
        "with torch.cuda.graph(g):\n    mine = torch.Generator(device='cuda')\n"
        "    a = x.normal_(generator=mine)\n",
        "for _ in range(2):\n    with torch.cuda.graph(g):\n"
        "        a = x.normal_(generator=late)\n"
        "    late = torch.Generator(device='cuda')\n",
    ],
)
def test_gl501_offers_no_edit_it_cannot_be_sure_of(capture: str) -> None:
    source = (
        "import torch\n"
        "gen = torch.Generator(device='cuda')\n"
        "gens = [gen]\n"
        "x = torch.randn(8, device='cuda')\n"
        "def noise(t):\n"
        "    return t.normal_(generator=gen)\n"
        "g = torch.cuda.CUDAGraph()\n" + capture
    )
    found = _found(source, "GL501")
    assert found
    assert all(d.edits == () and d.applicability is None for d in found)


def test_gl501_offers_no_edit_for_graphed_callables() -> None:
    source = textwrap.dedent(
        """\
        import torch

        gen = torch.Generator(device="cuda")
        x = torch.randn(8, device="cuda")


        def noise(t):
            return t * torch.rand(8, device="cuda", generator=gen)


        graphed = torch.cuda.make_graphed_callables(noise, (x,))
        """
    )
    found = _found(source, "GL501")
    assert found
    assert all(d.edits == () for d in found)
