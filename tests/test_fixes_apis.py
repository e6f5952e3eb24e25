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


# -- GL703: a warm-up on a side stream before the capture ----------------------------

CAPTURE = """\
import torch

model = torch.nn.Linear(8, 8).cuda()
x = torch.randn(4, 8, device="cuda")
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):  # capture
    y = model(x)
    z = y.relu()
g.replay()
"""

WARMED = """\
import torch

model = torch.nn.Linear(8, 8).cuda()
x = torch.randn(4, 8, device="cuda")
g = torch.cuda.CUDAGraph()
_warmup_stream = torch.cuda.Stream()
_warmup_stream.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(_warmup_stream):
    for _ in range(3):
        y = model(x)
        z = y.relu()
torch.cuda.current_stream().wait_stream(_warmup_stream)
with torch.cuda.graph(g):  # capture
    y = model(x)
    z = y.relu()
g.replay()
"""


def test_gl703_warms_up_on_a_side_stream() -> None:
    assert fixed(CAPTURE, "GL703", Applicability.UNSAFE) == WARMED


def test_gl703_indents_as_the_file_does() -> None:
    source = textwrap.dedent("""\
        import torch as th

        model = th.nn.Linear(8, 8).cuda()


        def main() -> None:
          x = th.randn(4, 8, device="cuda")
          g = th.cuda.CUDAGraph()
          if x.is_cuda:
            # the graph
            with th.cuda.graph(g): y = model(x)
          g.replay()


        main()
        """)
    after = fixed(source, "GL703", Applicability.UNSAFE)
    assert after == source.replace(
        "    with th.cuda.graph(g): y = model(x)\n",
        "    _warmup_stream = th.cuda.Stream()\n"
        "    _warmup_stream.wait_stream(th.cuda.current_stream())\n"
        "    with th.cuda.stream(_warmup_stream):\n"
        "      for _ in range(3):\n"
        "        y = model(x)\n"
        "    th.cuda.current_stream().wait_stream(_warmup_stream)\n"
        "    with th.cuda.graph(g): y = model(x)\n",
    )


def test_gl703_keeps_tabs_and_multi_line_strings() -> None:
    source = (
        "import torch\n"
        "from torch.cuda import graph\n"
        "\n"
        "model = torch.nn.Linear(8, 8).cuda()\n"
        "\n"
        "\n"
        "def main():\n"
        '\tx = torch.randn(4, 8, device="cuda")\n'
        "\tg = torch.cuda.CUDAGraph()\n"
        "\twith graph(g):\n"
        "\t\tif x.is_cuda:\n"
        "\t\t\ty = model(x)\n"
        '\t\tnote = """two\n'
        'lines"""\n'
        "\tg.replay()\n"
        "\n"
        "\n"
        "main()\n"
    )
    after = fixed(source, "GL703", Applicability.UNSAFE)
    assert after == source.replace(
        "\twith graph(g):\n",
        "\t_warmup_stream = torch.cuda.Stream()\n"
        "\t_warmup_stream.wait_stream(torch.cuda.current_stream())\n"
        "\twith torch.cuda.stream(_warmup_stream):\n"
        "\t\tfor _ in range(3):\n"
        "\t\t\tif x.is_cuda:\n"
        "\t\t\t\ty = model(x)\n"
        '\t\t\tnote = """two\n'
        'lines"""\n'
        "\ttorch.cuda.current_stream().wait_stream(_warmup_stream)\n"
        "\twith graph(g):\n",
    )


def test_gl703_picks_names_the_file_does_not_use() -> None:
    source = CAPTURE.replace(
        "g = torch", "_warmup_stream = _ = print\ng = torch"
    ).replace("    z = y.relu()\n", "    for _ in range(2):\n        y = y.relu()\n")
    after = fixed(source, "GL703", Applicability.UNSAFE)
    assert "_warmup_stream_1 = torch.cuda.Stream()\n" in after
    assert "    for _warmup_step in range(3):\n" in after
    assert "        for _ in range(2):\n            y = y.relu()\n" in after


def test_gl703_reuses_a_thrown_away_name() -> None:
    source = CAPTURE.replace("    y = model(x)\n", "    y, _ = model(x).split(4)\n")
    assert "    for _ in range(3):\n" in fixed(source, "GL703", Applicability.UNSAFE)


def test_gl703_warms_up_ddp_for_11_iterations() -> None:
    source = textwrap.dedent("""\
        import torch
        from torch.nn.parallel import DistributedDataParallel as DDP

        model = DDP(torch.nn.Linear(8, 8).cuda())
        x = torch.randn(4, 8, device="cuda")
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            model(x).sum().backward()
        """)
    after = fixed(source, "GL703", Applicability.UNSAFE)
    assert "    for _ in range(11):\n        model(x).sum().backward()\n" in after
    assert not _found(after, "GL705")


def test_gl703_fix_inside_a_function_its_module_calls() -> None:
    source = textwrap.dedent("""\
        import torch

        model = torch.nn.Linear(8, 8).cuda()


        def capture(graph: torch.cuda.CUDAGraph) -> torch.Tensor:
            x = torch.randn(4, 8, device="cuda")
            with torch.cuda.graph(graph):
                out = model(x)
            return out


        out = capture(torch.cuda.CUDAGraph())
        """)
    after = fixed(source, "GL703", Applicability.UNSAFE)
    assert (
        "    with torch.cuda.stream(_warmup_stream):\n"
        "        for _ in range(3):\n"
        "            out = model(x)\n"
        "    torch.cuda.current_stream().wait_stream(_warmup_stream)\n"
        "    with torch.cuda.graph(graph):\n"
    ) in after


RUNNER = """\
import torch


class Runner:
    def __init__(self) -> None:
        self.model = torch.nn.Linear(8, 8).cuda()
        self.graph: torch.cuda.CUDAGraph | None = None

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if self.graph is None:
            self.static_x = x.clone()
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                self.out = self.model(self.static_x)
        self.static_x.copy_(x)
        self.graph.replay()
        return self.out


runner = Runner()
runner(torch.randn(4, 8, device="cuda"))
"""

IN_FUNCTION = """\
import torch

model = torch.nn.Linear(8, 8).cuda()
x = torch.randn(4, 8, device="cuda")


def main():
{body}


main()
"""


@pytest.mark.parametrize(
    "source",
    [
        # a statement that means something else when repeated
        CAPTURE.replace("    z = y.relu()\n", "    del x\n"),
        CAPTURE.replace("    z = y.relu()\n", "    def f():\n        pass\n"),
        CAPTURE.replace("    z = y.relu()\n", "    class C:\n        pass\n"),
        IN_FUNCTION.format(
            body="    g = torch.cuda.CUDAGraph()\n"
            "    with torch.cuda.graph(g):\n"
            "        if x.is_cuda:\n"
            "            return model(x)\n"
        ),
        IN_FUNCTION.format(
            body="    g = torch.cuda.CUDAGraph()\n"
            "    with torch.cuda.graph(g):\n"
            "        global y\n"
            "        y = model(x)\n"
        ),
        IN_FUNCTION.format(
            body="    g = torch.cuda.CUDAGraph()\n"
            "    with torch.cuda.graph(g):\n"
            "        y = yield model(x)\n"
        ).replace("main()\n", "next(main())\n"),
        # the capture enters another context too: the copy would run outside it
        CAPTURE.replace(
            "with torch.cuda.graph(g):",
            'with torch.cuda.graph(g), torch.autocast("cuda"):',
        ),
        CAPTURE.replace("with torch.cuda.graph(g):", "with torch.cuda.graph(g) as c:"),
        # torch.cuda has no name here
        textwrap.dedent("""\
            from torch.cuda import CUDAGraph, graph
            from torch.nn import Linear

            model = Linear(8, 8).cuda()
            g = CUDAGraph()
            with graph(g):
                y = model(x)
            """),
        # a runner that captures on its first call: no warm-up before it
        RUNNER,
        # capture_begin() has no block to copy
        CAPTURE.replace(
            "with torch.cuda.graph(g):  # capture\n    y = model(x)\n    z = y.relu()\n",
            "g.capture_begin()\ny = model(x)\ng.capture_end()\n",
        ),
    ],
    ids=[
        "del",
        "def",
        "class",
        "return",
        "global",
        "yield",
        "two-contexts",
        "as",
        "no-torch-name",
        "runner",
        "capture-begin",
    ],
)
def test_gl703_offers_no_edit_it_cannot_be_sure_of(source: str) -> None:
    no_fix(source, "GL703")


def test_gl703_keeps_break_and_continue_of_the_bodys_own_loops() -> None:
    source = CAPTURE.replace(
        "    z = y.relu()\n",
        "    for layer in (model, model):\n"
        "        if x.is_cuda:\n"
        "            continue\n"
        "        y = layer(y)\n",
    )
    fixed(source, "GL703", Applicability.UNSAFE)


def test_gl703_copies_the_statements_without_their_comments() -> None:
    source = CAPTURE.replace(
        "    y = model(x)\n",
        "    # the forward\n    y = model(x)  # graphlint: ignore[GL101]\n",
    ).replace("    z = y.relu()\n", "    z = y.relu(  # inside\n    )  # last\n")
    after = fixed(source, "GL703", Applicability.UNSAFE)
    assert after == source.replace(
        "with torch.cuda.graph(g):",
        "_warmup_stream = torch.cuda.Stream()\n"
        "_warmup_stream.wait_stream(torch.cuda.current_stream())\n"
        "with torch.cuda.stream(_warmup_stream):\n"
        "    for _ in range(3):\n"
        "        y = model(x)\n"
        "        z = y.relu(\n"
        "        )\n"
        "torch.cuda.current_stream().wait_stream(_warmup_stream)\n"
        "with torch.cuda.graph(g):",
    )
