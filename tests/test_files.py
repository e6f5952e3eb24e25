"""Which files a folder expands to: .gitignore, virtualenvs, excludes, links."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from graphlint.files import MissingPathError, collect
from graphlint.gitignore import IgnoreFile, compile_pattern
from graphlint.read import forget_paths, overlaid, overlay, real_path


def names(paths: list[Path], root: Path) -> set[str]:
    return {p.resolve().relative_to(root.resolve()).as_posix() for p in paths}


def touch(root: Path, *relative: str) -> None:
    for rel in relative:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n")


def test_walk_skips_vcs_venvs_caches_and_gitignored(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    touch(
        tmp_path,
        "a.py",
        "pkg/b.py",
        "pkg/notes.txt",
        ".git/hooks/h.py",
        ".venv/lib/x.py",
        "env/pyvenv.cfg",
        "env/lib/y.py",
        "__pycache__/c.py",
        "build/gen.py",
        "pkg/generated/g.py",
        "pkg/keep.py",
        "logs/debug.py",
    )
    (tmp_path / ".gitignore").write_text("build/\n*.log\n/logs\n")
    (tmp_path / "pkg" / ".gitignore").write_text("generated/\n")
    assert names(collect([tmp_path]).files, tmp_path) == {
        "a.py",
        "pkg/b.py",
        "pkg/keep.py",
    }


def test_gitignore_above_the_walked_folder_applies(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("src/skip_*.py\n!src/skip_keep.py\n")
    touch(tmp_path, "src/skip_me.py", "src/skip_keep.py", "src/main.py")
    found = names(collect([tmp_path / "src"]).files, tmp_path)
    assert found == {"src/skip_keep.py", "src/main.py"}


def test_explicit_files_are_checked_whatever_their_name(tmp_path: Path) -> None:
    touch(tmp_path, "script", "ignored.py")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("ignored.py\n")
    found = collect([tmp_path / "script", tmp_path / "ignored.py"]).files
    assert names(found, tmp_path) == {"script", "ignored.py"}


def test_excludes_apply_to_walked_and_explicit_files(tmp_path: Path) -> None:
    touch(tmp_path, "keep.py", "gen/out.py", "tests/data/x.py")
    excludes = IgnoreFile(tmp_path.resolve(), ["gen/", "tests/**/x.py"])
    assert names(collect([tmp_path], excludes).files, tmp_path) == {"keep.py"}
    named = tmp_path / "gen" / "out.py"
    assert collect([named], excludes).files == [named]  # named: checked (ruff's way)
    assert collect([named], excludes, named=False).files == []  # --force-exclude
    folder = tmp_path / "gen"
    assert collect([folder], excludes, named=False).files == []  # a folder too


def test_symlink_loops_are_not_followed_and_files_deduplicated(tmp_path: Path) -> None:
    touch(tmp_path, "a.py")
    os.symlink(tmp_path, tmp_path / "loop")
    os.symlink(tmp_path / "a.py", tmp_path / "alias.py")
    assert names(collect([tmp_path]).files, tmp_path) == {"a.py"}


def test_missing_paths_are_reported_together(tmp_path: Path) -> None:
    with pytest.raises(MissingPathError, match=r"x\.py, .*y$"):
        collect([tmp_path / "x.py", tmp_path / "y"])


@pytest.mark.parametrize(
    ("pattern", "path", "is_dir", "ignored"),
    [
        ("*.py", "a/b.py", False, True),
        ("/top.py", "top.py", False, True),
        ("/top.py", "sub/top.py", False, None),
        ("build/", "build", True, True),
        ("build/", "build", False, None),
        ("a/**/z.py", "a/b/c/z.py", False, True),
        ("a/**/z.py", "a/z.py", False, True),
        ("**/cache", "x/y/cache", True, True),
        ("file[0-9].py", "file7.py", False, True),
        ("# comment", "comment", False, None),
    ],
)
def test_gitignore_patterns(
    pattern: str, path: str, is_dir: bool, ignored: bool | None
) -> None:
    base = Path("/repo")
    decision = IgnoreFile(base, [pattern]).decide(base / path, is_dir)
    assert decision is ignored
    if pattern.startswith("#"):
        assert compile_pattern(pattern) is None


def test_a_relative_path_is_real_from_the_working_folder_of_the_moment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``real_path`` keeps what it resolved until the next run starts; a process
    that runs several (the tests, a server) may change its working folder between
    them, and a relative path then leads elsewhere, overlay lookups included."""
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        monkeypatch.chdir(tmp_path / name)
        assert real_path("train.py") == (tmp_path / name / "train.py").resolve()
        with overlay({"train.py": name.encode()}):
            assert overlaid("train.py") == name.encode()


@pytest.mark.parametrize("folder", ["/", "tmp"])
def test_a_relative_path_is_joined_to_the_working_folder_as_os_path_joins_it(
    folder: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lookups' keys (``read._absolute``, joined by hand): the same as
    ``os.path.join`` with the working folder, the file system's root included."""
    from graphlint.read import _absolute  # noqa: PLC0415

    monkeypatch.chdir("/" if folder == "/" else tmp_path)
    for key in (
        "train.py",
        "a/b.py",
        "a//b.py",
        "./x.py",
        "../y.py",
        ".",
        "",
        "/abs.py",
    ):
        expected = key if os.path.isabs(key) else os.path.join(os.getcwd(), key)
        assert _absolute(key) == expected
        assert _absolute(Path(key)) == os.path.join(os.getcwd(), os.fspath(Path(key)))


def test_a_run_asks_its_working_folder_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Within a run (``read.run_folder``), the lookups' keys ask the working folder
    once; outside one, each asks (a process may change it between runs, and a key
    kept from a run in another folder is not used)."""
    from graphlint.read import _absolute, run_folder  # noqa: PLC0415

    monkeypatch.chdir(tmp_path)
    asked: list[str] = []
    getcwd = os.getcwd

    def spy() -> str:
        asked.append("cwd")
        return getcwd()

    monkeypatch.setattr(os, "getcwd", spy)
    with run_folder():
        keys = {_absolute(f"f{n}.py") for n in range(50)}
        with run_folder():  # a plan within a lint
            keys.add(_absolute("g.py"))
    assert len(asked) == 2
    assert keys == {str(tmp_path / f"f{n}.py") for n in range(50)} | {
        str(tmp_path / "g.py")
    }
    _absolute("h.py")
    _absolute("h.py")
    assert len(asked) == 4
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")  # between runs: a key kept is not used
    with run_folder():
        assert _absolute("f1.py") == str(tmp_path / "sub" / "f1.py")
        assert _absolute(Path("f1.py")) == str(tmp_path / "sub" / "f1.py")


def test_the_walk_tells_real_path_only_what_is_real(tmp_path: Path) -> None:
    """A file the walk finds in a real folder and that is no link is its own real
    path (``read.real_path`` answers it from the walk); a link to a file outside
    the tree is still resolved to where it leads."""
    outside = tmp_path / "outside.py"
    outside.write_text("x = 1\n")
    tree = tmp_path / "tree"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "a.py").write_text("y = 2\n")
    (tree / "pkg" / "link.py").symlink_to(outside)
    forget_paths()
    found = collect([tree])
    assert sorted(p.name for p in found.files) == ["a.py", "link.py"]
    real = tree.resolve()
    assert real_path(real / "pkg" / "a.py") == real / "pkg" / "a.py"
    assert real_path(real / "pkg" / "link.py") == outside.resolve()
