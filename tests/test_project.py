"""Following capture regions into the code they call: across functions, classes,
modules and files, with the chain of calls in every output."""

from __future__ import annotations

import ast
import json
import os
import shutil
import textwrap
from pathlib import Path

import pytest

from graphlint.cache import FORMAT
from graphlint.diagnostics import FileResult
from graphlint.project.bindings import Bindings
from graphlint.project.check import check_project
from graphlint.project.sites import compile_sites
from graphlint.project.survey import survey_project
from graphlint.settings import Settings
from tests.conftest import FIXTURES, expectations, lint
from tests.test_cli import run

PROJECT = FIXTURES / "_project"
EAGER = frozenset({"app.helpers.debug_dump", "app.helpers.eager"})


def expected() -> set[tuple[str, int, str]]:
    return {
        (path.name, line, code)
        for path in sorted(PROJECT.rglob("*.py"))
        for line, code in expectations(path.read_text(encoding="utf-8"))
    }


def found(results: list[FileResult]) -> list[tuple[str, int, str]]:
    return [(Path(r.path).name, d.line, d.code) for r in results for d in r.diagnostics]


def test_one_file_follows_calls_into_the_whole_project() -> None:
    """Only train.py is named; the hazards it reaches are in helpers.py and
    layers.py, each reported once, on its own line, and nothing else is."""
    results = check_project([PROJECT / "app" / "train.py"], Settings(), 1, eager=EAGER)
    got = found(results)
    assert len(got) == len(set(got)), "a line reached twice is reported once"
    assert set(got) == expected()


def test_eager_functions_are_not_followed() -> None:
    results = check_project([PROJECT / "app" / "train.py"], Settings(), 1)
    assert ("helpers.py", 23, "GL101") in found(results)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copytree(PROJECT, tmp_path / "p")
    return tmp_path / "p"


def test_chain_in_text_and_lsp(project: Path) -> None:
    _, out, _ = run("check", "app/train.py", cwd=project)
    assert (
        "app/layers.py:11:12: GL201" in out
        and "reached from app/train.py:29 via Block.forward() -> "
        "Attention.forward() -> Base.check()"
        in out
    )
    _, out, _ = run("check", "--format", "lsp", "app/train.py", cwd=project)
    by_uri = {e["uri"]: e["diagnostics"] for e in json.loads(out)}
    layers = by_uri[(project / "app" / "layers.py").resolve().as_uri()]
    check = next(d for d in layers if d["code"] == "GL201")
    hops = [
        (Path(h["location"]["uri"]).name, h["location"]["range"]["start"]["line"])
        for h in check["relatedInformation"]
    ]
    # train.py:29 calls model(x), layers.py:41 self.att(x), layers.py:27 self.check
    assert hops == [("train.py", 28), ("layers.py", 40), ("layers.py", 26)]
    assert check["data"]["region"]["path"] == "app/train.py"


def test_config_selection_and_suppression_apply_on_callee_lines(
    project: Path,
) -> None:
    (project / "pyproject.toml").write_text(
        '[tool.graphlint]\neager-functions = ["app.helpers.debug_dump"]\n'
    )
    _, out, _ = run("check", "app/train.py", cwd=project)
    assert "helpers.py:23" not in out and "helpers.py:10:13: GL101" in out
    _, out, _ = run("check", "--ignore", "GL201", "app/train.py", cwd=project)
    assert "layers.py:11" not in out
    helpers = project / "app" / "helpers.py"
    helpers.write_text(
        helpers.read_text().replace(
            "scale = t.abs().max().item()",
            "scale = t.abs().max().item()  # graphlint: ignore",
        )
    )
    _, out, _ = run("check", "app/train.py", cwd=project)
    assert "helpers.py:10" not in out


def test_summary_cache_is_used_and_lives_outside_the_tree(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "user-cache"
    monkeypatch.setenv("GRAPHLINT_CACHE_DIR", str(cache))
    first = run("check", "app/train.py", cwd=project)[1]
    entries = [p for p in cache.rglob("*") if p.is_file() and p.name != ".swept"]
    assert entries, "summaries are cached"
    assert all(json.loads(p.read_bytes())["format"] == FORMAT for p in entries)
    assert not (project / ".graphlint_cache").exists()
    assert run("check", "app/train.py", cwd=project)[1] == first
    assert run("check", "--no-cache", "app/train.py", cwd=project)[1] == first
    other = tmp_path / "elsewhere"
    assert (
        run("check", "--cache-dir", str(other), "app/train.py", cwd=project)[1] == first
    )
    assert any(other.rglob("*"))


def test_annotated_parameters_and_module_lists_are_followed(tmp_path: Path) -> None:
    """``model: Net`` reaches ``Net.forward`` (in another module), and a loop over
    ``enumerate(self.blocks)`` built from a generator reaches each block's forward."""
    (tmp_path / "net.py").write_text(
        "import torch\nfrom torch import nn\n\n"
        "class Block(nn.Module):\n"
        "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
        "        return x * x.sum().item()  # expect: GL101\n\n"
        "class Net(nn.Module):\n"
        "    def __init__(self, n: int) -> None:\n"
        "        super().__init__()\n"
        "        self.blocks = nn.ModuleList(Block() for _ in range(n))\n\n"
        "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
        "        for i, block in enumerate(self.blocks):\n"
        "            x = block(x)\n"
        "        return x\n"
    )
    (tmp_path / "run.py").write_text(
        "from typing import Optional\n\nimport torch\nfrom net import Net\n\n"
        "def step(model: Optional[Net], x: torch.Tensor) -> torch.Tensor:\n"
        "    return model(x)\n\n"
        "step = torch.compile(step, mode='reduce-overhead')\n"
    )
    results = check_project([tmp_path / "run.py"], Settings(), 1)
    assert {
        (Path(r.path).name, d.line, d.code) for r in results for d in r.diagnostics
    } == {("net.py", 6, "GL101")}


BOUND = {
    "parts.py": """\
        import torch


        class Model(torch.nn.Module):
            def forward(self, x):
                return x * x.sum().item()  # expect: GL101


        def loss_fn(out, y):
            return (out - y).abs().sum().item()  # expect: GL101


        class Wrapper:
            def __init__(self, fn):
                self.fn = fn

            def __call__(self, x):
                return self.fn(x)


        def hook(x):
            return x.tolist()  # expect: GL101


        def late(x):
            torch.cuda.synchronize()  # expect: GL103
            return x


        def never(x):
            torch.cuda.synchronize()
            return x
        """,
    "train.py": """\
        import torch
        from parts import Model, Wrapper, hook, late, loss_fn, never


        def step(model, criterion, x):
            return criterion(model(x), x)


        def apply(x, fn):
            return fn(x)


        def first(x):
            return apply(x, lambda t: t)


        def second(x):
            return third(x)


        def third(x):
            return apply(x, late)


        def again(n, fn, x):
            return again(n - 1, fn, x) if n else fn(x)


        unused = Wrapper(never)
        model = Model()
        wrapped = Wrapper(hook)
        x = torch.zeros(4, device="cuda")
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            step(model, loss_fn, x)
            wrapped(x)
            first(x)
            second(x)
            again(3, apply, x)
        """,
}


def test_arguments_bind_parameters(tmp_path: Path) -> None:
    """A parameter holds what the calls that reach its function pass: a model, a
    loss function, a callable stored by ``__init__`` (``Wrapper(hook)``), one that
    arrives after the function was first followed (``apply`` is reached from
    ``first`` with a lambda, then from ``third`` with ``late``), through
    recursion. An instance built but never used under capture adds nothing."""
    for name, text in BOUND.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    results = check_project([tmp_path / "train.py"], Settings(), 1)
    got = {
        (Path(r.path).name, d.line, d.code)
        for r in results
        for d in r.diagnostics
        if d.code != "GL703"
    }
    want = {
        (name, line, code)
        for name, text in BOUND.items()
        for line, code in expectations(textwrap.dedent(text))
    }
    assert got == want
    code, out, _ = run("check", "--show-reach", "train.py", cwd=tmp_path)
    assert code == 1
    assert "reaches parts.py:25 late" in out
    assert "via second() -> third() -> apply() -> late()" in out
    assert "`never`" not in out and "parts.py:31" not in out
    assert "`fn` is a parameter" not in out  # every `fn` got a value


COMPILED_CALLER = """\
    import torch


    def test_alias():
        class Mod(torch.nn.Module):
            def forward(self, x):
                return x * x.sum().item()  # expect: GL101

        @torch.compile(mode="reduce-overhead")
        def foo(mod, x):
            return mod(x)

        m = Mod()
        for _ in range(3):
            foo(m, torch.zeros(4, device="cuda"))
    """


def test_callers_of_a_region_function_bind_its_parameters(tmp_path: Path) -> None:
    """A compiled function's ``mod(x)`` reaches what its callers in the module pass,
    here a class defined inside the enclosing function."""
    (tmp_path / "case.py").write_text(textwrap.dedent(COMPILED_CALLER))
    results = check_project([tmp_path / "case.py"], Settings(), 1)
    got = {(d.line, d.code) for r in results for d in r.diagnostics}
    assert got == set(expectations(textwrap.dedent(COMPILED_CALLER)))


def test_module_dict_members_are_followed_and_their_outputs_are_tensors(
    tmp_path: Path,
) -> None:
    """``nn.ModuleDict(dict(h=nn.ModuleList([...])))``: ``self.layers.h`` reaches each
    block, and ``self.layers.head(x)`` is a tensor, so indexing it with a list under
    capture is found in the reached model code."""
    (tmp_path / "gpt.py").write_text(
        "import torch\nimport torch.nn as nn\n\n"
        "class MLP(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x * x.sum().item()  # expect: GL101\n\n"
        "class GPT(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.layers = nn.ModuleDict(dict(\n"
        "            emb=nn.Linear(4, 4), h=nn.ModuleList([MLP() for _ in range(2)])\n"
        "        ))\n\n"
        "    def forward(self, idx):\n"
        "        x = self.layers.emb(idx)\n"
        "        for block in self.layers.h:\n"
        "            x = block(x)\n"
        "        return x[:, [-1], :]  # expect: GL602\n"
    )
    (tmp_path / "drive.py").write_text(
        "import torch\nfrom gpt import GPT\n\n"
        "model = GPT().cuda()\n"
        "idx = torch.randn(2, 3, 4, device='cuda', requires_grad=True)\n"
        "graphed = torch.cuda.make_graphed_callables(model, (idx,))\n"
    )
    results = check_project([tmp_path / "drive.py"], Settings(), 1)
    got = {(Path(r.path).name, d.line, d.code) for r in results for d in r.diagnostics}
    source = (tmp_path / "gpt.py").read_text()
    assert got == {("gpt.py", line, code) for line, code in expectations(source)}


def _declared_project(root: Path) -> None:
    """A src layout where a wrapper captures a callable stored at run time."""
    package = root / "src" / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "wrapper.py").write_text(
        "import torch\n\n"
        "class CUDAGraphWrapper:\n"
        "    def __init__(self, runnable):\n"
        "        self.runnable = runnable\n\n"
        "    def __call__(self, *args):\n"
        "        g = torch.cuda.CUDAGraph()\n"
        "        with torch.cuda.graph(g):\n"
        "            out = self.runnable(*args)\n"
        "        return out\n"
    )
    (package / "model.py").write_text(
        "import torch\nfrom pkg.helpers import log\n\n"
        "class Model(torch.nn.Module):\n"
        "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
        "        log(x)\n"
        "        return x * 2\n\n"
        "class Child(Model):\n"
        "    pass\n\n"
        "class Outer:\n"
        "    class Inner:\n"
        "        def run(self, x: torch.Tensor):\n"
        "            return x.sum().item()  # expect: GL101\n\n"
        "def untouched(x: torch.Tensor):\n"
        "    return x.sum().item()\n"
    )
    (package / "helpers.py").write_text(
        "import torch\n\n"
        "def log(x: torch.Tensor) -> None:\n"
        "    print(x.max().item())  # expect: GL101, GL401\n"
    )
    (package / "steps.py").write_text(
        "import torch\n\n"
        "def step(x: torch.Tensor):\n"
        "    if x.sum() > 0:  # expect: GL201\n"
        "        return x\n"
        "    return -x\n"
    )


def test_capture_roots_are_regions_and_their_calls_are_followed(
    tmp_path: Path,
) -> None:
    """Declared roots (a method, an inherited method, a nested class's method, a
    function) are regions in their own files, which were not named, and what they
    call is followed; roots that name nothing are warnings, not errors."""
    _declared_project(tmp_path)
    wrapper = tmp_path / "src" / "pkg" / "wrapper.py"
    assert not found(check_project([wrapper], Settings(), 1))
    warnings: list[str] = []
    roots = [
        "pkg.model:Child.forward",  # inherited: Model.forward
        "pkg.model:Outer.Inner.run",
        "pkg.steps:step",
        "pkg.nope:f",
        "pkg.model:Model",
        "pkg.model:Model.missing",
    ]
    results = check_project(
        [wrapper],
        Settings(),
        1,
        capture_roots=roots,
        base=tmp_path,
        warn=warnings.append,
    )
    want = {
        (path.name, line, code)
        for path in (tmp_path / "src" / "pkg").glob("*.py")
        for line, code in expectations(path.read_text())
    }
    assert set(found(results)) == want
    regions = {d.region.label for r in results for d in r.diagnostics if d.region}
    assert regions == {"capture root"}
    assert len(warnings) == 3
    assert "'pkg.nope:f' names nothing: no module pkg.nope under" in warnings[0]
    assert "Model is a class in" in warnings[1] and "Model.forward" in warnings[1]
    assert "defines no function Model.missing" in warnings[2]


WRAPPERS = """\
import functools
from functools import partial

import torch


def get_compile_fn(backend):
    if backend == "cudagraphs":
        return functools.partial(torch.compile, backend="cudagraphs")
    return functools.partial(torch.compile, mode="reduce-overhead")


def by_mode(mode, dynamic=False):
    return partial(torch.compile, mode=mode, dynamic=dynamic)


def maybe(enabled):
    if enabled:
        return partial(torch.compile, mode="max-autotune")
    return lambda fn: fn


def compile_model(m):
    return torch.compile(m, options={"triton.cudagraphs": True})


def factory(mode="reduce-overhead"):
    def inner(m):
        return torch.compile(m, mode="max-autotune")

    return inner


compile_fn = partial(torch.compile, mode="reduce-overhead")
plain_fn = partial(torch.compile)
"""

USES = """\
import torch
from app import reexported
from app.compiling import (
    by_mode, compile_fn, compile_model, factory, get_compile_fn, maybe, plain_fn
)


def test_every_branch(backend):
    def foo(x: torch.Tensor):
        return x.sum().item()  # expect: GL101

    foo = get_compile_fn(backend)(foo)


def test_mode_argument(mode):
    def graphed(x: torch.Tensor):
        return x.sum().item()  # expect: GL101

    def plain(x: torch.Tensor):
        return x.sum().item()

    def unknown(x: torch.Tensor):
        return x.sum().item()

    graphed = by_mode("reduce-overhead")(graphed)
    plain = by_mode(mode="default")(plain)
    unknown = by_mode(mode)(unknown)


@compile_fn
def decorated(x: torch.Tensor):
    return x.sum().item()  # expect: GL101


def called(x: torch.Tensor):
    return x.sum().item()  # expect: GL101


def not_compiled(x: torch.Tensor):
    return x.sum().item()


fast = compile_fn(called)
slow = plain_fn(not_compiled)


@compile_model
def wrapped(x: torch.Tensor):
    return x.sum().item()  # expect: GL101


@factory()
def inner_returned(x: torch.Tensor):
    return x.sum().item()  # expect: GL101


@maybe(True)
def sometimes(x: torch.Tensor):
    return x.sum().item()  # expect: GL101


@reexported
def through_package(x: torch.Tensor):
    return x.sum().item()  # expect: GL101


class Model(torch.nn.Module):
    @get_compile_fn("inductor")
    def forward(self, x: torch.Tensor):
        return x.sum().item()  # expect: GL101
"""


def test_compile_wrappers_from_other_modules(tmp_path: Path) -> None:
    """Functions compiled through wrappers imported from another module (a helper
    returning ``partial(torch.compile, ...)``, a bound partial, a function that
    compiles its argument, a re-export): regions as the wrapper's own module says,
    in a file with no capture text of its own; a mode passed through counts only
    where it is written out, and a helper whose returns only sometimes use CUDA
    graphs gives medium confidence."""
    app = tmp_path / "app"
    app.mkdir()
    (app / "__init__.py").write_text(
        "from .compiling import compile_fn as reexported\n"
    )
    (app / "compiling.py").write_text(WRAPPERS)
    (app / "uses.py").write_text(USES)
    results = check_project([app / "uses.py"], Settings(), 1)
    assert set(found(results)) == {("uses.py", n, c) for n, c in expectations(USES)}
    regions = {
        d.line: (d.region.label, d.confidence.value)
        for r in results
        for d in r.diagnostics
        if d.region
    }
    lines = USES.splitlines()

    def body(function: str) -> int:  # the line after ``def function(``
        return next(i for i, t in enumerate(lines, 2) if f"def {function}(" in t)

    on = 'torch.compile(options={"triton.cudagraphs": True})'
    assert regions[body("wrapped")] == (on, "high")
    assert regions[body("inner_returned")] == (
        'torch.compile(mode="max-autotune")',
        "high",
    )
    assert regions[body("sometimes")] == (
        'torch.compile(mode="max-autotune")',
        "medium",
    )


def test_one_place_compiled_surely_and_maybe_is_one_region(tmp_path: Path) -> None:
    """Two wrappers compile one function at one line, one of them only on some of
    its paths: the survey lists one region there."""
    app = tmp_path / "app"
    app.mkdir()
    (app / "__init__.py").write_text("")
    (app / "compiling.py").write_text(WRAPPERS)
    (app / "uses.py").write_text(
        "import torch\nfrom app.compiling import factory, maybe\n\n\n"
        "def step(x: torch.Tensor):\n    return x.sum().item()\n\n\n"
        "def run(c):\n    f = maybe(c)(step); g = factory()(step)\n"
    )
    survey = survey_project([app / "uses.py"], Settings(), 1).survey
    at = [(r.region.line, r.region.targets) for r in survey.regions]
    assert at.count((10, ("step",))) == 1


def test_a_function_compiling_a_global_compiles_what_the_module_imports(
    tmp_path: Path,
) -> None:
    """``global forward; forward = torch.compile(forward, mode=...)`` in a function
    compiles the function the module imports: the region reaches it. (Its own
    binding of the name was taken as the only one, and the region reached
    nothing.)"""
    (tmp_path / "steps.py").write_text(
        "def forward(x):\n    return x * x.sum().item()  # expect: GL101\n"
    )
    (tmp_path / "run.py").write_text(
        "import torch\nfrom steps import forward\n\n\n"
        "def main(x):\n"
        "    global forward\n"
        '    forward = torch.compile(forward, mode="reduce-overhead")\n'
        "    return forward(x)\n"
    )
    results = check_project([tmp_path / "run.py", tmp_path / "steps.py"], Settings(), 1)
    assert found(results) == [("steps.py", 2, "GL101")]


def test_compile_sites_name_imported_wrappers_only() -> None:
    """Pass one lists functions handed to imported wrappers (relative imports
    resolved), named as the enclosing code sees them; a wrapper the module binds
    itself is its own analysis's, and a plain call of an imported function with a
    value that is no function of the module is not a site."""
    source = textwrap.dedent(
        """
        from .helpers import get_compile_fn, compile_fn, rebound
        from ..tools import other

        rebound = None

        def step(x): ...

        fast = compile_fn(step)
        value = compile_fn(data)
        again = rebound(step)

        class Model:
            @get_compile_fn("reduce-overhead", dynamic=flag)
            def forward(self, x): ...

        def test(mode):
            def inner(x): ...
            inner = other.wrap(mode, *rest)(inner)
        """
    )
    sites = compile_sites(ast.parse(source), "pkg/sub/mod.py", "pkg.sub.mod")
    assert [
        (s.function, s.compiler, s.called, s.target, s.positional, s.keywords)
        for s in sites
    ] == [
        (None, "pkg.sub.helpers.compile_fn", False, "step", (), ()),
        (
            None,
            "pkg.sub.helpers.get_compile_fn",
            True,
            "Model.forward",
            ("reduce-overhead",),
            (("dynamic", None),),
        ),
        ("test", "pkg.tools.other.wrap", True, "inner", (None,), ()),
    ]


# -- a reached module that cannot be analysed concerns the file whose region reaches it
TRAIN = """\
import torch
import pkg
from pkg import helpers

g = torch.cuda.CUDAGraph()
x = torch.zeros(4, device="cuda")
with torch.cuda.graph(g):
    y = helpers.step(x)
    z = pkg.helpers.step(x)
"""

UNANALYSABLE = {
    "GL001": b"import torch\n\ndef step(x)\n    return x.item()\n",
    "GL002": b"def step(x):\n    return x  # \xff\n",
    "GL003": b"def step(x):\n    return x.item()\n" + b"# padding\n" * 110_000,
    "GL005": b"def step(x):\n    return " + b" + ".join([b"x"] * 100_000) + b"\n",
}


def _reaching(root: Path, helpers: bytes | None, *trains: str) -> Path:
    """A project (a ``.git`` folder) whose ``trains`` each capture a call of
    ``pkg.helpers.step``; ``helpers``: that module's bytes (None: a FIFO)."""
    (root / ".git").mkdir(parents=True)
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    if helpers is None:
        os.mkfifo(root / "pkg" / "helpers.py")
    else:
        (root / "pkg" / "helpers.py").write_bytes(helpers)
    for train in trains or ("train.py",):
        (root / train).write_text(TRAIN)
    return root


@pytest.mark.parametrize("code", [*UNANALYSABLE, "GL004"])
def test_a_reached_module_that_cannot_be_analysed_is_shown_with_its_caller(
    tmp_path: Path, code: str
) -> None:
    """Only train.py is named (pre-commit, an editor): the module its region calls
    could not be analysed, and says so with the region that reaches it."""
    project = _reaching(tmp_path / "p", UNANALYSABLE.get(code))
    status, out, _ = run("check", "--no-cache", "train.py", cwd=project)
    assert status == 1
    lines = [line for line in out.splitlines() if line.startswith("pkg/helpers.py:")]
    assert len(lines) == 1, out
    assert f" {code} " in lines[0]
    assert lines[0].endswith(
        "[torch.cuda.graph region at train.py:7, reached from train.py:8 via "
        "helpers.step()]"
    )
    _, whole, _ = run("check", "--no-cache", ".", cwd=project)
    assert [line for line in whole.splitlines() if line.startswith("pkg/")] == lines


def test_reached_outcomes_in_lsp_name_the_call_that_reaches_them(
    tmp_path: Path,
) -> None:
    project = _reaching(tmp_path / "p", UNANALYSABLE["GL003"])
    _, out, _ = run("check", "--format", "lsp", "train.py", cwd=project)
    by_name = {entry["uri"].rsplit("/", 1)[1]: entry for entry in json.loads(out)}
    (diagnostic,) = by_name["helpers.py"]["diagnostics"]
    assert diagnostic["code"] == "GL003"
    assert diagnostic["data"]["region"]["path"] == "train.py"
    (hop,) = diagnostic["relatedInformation"]
    assert hop["location"]["uri"].endswith("/train.py")
    assert hop["location"]["range"]["start"] == {"line": 7, "character": 8}


def test_a_condition_over_the_budget_is_shown_at_the_call_it_guards(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``check()`` resolves, but whether it is a capture check needs ``pick``, bound
    300 times: the call it guards is followed as if it were not one, and GL005
    says so there, once, with the call of ``pick`` in ``check`` counted."""
    from graphlint.project import resolve  # noqa: PLC0415

    monkeypatch.setattr(resolve, "BUDGET", 200)
    functions = "".join(f"def f{i}():\n    return True\n" for i in range(300))
    picks = "".join(f"pick = f{i}\n" for i in range(300))
    step = "def step(x):\n    if check():\n        torch.cuda.synchronize()\n"
    check = "def check():\n    return pick()\n"
    helpers = f"import torch\n{functions}{picks}{step}{check}"
    project = _reaching(tmp_path / "p", helpers.encode())
    _, out, _ = run("check", "--no-cache", "train.py", cwd=project)
    (line,) = [line for line in out.splitlines() if " GL005 " in line]
    assert line == (
        "pkg/helpers.py:904:9: GL005 a condition of this call calls `pick`, which "
        "was not resolved within 200 steps, so the condition was not taken for a "
        "capture check; 1 more in this file went over too (line 906); the rest of "
        "the file was checked [torch.cuda.graph region at train.py:7, reached from "
        "train.py:8 via step()]"
    )
    assert "pkg/helpers.py:904:9: GL103" in out


def test_each_file_whose_regions_reach_an_unanalysed_module_is_told(
    tmp_path: Path,
) -> None:
    """a.py's region also reaches it, and comes first: z.py named alone still
    shows it, through its own region."""
    project = _reaching(tmp_path / "p", UNANALYSABLE["GL003"], "a.py", "z.py")
    _, out, _ = run("check", "--no-cache", "z.py", cwd=project)
    assert "pkg/helpers.py:1:1: GL003" in out
    assert "region at z.py:7, reached from z.py:8 via helpers.step()" in out
    assert "a.py" not in out


def test_a_reached_call_over_the_budget_is_shown_with_its_region(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The region's call resolves; the helper's own calls fan out past the budget:
    one GL005 on the helper's file, at the first of them, which says what was not
    followed and how many calls, shown with the named file's region."""
    from graphlint.project import resolve  # noqa: PLC0415

    monkeypatch.setattr(resolve, "BUDGET", 200)
    functions = [f"def f{i}(x):\n    return x\n" for i in range(300)]
    every = ", ".join(f"f{i}" for i in range(300))
    calls = "        b(x)\n        b.run(x)\n        b(x + 1)\n"
    fan = f"{''.join(functions)}def step(x):\n    for b in ({every}):\n{calls}"
    project = _reaching(tmp_path / "p", fan.encode())
    _, out, _ = run("check", "--no-cache", "train.py", cwd=project)
    (line,) = [line for line in out.splitlines() if " GL005 " in line]
    assert line == (
        "pkg/helpers.py:603:9: GL005 call of `b` not followed: resolving it took "
        "over 200 steps, so the project code it may run was not checked; 2 more in "
        "this file went over too (lines 604, 605); the rest of the file was checked "
        "[torch.cuda.graph region at train.py:7, reached from train.py:8 via step()]"
    )


def test_a_cut_binding_is_evaluated_again_only_where_it_may_differ() -> None:
    """A chain cut at the depth limit (a tensor handed down many calls) is not a
    complete value, so it is not kept for every read; but at the same depth it cuts
    where it did, and evaluating it at every read made TransformerEngine's
    resolution take 17 s. It is evaluated again at another depth, or once a
    parameter got a new argument; what reads it is cut too."""
    bindings = Bindings(lambda _: False)
    evaluated: list[str] = []

    def inner() -> list[object]:
        evaluated.append("inner")
        return bindings.too_deep()

    def outer() -> list[object]:
        evaluated.append("outer")
        return bindings.values(("local", "x"), inner, 20)

    for _ in range(3):
        assert bindings.values(("local", "x"), inner, 20) == []
    assert evaluated == ["inner"]
    bindings.values(("local", "x"), inner, 19)
    assert evaluated == ["inner", "inner"]
    bindings.values(("local", "y"), outer, 19)
    bindings.values(("local", "y"), outer, 18)  # cut too: not kept as complete
    assert evaluated == ["inner", "inner", "outer", "outer"]
    bindings.changed()
    bindings.values(("local", "x"), inner, 20)
    assert evaluated[-1] == "inner" and len(evaluated) == 5


def test_a_cut_binding_is_evaluated_again_once_what_it_reads_is_found_whole() -> None:
    """X at depth 20 reads Y one step deeper and is cut; Y found whole later, at a
    shallow depth, is what X holds at depth 20 too."""
    bindings = Bindings(lambda _: False)

    def y(depth: int) -> list[object]:
        return bindings.too_deep() if depth > 20 else ["y"]

    def x() -> list[object]:
        return bindings.values(("local", "y"), lambda: y(21), 21)

    assert bindings.values(("local", "x"), x, 20) == []
    assert bindings.values(("local", "y"), lambda: y(3), 3) == ["y"]
    assert bindings.values(("local", "x"), x, 20) == ["y"]


# -- names bound many times, some bindings reading the name itself (issue #27) ---------
REBINDINGS = [
    "{0} = {0}.float()",
    "{0} = {0}[0]",
    "{0} = {0}.to(x)",
    "{0} = {0}.reshape(4)",
    "{0} = {0}.contiguous()",
    "{0} = {0}.view(-1)",
]

REBOUND = """\
import torch


class Local(torch.nn.Module):
    def forward(self, x):
        return x * x.sum().item()  # expect: GL101


class Pair(torch.nn.Module):
    def forward(self, x):
        return x.tolist()  # expect: GL101


class Attr(torch.nn.Module):
    def forward(self, x):
        return x * x.max().item()  # expect: GL101


class Global(torch.nn.Module):
    def forward(self, x):
        return x * x.min().item()  # expect: GL101


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Attr()
{attribute}

    def forward(self, x):
        return self.block(x)


glob = Global()
{glob}


def step(x, net):
    out = Local()
{local}
    q = Pair()
    k = q.view(-1)
    q = k.float()
    k = q[0]
    q = k.to(x)
    out(x)
    q(x)
    k(x)
    glob(x)
    return net(x)


x = torch.zeros(4, device="cuda")
net = Net()
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    step(x, net)
"""


@pytest.mark.parametrize("repeats", [1, 8])
def test_names_rebound_from_themselves_resolve_in_few_steps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, repeats: int
) -> None:
    """``out = out.view(...)``, ``out = out[0]`` ...: each binding that reads the
    name used to evaluate all of its bindings again, down to the depth limit, so
    six of them took 6**8 steps per call (GL005 on TransformerEngine's attention
    backends, torch._dynamo.utils.same). Each binding is now evaluated once per
    call: up to 48 of them per name, in a local, ``self.block`` and a module-level
    name, and a pair of locals that read each other, resolve within a budget of
    1,000 steps, and every model they hold is reached."""
    from graphlint.project import resolve  # noqa: PLC0415

    monkeypatch.setattr(resolve, "BUDGET", 1_000)

    def rebound(name: str, indent: str) -> str:
        lines = [indent + line.format(name) for line in REBINDINGS] * repeats
        return "\n".join(lines)

    source = REBOUND.format(
        attribute=rebound("self.block", " " * 8),
        glob=rebound("glob", ""),
        local=rebound("out", " " * 4),
    )
    (tmp_path / "case.py").write_text(source)
    results = check_project([tmp_path / "case.py"], Settings(), 1)
    got = {
        (d.line, d.code) for r in results for d in r.diagnostics if d.code != "GL703"
    }
    assert got == set(expectations(source))  # no GL005, every model reached


def test_compiled_code_is_not_followed_into_torch_modules_dynamo_skips(
    tmp_path: Path,
) -> None:
    """Dynamo skips ``torch``'s own modules unless an inline list names them: a
    call into ``torch._dynamo.*`` graph-breaks and runs eagerly, one into
    ``torch.nn.*`` is traced. A manual capture runs both."""
    for folder in ("torch", "torch/_dynamo", "torch/nn"):
        (tmp_path / folder).mkdir(exist_ok=True)
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "torch/_dynamo/helpers.py").write_text(
        "def same(a, b):\n    return bool((a - b).abs().max().item() < 1e-5)\n"
    )
    (tmp_path / "torch/nn/funcs.py").write_text(
        "def norm(x):\n    return x / x.abs().max().item()\n"
    )
    (tmp_path / "torch/_dynamo/use.py").write_text(
        "import torch\n"
        "from torch._dynamo.helpers import same\n"
        "from torch.nn.funcs import norm\n\n"
        "@torch.compile(mode='reduce-overhead')\n"
        "def f(x, y):\n"
        "    return same(x, y), norm(x)\n\n"
        "def g(x, y, graph):\n"
        "    with torch.cuda.graph(graph):\n"
        "        return same(x, y)\n"
    )
    results = check_project(sorted(tmp_path.rglob("*.py")), Settings(), 1)
    got = {
        (Path(r.path).relative_to(tmp_path).as_posix(), d.line, d.code)
        for r in results
        for d in r.diagnostics
        if d.code.startswith("GL1")
    }
    assert got == {
        ("torch/nn/funcs.py", 2, "GL101"),
        ("torch/_dynamo/helpers.py", 2, "GL101"),
    }
    manual = [
        d for r in results for d in r.diagnostics if d.path.endswith("helpers.py")
    ]
    assert all(d.region is not None and not d.region.kind.is_compile for d in manual)


CALL_SITE_TYPES = """\
    import torch


    def inner(h, scale):
        if h.sum() > 0:  # expect: GL201
            h = h * scale
        return h


    def step(x, parts, n):
        if any(t.max() > 1 for t in parts):  # expect: GL201
            n = n + 1
        return inner(x, 2.0) + n


    def mixed(v):
        if v.sum() > 0:  # a host tensor on one call: not known to be on the device
            return v
        return v


    def check(w):
        return w.max() > 0


    x = torch.zeros(4, device="cuda")
    parts = [torch.zeros(4, device="cuda") for _ in range(3)]
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        step(x, parts, 1)
        mixed(x)
        mixed(torch.zeros(4))
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = step(x, parts, 1)
        mixed(x)
        mixed(torch.zeros(4))
    check(torch.zeros(4))  # outside capture: types nothing
    g.replay()
"""


def test_parameters_are_typed_by_what_the_calls_under_capture_pass(
    tmp_path: Path,
) -> None:
    """An unannotated parameter that every call under capture passes a device
    tensor (or a list of them) is one, also when a caller passes on its own
    parameter; one call passing a host tensor leaves it unknown."""
    source = textwrap.dedent(CALL_SITE_TYPES)
    (tmp_path / "case.py").write_text(source)
    results = check_project([tmp_path / "case.py"], Settings(), 1)
    got = {(d.line, d.code) for r in results for d in r.diagnostics}
    assert got == set(expectations(source))


def test_a_capture_check_helper_imported_into_a_region_guards_its_block(
    tmp_path: Path,
) -> None:
    """``if not is_capturing(): print(...)`` in the region itself, with
    ``is_capturing`` defined in another module of the project, keeps the block out
    of the capture; a helper that checks something else does not."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "util.py").write_text(
        "import os\nimport torch\n\n"
        "def is_capturing() -> bool:\n"
        "    return torch.cuda.is_current_stream_capturing()\n\n"
        "def is_debug() -> bool:\n"
        "    return bool(os.environ.get('DEBUG'))\n"
    )
    source = textwrap.dedent(
        """\
        import torch

        from pkg.util import is_capturing, is_debug

        x = torch.zeros(4, device="cuda")
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            y = x * 2
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = x * 2
            if not is_capturing():
                print("loss", y.sum().item())
            if is_debug():
                print("debug")  # expect: GL401
        g.replay()
        """
    )
    (pkg / "train.py").write_text(source)
    results = check_project(sorted(pkg.glob("*.py")), Settings(), 1)
    got = {(Path(r.path).name, d.line, d.code) for r in results for d in r.diagnostics}
    assert got == {("train.py", line, code) for line, code in expectations(source)}


OVERRIDE_BASE = """\
    import torch


    class Runner:
        def __init__(self):
            self.x = torch.zeros(4, device="cuda")
            self.g = torch.cuda.CUDAGraph()

        def step(self, x):
            return x * 2

        def capture(self):
            with torch.cuda.graph(self.g):
                self.out = self.step(self.x)
"""


def test_a_base_method_runs_the_overrides_of_its_subclasses(tmp_path: Path) -> None:
    """``self.step(x)`` in a base class's capture runs every subclass's ``step``:
    one in the same module always, one in another module in preview (the files
    that name the base are read for them)."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    same = textwrap.dedent(OVERRIDE_BASE) + textwrap.dedent(
        """\


        class Near(Runner):
            def step(self, x):
                return x * x.sum().item()  # expect: GL101
        """
    )
    (pkg / "base.py").write_text(same)
    far = textwrap.dedent(
        """\
        from pkg.base import Runner


        class Far(Runner):
            def step(self, x):
                return x * x.max().item()  # expect: GL101
        """
    )
    (pkg / "far.py").write_text(far)
    files = sorted(pkg.glob("*.py"))

    def found(settings: Settings) -> set[tuple[str, int, str]]:
        results = check_project(files, settings, 1)
        return {
            (Path(r.path).name, d.line, d.code) for r in results for d in r.diagnostics
        }

    near = {("base.py", line, code) for line, code in expectations(same)}
    assert found(Settings()) == near
    far_found = {("far.py", line, code) for line, code in expectations(far)}
    assert found(Settings(preview=True)) == near | far_found


AUTOGRAD = """\
import torch


def helper(x):
    return x * x.sum().item()


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, run, x):
        return run(x)

    @staticmethod
    def backward(ctx, grad):
        return None, grad * grad.max().item()
"""


@pytest.mark.parametrize(
    ("capture", "want"),
    [
        (  # a manual capture of the forward: the backward does not run under it
            "g = torch.cuda.CUDAGraph()\n"
            "with torch.cuda.graph(g):\n"
            "    y = Square.apply(helper, x)\n",
            {("fn.py", 5)},
        ),
        (  # graphed callables capture the backward pass too
            "class M(torch.nn.Module):\n"
            "    def forward(self, x):\n"
            "        return Square.apply(helper, x)\n\n\n"
            "m = torch.cuda.make_graphed_callables(M(), (x,))\n",
            {("fn.py", 5), ("fn.py", 15)},
        ),
    ],
)
def test_an_autograd_function_runs_its_forward_and_captured_backward(
    tmp_path: Path, capture: str, want: set[tuple[str, int]]
) -> None:
    """``Fn.apply(run, x)`` reaches ``Fn.forward(ctx, run, x)``, which gets ``run``
    (after ``ctx``), and ``Fn.backward`` where the backward pass is captured."""
    (tmp_path / "fn.py").write_text(AUTOGRAD)
    (tmp_path / "main.py").write_text(
        "import torch\n\nfrom fn import Square, helper\n\n"
        "x = torch.ones(3, device='cuda', requires_grad=True)\n" + capture
    )
    results = check_project([tmp_path / "main.py"], Settings(), 1)
    got = {
        (Path(r.path).name, d.line)
        for r in results
        for d in r.diagnostics
        if d.code == "GL101"
    }
    assert got == want


APPLIED = """\
import torch


def bad(x):
    return x.sum().item()


class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, scale, x):
        if scale is not None:
            return x * scale.item()
        return x

    @staticmethod
    def backward(ctx, grad):
        return None, grad.max().item()


class Runner:
    def apply(self, f, x):
        return f(x)


scale = Scale.apply
runner = Runner()
"""


@pytest.mark.parametrize(
    ("call", "want"),
    [
        ("runner.apply(bad, x)", {5}),  # a method named apply: no ``ctx``
        ("Scale.apply(None, x)", set()),  # None passed to ``scale``, not ``ctx``
        ("Scale.apply(x.sum(), x)", {12}),
        ("scale(x.sum(), x)", {12}),  # an alias of ``apply``: no backward here
    ],
)
def test_what_apply_passes(tmp_path: Path, call: str, want: set[int]) -> None:
    (tmp_path / "fn.py").write_text(
        APPLIED + "\n\ndef main():\n    x = torch.ones(3, device='cuda')\n"
        "    g = torch.cuda.CUDAGraph()\n    with torch.cuda.graph(g):\n"
        f"        {call}\n"
    )
    results = check_project([tmp_path / "fn.py"], Settings(), 1)
    got = {d.line for r in results for d in r.diagnostics if d.code == "GL101"}
    assert got == want


@pytest.mark.parametrize("one_line", [False, True])
def test_a_projects_own_checkpoint_in_a_graphed_callable(one_line: bool) -> None:
    """GL708 on the ``raise`` of ``if not torch.autograd._is_checkpoint_valid():``,
    written on one line or in a block."""
    check = "        if not torch.autograd._is_checkpoint_valid():"
    check += (
        " raise RuntimeError('no')\n"
        if one_line
        else "\n            raise RuntimeError('no')\n"
    )
    source = (
        "import torch\n\n\n"
        "class Ckpt(torch.autograd.Function):\n"
        "    @staticmethod\n"
        "    def forward(ctx, x):\n"
        "        return x * 2\n\n"
        "    @staticmethod\n"
        "    def backward(ctx, grad):\n" + check + "        return grad * 2\n\n\n"
        "class Block(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        return Ckpt.apply(x)\n\n\n"
        "x = torch.randn(4, device='cuda', requires_grad=True)\n"
        "block = torch.cuda.make_graphed_callables(Block(), (x,))\n"
    )
    (found,) = lint(source, "GL708")
    assert found.line == (11 if one_line else 12)
    assert found.message.startswith("`Ckpt.backward` uses reentrant checkpointing")


@pytest.mark.parametrize(
    ("graphed", "label"),
    [
        ("torch.cuda.make_graphed_callables", "make_graphed_callables"),
        (
            "transformer_engine.pytorch.make_graphed_callables",
            "make_graphed_callables of transformer_engine",
        ),
    ],
)
def test_only_pytorchs_graphed_callables_reject_reentrant_checkpoints(
    graphed: str, label: str
) -> None:
    """PyTorch's make_graphed_callables runs the backward pass with
    ``torch.autograd.grad``, which reentrant checkpoints reject; Transformer
    Engine's runs ``torch.autograd.backward``, which they support. Its regions
    say whose they are, and GL708 holds only for PyTorch's; the other rules hold
    for both."""
    source = (
        "import torch\nimport transformer_engine.pytorch\n"
        "from torch.utils.checkpoint import checkpoint\n\n\n"
        "class Block(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        y = checkpoint(torch.relu, x, use_reentrant=True)\n"
        "        return y * y.sum().item()\n\n\n"
        "x = torch.randn(4, device='cuda', requires_grad=True)\n"
        f"block = {graphed}(Block(), (x,))\n"
    )
    found = lint(source, "GL708", "GL101")
    torchs = graphed.startswith("torch.")
    assert [d.code for d in found] == (["GL708", "GL101"] if torchs else ["GL101"])
    assert all(d.region is not None and d.region.label == label for d in found)
    autocast = source.replace(
        f"block = {graphed}(", f"with torch.autocast('cuda'):\n    block = {graphed}("
    )
    (set_up,) = lint(autocast, "GL706")  # set-up rules name the region alike
    assert set_up.region is not None and set_up.region.label == label


def _one_file_reports_its_marks(root: Path, source: str) -> None:
    """``source`` checked as a project of one file reports exactly the lines it
    marks (GL703 aside: these snippets do not warm up)."""
    text = textwrap.dedent(source)
    (root / "case.py").write_text(text)
    results = check_project([root / "case.py"], Settings(), 1)
    got = {
        (d.line, d.code) for r in results for d in r.diagnostics if d.code != "GL703"
    }
    assert got == set(expectations(text))


FIELDS = """\
    import copy
    from dataclasses import dataclass, field
    from typing import Any, ClassVar

    import torch


    def bad(x):
        return x.sum().item()  # expect: GL101


    def clean(x):
        return x * 2


    def fallback(x):
        return x.max().item()  # expect: GL101


    def elsewhere(x):
        return x.min().item()


    def copied(x):
        return x.argmax().item()  # expect: GL101


    @dataclass
    class Steps:
        kind: ClassVar[str] = "steps"
        count: int = field(init=False)
        first: Any
        second: Any = fallback


    def main(x, g):
        steps = Steps(bad, second=clean)
        other = Steps(first=clean)
        unused = Steps(elsewhere)
        dup = copy.copy(Steps(copied))
        with torch.cuda.graph(g):
            steps.first(x)
            steps.second(x)
            other.second(x)
            dup.first(x)
    """


def test_dataclass_fields_hold_what_their_construction_passed(tmp_path: Path) -> None:
    """An instance of a dataclass made where the resolver sees it keeps what that
    construction passed (by position or keyword), its default where it passed
    nothing: ``steps.second`` is ``clean`` here, ``other.second`` the default, and
    what another instance holds (``unused``) is not run; a copy holds what the
    original does. ``ClassVar`` is no field, and ``field(init=False)`` no
    parameter."""
    _one_file_reports_its_marks(tmp_path, FIELDS)


CLOSURE_SELF = """\
    import torch


    class Layer(torch.nn.Module):
        def helper(self, x):
            return x.sum().item()  # expect: GL101

        def forward(self, x):
            def custom_forward(y):
                return self.helper(y)

            return custom_forward(x)


    class Own:
        def run(self, x):
            def inner(self):
                return self.helper(x)

            return inner(Other())


    class Other:
        def helper(self, x):
            return x.max().item()


    def main(x, g):
        layer = Layer()
        with torch.cuda.graph(g):
            layer(x)
    """


def test_self_in_a_function_nested_in_a_method(tmp_path: Path) -> None:
    """A closure in a method (``def custom_forward(*inputs):`` for a checkpoint)
    reads the method's ``self``: its calls are followed."""
    _one_file_reports_its_marks(tmp_path, CLOSURE_SELF)


HOST_ARGUMENT = """\
    import torch


    def use(q, kind):
        k = int(kind.item())
        return q * k


    def sync(q, kind):
        return q * int(kind.item())  # expect: GL101


    def step(q, mask_type=0):
        kind = torch.tensor([mask_type], dtype=torch.int)
        on_device = torch.zeros(1, dtype=torch.int, device="cuda")
        use(q, kind)
        return sync(q, on_device)


    def main(x, g):
        with torch.cuda.graph(g):
            step(x)
    """


def test_a_parameter_every_call_passes_a_host_tensor_is_on_the_host(
    tmp_path: Path,
) -> None:
    """``kind = torch.tensor([k])`` (no device) passed to a helper: reading it there
    is no device-to-host copy; the same read of a tensor made on the device is."""
    _one_file_reports_its_marks(tmp_path, HOST_ARGUMENT)


MODULE_ARGUMENT = """\
    import torch


    def step(model, x):
        loss = model(x).sum()
        if loss > 0:  # expect: GL201
            loss = loss * 2
        return loss


    def main(x, g):
        model = torch.nn.Linear(4, 4).cuda()
        with torch.cuda.graph(g):
            step(model, x)
    """


def test_a_parameter_every_call_passes_a_module_returns_tensors(tmp_path: Path) -> None:
    """``step(model, x)`` with an ``nn.Module``: ``model(x)`` in ``step`` is a device
    tensor, so a branch on its sum is a branch on a device tensor."""
    _one_file_reports_its_marks(tmp_path, MODULE_ARGUMENT)


GETATTR = """\
    import torch


    class Net(torch.nn.Module):
        def helper(self, x):
            return x.sum().item()  # expect: GL101

        def other(self, x):
            return x.max().item()  # expect: GL101

        def unused(self, x):
            return x.min().item()

        def forward(self, x):
            fn = getattr(self, "helper")
            return fn(x) + getattr(self, "other", None)(x)


    def main(x, g):
        net = Net()
        with torch.cuda.graph(g):
            net(x)
    """


def test_getattr_with_a_literal_name_is_the_attribute(tmp_path: Path) -> None:
    """``getattr(self, "helper")`` is ``self.helper``, bound to a name or called
    at once, with or without a default; methods it does not name stay unreached."""
    _one_file_reports_its_marks(tmp_path, GETATTR)


LIBRARY_RUNS = """\
    import pytorch_lightning as pl
    import torch
    from torch.utils.checkpoint import checkpoint


    def step(x):
        return x.sum().item()  # expect: GL101


    def closure_step(x):
        return x.max().item()  # expect: GL101


    def clean(x):
        return x * 2


    def never(x):
        return x.min().item()


    class Model(pl.LightningModule):
        def training_step(self, batch, batch_idx):
            return batch.sum().item()  # expect: GL101

        def validation_step(self, batch, batch_idx):
            return batch.mean().item()

        def optimizer_step(self, epoch, batch_idx, optimizer, optimizer_closure=None):
            with torch.cuda.graph(self.graph):
                super().optimizer_step(epoch, batch_idx, optimizer, optimizer_closure)


    def main(x, g):
        opt = torch.optim.SGD([x], lr=0.1)
        with torch.cuda.graph(g):
            checkpoint(step, x, use_reentrant=False)
            checkpoint(clean, x, use_reentrant=False)
            opt.step(lambda: closure_step(x))
        checkpoint(never, x, use_reentrant=False)
    """


def test_a_library_runs_what_it_is_given(tmp_path: Path) -> None:
    """The bundled library models: ``checkpoint(step, x)`` runs ``step``; an
    optimizer's ``step(closure)`` runs the closure; a Lightning module's
    ``optimizer_step`` runs its ``training_step`` (``super().optimizer_step``
    too), not its ``validation_step``. A call made outside the capture runs
    nothing under it."""
    _one_file_reports_its_marks(tmp_path, LIBRARY_RUNS)


def test_a_project_adds_its_own_library_models(tmp_path: Path) -> None:
    """``library-runs`` in the configuration describes a library callable the
    bundled models do not: its calls under capture reach what they are given, as
    a hand-off in the chain. Without it the call is not followed."""
    (tmp_path / "train.py").write_text(
        textwrap.dedent(
            """\
            import torch
            from runner_lib import run_step


            def step(x):
                return x.sum().item()


            def main(x, g):
                with torch.cuda.graph(g):
                    run_step(step, x)
            """
        )
    )
    code, out, _ = run("check", "--no-cache", ".", cwd=tmp_path)
    assert "GL101" not in out and "1 call not followed" in out
    (tmp_path / "pyproject.toml").write_text(
        "[tool.graphlint]\n"
        'library-runs = ["runner_lib.run_step(fn, *args, **kwargs) -> fn"]\n'
    )
    code, out, _ = run("check", "--no-cache", ".", cwd=tmp_path)
    assert code == 1, out
    assert "train.py:6:12: GL101" in out
    assert "via run_step(step, x) runs fn at train.py:11" in out


@pytest.mark.parametrize(
    ("model", "why"),
    [
        ("runner_lib.run_step(fn)", "expected"),
        ("run_step(fn) -> fn", "not a dotted name"),
        ("runner_lib.run_step(fn, *) -> fn", "do not parse"),
        ("runner_lib.run_step(fn) -> other", "not one of the parameters"),
        ("runner_lib.run_step(fn) -> self.hook", "needs a method"),
        ("runner_lib.run_step(fn) -> fn()", "neither a parameter"),
    ],
)
def test_a_library_model_that_does_not_parse_is_a_configuration_error(
    tmp_path: Path, model: str, why: str
) -> None:
    (tmp_path / "train.py").write_text("x = 1\n")
    (tmp_path / "pyproject.toml").write_text(
        f"[tool.graphlint]\nlibrary-runs = [{json.dumps(model)}]\n"
    )
    code, out, err = run("check", ".", cwd=tmp_path)
    assert code == 2
    assert "'library-runs'" in out + err and why in out + err
    assert "Traceback" not in out + err


SCHEDULES = """\
class Warmup:
    def __init__(self, optimizer, steps=10):
        self.optimizer = optimizer
        self.steps = steps

    def step(self):
        for group in self.optimizer.param_groups:
            group["lr"] = 0.1


def set_lr(opt, lr):
    opt.param_groups[0]["lr"] = lr
"""

SCHEDULED = """\
import torch

from pkg import sched as schedules
from pkg.sched import Warmup, set_lr


def main():
    model = torch.nn.Linear(8, 8).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    other = torch.optim.SGD(model.parameters(), lr=0.1)
    warm = Warmup(opt, steps=100)
    eager = Warmup(other)
    x = torch.randn(4, 8, device="cuda")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        for _ in range(3):
            model(x).sum().backward()
            opt.step()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        model(x).sum().backward()
        opt.step()
    for i in range(30):
        g.replay()
        warm.step()
        eager.step()
        set_lr(opt, 0.01)
        schedules.set_lr(lr=0.5, opt=opt)
        set_lr(other, 0.01)
"""


def test_a_scheduler_in_another_module_changes_the_captured_learning_rate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GL407 asks the project pass about the calls outside the region that are given
    the captured optimizer: a scheduler class of another module keeping it in
    ``self.optimizer`` from its constructor, and a helper given it as a parameter
    (by position or keyword), each say where they set the learning rate. The same
    calls given an optimizer whose step is not captured stay quiet; the file named
    alone and a warm cache say the same."""
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "sched.py").write_text(SCHEDULES)
    (tmp_path / "pkg" / "train.py").write_text(SCHEDULED)
    monkeypatch.setenv("GRAPHLINT_CACHE_DIR", str(tmp_path / "cache"))
    code, out, _ = run("check", ".", cwd=tmp_path)
    found = [line.split(" changes")[0] for line in out.splitlines() if "GL407" in line]
    assert found == [
        "pkg/train.py:26:9: GL407 `warm.step()`",
        "pkg/train.py:28:9: GL407 `set_lr(opt, 0.01)`",
        "pkg/train.py:29:9: GL407 `schedules.set_lr(lr=0.5, opt=opt)`",
    ]
    assert code == 1
    assert "(set at pkg/sched.py:8)" in out and "(set at pkg/sched.py:12)" in out
    assert run("check", ".", cwd=tmp_path)[1] == out  # from the cache
    alone = run("check", "--no-cache", "pkg/train.py", cwd=tmp_path)[1]
    assert [line for line in alone.splitlines() if "GL407" in line] == [
        line for line in out.splitlines() if "GL407" in line
    ]


def test_a_parameter_annotated_with_a_base_class_runs_its_overrides(
    tmp_path: Path,
) -> None:
    """``opt: BaseOptimizer`` may hold any subclass: the call of its method under
    capture reaches the overrides (of the base's own module; across the project in
    preview), up to a bound, and a base too common to say which runs reaches only
    its own method."""
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    many = "".join(
        f"\n\nclass Quiet{i}(Base):\n    def step(self):\n        return None\n"
        for i in range(9)
    )
    (tmp_path / "pkg" / "opt.py").write_text(
        "class BaseOptimizer:\n"
        "    def step(self):\n"
        "        raise NotImplementedError\n\n\n"
        "class Fused(BaseOptimizer):\n"
        "    def step(self, norm):\n"
        "        return norm.item()\n\n\n"
        "class Base:\n"
        "    def step(self):\n"
        "        return None\n\n\n"
        "class Loud(Base):\n"
        "    def step(self, norm):\n"
        "        return norm.item()\n" + many
    )
    (tmp_path / "pkg" / "train.py").write_text(
        "import torch\n\n"
        "from pkg.opt import Base, BaseOptimizer\n\n\n"
        "def capture(opt: BaseOptimizer, other: Base, norm: torch.Tensor):\n"
        "    g = torch.cuda.CUDAGraph()\n"
        "    with torch.cuda.graph(g):\n"
        "        opt.step(norm)\n"
        "        other.step(norm)\n"
        "    return g\n"
    )
    results = check_project(sorted(tmp_path.rglob("*.py")), Settings(), 1)
    found = [
        (Path(r.path).name, d.line, d.code) for r in results for d in r.diagnostics
    ]
    assert found == [("opt.py", 8, "GL101")]
    via = next(d for r in results for d in r.diagnostics)
    assert via.region is not None and via.region.via[-1].function == "Fused.step()"


def test_what_a_factory_returns_is_its_return_annotation(tmp_path: Path) -> None:
    """``get_optimizer(...) -> BaseOptimizer`` gives an instance of the class or of
    one derived from it; an annotation naming no project class leaves the result
    untracked, as before."""
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "opt.py").write_text(
        "import torch\n\n\n"
        "class BaseOptimizer:\n"
        "    def step(self, norm):\n"
        "        raise NotImplementedError\n\n\n"
        "class Fused(BaseOptimizer):\n"
        "    def step(self, norm):\n"
        "        return norm.item()\n\n\n"
        "def get_optimizer(kind) -> BaseOptimizer:\n"
        "    return REGISTRY[kind]()\n\n\n"
        "def get_tensor(kind) -> torch.Tensor:\n"
        "    return REGISTRY[kind]()\n\n\n"
        "REGISTRY = {}\n"
    )
    (tmp_path / "pkg" / "train.py").write_text(
        "import torch\n\n"
        "from pkg.opt import get_optimizer, get_tensor\n\n\n"
        "def capture(norm: torch.Tensor):\n"
        "    opt = get_optimizer('fused')\n"
        "    t = get_tensor('x')\n"
        "    g = torch.cuda.CUDAGraph()\n"
        "    with torch.cuda.graph(g):\n"
        "        opt.step(norm)\n"
        "        t.step(norm)\n"
        "    return g\n"
    )
    code, out, _ = run("check", "--show-reach", ".", cwd=tmp_path)
    assert code == 1
    assert "pkg/opt.py:11:16: GL101" in out
    assert "reaches pkg/opt.py:10 Fused.step" in out
    assert "`t.step` not followed" in out


def test_a_base_that_leaves_a_method_to_many_subclasses_runs_them_all(
    tmp_path: Path,
) -> None:
    """``self.forward(x)`` in a base that defines no ``forward`` runs every override,
    however many: the bound is for annotations, which name a base, not for ``self``
    in a method of a class the region made."""
    subclasses = "".join(
        f"\n\nclass Sub{i}(Base):\n    def forward(self, x):\n"
        "        return x.sum().item()\n"
        for i in range(9)
    )
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "model.py").write_text(
        "class Base:\n    def run(self, x):\n        return self.forward(x)\n"
        + subclasses
    )
    (tmp_path / "train.py").write_text(
        "import torch\n\nfrom model import Sub0\n\n\n"
        "def capture(x: torch.Tensor):\n"
        "    m = Sub0()\n"
        "    g = torch.cuda.CUDAGraph()\n"
        "    with torch.cuda.graph(g):\n"
        "        m.run(x)\n"
    )
    results = check_project(sorted(tmp_path.rglob("*.py")), Settings(), 1)
    found = [d.code for r in results for d in r.diagnostics]
    assert found == ["GL101"] * 9


SETTERS = """\
class Warmup:
    def __init__(self, optimizer, steps=10):
        self.optimizer = optimizer
        self.steps = steps

    def step(self):
        for group in self.optimizer.param_groups:
            group["lr"] = 0.1


class Swapped(Warmup):
    def __init__(self, steps, optimizer):
        super().__init__(optimizer, steps)


class Inherits(Warmup):
    pass


class Forwards(Warmup):
    def __init__(self, steps, optimizer):
        super().__init__(optimizer, steps=steps)


class Explicit(Warmup):
    def __init__(self, optimizer):
        Warmup.__init__(self, optimizer)


class Keeps(Warmup):
    def __init__(self, optimizer):
        super().__init__(None)
        self.mine = optimizer


class Tools:
    @staticmethod
    def set_lr(opt, lr):
        opt.param_groups[0]["lr"] = lr

    def apply(self, opt, lr):
        opt.param_groups[0]["lr"] = lr


def set_lr_kw(*, opt, lr):
    opt.param_groups[0]["lr"] = lr


def decay(opt):
    for group in opt.param_groups:
        group["lr"] *= 0.5


def make_setter(opt):
    def setter(lr):
        opt.param_groups[0]["lr"] = lr

    return setter
"""

SETTER_CALLS = """\
def main():
    model = torch.nn.Linear(8, 8).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    inherits = Inherits(opt, 5)
    swapped = Swapped(opt, 100)
    forwards = Forwards(5, opt)
    explicit = Explicit(opt)
    keeps = Keeps(opt)
    tools = Tools()
    x = torch.randn(4, 8, device="cuda")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        for _ in range(3):
            model(x).sum().backward()
            opt.step()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        model(x).sum().backward()
        opt.step()
    for i in range(30):
        g.replay()
        inherits.step()
        swapped.step()
        forwards.step()
        explicit.step()
        keeps.step()
        Tools.set_lr(opt, 0.1)
        tools.apply(opt, 0.1)
        set_lr_kw(opt=opt, lr=0.1)
        decay(opt)
        make_setter(opt)
"""


def test_gl407_says_the_same_of_setters_in_the_file_and_in_another_module(
    tmp_path: Path,
) -> None:
    """The project's schedulers and lr helpers give the same findings whether they
    are defined beside the capture or imported: an inherited ``__init__``, one that
    hands the optimizer to its base's (``super().__init__(optimizer)``,
    ``Warmup.__init__(self, optimizer)``), a static method, a method given the
    optimizer, keyword-only parameters and ``*=``; not a subclass whose ``__init__``
    takes its parameters in another order or keeps the optimizer from its base,
    nor a function that only makes a closure that would."""
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "one.py").write_text(
        "import torch\n\n\n" + SETTERS + "\n\n" + SETTER_CALLS
    )
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "sched.py").write_text(SETTERS)
    (tmp_path / "pkg" / "train.py").write_text(
        "import torch\n\nfrom pkg.sched import Explicit, Forwards, Inherits, Keeps, "
        "Swapped, Tools, decay, make_setter, set_lr_kw\n\n\n" + SETTER_CALLS
    )
    _, out, _ = run("check", "--select", "GL407", ".", cwd=tmp_path)
    found: dict[str, list[str]] = {}
    for line in out.splitlines():
        if " GL407 " in line:
            path = line.split(":")[0]
            found.setdefault(path, []).append(line.split("`")[1])
    expected = [
        "inherits.step()",
        "forwards.step()",
        "explicit.step()",
        "Tools.set_lr(opt, 0.1)",
        "tools.apply(opt, 0.1)",
        "set_lr_kw(opt=opt, lr=0.1)",
        "decay(opt)",
    ]
    assert found == {"one.py": expected, "pkg/train.py": expected}


def test_a_package_that_rebinds_a_module_name_gives_the_function(
    tmp_path: Path,
) -> None:
    """``from pkg import grads`` where ``pkg/__init__.py`` does ``from .grads
    import grads``: the function, as Python gives it, not the module ``pkg.grads``
    (a package re-exporting a function under the name of its module)."""
    (tmp_path / "pyproject.toml").write_text("")
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from .grads import grads\n")
    (pkg / "grads.py").write_text(
        "import torch\n\n\ndef grads(x):\n    return x.sum().item()\n"
    )
    (tmp_path / "train.py").write_text(
        "import torch\n\nfrom pkg import grads\n\n\n"
        "def step(x):\n"
        "    g = torch.cuda.CUDAGraph()\n"
        "    with torch.cuda.graph(g):\n"
        "        y = grads(x)\n"
        "    return y\n"
    )
    code, out, _ = run("check", ".", cwd=tmp_path)
    assert code == 1
    assert "pkg/grads.py:5:12: GL101" in out and "via grads()" in out
