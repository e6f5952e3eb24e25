"""``graphlint check --stdin-filename PATH -``: the source comes from standard input
(an editor's buffer) and is checked as PATH, in PATH's project; the disk's copy, the
cache and later runs are not confused with it."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import graphlint
from tests.test_cli import MODEL, TRAIN, _package

CLEAN = "def step(x):\n    return x\n"


def stdin(project: Path, name: str, text: str, *extra: str) -> tuple[int, str]:
    done = graphlint(
        "check", *extra, "--stdin-filename", name, "-", cwd=project, input=text
    )
    return done.returncode, done.stdout + done.stderr


def test_the_text_on_stdin_is_checked_instead_of_the_file(tmp_path: Path) -> None:
    project = _package(tmp_path)
    code, out = stdin(project, "pkg/model.py", MODEL)
    assert code == 1 and "pkg/model.py:2:12: GL101" in out
    assert "region at pkg/train.py:6, reached from pkg/train.py:7" in out
    (project / "pkg" / "model.py").write_text(CLEAN)
    assert stdin(project, "pkg/model.py", MODEL)[0] == 1  # the buffer, not the disk
    assert graphlint("check", "pkg/model.py", cwd=project).returncode == 0
    (project / "pkg" / "model.py").write_text(MODEL)
    code, out = stdin(project, "pkg/model.py", CLEAN)
    assert code == 0, out
    # the disk's text again, after runs with other text on stdin (the cache agrees)
    again = graphlint("check", "pkg/model.py", cwd=project)
    assert again.returncode == 1 and "pkg/model.py:2:12: GL101" in again.stdout


def test_a_file_not_yet_saved_is_checked_where_it_will_be(tmp_path: Path) -> None:
    project = _package(tmp_path)
    (project / "pkg" / "train.py").write_text(TRAIN.replace("pkg.model", "pkg.new"))
    code, out = stdin(project, "pkg/new.py", MODEL)
    assert code == 1 and "pkg/new.py:2:12: GL101" in out
    assert not (project / "pkg" / "new.py").exists()


def test_stdin_filename_needs_the_dash(tmp_path: Path) -> None:
    project = _package(tmp_path)
    done = graphlint("check", "--stdin-filename", "pkg/model.py", ".", cwd=project)
    assert done.returncode == 2
    assert "--stdin-filename names the source read from standard input" in done.stderr


def test_stdin_without_a_name_and_excluded_names(tmp_path: Path) -> None:
    project = _package(tmp_path)
    code, out = stdin(project, "pkg/model.py", "x = (\n", "--no-cache")
    assert code == 1 and "pkg/model.py:1:" in out and "GL001" in out
    (project / "pyproject.toml").write_text(
        '[tool.graphlint]\nexclude = ["pkg/model.py"]\n'
    )
    assert stdin(project, "pkg/model.py", MODEL, "--force-exclude")[0] == 0  # left out
    done = graphlint("check", "-", cwd=project, input=MODEL)
    assert done.returncode == 0 and "1 file checked" in done.stdout
