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
        ("# GraphLint: Ignore[GL101]", ["GL201"]),  # in any case
        ("#NOQA:gl101", ["GL201"]),
        ("# fmt: skip  # NoQA : e501, Gl201", ["GL101"]),
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


# -- a whole file: ``# graphlint: ignore-file`` ------------------------------------


def file_codes(top: str, comment: str = "", *enabled: str) -> list[str]:
    source = top + "\n" + REGION.format(comment=comment)
    return sorted(d.code for d in lint(source, *enabled))


@pytest.mark.parametrize(
    ("top", "left"),
    [
        ("# graphlint: ignore-file", []),
        ("# graphlint: ignore-file[GL101]", ["GL201"]),
        ("# graphlint: ignore-file[GL1]", ["GL201"]),  # a prefix
        ("# Graphlint: Ignore-File[gl2, tensor-truth-value]", ["GL101"]),
        ("#graphlint:ignore-file[GL101,GL201]", []),
        ("import os  # graphlint: ignore-file[GL101]", ["GL201"]),  # after code
        ("def f():\n    pass  # graphlint: ignore-file[GL2]", ["GL101"]),  # indented
        ("# graphlint: ignore-file[GL3]", ["GL101", "GL201"]),
        ("# graphlint: ignore-files", ["GL101", "GL201"]),  # not this directive
        ("# see `# graphlint: ignore-file` in the README", ["GL101", "GL201"]),
        ("import os  # noqa: F401  # graphlint: ignore-file", ["GL101", "GL201"]),
        ('"""# graphlint: ignore-file"""', ["GL101", "GL201"]),  # a string
    ],
)
def test_ignore_file(top: str, left: list[str]) -> None:
    assert file_codes(top) == left


def test_ignore_file_and_a_line_comment_together() -> None:
    """Each finding is dropped once, by its line's comment first."""
    assert (
        file_codes("# graphlint: ignore-file[GL101]", "# graphlint: ignore[GL2]") == []
    )
    found = file_codes(
        "# graphlint: ignore-file[GL101]",
        "# graphlint: ignore[GL101]",
        "GL101",
        "GL201",
        "GL008",
    )
    assert found == ["GL008", "GL201"]  # the file's comment dropped nothing


def test_ignore_file_unknown_and_unused_codes() -> None:
    top = "# graphlint: ignore-file[GL1O1, GL101, GL3]"
    source = top + "\n" + REGION.format(comment="")
    found = lint(source, "GL007", "GL101", "GL201", "GL3")
    assert sorted(d.code for d in found) == ["GL007", "GL201"]
    (unknown,) = [d for d in found if d.code == "GL007"]
    assert (unknown.line, unknown.col) == (1, top.index("GL1O1"))
    found = lint(source, "GL101", "GL201", "GL3", "GL008")
    (unused,) = [d for d in found if d.code == "GL008"]
    assert (unused.line, unused.col) == (1, 0)
    assert unused.message.startswith("suppression of GL3 in this file is unused")
    bare = lint("# graphlint: ignore-file\nx = 1\n", "GL008")
    assert [d.message.split(":")[0] for d in bare] == [
        "suppression of every code in this file is unused"
    ]


def test_ignore_file_in_a_file_with_no_region(tmp_path: Path) -> None:
    """Settled without being parsed, such a file's comments are still judged."""
    (tmp_path / "plain.py").write_text("# graphlint: ignore-file[GL101]\nx = 1\n")
    code, out, _ = run("check", "--no-cache", "plain.py", cwd=tmp_path)
    assert code == 0
    code, out, _ = run(
        "check", "--no-cache", "--extend-select", "GL008", "plain.py", cwd=tmp_path
    )
    assert code == 1
    assert "plain.py:1:1: GL008 suppression of GL101 in this file is unused" in out


def test_reached_code_is_suppressed_by_the_file_it_is_in(tmp_path: Path) -> None:
    """A finding a region in train.py causes in model.py is dropped by model.py's
    ``ignore-file`` (even written in a function the region does not reach, which
    the project pass does not analyse), never by one in train.py."""
    from tests.test_cli import TRAIN, _package  # noqa: PLC0415

    root = _package(tmp_path)
    model = root / "pkg" / "model.py"
    train = root / "pkg" / "train.py"
    original = model.read_text()
    _, out, _ = run("check", "--no-cache", ".", cwd=root)
    assert "pkg/model.py:2:12: GL101" in out
    train.write_text("# graphlint: ignore-file[GL101]\n" + train.read_text())
    _, out, _ = run("check", "--no-cache", "--extend-select", "GL008", ".", cwd=root)
    assert "pkg/model.py:2:12: GL101" in out
    assert "pkg/train.py:1:1: GL008 suppression of GL101 in this file" in out
    train.write_text(TRAIN)
    model.write_text(
        original + "\n\ndef unreached():\n    pass  # graphlint: ignore-file[GL101]\n"
    )
    for args in ((".",), ("pkg/model.py",)):
        _, out, _ = run(
            "check", "--no-cache", "--extend-select", "GL008", *args, cwd=root
        )
        assert "GL101" not in out, out
        assert "pkg/model.py:6" not in out  # used: no GL008
