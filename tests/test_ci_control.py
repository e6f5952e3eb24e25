"""What CI controls: the severity that fails a run (``--fail-on``, ``fail-on``), how
much a run prints (``-q``, ``-qq``/``--silent``, ``-v``), with every format and with
the fixes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.test_cli import BAD, run

# a finding under torch.compile is a warning: the graph is split, not wrong
WARNING = (
    "import torch\n\n"
    'step = torch.compile(lambda t: t.sum().item(), mode="reduce-overhead")\n'
)
FORMATS = ["text", "json", "sarif", "github", "lsp"]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "error.py").write_text(BAD)
    (tmp_path / "warning.py").write_text(WARNING)
    (tmp_path / "empty.py").write_text("")  # GL006, a note, when selected
    return tmp_path


def severities(out: str) -> set[int]:
    return {d["severity"] for f in json.loads(out) for d in f["diagnostics"]}


@pytest.mark.parametrize(
    ("fail_on", "path", "code"),
    [
        (None, "warning.py", 1),
        ("note", "warning.py", 1),
        ("warning", "warning.py", 1),
        ("error", "warning.py", 0),
        ("error", "error.py", 1),
        (None, "empty.py", 1),
        ("note", "empty.py", 1),
        ("warning", "empty.py", 0),
    ],
)
def test_fail_on_sets_the_least_severe_diagnostic_that_fails(
    tree: Path, fail_on: str | None, path: str, code: int
) -> None:
    args = ["check", "--extend-select", "GL006", path]
    if fail_on is not None:
        args[1:1] = ["--fail-on", fail_on]
    got, out, _ = run(*args, cwd=tree)
    assert got == code
    default = run("check", "--extend-select", "GL006", path, cwd=tree)[1]
    assert out == default, "what is reported does not change"


def test_fail_on_reports_what_passes(tree: Path) -> None:
    code, out, _ = run("check", "--fail-on", "error", "warning.py", cwd=tree)
    assert code == 0
    assert "warning.py:3:" in out and "(1 warning)" in out
    got, out, _ = run("check", "--format", "lsp", "--fail-on", "error", ".", cwd=tree)
    assert got == 1 and severities(out) == {1, 2}
    assert run("check", "--exit-zero", "--fail-on", "note", ".", cwd=tree)[0] == 0


def test_fail_on_in_the_configuration(tree: Path) -> None:
    (tree / "graphlint.toml").write_text('fail-on = "error"\n')
    assert run("check", "warning.py", cwd=tree)[0] == 0
    assert run("check", "error.py", cwd=tree)[0] == 1
    # the flag wins
    assert run("check", "--fail-on", "warning", "warning.py", cwd=tree)[0] == 1
    out = run("check", "--show-settings", "warning.py", cwd=tree)[1]
    assert 'fail-on = "error"' in out.splitlines()
    out = run("check", "--fail-on", "note", "--show-settings", ".", cwd=tree)[1]
    assert 'fail-on = "note"' in out.splitlines()
    # extended, and below the run's own configuration (where it is not the run's)
    (tree / "graphlint.toml").write_text('extend = "base.toml"\n')
    (tree / "base.toml").write_text('fail-on = "error"\n')
    assert run("check", "warning.py", cwd=tree)[0] == 0
    (tree / "sub").mkdir()
    shutil.copy(tree / "warning.py", tree / "sub" / "warning.py")
    (tree / "sub" / "graphlint.toml").write_text('fail-on = "warning"\n')
    err = run("check", ".", cwd=tree)[2]
    assert "fail-on ignored" in err
    assert run("check", "sub/warning.py", "warning.py", cwd=tree)[0] == 0


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ('"fatal"', "'fatal'"),
        ("3", "3"),
        ('["error"]', "['error']"),
        ('"Error"', "'Error'"),
    ],
)
def test_a_bad_fail_on_is_one_line_and_exit_2(
    tree: Path, value: str, shown: str
) -> None:
    (tree / "graphlint.toml").write_text(f"fail-on = {value}\n")
    code, out, err = run("check", "warning.py", cwd=tree)
    assert (code, out) == (2, "")
    assert err == (
        f"graphlint: error: 'fail-on' in {tree / 'graphlint.toml'} must be one of "
        f'"error", "warning", "note", not {shown}\n'
    )


def test_quiet_prints_the_diagnostics_only(tree: Path) -> None:
    normal = run("check", ".", cwd=tree)
    quiet = run("check", "-q", ".", cwd=tree)
    assert quiet[0] == normal[0] == 1
    assert normal[1].splitlines()[-1].startswith("Found 3 diagnostics")
    lines = normal[1].splitlines()
    assert quiet[1].splitlines() == lines[:-2], "the same, less the summary"
    assert quiet[1].endswith("\n") and not quiet[1].endswith("\n\n")
    assert run("check", "--quiet", "--statistics", ".", cwd=tree)[1] == (
        "    2  GL101  device-to-host-copy\n    1  GL201  tensor-truth-value\n"
    )
    # a clean run prints nothing
    assert run("check", "-q", "empty.py", cwd=tree) == (0, "", "")


def test_quiet_silences_warnings_and_silent_prints_nothing(tree: Path) -> None:
    (tree / "graphlint.toml").write_text("timeout = 300\n")  # over the limit: a warning
    code, out, err = run("check", "warning.py", cwd=tree)
    assert code == 1 and "graphlint: warning:" in err and out
    code, out, err = run("check", "-q", "warning.py", cwd=tree)
    assert code == 1 and err == "" and out
    for args in (["-qq"], ["--silent"], ["-q", "--silent"]):
        assert run("check", *args, ".", cwd=tree) == (1, "", "")
        assert run("check", *args, "empty.py", cwd=tree) == (0, "", "")
    # an error that stops the run is still said
    code, out, err = run("check", "--silent", "missing.py", cwd=tree)
    assert code == 2 and out == "" and err.startswith("graphlint: error:")


def test_silent_still_writes_the_output_file(tree: Path) -> None:
    report = tree / "out" / "report.json"
    code, out, err = run(
        "check", "--silent", "--format", "json", "-o", str(report), ".", cwd=tree
    )
    assert (code, out, err) == (1, "", "")
    assert len(json.loads(report.read_text())) == 3


@pytest.mark.parametrize("form", FORMATS[1:])
def test_quiet_leaves_the_machine_formats_as_they_are(tree: Path, form: str) -> None:
    normal = run("check", "--format", form, ".", cwd=tree)
    assert run("check", "-q", "--format", form, ".", cwd=tree) == normal
    assert run("check", "--silent", "--format", form, ".", cwd=tree) == (1, "", "")


def test_verbose_says_what_was_checked_on_stderr(tree: Path) -> None:
    (tree / "pyproject.toml").write_text("[tool.graphlint]\nfail-on = 'warning'\n")
    (tree / "pkg").mkdir()
    (tree / "pkg" / "other.py").write_text("x = 1\n")
    cache = tree / "cache"
    normal = run("check", "--cache-dir", str(cache), "warning.py", cwd=tree)
    code, out, err = run(
        "check", "-v", "--cache-dir", str(cache), "warning.py", cwd=tree
    )
    assert (code, out) == normal[:2]
    lines = err.splitlines()
    assert lines[0] == f"graphlint: configuration: {tree / 'pyproject.toml'}"
    assert lines[1] == f"graphlint: project: {tree}"
    assert lines[2] == "graphlint: files: 1 to report on, 4 analysed (the project)"
    (folder,) = [p for p in cache.iterdir() if not p.name.startswith(".")]
    assert lines[3] == f"graphlint: cache: {folder}"
    assert lines[4] == "graphlint: fail-on: warning"
    assert lines[5].startswith("graphlint: took ")
    assert "planning" in lines[5] and "checking" in lines[5] and "reporting" in lines[5]
    assert len(lines) == 6
    err = run("check", "--verbose", "--no-cache", "--alone", "warning.py", cwd=tree)[2]
    assert "graphlint: cache: off (--no-cache)" in err
    assert "graphlint: files: 1 to report on\n" in err


@pytest.mark.parametrize("quiet", ["-q", "-qq", "--silent"])
def test_verbose_and_quiet_contradict(tree: Path, quiet: str) -> None:
    code, out, err = run("check", "-v", quiet, ".", cwd=tree)
    assert code == 2 and out == ""
    assert err == (
        "graphlint: error: --verbose says more, --quiet and --silent less: pass one "
        "of them\n"
    )


@pytest.fixture
def fixable(tmp_path: Path) -> Path:
    """A file with a safe fix (GL107's)."""
    source = FIXTURES / "GL107-clip-grad-norm-error-if-nonfinite" / "bad.py"
    shutil.copy(source, tmp_path / "fix.py")
    return tmp_path


def test_quiet_with_the_fixes(fixable: Path) -> None:
    original = (fixable / "fix.py").read_text()
    code, diff, err = run("check", "--diff", "-q", "fix.py", cwd=fixable)
    assert code == 1 and diff.startswith("--- a/fix.py") and err == ""
    normal = run("check", "--diff", "fix.py", cwd=fixable)
    assert normal[1] == diff and normal[2].startswith("Would fix ")
    assert run("check", "--diff", "--silent", "fix.py", cwd=fixable) == (1, "", "")
    code, out, err = run("check", "--fix", "-q", "fix.py", cwd=fixable)
    assert (code, out, err) == (0, "", "")
    fixed = (fixable / "fix.py").read_text()
    assert fixed != original
    (fixable / "fix.py").write_text(original)
    code, out, err = run("check", "--fix", "fix.py", cwd=fixable)
    assert (
        code == 0
        and err.startswith("Fixed ")
        and (fixable / "fix.py").read_text() == fixed
    )
    (fixable / "fix.py").write_text(original)
    code, out, err = run("check", "--add-noqa", "--silent", "fix.py", cwd=fixable)
    assert (code, out, err) == (0, "", "")
    assert "# graphlint: ignore[" in (fixable / "fix.py").read_text()


def test_silent_still_prints_the_fixed_standard_input(fixable: Path) -> None:
    from typer.testing import CliRunner  # noqa: PLC0415

    from graphlint.cli import app  # noqa: PLC0415

    original = (fixable / "fix.py").read_text()
    run("check", "--fix", "fix.py", cwd=fixable)
    fixed = (fixable / "fix.py").read_text()
    result = CliRunner().invoke(
        app,
        [
            "check",
            "--fix",
            "--silent",
            "--stdin-filename",
            str(fixable / "fix.py"),
            "-",
        ],
        input=original,
        catch_exceptions=False,
    )
    assert (result.exit_code, result.stdout, result.stderr) == (0, fixed, "")


def test_verbose_counts_the_fix_passes(fixable: Path) -> None:
    err = run("check", "-v", "--fix", "fix.py", cwd=fixable)[2]
    (took,) = [line for line in err.splitlines() if line.startswith("graphlint: took")]
    assert took.endswith(" passes)"), took
