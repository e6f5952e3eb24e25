"""What the analysis saw: the summary line tells "clean" from "saw nothing", and
``--show-reach`` lists the regions, what they reach and the calls not followed."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from graphlint.cache import FORMAT
from graphlint.diagnostics import (
    ReachedFunction,
    Reason,
    RegionKind,
    RegionReach,
    RegionRef,
    Survey,
    Unfollowed,
)
from graphlint.output.lsp import format_lsp
from graphlint.output.text import format_text
from graphlint.project.survey import survey_project
from graphlint.settings import Settings
from tests.test_cli import run
from tests.test_hostile_output import HOSTILE, NOT_UTF8, unsafe

TRAIN = textwrap.dedent(
    """\
    import torch
    import extlib
    from helpers import scale


    def apply(x, fn):
        return fn(x)


    x = torch.randn(4, device="cuda")
    g = torch.cuda.CUDAGraph()
    with torch.cuda.stream(torch.cuda.Stream()):
        scale(x)
    with torch.cuda.graph(g):
        y = scale(x)
        z = mystery(x)
        w = extlib.work(x)
        v = apply(x, lambda t: t + 1)
        u = torch.relu(x)
    """
)
HELPERS = "def scale(t):\n    return t * 2\n"
HAZARD = "import torch\n\n\ndef scale(t):\n    torch.cuda.synchronize()\n    return t\n"
EXTLIB = HAZARD.replace("scale", "work")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """train.py captures; it calls helpers.py (followed), a name bound nowhere,
    extlib (in vendor/, outside the checked files) and apply, whose ``fn`` is a
    parameter."""
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "helpers.py").write_text(HELPERS)
    (tmp_path / "vendor").mkdir()
    (tmp_path / "vendor" / "extlib.py").write_text(EXTLIB)
    (tmp_path / "pyproject.toml").write_text('[tool.graphlint]\nexclude = ["vendor"]\n')
    return tmp_path


def test_summary_line_without_regions(tmp_path: Path) -> None:
    (tmp_path / "plain.py").write_text("import torch\n\nprint(torch.ones(2).sum())\n")
    code, out, _ = run("check", ".", cwd=tmp_path)
    assert code == 0
    assert out.startswith("No capture regions found in 1 file checked: nothing to ")
    assert "No CUDA-graph capture hazards" not in out
    code, out, _ = run("check", "--show-reach", ".", cwd=tmp_path)
    assert "Capture regions (0):\n  (none)\nCalls not followed (0):\n  (none)" in out


def test_summary_line_with_regions_clean_and_not(tree: Path) -> None:
    code, out, _ = run("check", ".", cwd=tree)
    assert code == 0
    assert out == (
        "No CUDA-graph capture hazards found in 1 capture region (2 files checked); "
        "3 calls not followed (--show-reach).\n"
    )
    (tree / "helpers.py").write_text(HAZARD)
    code, out, _ = run("check", ".", cwd=tree)
    assert code == 1
    assert "helpers.py:5:5: GL10" in out
    assert out.endswith(
        "Found 1 diagnostic (1 error) in 1 of 2 files checked; 1 capture region, "
        "3 calls not followed (--show-reach).\n"
    )


def test_show_reach_text(tree: Path) -> None:
    code, out, _ = run("check", "--show-reach", ".", cwd=tree)
    assert code == 0
    listing, summary = out.rsplit("\n\n", 1)
    assert listing.splitlines() == [
        "Capture regions (1):",
        "  train.py:14: torch.cuda.graph region",
        "    reaches helpers.py:1 scale",
        "    reaches train.py:6 apply",
        "Calls not followed (3):",
        "  train.py:7:12: `fn` not followed, parameter: `fn` is a parameter of `apply`",
        "  train.py:16:9: `mystery` not followed, unresolved name: `mystery` is "
        "bound nowhere in `train` that graphlint sees",
        "  train.py:17:9: `extlib.work` not followed, outside the checked files: "
        "module `extlib` is not under the source roots",
    ]
    # listed, the hint to list them is dropped
    assert summary == (
        "No CUDA-graph capture hazards found in 1 capture region (2 files checked); "
        "3 calls not followed.\n"
    )


def test_a_source_root_brings_the_outside_module_in(tree: Path) -> None:
    (tree / "pyproject.toml").write_text(
        '[tool.graphlint]\nexclude = ["vendor"]\nsource-roots = ["vendor"]\n'
    )
    code, out, _ = run("check", "--show-reach", "train.py", cwd=tree)
    assert code == 0  # vendor/ is excluded: reached, listed, not analysed
    assert "    reaches vendor/extlib.py:4 work (excluded: not analysed)" in out
    assert "extlib.work" not in out and "2 calls not followed." in out
    (tree / "pyproject.toml").write_text(
        '[tool.graphlint]\nsource-roots = ["vendor"]\n'
    )
    code, out, _ = run("check", "train.py", cwd=tree)
    assert code == 1 and "vendor/extlib.py:5:5: GL10" in out


def test_show_reach_json(tree: Path) -> None:
    _, out, _ = run("check", "--format", "lsp", ".", cwd=tree)
    assert isinstance(json.loads(out), list), "without --show-reach: the LSP list"
    code, out, _ = run("check", "--format", "lsp", "--show-reach", ".", cwd=tree)
    assert code == 0
    document = json.loads(out)
    assert sorted(document) == ["files", "reach"]
    uris = {entry["uri"] for entry in document["files"]}
    assert (tree / "train.py").resolve().as_uri() in uris
    reach = document["reach"]
    assert reach["counts"] == {
        "files": 2,
        "regions": 1,
        "unfollowed": 3,
        "reaching_nothing": 0,
    }
    (region,) = reach["regions"]
    assert region == {
        "kind": "torch.cuda.graph",
        "path": "train.py",
        "line": 14,
        "label": "torch.cuda.graph",
        "targets": [],
        "reached": [
            {
                "path": "helpers.py",
                "line": 1,
                "function": "scale",
                "excluded": False,
                "region": False,
            },
            {
                "path": "train.py",
                "line": 6,
                "function": "apply",
                "excluded": False,
                "region": False,
            },
        ],
        "handoffs": [],
    }
    assert [
        (c["line"], c["column"], c["callee"], c["reason"]) for c in reach["unfollowed"]
    ] == [
        (7, 12, "fn", "parameter"),
        (16, 9, "mystery", "unresolved name"),
        (17, 9, "extlib.work", "outside the checked files"),
    ]


def test_counts_are_the_same_with_and_without_cache_and_workers(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "user-cache"
    monkeypatch.setenv("GRAPHLINT_CACHE_DIR", str(cache))
    args = ("check", "--show-reach", "--format", "lsp", ".")
    cold = run(*args, cwd=tree)[1]
    entries = [p for p in cache.rglob("*") if p.is_file() and p.name != ".swept"]
    assert entries and all(
        json.loads(p.read_bytes())["format"] == FORMAT for p in entries
    )
    warm = run(*args, cwd=tree)[1]
    assert warm == cold
    assert run(*args[:-1], "--no-cache", ".", cwd=tree)[1] == cold
    assert run(*args[:-1], "-j", "1", ".", cwd=tree)[1] == cold
    assert run(*args[:-1], "-j", "4", ".", cwd=tree)[1] == cold
    text = run("check", ".", cwd=tree)[1]
    assert run("check", "--no-cache", ".", cwd=tree)[1] == text


def _reasons(tmp_path: Path, source: str, **kwargs: Any) -> dict[str, str]:
    """callee -> reason of each call not followed out of a region in ``source``."""
    (tmp_path / "run.py").write_text(textwrap.dedent(source))
    checked = survey_project([tmp_path / "run.py"], Settings(), 1, **kwargs)
    return {c.callee: c.reason.value for c in checked.survey.unfollowed}


def test_reasons_the_resolver_knows(tmp_path: Path) -> None:
    found = _reasons(
        tmp_path,
        """\
        import torch
        import math


        class Cache:
            def __init__(self):
                self.store = None

            def update(self, x):
                return x


        class Model(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.cache = None
                self.blocks = torch.nn.ModuleList([torch.nn.Linear(4, 4)])
                self.proj = torch.nn.Linear(4, 4)

            def forward(self, x):
                h = x + 1
                h.view(-1)
                h.flush(x)
                self.cache.update(x)
                self.blocks[0](x)
                self.proj(x)
                self.register_buffer("b", x)
                math.sqrt(2.0)
                len(x)
                cache.missing(x)
                return helper()(x)


        def helper():
            return None


        cache = Cache()
        m = Model()
        x = torch.randn(4, device="cuda")
        with torch.cuda.graph(torch.cuda.CUDAGraph()):
            m(x)
        """,
    )
    assert found == {
        "h.flush": Reason.UNTRACKED.value,
        "self.cache.update": Reason.UNTRACKED.value,
        "cache.missing": Reason.ATTRIBUTE.value,
        "self.blocks[0]": Reason.COMPUTED.value,
        "helper()": Reason.COMPUTED.value,
    }, "torch, the standard library, builtins and tensor methods are not counted"


def test_eager_and_budget_reasons(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = """\
        import torch


        class Dumper:
            def dump(self, x):
                print(x.sum().item())


        d = Dumper()
        x = torch.randn(4, device="cuda")
        with torch.cuda.graph(torch.cuda.CUDAGraph()):
            d.dump(x)
        """
    eager = frozenset({"run.Dumper.dump"})
    assert _reasons(tmp_path, source, eager=eager) == {"d.dump": "eager function"}
    from graphlint.project import resolve  # noqa: PLC0415

    monkeypatch.setattr(resolve, "BUDGET", 0)
    assert _reasons(tmp_path, source) == {"d.dump": "budget exhausted"}


def test_a_function_that_is_a_region_itself_is_marked(tmp_path: Path) -> None:
    (tmp_path / "run.py").write_text(
        textwrap.dedent(
            """\
            import torch


            def step(x):
                return x * 2


            fast = torch.compile(step, mode="reduce-overhead")
            x = torch.randn(4, device="cuda")
            with torch.cuda.graph(torch.cuda.CUDAGraph()):
                step(x)
            """
        )
    )
    code, out, _ = run("check", "--show-reach", "run.py", cwd=tmp_path)
    assert code == 0
    assert out.startswith(
        "Capture regions (2):\n"
        '  run.py:8: torch.compile(mode="reduce-overhead") region capturing step'
        " (reaches no project function)\n"
        "  run.py:10: torch.cuda.graph region\n"
        "    reaches run.py:4 step (a region itself)\n"
    )


def test_survey_output_is_escaped() -> None:
    site = RegionRef(
        RegionKind.MARKED, 3, f"marked{HOSTILE}", NOT_UTF8, targets=(HOSTILE,)
    )
    survey = Survey(
        (RegionReach(site, (ReachedFunction(NOT_UTF8, 4, f"f{HOSTILE}"),)),),
        (Unfollowed(NOT_UTF8, 5, 0, HOSTILE, Reason.UNRESOLVED, f"`{HOSTILE}`"),),
    )
    for color in (False, True):
        text = format_text([], color, survey=survey, show_reach=True)
        assert unsafe(text.replace("\x1b[1m", "").replace("\x1b[0m", "")) == []
        text.encode("utf-8")
    document = json.loads(format_lsp([], survey=survey, show_reach=True))
    assert document["reach"]["unfollowed"][0]["path"] == "bad\\xffname.py"
    assert document["reach"]["unfollowed"][0]["callee"] == HOSTILE


def test_a_function_compiled_by_a_wrapper_of_another_module_is_a_region(
    tmp_path: Path,
) -> None:
    """``@compiled`` with ``compiled`` imported from a module that compiles with CUDA
    graphs is a region like any other: counted, listed with what it reaches, in a
    whole-tree run and when only its file is named."""
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "wrap.py").write_text(
        "import torch\n\n\ndef compiled(fn):\n"
        '    return torch.compile(fn, mode="reduce-overhead")\n'
    )
    (tmp_path / "pkg" / "model.py").write_text(
        "import torch\n\nfrom pkg.wrap import compiled\n\n\n@compiled\n"
        "def step(x: torch.Tensor):\n    if x.sum() > 0:\n        return x * 2\n"
        "    return x\n"
    )
    region = (
        'pkg/model.py:6: torch.compile(mode="reduce-overhead") region capturing '
        "step\n    reaches pkg/model.py:7 step\n"
    )
    _, whole, _ = run("check", "--show-reach", ".", cwd=tmp_path)
    assert region in whole and "2 capture regions" in whole
    _, alone, _ = run("check", "--show-reach", "pkg/model.py", cwd=tmp_path)
    assert region in alone and "1 of 1 file checked; 1 capture region." in alone
