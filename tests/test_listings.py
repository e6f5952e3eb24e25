"""A walk kept for the next run (``files.Listings``): taken where the folders are as
they were, walked again where anything a walk depends on changed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from graphlint import files
from graphlint.files import Collected, Listing, Listings, collect
from graphlint.read import forget_paths


class Kept:
    """Listings in memory, counting what the walks kept."""

    def __init__(self) -> None:
        self.listings: dict[str, Listing] = {}
        self.saved = 0

    def save(self, folder: str, listing: Listing) -> None:
        self.listings[folder] = listing
        self.saved += 1

    @property
    def store(self) -> Listings:
        return Listings(self.listings.get, self.save)


@pytest.fixture(autouse=True)
def no_racy_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tests change folders a moment before they walk them."""
    monkeypatch.setattr(files, "RACY_NS", 0)


def tree(root: Path) -> Path:
    (root / ".git").mkdir(parents=True)
    for rel in ("a.py", "pkg/b.py", "pkg/deep/c.py", "env/lib/v.py", "gen/g.py"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x = 1\n")
    (root / "env" / "pyvenv.cfg").write_text("home = /usr\n")
    (root / ".gitignore").write_text("gen/\n")
    return root


def walk(root: Path, kept: Kept | None = None) -> list[str]:
    forget_paths()
    found = collect([root], listings=kept.store if kept is not None else None)
    return [p.relative_to(root).as_posix() for p in found.files]


def replayed(root: Path, kept: Kept, monkeypatch: pytest.MonkeyPatch) -> Collected:
    """A walk that must come from the listing: listing a folder fails it."""
    with monkeypatch.context() as patched:

        def refuse(path: object) -> None:
            raise AssertionError(f"listed {path}")

        patched.setattr(os, "scandir", refuse)
        forget_paths()
        return collect([root], listings=kept.store)


def test_a_walk_of_unchanged_folders_comes_from_the_listing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tree(tmp_path)
    kept = Kept()
    first = walk(root, kept)
    assert first == walk(root) == ["a.py", "pkg/b.py", "pkg/deep/c.py"]
    assert kept.saved == 1
    again = replayed(root, kept, monkeypatch)
    assert [p.relative_to(root).as_posix() for p in again.files] == first
    assert kept.saved == 1  # nothing new to keep


@pytest.mark.parametrize(
    "change",
    [
        "a file added deep down",
        "a file removed",
        "a folder turned into a virtual environment",
        "a virtual environment that is one no more",
        "a .gitignore edited in place",
        "a .gitignore added",
        "a repository made above the walked folder",
    ],
)
def test_a_change_a_walk_would_see_is_walked_again(tmp_path: Path, change: str) -> None:
    outer = tmp_path / "outer"
    root = tree(outer / "inner")
    if change == "a repository made above the walked folder":
        (root / ".git").rmdir()
        (outer / ".gitignore").write_text("a.py\n")
    kept = Kept()
    walk(root, kept)
    if change == "a file added deep down":
        (root / "pkg" / "deep" / "new.py").write_text("")
    elif change == "a file removed":
        (root / "pkg" / "b.py").unlink()
    elif change == "a folder turned into a virtual environment":
        (root / "pkg" / "deep" / "pyvenv.cfg").write_text("home = /usr\n")
    elif change == "a virtual environment that is one no more":
        (root / "env" / "pyvenv.cfg").unlink()
    elif change == "a .gitignore edited in place":
        with open(root / ".gitignore", "r+") as ignore:  # same size, same folder
            ignore.write("pkg/")
    elif change == "a .gitignore added":
        (root / "pkg" / ".gitignore").write_text("b.py\n")
    else:
        (outer / ".git").mkdir()
    assert walk(root, kept) == walk(root)
    assert kept.saved == 2


def test_a_link_is_resolved_again_where_it_leads(tmp_path: Path) -> None:
    """Where a link leads is no stamp of the tree's: a target outside it that
    becomes a folder leaves the link out, as a walk would."""
    root = tree(tmp_path / "repo")
    target = tmp_path / "elsewhere.py"
    target.write_text("x = 1\n")
    (root / "linked.py").symlink_to(target)
    kept = Kept()
    assert "linked.py" in walk(root, kept)
    target.unlink()
    target.mkdir()
    assert walk(root, kept) == walk(root)
    assert "linked.py" not in walk(root, kept)


def test_a_listing_of_a_folder_changed_a_moment_ago_is_not_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A change in the same tick of the file system's clock as a later one leaves
    the folder's stamp as it was: such a walk is not kept."""
    monkeypatch.setattr(files, "RACY_NS", 3600 * 10**9)
    root = tree(tmp_path)
    kept = Kept()
    walk(root, kept)
    assert kept.saved == 0


def test_a_folder_that_cannot_be_listed_is_not_kept(tmp_path: Path) -> None:
    root = tree(tmp_path)
    (root / "pkg" / "deep").chmod(0)
    try:
        if os.access(root / "pkg" / "deep", os.R_OK):
            pytest.skip("the user can list any folder (root)")
        kept = Kept()
        walk(root, kept)
        assert kept.saved == 0
    finally:
        (root / "pkg" / "deep").chmod(0o755)


HAZARD = """import torch

g = torch.cuda.CUDAGraph()
x = torch.zeros(1, device="cuda")
with torch.cuda.graph(g):
    y = x.item()
"""


def test_the_command_line_checks_a_file_added_between_two_runs(tmp_path: Path) -> None:
    """Two runs of ``graphlint check`` with the cache: the first keeps its listing,
    and the second, which takes it, checks a file added since."""
    project = tree(tmp_path / "project")
    (project / "pyproject.toml").write_text("[tool.graphlint]\n")
    hour_ago = (int(os.path.getmtime(project)) - 3600) * 10**9
    for folder, _, names in os.walk(project):  # not changed a moment ago
        for path in [folder, *(os.path.join(folder, n) for n in names)]:
            os.utime(path, ns=(hour_ago, hour_ago))
    cache = tmp_path / "cache"
    env = {**os.environ, "GRAPHLINT_CACHE_DIR": str(cache)}
    check = [sys.executable, "-m", "graphlint", "check", "--format", "json", "."]

    def run() -> str:
        done = subprocess.run(check, cwd=project, env=env, capture_output=True)
        return done.stdout.decode()

    assert "late.py" not in run()
    kept = [p for p in cache.rglob("*") if p.is_file()]
    assert any(b'"used"' in p.read_bytes() for p in kept), "no listing kept"
    (project / "pkg" / "deep" / "late.py").write_text(HAZARD)
    assert "pkg/deep/late.py" in run()
