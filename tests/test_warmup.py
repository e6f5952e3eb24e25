"""GL703 names the op of a capture that needs a warm-up, and says nothing when every
op of the capture is known to need none (ground-truth/h100-torch2.11-warmup.jsonl);
code it cannot see keeps the finding, across files until the project pass sees it."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from graphlint.project.check import check_project
from graphlint.project.summary import summarize
from graphlint.settings import Settings
from tests.conftest import FIXTURES, ROOT, expectations, lint

SETUP = """\
import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F

x = torch.randn(4, 8, device="cuda")
w = torch.randn(8, 8, device="cuda")
static = torch.zeros(4, 8, device="cuda")
linear = torch.nn.Linear(8, 8).cuda()
norm = torch.nn.LayerNorm(8).cuda()
embed = torch.nn.Embedding(16, 8).cuda()
lazy = torch.nn.LazyLinear(8).cuda()
p = torch.nn.Parameter(torch.zeros(8, device="cuda"))
sgd = torch.optim.SGD([p], lr=0.1)
momentum = torch.optim.SGD([p], 0.1, 0.9)
adam = torch.optim.Adam([p], capturable=True)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
"""

# the region's body -> what the finding names (None: no finding)
CASES = {
    "static.fill_(1.0)\nstatic.zero_()": None,
    "y = torch.relu(x * 2 + 1).exp().clamp(max=5) - x.sigmoid()": None,
    "static.copy_(x.view(-1).reshape(4, 8).t().contiguous().t())": None,
    "y = x.softmax(-1).sum() + F.cross_entropy(x, x.argmax(-1))": None,
    "y = norm(x) + embed(x.argmax(-1))": None,
    "y = F.dropout(x, 0.5) + torch.randn(4, 8, device='cuda')": None,
    "(x * p).sum().backward()\nsgd.step()": None,
    "torch.nn.utils.clip_grad_norm_([p], 1.0)\nsgd.zero_grad()": None,
    "items = [x]\nitems.append(len(items))": None,
    "y = x + torch.Tensor([1.0]).cuda() + torch.LongTensor([2]).cuda()": None,
    "y = x @ w": "`x @ w` at line 19 needs them (a matmul: cuBLAS",
    "y = x.mm(w)": "(a matmul: cuBLAS",
    "y = torch.einsum('ij,jk->ik', x, w)": "(a matmul: cuBLAS",
    "y = F.linear(x, w)": "(a matmul: cuBLAS",
    "y = norm(x)\nz = linear(y)": "`linear(y)` at line 20 needs them (an `nn.Linear`",
    "y = F.conv2d(x[None, None], w[None, None])": "(a convolution: cuDNN",
    "y = lazy(x)": "(an `nn.LazyLinear`: a lazy module",
    "momentum.step()": "`momentum.step()` at line 19 needs them (an `SGD` step",
    "adam.step()": "(an `Adam` step: the first step creates the optimizer's state)",
    "dist.all_reduce(static)": "(an NCCL collective: NCCL",
    "y = np.ones(3)": "could not be checked (`np.ones(3)` at line 19)",
    "y = torch.frobnicate(x)": "could not be checked (`torch.frobnicate(x)`",
    "y = x.float().frobnicate()": "could not be checked",
}


@pytest.mark.parametrize("body", CASES, ids=list(range(len(CASES))))
def test_what_the_capture_runs(body: str) -> None:
    source = SETUP + textwrap.indent(body, "    ") + "\n"
    found = lint(source, "GL703")
    want = CASES[body]
    if want is None:
        assert found == [], found[0].message
        return
    (finding,) = found
    assert finding.line == 18
    assert want in finding.message, finding.message


def test_consequence_follows_the_measured_outcome() -> None:
    """cuBLAS fails the capture; a lazy module's set-up is recorded and redone."""
    (fails,) = lint(SETUP + "    y = x @ w\n", "GL703")
    assert fails.message.endswith(": fails capture")
    (redone,) = lint(SETUP + "    y = lazy(x)\n", "GL703")
    assert redone.message.endswith("every replay does it again")
    (unsure,) = lint(SETUP + "    y = np.ones(3)\n", "GL703")
    assert unsure.message.endswith(
        ": may fail capture or record one-time set-up that every replay does again"
    )


@pytest.mark.parametrize(
    ("guard", "when"), [("if self.graph is None:", "its first call"), ("", "each call")]
)
def test_a_runner_says_when_it_captures(guard: str, when: str) -> None:
    """A function that captures and then replays: on its first call when a test
    keeps the capture to the first one, else on each call."""
    body = textwrap.indent(
        "self.graph = torch.cuda.CUDAGraph()\n"
        "with torch.cuda.graph(self.graph):\n"
        "    self.out = self.model(self.x)\n",
        "    " if guard else "",
    )
    source = (
        "import torch\n\n\n"
        "class Runner:\n"
        "    def __init__(self):\n"
        "        self.model = torch.nn.Linear(8, 8).cuda()\n"
        "        self.x = torch.zeros(4, 8, device='cuda')\n"
        "        self.graph = None\n\n"
        "    def __call__(self):\n"
        + textwrap.indent((guard + "\n" if guard else "") + body, "        ")
        + "        self.graph.replay()\n"
        "        return self.out\n"
    )
    (finding,) = lint(source, "GL703")
    assert f"`Runner.__call__` captures on {when} and replays at line" in (
        finding.message
    )


def test_an_op_in_a_called_function_is_named_with_the_call() -> None:
    found = lint(
        """\
        import torch

        w = torch.randn(8, 8, device="cuda")


        def inner(t):
            return t @ w


        def outer(t):
            return inner(t * 2)


        x = torch.randn(4, 8, device="cuda")
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = outer(x)
        """,
        "GL703",
    )
    (finding,) = found
    assert "`outer(x)` at line 17 runs `t @ w` (line 7), which needs them" in (
        finding.message
    )


def test_a_module_of_the_file_is_read_through_its_forward() -> None:
    """A model built of modules known to need none is silent; one with a linear
    layer is named."""
    model = """\
        import torch


        class Block(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.norm = torch.nn.LayerNorm(8)
                self.drop = torch.nn.Dropout(0.1)

            def forward(self, x):
                return self.drop(self.norm(x)).relu()


        block = Block().cuda()
        x = torch.randn(4, 8, device="cuda")
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = block(x)
        """
    assert lint(model, "GL703") == []
    linear = model.replace("torch.nn.Dropout(0.1)", "torch.nn.Linear(8, 8)")
    (finding,) = lint(linear, "GL703")
    assert "`block(x)` at line 18 runs `self.drop(self.norm(x))` (line 11)" in (
        finding.message
    )
    assert "(an `nn.Linear`: cuBLAS" in finding.message


def test_a_base_method_is_read_through_super_and_the_class() -> None:
    """``super().forward(x)`` and ``Tools.scale(x)`` run the methods of the file's
    classes they name: read through, not code that could not be checked."""
    source = """\
        import torch

        w = torch.randn(8, 8, device="cuda")


        class Base(torch.nn.Module):
            def forward(self, x):
                return x * 2


        class Sub(Base):
            def forward(self, x):
                return super().forward(x) + 1


        class Tools:
            @staticmethod
            def scale(x):
                return x / 4


        model = Sub()
        x = torch.randn(4, 8, device="cuda")
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = model(x)
            z = Tools.scale(x)
        """
    assert lint(source, "GL703") == []
    (finding,) = lint(source.replace("return x * 2", "return x @ w"), "GL703")
    assert "`model(x)` at line 26 runs `x @ w` (line 8), which needs them" in (
        finding.message
    )
    (finding,) = lint(source.replace("return x / 4", "return x @ w"), "GL703")
    assert "`Tools.scale(x)` at line 27 runs `x @ w` (line 19)" in finding.message


TRAIN = """\
import numpy as np
import torch

from pkg.ops import Context, project, scale, uses_numpy

x = torch.randn(4, 8, device="cuda")
w = torch.randn(8, 8, device="cuda")
ctx = Context()
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    y = scale(x)
with torch.cuda.graph(g):
    y = project(x, w)
with torch.cuda.graph(g):
    y = ctx.meta(3)
with torch.cuda.graph(g):
    y = uses_numpy(x)
"""
OPS = """\
import numpy as np
import torch


def scale(x):
    return x * 2 + 1


def project(x, w):
    return scale(x) @ w


def uses_numpy(x):
    return x + float(np.ones(3).sum())


class Context:
    def __init__(self):
        self.cache = {}

    def meta(self, n):
        found = self.cache.get(n)
        if found is None:
            found = torch.arange(n, device="cuda")
            self.cache[n] = found
        return found
"""


def test_the_project_pass_settles_captures_of_code_in_other_files(
    tmp_path: Path,
) -> None:
    """Alone, train.py cannot see what its captures run, and reports each; checked
    with its project, the captures of code known to need no warm-up are dropped,
    the one that reaches a matmul names it, and the one that leaves the project
    (numpy) stays as it was."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "ops.py").write_text(OPS)
    (tmp_path / "train.py").write_text(TRAIN)
    alone = lint(TRAIN, "GL703")
    assert [d.line for d in alone] == [10, 12, 14, 16]
    assert all("could not be checked" in d.message for d in alone)
    settings = Settings(enabled=frozenset({"GL703"}))
    results = check_project([tmp_path / "train.py"], settings, 1, roots=[tmp_path])
    found = {d.line: d.message for r in results for d in r.diagnostics}
    assert set(found) == {12, 16}
    assert "it runs `scale(x) @ w` at " in found[12]
    assert "ops.py:10, which needs them (a matmul: cuBLAS" in found[12]
    assert found[12].endswith(": fails capture")
    assert "could not be checked (`uses_numpy(x)` at line 17)" in found[16]


# the cases of ground-truth/warmup_probe.py that captured with no warm-up and
# replayed right, and the body of CASES that does what each did
MEASURED_OK = {
    "nowarm_fill": "static.fill_(1.0)\nstatic.zero_()",
    "nowarm_elementwise": "y = torch.relu(x * 2 + 1).exp().clamp(max=5) - x.sigmoid()",
    "nowarm_copy_view": "static.copy_(x.view(-1).reshape(4, 8).t().contiguous().t())",
    "nowarm_reduction_softmax": (
        "y = x.softmax(-1).sum() + F.cross_entropy(x, x.argmax(-1))"
    ),
    "nowarm_layer_norm": "y = norm(x) + embed(x.argmax(-1))",
    "nowarm_embedding_index": "y = norm(x) + embed(x.argmax(-1))",
    "nowarm_random": "y = F.dropout(x, 0.5) + torch.randn(4, 8, device='cuda')",
    "nowarm_backward_elementwise": "(x * p).sum().backward()\nsgd.step()",
    "nowarm_sgd_step": "(x * p).sum().backward()\nsgd.step()",
    "nowarm_clip_grad_norm": "torch.nn.utils.clip_grad_norm_([p], 1.0)\nsgd.zero_grad()",
}


def test_what_needs_none_was_measured_so() -> None:
    """Each case the probe captured and replayed right with nothing before it has
    its body here, which GL703 is silent on; the ``_ready`` cases had a handle or
    state made before the capture by other code, which graphlint does not count."""
    text = (ROOT / "ground-truth" / "h100-torch2.11-warmup.jsonl").read_text("utf-8")
    records = [json.loads(line) for line in text.splitlines()]
    ok = {r["case"] for r in records if r.get("outcome") == "ok"}
    assert {case for case in ok if not case.endswith("_ready")} == set(MEASURED_OK)
    assert all(CASES[body] is None for body in MEASURED_OK.values())


RUNNER = """\
import torch


class Runner:
    def __init__(self):
        self.model = torch.nn.Linear(8, 8).cuda()
        self.graph = None
        self.calls = 0
        self.mode = "graph"

    def capture(self, x):
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.out = self.model(x)
"""

# a function of the runner that leads to the capture -> whether GL703 reports it
WAYS = {
    # a counter further down the way: earlier calls run the model eagerly
    "counter_below": (
        "    def __call__(self, x):\n"
        "        if self.graph is None:\n"
        "            self.maybe(x)\n"
        "        if self.graph is None:\n"
        "            return self.model(x)\n"
        "        self.graph.replay()\n"
        "        return self.out\n\n"
        "    def maybe(self, x):\n"
        "        self.calls += 1\n"
        "        if self.calls > 3:\n"
        "            self.capture(x)\n",
        False,
    ),
    # ``is not None`` failing, and ``and`` with a mode: the first call captures
    "negated": (
        "    def __call__(self, x):\n"
        "        if self.graph is not None:\n"
        "            pass\n"
        "        else:\n"
        "            self.capture(x)\n"
        "        self.graph.replay()\n"
        "        return self.model(x) if self.mode == 'eager' else self.out\n",
        True,
    ),
    "and_mode": (
        "    def __call__(self, x):\n"
        "        if self.graph is None and self.mode == 'graph':\n"
        "            self.capture(x)\n"
        "        self.graph.replay()\n"
        "        return self.model(x) if self.mode == 'eager' else self.out\n",
        True,
    ),
}


@pytest.mark.parametrize("way", WAYS)
def test_runs_after_a_first_call_capture_are_no_warm_up(way: str) -> None:
    source, reported = WAYS[way]
    found = lint(RUNNER + "\n" + source, "GL703")
    assert bool(found) is reported, [d.message for d in found]


def test_a_caller_runs_the_model_of_the_runner_it_holds() -> None:
    """``r.model(x)`` before ``r.capture(x)`` runs what the capture's
    ``self.model(x)`` runs: a warm-up; after a first call's capture it is not."""
    warm = "\n\ndef main(x):\n    r = Runner()\n    r.model(x)\n    r.capture(x)\n"
    late = "\n\ndef main(x):\n    r = Runner()\n    r.capture(x)\n    r.model(x)\n"
    assert lint(RUNNER + warm, "GL703") == []
    (found,) = lint(RUNNER + late, "GL703")
    assert "needs them (an `nn.Linear`" in found.message


CALLERS = FIXTURES / "_callers"
HELPER = """\
import torch


def capture(fn, x):
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn(x)
    return graph, out
"""


def _callers(tmp_path: Path, caller: str, *, preview: bool = False) -> list[str]:
    """The GL703 messages of a project whose ``pkg/graphs.py`` holds ``HELPER`` and
    whose ``pkg/train.py`` is ``caller``."""
    (tmp_path / "pkg").mkdir(parents=True)
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "graphs.py").write_text(HELPER)
    (tmp_path / "pkg" / "train.py").write_text(textwrap.dedent(caller))
    settings = Settings(enabled=frozenset({"GL703"}), preview=preview)
    results = check_project(sorted(tmp_path.rglob("*.py")), settings, 1)
    return [d.message for r in results for d in r.diagnostics]


def test_callers_in_other_files_warm_up_a_capture_helper_or_not() -> None:
    """A helper that captures what it is given is warmed up by its callers: the
    fixture's one caller with nothing before it is named, the ways good.py warms
    up are not (a side-stream block, a function that runs one, the module run
    before, a loop)."""
    files = sorted(CALLERS.rglob("*.py"))
    results = check_project(files, Settings(enabled=frozenset({"GL703"})), 1)
    got = {(Path(r.path).name, d.line, d.code) for r in results for d in r.diagnostics}
    want = {
        (path.name, line, code)
        for path in files
        for line, code in expectations(path.read_text(encoding="utf-8"))
    }
    assert want and got == want
    (message,) = [d.message for r in results for d in r.diagnostics]
    assert "; `main` calls `capture` at " in message
    assert message.endswith(
        "bad.py:11 with none before it: may fail capture or record one-time set-up "
        "that every replay does again"
    )


@pytest.mark.parametrize(
    ("caller", "reported"),
    [
        # entries: a test, module code, a function that replays after the call
        ("def test_it(x):\n    capture(lambda t: t @ t, x)\n", True),
        ("x = None\ncapture(print, x)\n", True),
        ("def run(x):\n    g, _ = capture(print, x)\n    g.replay()\n", True),
        # a side-stream block holding the call is no warm-up: nothing ran before
        (
            "def main(x):\n    with torch.cuda.stream(torch.cuda.Stream()):\n"
            "        capture(print, x)\n",
            True,
        ),
        # ... one that ends before it is
        (
            "def main(x):\n    with torch.cuda.stream(torch.cuda.Stream()):\n"
            "        print(x)\n    capture(print, x)\n",
            False,
        ),
        ("def main(x):\n    print(x)\n    capture(print, x)\n", False),
        ("def main(xs):\n    for x in xs:\n        capture(print, x)\n", False),
        # not an entry, and nothing calls it: its callers are unknown
        ("def run(x):\n    capture(print, x)\n", False),
        # ... called from an entry of another function, with nothing before it
        ("def run(x):\n    capture(print, x)\n\n\ndef main(x):\n    run(x)\n", True),
    ],
)
def test_which_callers_warm_up(tmp_path: Path, caller: str, reported: bool) -> None:
    source = "import torch\n\nfrom pkg.graphs import capture\n\n" + caller
    found = _callers(tmp_path, source)
    assert bool(found) is reported, found


def test_a_caller_that_hands_over_code_needing_no_warm_up_is_fine_in_preview(
    tmp_path: Path,
) -> None:
    """In preview the code handed over is seen: where it needs no warm-up, no
    caller has to warm up; where it does, the finding names the op in the file of
    the call that runs none of it before."""
    clean = "from pkg.graphs import capture\n\n\ndef main(x):\n    capture(abs, x)\n"
    steps = (
        "from pkg.graphs import capture\n\n\ndef double(x):\n    return x * 2\n\n\n"
        "def main(x):\n    capture(double, x)\n"
    )
    assert _callers(tmp_path / "a", steps, preview=True) == []
    assert len(_callers(tmp_path / "b", steps)) == 1  # not seen without hand-offs
    matmul = steps.replace("x * 2", "x @ x")
    (found,) = _callers(tmp_path / "c", matmul, preview=True)
    assert "it runs `x @ x` at " in found and "train.py:5, which needs them" in found
    assert found.endswith("train.py:9 with none before it: fails capture")
    assert len(_callers(tmp_path / "d", clean)) == 1  # abs: a builtin, not followed


@pytest.mark.gpu
@pytest.mark.parametrize("script", ["bad", "good"])
def test_the_callers_fixture_on_a_gpu(script: str) -> None:
    """bad.py's capture fails as GL703 says (cuBLAS makes its handle during the
    capture); good.py's captures, after each way of warming up, replay like eager.
    Each in a process of its own: a warm-up anywhere in a process is one for every
    later capture."""
    run = subprocess.run(
        [sys.executable, "-c", f"from warm import {script}; {script}.main()"],
        cwd=CALLERS,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if script == "good":
        assert run.returncode == 0, run.stderr[-2000:]
    else:
        assert run.returncode != 0
        assert "CUBLAS_STATUS_NOT_INITIALIZED" in run.stderr, run.stderr[-2000:]


def test_summaries_keep_loops_and_side_stream_blocks() -> None:
    """What ``Ways`` reads to tell a warm-up before a call: the lines of each
    function's loops and side-stream blocks, not those of the functions in it."""
    module = summarize(
        ast.parse(
            textwrap.dedent(
                """\
            import torch

            for _ in range(2):
                pass

            def run(x):
                with torch.cuda.stream(torch.cuda.Stream()):
                    x.add_(1)
                while x:
                    def inner():
                        for y in x:
                            pass
                with open("f") as f:
                    pass
            """
            )
        ),
        "m",
        "m.py",
        None,
    )
    assert module.blocks.loops == [(3, 4)] and module.blocks.streams == []
    run = module.functions["run"]
    assert run.blocks.streams == [(7, 8)]
    assert run.blocks.loops == [(9, 12)]
    assert module.functions["run.inner"].blocks.loops == [(11, 12)]
