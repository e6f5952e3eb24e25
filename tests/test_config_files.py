"""Where configuration comes from: .graphlint.toml, graphlint.toml or pyproject.toml,
the closest to each file, whatever the order of the paths; per-file-ignores."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_cli import BAD, run


def _codes(out: str) -> list[str]:
    """``path:CODE`` of each diagnostic line."""
    return sorted(
        f"{line.split(':')[0]}:{line.split()[1]}"
        for line in out.splitlines()
        if line and not line.startswith((" ", "Found", "No ", "graphlint"))
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "a.py").write_text(BAD)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.py").write_text(BAD)
    return tmp_path


@pytest.mark.parametrize(
    ("name", "text"),
    [
        (".graphlint.toml", 'ignore = ["GL101"]\n'),
        ("graphlint.toml", 'ignore = ["GL101"]\n'),
        ("pyproject.toml", '[tool.graphlint]\nignore = ["GL101"]\n'),
    ],
)
def test_each_file_name(tree: Path, name: str, text: str) -> None:
    (tree / name).write_text(text)
    out = run("check", "--no-cache", "a.py", cwd=tree)[1]
    assert "GL101" not in out and "a.py:11:8: GL201" in out


def test_in_one_folder_the_dedicated_file_wins(tree: Path) -> None:
    (tree / "pyproject.toml").write_text('[tool.graphlint]\nignore = ["GL201"]\n')
    (tree / "graphlint.toml").write_text('ignore = ["GL101"]\n')
    out = run("check", "--no-cache", "a.py", cwd=tree)[1]
    assert "GL101" not in out and "GL201" in out
    (tree / ".graphlint.toml").write_text('ignore = ["GL201"]\n')
    out = run("check", "--no-cache", "a.py", cwd=tree)[1]
    assert "GL101" in out and "GL201" not in out


def test_the_closest_configuration_governs_each_file_in_any_order(tree: Path) -> None:
    (tree / "pyproject.toml").write_text('[tool.graphlint]\nignore = ["GL201"]\n')
    (tree / "sub" / "graphlint.toml").write_text('ignore = ["GL101"]\n')
    one = run("check", "--no-cache", "a.py", "sub/b.py", cwd=tree)
    other = run("check", "--no-cache", "sub/b.py", "a.py", cwd=tree)
    assert one[:2] == other[:2]
    assert _codes(one[1]) == ["a.py:GL101", "sub/b.py:GL201"]
    assert _codes(run("check", "--no-cache", ".", cwd=tree)[1]) == _codes(one[1])
    # the command line's selection applies on top of every configuration
    out = run("check", "--no-cache", "--ignore", "GL2", ".", cwd=tree)[1]
    assert _codes(out) == ["a.py:GL101"]


def test_a_nested_configuration_selects_only(tree: Path) -> None:
    (tree / "pyproject.toml").write_text('[tool.graphlint]\nignore = ["GL201"]\n')
    (tree / "sub" / "graphlint.toml").write_text(
        'ignore = ["GL101"]\ntimeout = 5\nexclude = ["b.py"]\n'
    )
    _, out, err = run("check", "--no-cache", ".", cwd=tree)
    assert "sub/b.py:GL201" in _codes(out)  # not excluded: exclude is the run's
    assert "only extend-select, ignore, per-file-ignores, select apply" in err
    assert "exclude, timeout ignored" in err


def test_per_file_ignores(tree: Path) -> None:
    (tree / "pyproject.toml").write_text(
        '[tool.graphlint]\nper-file-ignores = {"sub/**" = ["GL1"]}\n'
    )
    assert _codes(run("check", "--no-cache", ".", cwd=tree)[1]) == [
        "a.py:GL101",
        "a.py:GL201",
        "sub/b.py:GL201",
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('per-file-ignores = ["GL1"]', "must be a table of lists of codes"),
        ('per-file-ignores = {"x" = ["GL999"]}', "unknown code or prefix 'GL999'"),
    ],
)
def test_bad_per_file_ignores(tree: Path, text: str, message: str) -> None:
    (tree / "graphlint.toml").write_text(text + "\n")
    code, _, err = run("check", ".", cwd=tree)
    assert code == 2 and message in err


def test_show_files_and_show_settings(tree: Path) -> None:
    (tree / "pyproject.toml").write_text(
        '[tool.graphlint]\nexclude = ["skip.py"]\n'
        'per-file-ignores = {"sub/**" = ["GL1"]}\n'
    )
    (tree / "skip.py").write_text(BAD)
    code, out, _ = run("check", "--show-files", ".", cwd=tree)
    assert (code, out) == (0, "a.py\nsub/b.py\n")
    code, out, _ = run("check", "--show-settings", "sub/b.py", cwd=tree)
    lines = out.splitlines()
    assert code == 0
    assert lines[0] == f"configuration: {(tree / 'pyproject.toml').resolve()}"
    assert lines[1] == f"project: {tree.resolve()}"
    assert lines[2] == "file: sub/b.py"
    assert "GL101" not in lines[3] and "GL201" in lines[3]  # its per-file-ignores
    assert 'exclude = ["skip.py"]' in lines
    out = run("check", "--show-settings", cwd=tree)[1]
    assert "GL101" in out.splitlines()[2]


def test_extend(tmp_path: Path) -> None:
    """A configuration starts from the one it extends; what it sets wins, and the
    paths it inherits stay relative to the file that wrote them."""
    (tmp_path / "pyproject.toml").write_text(
        '[tool.graphlint]\nexclude = ["app/gen/"]\nignore = ["GL201"]\n'
    )
    app = tmp_path / "app"
    (app / "gen").mkdir(parents=True)
    (app / "gen" / "made.py").write_text(BAD)
    (app / "a.py").write_text(BAD)
    (app / "graphlint.toml").write_text('extend = "../pyproject.toml"\n')
    assert _codes(run("check", "--no-cache", ".", cwd=app)[1]) == ["a.py:GL101"]
    (app / "graphlint.toml").write_text(
        'extend = "../pyproject.toml"\nignore = ["GL101"]\n'
    )
    assert _codes(run("check", "--no-cache", ".", cwd=app)[1]) == ["a.py:GL201"]


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"graphlint.toml": 'extend = "other.toml"\n'}, "names no file"),
        (
            {
                "graphlint.toml": 'extend = "other.toml"\n',
                "other.toml": 'extend = "graphlint.toml"\n',
            },
            "makes a cycle",
        ),
        ({"graphlint.toml": "extend = 3\n"}, "must be the path of a file"),
    ],
)
def test_bad_extend(tree: Path, files: dict[str, str], message: str) -> None:
    for name, text in files.items():
        (tree / name).write_text(text)
    code, _, err = run("check", ".", cwd=tree)
    assert code == 2 and message in err
