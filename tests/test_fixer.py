"""``check --fix``, ``--unsafe-fixes``, ``--diff``, ``--show-fixes``, ``--add-noqa``:
the fixer's passes (overlaps, rollbacks, the pass bound) on a stand-in linter, and the
command on real files: what is written, and what never is."""

from __future__ import annotations

import ast
import os
import re
import stat
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from graphlint import fixer
from graphlint.cli import app
from graphlint.diagnostics import (
    Applicability,
    Checked,
    Confidence,
    Diagnostic,
    Edit,
    FileResult,
    Outcome,
    Severity,
)
from graphlint.engine import lint_source
from graphlint.read import overlaid, overlay
from tests.conftest import FIXTURES
from tests.test_cli import run

FIXABLE = """\
import torch

model = torch.nn.Linear(4, 4).cuda()
opt = torch.optim.Adam(model.parameters(), lr=0.1)
x = torch.zeros(4, 4, device="cuda")
s = torch.cuda.Stream()
with torch.cuda.stream(s):
    for _ in range(3):
        model(x).sum().backward()
        opt.step()
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    model(x).sum().backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)
    opt.step()
"""
FIXED = FIXABLE.replace("lr=0.1)", "lr=0.1, capturable=True)").replace(
    ", error_if_nonfinite=True", ""
)


# -- the passes, on a stand-in linter ------------------------------------------------
def _finding(path: str, line: int, col: int, length: int, text: str) -> Diagnostic:
    return Diagnostic(
        path=path,
        code="GL999",
        name="stand-in",
        message="stand-in",
        line=line,
        col=col,
        end_line=line,
        end_col=col + length,
        severity=Severity.ERROR,
        confidence=Confidence.HIGH,
        outcome=Outcome.CAPTURE_ERROR,
        edits=(Edit(line, col, line, col + length, text),),
        applicability=Applicability.SAFE,
    )


def _linter(path: Path, rules: dict[str, str]) -> Callable[[], Checked]:
    """A linter that finds each key of ``rules`` in the file (as the fixer's overlay
    has it) and fixes it to its value."""

    def lint_once() -> Checked:
        data = overlaid(path)
        text = (data if data is not None else path.read_bytes()).decode()
        found = []
        for number, line in enumerate(text.splitlines(), 1):
            for old, new in rules.items():
                for match in re.finditer(re.escape(old), line):
                    found.append(
                        _finding(str(path), number, match.start(), len(old), new)
                    )
        return Checked([FileResult(str(path), tuple(found))])

    return lint_once


def test_overlapping_fixes_take_one_pass_each(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    path.write_text("x = 'abc'\n")
    done = fixer.fix(_linter(path, {"ab": "a_b", "bc": "b_c"}), unsafe=False)
    assert done.sources[str(path)].text == "x = 'a_b_c'\n"
    assert [f.col for f in done.fixed] == [5, 7]  # one fix a pass: they overlapped
    assert done.problems == []
    assert path.read_text() == "x = 'abc'\n"  # nothing written by the fixer


def test_a_fix_that_breaks_the_syntax_is_rolled_back(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    path.write_text("x = ok\n")
    done = fixer.fix(_linter(path, {"ok": "(("}), unsafe=False)
    assert done.changed == []
    (problem,) = done.problems
    assert "leaves the file unparsable" in problem and "a bug of graphlint" in problem


def test_a_fix_that_keeps_its_finding_is_rolled_back(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    path.write_text("x = bad\n")
    done = fixer.fix(_linter(path, {"bad": "bad"}), unsafe=False)
    assert done.changed == [] and done.fixed == []
    (problem,) = done.problems
    assert "does not remove its finding" in problem


def test_the_passes_are_bounded(tmp_path: Path) -> None:
    """A fix that writes the next finding further on, for ever: ``a`` becomes
    ``b``, and an ``a`` is added at the end of the last line."""
    path = tmp_path / "a.py"
    path.write_text("x = 1  # a\n")

    def lint_once() -> Checked:
        data = overlaid(path)
        text = (data if data is not None else path.read_bytes()).decode()
        line = text.splitlines()[-1]
        at = line.index("a")
        number = len(text.splitlines())
        found = replace(
            _finding(str(path), number, at, 1, "b"),
            edits=(
                Edit(number, at, number, at + 1, "b"),
                Edit(number, len(line), number, len(line), "a"),
            ),
        )
        return Checked([FileResult(str(path), (found,))])

    done = fixer.fix(lint_once, unsafe=False)
    assert len(done.fixed) == fixer.MAX_PASSES
    assert done.problems == [
        f"stopped after {fixer.MAX_PASSES} passes with fixes still to apply"
    ]


def test_a_fix_may_leave_another_finding_of_its_code_in_what_it_wrote(
    tmp_path: Path,
) -> None:
    """One edit over two findings of a code (a statement rewritten for one of
    them) keeps the other: the fix is not taken for one that failed."""
    path = tmp_path / "a.py"
    path.write_text("x = 'aa'\n")
    lint = _linter(path, {"a": "b"})

    def one_edit_for_the_line() -> Checked:
        (result,) = lint().results
        count = len(result.diagnostics)  # each fix drops one of them
        literal = "'" + "a" * (count - 1) + "'"
        found = [
            replace(d, edits=(Edit(d.line, 4, d.line, 6 + count, literal),))
            for d in result.diagnostics
        ]
        return Checked([FileResult(result.path, tuple(found))])

    done = fixer.fix(one_edit_for_the_line, unsafe=False)
    assert done.problems == []
    assert done.sources[str(path)].text == "x = ''\n"
    assert len(done.fixed) == 2


def test_unsafe_fixes_wait_for_the_flag(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    path.write_text("x = bad\n")
    lint = _linter(path, {"bad": "good"})

    def unsafe() -> Checked:
        (result,) = lint().results
        found = [
            replace(d, applicability=Applicability.UNSAFE) for d in result.diagnostics
        ]
        return Checked([FileResult(result.path, tuple(found))])

    assert fixer.fix(unsafe, unsafe=False).changed == []
    assert fixer.fix(unsafe, unsafe=True).sources[str(path)].text == "x = good\n"


def test_edits_keep_the_files_line_breaks() -> None:
    text = "a = 1\r\nb = 2\r\n"
    edit = Edit(1, 0, 1, 5, "a = 1\nc = 3")
    assert fixer.apply(text, [edit], "\r\n") == "a = 1\r\nc = 3\r\nb = 2\r\n"


# -- the command -----------------------------------------------------------------------
def test_fix_writes_the_safe_fixes_and_reports_what_remains(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(FIXABLE)
    code, out, err = run(
        "check", "--no-cache", "--fix", "--show-fixes", ".", cwd=tmp_path
    )
    assert (tmp_path / "train.py").read_text() == FIXED
    assert code == 0, out
    assert "No CUDA-graph capture hazards found" in out
    assert "Fixed in train.py:" in err and "GL107" in err and "GL701" in err
    assert "Fixed 2 diagnostics in 1 file." in err
    # a second run has nothing more to do
    code, out, err = run("check", "--no-cache", "--fix", ".", cwd=tmp_path)
    assert code == 0 and "Fixed" not in err
    assert (tmp_path / "train.py").read_text() == FIXED


def test_diff_writes_nothing_and_exits_1(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(FIXABLE)
    code, out, err = run("check", "--no-cache", "--diff", ".", cwd=tmp_path)
    assert code == 1
    assert out.startswith("--- a/train.py\n+++ b/train.py\n")
    assert "+opt = torch.optim.Adam(model.parameters(), lr=0.1, capturable=True)" in out
    assert "Would fix 2 diagnostics in 1 file." in err
    assert (tmp_path / "train.py").read_text() == FIXABLE
    (tmp_path / "train.py").write_text(FIXED)
    assert run("check", "--no-cache", "--diff", ".", cwd=tmp_path)[:2] == (0, "")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--unsafe-fixes"], "--unsafe-fixes applies with --fix or --diff"),
        (["--show-fixes"], "--show-fixes lists what --fix fixed"),
        (["--diff", "--fix"], "--diff shows the fixes instead of applying them"),
    ],
)
def test_flags_that_do_not_go_together(
    tmp_path: Path, args: list[str], message: str
) -> None:
    (tmp_path / "train.py").write_text(FIXABLE)
    code, _, err = run("check", *args, ".", cwd=tmp_path)
    assert code == 2 and message in err
    assert (tmp_path / "train.py").read_text() == FIXABLE


def test_fix_from_stdin_prints_the_fixed_source(tmp_path: Path) -> None:
    old = Path.cwd()
    os.chdir(tmp_path)
    try:
        result = CliRunner().invoke(
            app,
            ["check", "--no-cache", "--fix", "--stdin-filename", "train.py", "-"],
            input=FIXABLE.encode(),
            catch_exceptions=False,
        )
    finally:
        os.chdir(old)
    assert result.stdout == FIXED
    assert "Fixed 2 diagnostics" in result.stderr
    assert not (tmp_path / "train.py").exists()


def test_line_breaks_and_encoding_are_kept(tmp_path: Path) -> None:
    crlf = FIXABLE.replace("\n", "\r\n").encode()
    (tmp_path / "crlf.py").write_bytes(crlf)
    latin = b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + FIXABLE.encode()
    (tmp_path / "latin.py").write_bytes(latin)
    assert run("check", "--no-cache", "--fix", ".", cwd=tmp_path)[0] == 0
    assert (tmp_path / "crlf.py").read_bytes() == FIXED.replace("\n", "\r\n").encode()
    assert (tmp_path / "latin.py").read_bytes() == (
        b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + FIXED.encode()
    )


def test_the_files_mode_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(FIXABLE)
    path.chmod(0o750)
    assert run("check", "--no-cache", "--fix", ".", cwd=tmp_path)[0] == 0
    assert path.read_text() == FIXED
    assert stat.S_IMODE(path.stat().st_mode) == 0o750
    assert [p.name for p in tmp_path.iterdir()] == ["train.py"]  # no temporary left


def test_a_read_only_file_is_not_written(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(FIXABLE)
    path.chmod(0o444)
    code, out, err = run("check", "--no-cache", "--fix", ".", cwd=tmp_path)
    assert "train.py: read-only: not written" in err
    assert path.read_text() == FIXABLE
    assert code == 1 and "GL701" in out  # reported as it is on disk


@pytest.mark.skipif(sys.platform == "win32", reason="symbolic links")
def test_a_link_is_never_written_through(tmp_path: Path) -> None:
    target = tmp_path / "train.py"
    target.write_text(FIXABLE)
    link = tmp_path / "link.py"
    link.symlink_to(target)
    source = fixer.Source(str(link), FIXABLE.encode(), "utf-8", "\n", FIXED)
    assert fixer.write(source) == "a link, or in a linked folder: not written through"
    assert target.read_text() == FIXABLE and link.is_symlink()


@pytest.mark.skipif(sys.platform == "win32", reason="symbolic links")
def test_a_file_in_a_linked_folder_is_not_written(tmp_path: Path) -> None:
    """A committed link to a folder outside the repository: what is checked
    through it is not written (the folder may be anyone's)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "train.py").write_text(FIXABLE)
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "linked").symlink_to(outside)
    _, _, err = run("check", "--no-cache", "--fix", "linked/train.py", cwd=repo)
    assert "not written through" in err
    assert (outside / "train.py").read_text() == FIXABLE


def test_a_file_with_other_hard_links_is_not_written(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(FIXABLE)
    os.link(path, tmp_path / "alias.txt")
    source = fixer.Source(str(path), FIXABLE.encode(), "utf-8", "\n", FIXED)
    assert "has other hard links" in str(fixer.write(source))
    assert path.read_text() == FIXABLE


def test_an_interrupted_write_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "train.py"
    path.write_text(FIXABLE)

    def interrupt(_: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupt)
    source = fixer.Source(str(path), FIXABLE.encode(), "utf-8", "\n", FIXED)
    with pytest.raises(KeyboardInterrupt):
        fixer.write(source)
    assert [p.name for p in tmp_path.iterdir()] == ["train.py"]
    assert path.read_text() == FIXABLE


def test_a_file_changed_while_it_was_checked_is_not_fixed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The edits are for the text the lint read: a file saved in between (here,
    just before the fixer reads it) keeps the user's text."""
    path = tmp_path / "train.py"
    path.write_text(FIXABLE)
    read = fixer._source

    def saved_meanwhile(name: str) -> fixer.Source | None:
        path.write_text(FIXABLE.replace("1.0, error", "2.5, error"))
        return read(name)

    monkeypatch.setattr(fixer, "_source", saved_meanwhile)
    _, _, err = run("check", "--no-cache", "--fix", ".", cwd=tmp_path)
    assert "train.py: changed while it was checked; not fixed" in err
    assert path.read_text() == FIXABLE.replace("1.0, error", "2.5, error")


def test_the_diff_applies_where_the_last_line_has_no_break(tmp_path: Path) -> None:
    """``git apply`` takes the diff: a last line without a line break is marked,
    and a form feed in a line does not split it."""
    text = FIXABLE.replace("import torch\n", "import torch  # \x0c page\n").rstrip("\n")
    text = text.replace("    opt.step()", "    opt.step()  # step")
    source = fixer.Source("t.py", text.encode(), "utf-8", "\n", text)
    source.text = text.replace("# step", "# s")
    out = fixer.diff([source])
    assert out.endswith(
        "-    opt.step()  # step\n\\ No newline at end of file\n"
        "+    opt.step()  # s\n\\ No newline at end of file\n"
    )
    assert "\x0c page\n" not in out  # the line is not in the hunk at all


def test_a_file_changed_since_it_was_read_is_not_written(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(FIXABLE)
    source = fixer.Source(str(path), FIXABLE.encode(), "utf-8", "\n", FIXED)
    path.write_text(FIXABLE + "# edited meanwhile\n")
    assert fixer.write(source) == "changed since it was read: not written"
    assert path.read_text().endswith("# edited meanwhile\n")


def test_add_noqa_suppresses_what_remains(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(
        FIXABLE.replace("    opt.step()\n", "    opt.step()  # the step\n").replace(
            "    model(x).sum().backward()\n    torch",
            "    model(x).sum().backward()\n    print(x.sum().item())\n    torch",
        )
    )
    code, out, _ = run("check", "--no-cache", "--add-noqa", ".", cwd=tmp_path)
    assert code == 0 and out == "Added 4 suppression comments.\n"
    text = path.read_text()
    assert "opt.step()  # the step  # graphlint: ignore[GL701]" in text
    assert "print(x.sum().item())  # graphlint: ignore[GL101, GL401]" in text
    assert run("check", "--no-cache", ".", cwd=tmp_path)[0] == 0
    assert run("check", "--no-cache", "--add-noqa", ".", cwd=tmp_path)[1] == (
        "Added 0 suppression comments.\n"
    )


def test_add_noqa_leaves_a_line_that_ends_inside_a_string(tmp_path: Path) -> None:
    sources = {"a.py": fixer.Source("a.py", b"", "utf-8", "\n", 'x = f("""\nend""")\n')}
    finding = _finding("a.py", 1, 4, 3, "")
    assert fixer.suppress(sources, [finding]) == ({}, 1)
    assert sources["a.py"].text == 'x = f("""\nend""")\n'


# -- every bad fixture -----------------------------------------------------------------
BAD_FIXTURES = sorted(FIXTURES.glob("GL*/bad*.py"))


def _fixture_linter(path: Path) -> Callable[[], Checked]:
    """``graphlint check`` of one file, in this process, as the fixer's overlay has
    it (every default rule)."""

    def lint_once() -> Checked:
        data = overlaid(path)
        text = (data if data is not None else path.read_bytes()).decode("utf-8")
        return Checked([FileResult(str(path), tuple(lint_source(text, str(path))))])

    return lint_once


@pytest.mark.parametrize(
    "path", BAD_FIXTURES, ids=lambda p: f"{p.parent.name}/{p.stem}"
)
def test_every_bad_fixture_fixed_parses_and_loses_what_was_fixed(path: Path) -> None:
    """With every fix applied (``--fix --unsafe-fixes``): the file parses, the
    findings fixed are gone, no new finding appears, and a second run changes
    nothing."""
    lint_once = _fixture_linter(path)
    before = lint_once().results[0].diagnostics
    done = fixer.fix(lint_once, unsafe=True)
    assert done.problems == []
    source = done.sources.get(str(path))
    if source is None:  # no finding here has a fix
        assert not any(d.edits for d in before)
        return
    ast.parse(source.text)
    after = done.remaining()
    fixed = {d.code for d in before if d.edits}
    assert not fixed & {d.code for d in after if d.edits}
    new = Counter(d.code for d in after) - Counter(d.code for d in before)
    assert not new, f"findings the fixes made: {sorted(new)}"
    with overlay({str(path): source.data}):
        again = fixer.fix(lint_once, unsafe=True)
    assert again.changed == [] and again.fixed == []


def test_a_statement_removed_at_the_end_of_a_file_without_a_line_break() -> None:
    text = "import torch\nx = 1\ntorch.cuda.synchronize()"
    assert fixer.apply(text, [Edit(3, 0, 4, 0, "")]) == "import torch\nx = 1\n"


def _stdin(args: list[str], text: str, cwd: Path) -> tuple[int, str, str]:
    old = Path.cwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(
            app,
            ["check", "--no-cache", *args],
            input=text.encode(),
            catch_exceptions=False,
        )
    finally:
        os.chdir(old)
    return result.exit_code, result.stdout, result.stderr


def test_fix_from_stdin_prints_the_source_when_nothing_is_fixed(tmp_path: Path) -> None:
    for text in ("x = 1\n", FIXED + "    v = x.sum().item()\n"):
        _, out, _ = _stdin(["--fix", "--stdin-filename", "t.py", "-"], text, tmp_path)
        assert out == text


def test_add_noqa_from_stdin_prints_the_commented_source(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text("print('the disk version')\n")
    code, out, err = _stdin(
        ["--add-noqa", "--stdin-filename", "t.py", "-"], FIXABLE, tmp_path
    )
    assert code == 0 and "Added 2 suppression comments." in err
    assert "opt.step()  # graphlint: ignore[GL701]" in out
    assert out.startswith("import torch\n")
    assert (tmp_path / "t.py").read_text() == "print('the disk version')\n"


def test_standard_input_is_fixed_alone(tmp_path: Path) -> None:
    (tmp_path / "other.py").write_text(FIXABLE)
    code, _, err = _stdin(["--fix", "-", "other.py"], FIXABLE, tmp_path)
    assert code == 2 and "pass - alone" in err
    assert (tmp_path / "other.py").read_text() == FIXABLE


def test_diff_exits_0_with_exit_zero(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(FIXABLE)
    code, out, _ = run(
        "check", "--no-cache", "--diff", "--exit-zero", ".", cwd=tmp_path
    )
    assert code == 0 and out.startswith("--- a/train.py")


def test_add_noqa_leaves_strings_alone(tmp_path: Path) -> None:
    """A suppression-like string on the line is not the line's comment; a file
    that ends its lines with \\r alone is read as Python reads it."""
    path = tmp_path / "train.py"
    path.write_text(
        FIXABLE.replace(
            "    opt.step()\n",
            '    opt.step(); tag = "# graphlint: ignore[GL999]"\n',
        )
        .replace("    model(x).sum().backward()\n    torch", '    """abc\n    torch')
        .replace("error_if_nonfinite=True)", 'error_if_nonfinite=True)\n    """')
    )
    assert run("check", "--no-cache", "--add-noqa", ".", cwd=tmp_path)[0] == 0
    text = path.read_text()
    assert '"# graphlint: ignore[GL999]"  # graphlint: ignore[GL701]' in text
    cr = tmp_path / "cr.py"
    cr.write_bytes(FIXABLE.replace("\n", "\r").encode())
    assert run("check", "--no-cache", "--add-noqa", "cr.py", cwd=tmp_path)[0] == 0
    assert run("check", "--no-cache", "cr.py", cwd=tmp_path)[0] == 0
