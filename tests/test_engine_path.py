"""One engine path: ``lint_source`` checks a text as ``graphlint check PATH`` checks
that file alone (issue #28), so the fixtures, the doc examples and the snippets of
the tests see what users see."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from graphlint.engine import lint_source
from tests.conftest import FIXTURES
from tests.test_cli import run

HELPER = """\
import torch


def helper(x):
    return x.sum().item()


def main():
    x = torch.ones(3, device="cuda")
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        helper(x)
"""


def test_a_region_call_into_the_same_file_is_followed() -> None:
    (found,) = lint_source(HELPER, "t.py")
    assert (found.path, found.line, found.code) == ("t.py", 5, "GL101")
    assert found.region is not None and found.region.line == 11
    assert [hop.function for hop in found.region.via] == ["helper()"]


def test_the_text_given_is_checked_not_the_file(tmp_path: Path) -> None:
    path = tmp_path / "t.py"
    path.write_text("x = 1\n")
    (found,) = lint_source(HELPER, str(path))
    assert found.code == "GL101"
    assert lint_source(textwrap.dedent("y = 2\n"), str(path)) == []


# fixtures whose findings come from calls followed into the same file, a capture
# that a runner makes on its first call, and compile wrappers
SAMPLES = [
    FIXTURES / "GL101-device-to-host-copy" / "bad.py",
    FIXTURES / "GL703-capture-without-warmup" / "bad_mode_switch.py",
    FIXTURES / "GL303-graph-output-kept" / "bad_compiled.py",
    *sorted((FIXTURES / "_precision").glob("p_*.py"))[:3],
]


def _shown(path: str, line: int, col: int, code: str, message: str) -> str:
    return f"{Path(path).as_posix()}:{line}:{col}: {code} {message}"


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_lint_source_and_the_cli_agree(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shown = str(path.relative_to(FIXTURES.parent))
    code, out, _ = run(
        "check",
        "--format",
        "json",
        "--no-cache",
        "--exit-zero",
        shown,
        cwd=FIXTURES.parent,
    )
    assert code == 0
    cli = sorted(
        _shown(d["path"], d["line"], d["column"], d["code"], d["message"])
        for d in json.loads(out)
    )
    monkeypatch.chdir(FIXTURES.parent)
    found = lint_source(path.read_text(encoding="utf-8"), shown)
    lib = sorted(_shown(d.path, d.line, d.col + 1, d.code, d.message) for d in found)
    assert lib == cli
    assert lib, "the sample has findings"


def test_the_project_pass_takes_the_tree_facts_of_pass_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A file whose regions call its own functions is analysed twice, on one tree
    (``engine._PARSED``): its scopes and reaching bindings are computed once, and
    what is found is what two analyses from scratch find."""
    from graphlint import engine  # noqa: PLC0415
    from graphlint.facts.analysis import TreeFacts  # noqa: PLC0415

    made: list[object] = []
    real = TreeFacts.of.__func__  # type: ignore[attr-defined]

    def counted(
        cls: type[TreeFacts], module: object, package: str | None, *sites: object
    ) -> object:
        made.append(module)
        return real(cls, module, package, *sites)

    monkeypatch.setattr(TreeFacts, "of", classmethod(counted))
    shared = lint_source(HELPER, "t.py")
    assert len(made) == 1

    class Forgetful(dict[str, object]):
        def __setitem__(self, key: str, value: object) -> None:
            pass

    monkeypatch.setattr(engine, "_PARSED", Forgetful())  # each pass parses anew
    made.clear()
    assert lint_source(HELPER, "t.py") == shared
    assert len(made) == 2
