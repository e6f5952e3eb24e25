"""Suppression comments: codes and prefixes, ``# noqa: GLxxx``, GL007 for a code
that does not exist, and the comment the editor's code action writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphlint.comments import add_ignore
from tests.conftest import lint
from tests.test_cli import run

REGION = """\
import torch

x = torch.randn(8, device="cuda")
g = torch.cuda.CUDAGraph()
with torch.cuda.stream(torch.cuda.Stream()):
    x.sum()
with torch.cuda.graph(g):
    if x.sum() > x.max().item():  {comment}
        pass
"""


def codes(comment: str) -> list[str]:
    return sorted(d.code for d in lint(REGION.format(comment=comment)))


def test_a_line_without_comment_has_both() -> None:
    assert codes("") == ["GL101", "GL201"]


@pytest.mark.parametrize(
    ("comment", "left"),
    [
        ("# graphlint: ignore", []),
        ("# graphlint: ignore[GL101]", ["GL201"]),
        ("# graphlint: ignore[GL1]", ["GL201"]),  # a prefix
        ("# graphlint: ignore[gl2, GL101]", []),
        ("# graphlint: ignore[GL]", []),
        ("# noqa: GL101", ["GL201"]),
        ("# noqa: E501, GL2", ["GL101"]),  # other tools' codes are theirs
        ("# noqa:GL101,GL201", []),
        ("# noqa", ["GL101", "GL201"]),  # a bare noqa is for style checks
        ("# noqa: E501", ["GL101", "GL201"]),
        ("# type: ignore  # graphlint: ignore[GL101]", ["GL201"]),
    ],
)
def test_suppressions(comment: str, left: list[str]) -> None:
    assert codes(comment) == left


def test_an_unknown_code_is_gl007_where_it_is_written() -> None:
    found = lint(REGION.format(comment="# graphlint: ignore[GL1O1, GL201]"))
    assert sorted(d.code for d in found) == ["GL007", "GL101"]
    (unknown,) = [d for d in found if d.code == "GL007"]
    line = REGION.format(comment="# graphlint: ignore[GL1O1, GL201]").splitlines()[7]
    assert (unknown.line, unknown.col) == (8, line.index("GL1O1"))
    assert "`GL1O1` in a suppression comment is no graphlint code" in unknown.message
    assert sorted(d.code for d in lint(REGION.format(comment="# noqa: GL9"))) == [
        "GL007",
        "GL101",
        "GL201",
    ]


def test_gl007_in_a_file_with_no_region(tmp_path: Path) -> None:
    """Such a file is settled without being parsed; its comments are still read."""
    (tmp_path / "plain.py").write_text("x = 1  # graphlint: ignore[GL1O1]\n")
    code, out, _ = run("check", "--no-cache", "plain.py", cwd=tmp_path)
    assert code == 1 and "plain.py:1:28: GL007" in out
    assert (
        run("check", "--no-cache", "--ignore", "GL007", "plain.py", cwd=tmp_path)[0]
        == 0
    )


@pytest.mark.parametrize(
    ("line", "changed"),
    [
        ("    y = x.item()", "    y = x.item()  # graphlint: ignore[GL101]"),
        ("    y = x.item()   ", "    y = x.item()  # graphlint: ignore[GL101]"),
        (
            "y = f(x)  # graphlint: ignore[GL201]",
            "y = f(x)  # graphlint: ignore[GL201, GL101]",
        ),
        ("y = f(x)  # graphlint: ignore[GL101] why", None),
        ("y = f(x)  # graphlint: ignore[gl101]", None),
        ("y = f(x)  # graphlint: ignore", None),
        ("y = f(x) + \\", None),  # a continued line holds no comment
    ],
)
def test_add_ignore(line: str, changed: str | None) -> None:
    assert add_ignore(line, "GL101") == changed


def test_unused_suppressions_are_gl008_when_enabled(tmp_path: Path) -> None:
    """Judged after every pass: the suppression in model.py is used by the finding
    that the region in train.py causes there."""
    from tests.test_cli import _package  # noqa: PLC0415

    root = _package(tmp_path)
    model = root / "pkg" / "model.py"
    model.write_text(
        "def step(x):\n"
        "    y = x * 2  # graphlint: ignore[GL101]\n"
        "    z = y + 1  # graphlint: ignore\n"
        "    w = z - 1  # noqa: E501, GL1, GL2\n"
        "    return x.sum().item()  # graphlint: ignore[GL101, GL201]\n"
    )
    out = run("check", "--no-cache", ".", cwd=root)[1]
    assert "GL008" not in out  # off by default
    _, out, _ = run("check", "--no-cache", "--extend-select", "GL008", ".", cwd=root)
    found = [
        line.split(": ", 1)[0] + ": " + line.split(": ")[1]
        for line in out.splitlines()
        if "GL008" in line
    ]
    assert found == [
        "pkg/model.py:2:16: GL008 suppression of GL101 is unused",
        "pkg/model.py:3:16: GL008 suppression of every code is unused",
        "pkg/model.py:4:16: GL008 suppression of GL1, GL2 is unused",
        "pkg/model.py:5:28: GL008 suppression of GL201 is unused",
    ]
    # disabled codes are not judged
    out = run(
        "check", "--no-cache", "--select", "GL008,GL101", "pkg/model.py", cwd=root
    )[1]
    assert "suppression of GL201" not in out and "suppression of GL1, GL2" not in out
    assert "suppression of GL1 is unused" in out


def test_a_rule_name_stands_for_its_code(tmp_path: Path) -> None:
    """Where a code is written (flags, configuration, comments), its rule's name does
    as well."""
    assert codes("# graphlint: ignore[device-to-host-copy]") == ["GL201"]
    (tmp_path / "bad.py").write_text(REGION.format(comment=""))
    out = run(
        "check", "--no-cache", "--select", "tensor-truth-value", ".", cwd=tmp_path
    )[1]
    assert "GL201" in out and "GL101" not in out
    (tmp_path / "graphlint.toml").write_text('ignore = ["Tensor-Truth-Value"]\n')
    out = run("check", "--no-cache", ".", cwd=tmp_path)[1]
    assert "GL101" in out and "GL201" not in out
