"""Pass one settles files whose text names nothing a capture region needs without
parsing them, unless a compile wrapper elsewhere could capture a function of theirs."""

from __future__ import annotations

from pathlib import Path

from graphlint.candidates import screen
from graphlint.settings import Settings
from tests.conftest import WARMED, graphlint

BROKEN = "def helper(:\n"  # no region text: parsed only when compile sites matter
HAZARD = WARMED + "    y = x.item()\n"
WRAPPER = """\
import functools
import torch
fast = functools.partial(torch.compile, mode="reduce-overhead")
"""
COMPILED = """\
from pkg.wrappers import fast


@fast
def step(x):
    return x.sum().item()
"""


def test_screen_settles_what_it_can_without_parsing(tmp_path: Path) -> None:
    settings = Settings(enabled=Settings().enabled | {"GL006"})  # off by default
    for name, text in {
        "plain.py": "x = 1\n",
        "broken.py": BROKEN,
        "hazard.py": HAZARD,
        "wrapper.py": WRAPPER,
        "empty.py": "",
        "latin.py": "# -*- coding: ascii -*-\nx = 'é'\n",
    }.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    plain = screen(tmp_path / "plain.py", settings)
    assert plain.result is not None and plain.result.diagnostics == ()
    assert plain.parsable and not plain.compiles
    assert screen(tmp_path / "broken.py", settings).parsable  # not parsed here
    hazard = screen(tmp_path / "hazard.py", settings)
    assert hazard.result is None and not hazard.compiles
    wrapper = screen(tmp_path / "wrapper.py", settings)
    assert wrapper.result is None and wrapper.compiles
    empty = screen(tmp_path / "empty.py", settings)
    assert empty.result is not None
    assert [d.code for d in empty.result.diagnostics] == ["GL006"]
    latin = screen(tmp_path / "latin.py", settings)
    assert latin.result is not None
    assert [d.code for d in latin.result.diagnostics] == ["GL002"]


def _codes(out: str) -> set[tuple[str, str]]:
    found = set()
    for line in out.splitlines():
        parts = line.split(":")
        if len(parts) > 3 and parts[3].strip().startswith("GL"):
            found.add((parts[0], parts[3].split()[0]))
    return found


def test_a_whole_project_without_compile_settings_parses_only_candidates(
    tmp_path: Path,
) -> None:
    (tmp_path / "broken.py").write_text(BROKEN)
    (tmp_path / "train.py").write_text(HAZARD)
    done = graphlint("check", "--no-cache", ".", cwd=tmp_path)
    assert _codes(done.stdout) == {("train.py", "GL101")}
    assert "2 files checked" in done.stdout


def test_a_compile_setting_anywhere_parses_every_file(tmp_path: Path) -> None:
    """A function of any file may be compiled through a wrapper another module
    defines: then every file is parsed, and a syntax error is reported."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "wrappers.py").write_text(WRAPPER)
    (package / "steps.py").write_text(COMPILED)
    (package / "broken.py").write_text(BROKEN)
    done = graphlint("check", "--no-cache", ".", cwd=tmp_path)
    found = _codes(done.stdout)
    assert ("pkg/steps.py", "GL101") in found  # compiled through pkg.wrappers.fast
    assert ("pkg/broken.py", "GL001") in found


def test_a_compile_setting_without_a_wrapper_parses_no_other_file(
    tmp_path: Path,
) -> None:
    """A module that compiles its own function with CUDA graphs defines no wrapper
    another file could use: the files without region text stay unparsed."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "fast.py").write_text(
        "import torch\n\n\n@torch.compile(mode='reduce-overhead')\n"
        "def step(x):\n    return x.sum().item()\n"
    )
    (package / "broken.py").write_text(BROKEN)
    done = graphlint("check", "--no-cache", ".", cwd=tmp_path)
    assert _codes(done.stdout) == {("pkg/fast.py", "GL101")}


def test_a_package_checked_alone_is_whole(tmp_path: Path) -> None:
    """Checking one package of a folder of packages (``torch`` in site-packages):
    the packages beside it are other projects, whose wrappers it does not use."""
    site = tmp_path / "site"
    for name in ("mine", "theirs"):
        (site / name).mkdir(parents=True)
        (site / name / "__init__.py").write_text("")
    (site / "mine" / "broken.py").write_text(BROKEN)
    (site / "theirs" / "wrappers.py").write_text(WRAPPER)
    done = graphlint("check", "--no-cache", "--exit-zero", "mine", cwd=site)
    assert _codes(done.stdout) == set()
    done = graphlint("check", "--no-cache", "mine/broken.py", cwd=site)
    assert _codes(done.stdout) == {("mine/broken.py", "GL001")}  # not the package


def test_files_named_alone_are_parsed(tmp_path: Path) -> None:
    """Checking some files of a project, graphlint cannot know that no module
    elsewhere compiles with CUDA graphs: the files named are parsed."""
    (tmp_path / "broken.py").write_text(BROKEN)
    done = graphlint("check", "--no-cache", "broken.py", cwd=tmp_path)
    assert _codes(done.stdout) == {("broken.py", "GL001")}


def test_pathological_text_is_screened_in_linear_time(tmp_path: Path) -> None:
    """The collecting process screens every file without a time limit of its own:
    text built to make a backtracking search quadratic must not slow it (the first
    file took minutes with the obvious pattern)."""
    for index, text in enumerate(
        [
            "a" + "cuda" * 200_000 + " import (",
            ".cuda" * 150_000 + " import x",
            "x = 1  # " + "graph " * 150_000,
            "\n".join(["graph"] * 150_000),
        ]
    ):
        (tmp_path / f"f{index}.py").write_text(text)
    graphlint("check", "--no-cache", "--exit-zero", ".", cwd=tmp_path, timeout=60)


def test_a_mode_that_captures_nothing_is_no_compile_setting(tmp_path: Path) -> None:
    """``max-autotune-no-cudagraphs`` makes no CUDA graph: a file that captures
    (a candidate) and compiles with that mode writes no compile setting, which
    would have every file parsed for the wrappers it might define."""
    path = tmp_path / "train.py"
    path.write_text(
        WRAPPER.replace("reduce-overhead", "max-autotune-no-cudagraphs") + HAZARD
    )
    seen = screen(path, Settings())
    assert seen.result is None and not seen.compiles
    path.write_text(WRAPPER.replace("reduce-overhead", "max-autotune") + HAZARD)
    assert screen(path, Settings()).compiles
