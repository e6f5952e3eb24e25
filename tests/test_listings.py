"""A walk kept for the next run (``files.Listings``): taken where the folders are as
they were, walked again where anything a walk depends on changed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from graphlint import files
from graphlint.cache import Cache
from graphlint.cli import app
from graphlint.config import Config
from graphlint.files import Collected, Listing, Listings, collect
from graphlint.lint import Choices, _listings, plan
from graphlint.read import forget_paths, overlay


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
        "a .gitignore added above the walked folder",
    ],
)
def test_a_change_a_walk_would_see_is_walked_again(tmp_path: Path, change: str) -> None:
    outer = tmp_path / "outer"
    root = tree(outer / "inner")
    if change == "a repository made above the walked folder":
        (root / ".git").rmdir()
        (outer / ".gitignore").write_text("a.py\n")
    if change == "a .gitignore added above the walked folder":
        (root / ".git").rmdir()
        (outer / ".git").mkdir()
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
    elif change == "a .gitignore added above the walked folder":
        (outer / ".gitignore").write_text("inner/a.py\n")
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


def test_a_recent_change_time_makes_a_listing_racy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A modification time put back (tar, ``rsync -t``) leaves the change time:
    the listing is still not kept."""
    monkeypatch.setattr(files, "RACY_NS", 3600 * 10**9)
    root = tree(tmp_path)
    long_ago = 10**18  # 2001
    for folder, _, names in os.walk(root):
        for path in [folder, *(os.path.join(folder, n) for n in names)]:
            os.utime(path, ns=(long_ago, long_ago))
    kept = Kept()
    walk(root, kept)
    assert kept.saved == 0


def test_an_unsaved_gitignore_does_not_stand_for_the_one_on_disk(
    tmp_path: Path,
) -> None:
    """The walk reads .gitignore files from disk: an editor's buffer of one is no
    stamp of what it read."""
    root = tree(tmp_path)
    ignore = root / ".gitignore"
    kept = Kept()
    with overlay({str(ignore): b"a.py\n"}):
        walk(root, kept)
    ignore.write_text("pkg/\n")  # the same size, in place
    with overlay({str(ignore): b"a.py\n"}):
        assert walk(root, kept) == walk(root) == ["a.py", "gen/g.py"]


def test_a_repository_reached_through_a_link_is_asked_again(tmp_path: Path) -> None:
    """``.git`` may be a link (repo checkouts): whether it leads to a repository is
    asked again, not read off a stamp."""
    outer = tmp_path / "outer"
    root = tree(outer / "proj")
    (root / ".git").rmdir()
    (outer / ".git").mkdir()
    (outer / ".gitignore").write_text("proj/pkg/\n")
    (root / ".git").symlink_to(tmp_path / "gitdir")  # nowhere yet
    kept = Kept()
    assert walk(root, kept) == ["a.py"]
    (tmp_path / "gitdir").mkdir()  # now proj is a repository of its own
    assert walk(root, kept) == walk(root) == ["a.py", "pkg/b.py", "pkg/deep/c.py"]


def test_a_walk_a_linked_pyvenv_cfg_decided_is_not_kept(tmp_path: Path) -> None:
    root = tree(tmp_path / "repo")
    (root / "pkg" / "pyvenv.cfg").symlink_to(tmp_path / "nowhere.cfg")
    kept = Kept()
    walk(root, kept)
    assert kept.saved == 0


def test_a_listing_that_does_not_list_its_folder_is_not_taken(tmp_path: Path) -> None:
    """Whatever the cache holds, a listing is taken only where it stamps the folder
    walked and finds files below it alone."""
    root = tree(tmp_path)
    kept = Kept()
    walk(root, kept)
    (key,) = kept.listings
    planted = Listing(files.IGNORE_BUDGET, 0, [], [], [("/etc/passwd", False)])
    kept.listings[key] = planted
    assert walk(root, kept) == walk(root)


def test_the_plan_walks_nothing_again_where_nothing_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``plan`` walks a project's folder twice (the targets, then the project,
    with less .gitignore allowance left): each walk has its own listing."""
    project = tree(tmp_path / "project")
    (project / "pyproject.toml").write_text("[tool.graphlint]\n")
    cache = tmp_path / "cache"
    monkeypatch.chdir(project)
    first = plan([Path("pkg")], cache_dir=cache, keep_listings=True)
    scandir = os.scandir
    with monkeypatch.context() as patched:

        def refuse(path: str) -> object:  # the cache's own folders it may list
            assert not os.fspath(path).startswith(os.fspath(project)), path
            return scandir(path)

        patched.setattr(os, "scandir", refuse)
        again = plan([Path("pkg")], cache_dir=cache, keep_listings=True)
    assert again.analysed == first.analysed
    assert again.shown == first.shown


def test_a_plan_like_a_kept_one_takes_its_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plan of other files of a project whose kept plan is known to be current
    (``like``: a language server told of every file made or removed) takes the
    project's files and their configurations from it, walking only the files
    named, and says what a plan made afresh says; not with another
    configuration, nor for a file the kept plan does not hold (an editor's
    buffer of a file not on disk), nor from a plan that holds a file named that
    the project's walk does not find."""
    project = tree(tmp_path / "project")
    (project / "pyproject.toml").write_text("[tool.graphlint]\n")
    (project / "pkg" / "graphlint.toml").write_text('ignore = ["GL101"]\n')
    (project / "z.py").write_text("x = 1\n")
    monkeypatch.chdir(project)
    kept = plan([Path("a.py")])
    walked: list[list[Path]] = []
    real = files.collect

    def spy(paths: list[Path], *args: object, **kwargs: object) -> Collected:
        walked.append(list(paths))
        return real(paths, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr("graphlint.lint.collect", spy)
    fresh = plan([Path("z.py")])
    assert len(walked) == 2 and fresh.walked  # the file named, then the project
    walked.clear()
    like = plan([Path("z.py")], like=kept)
    assert walked == [[Path("z.py")]]
    for name in ("shown", "analysed", "folders", "governing", "settings", "project"):
        assert getattr(like, name) == getattr(fresh, name), name
    assert like.governing[Path("pkg/b.py")] != like.governing[Path("a.py")]
    walked.clear()
    plan([Path("z.py")], Choices(select=["GL1"]), like=kept)  # other choices
    assert len(walked) == 2
    walked.clear()
    plan([Path("pkg/b.py")], like=kept)  # another configuration: its own project
    assert len(walked) == 2
    walked.clear()
    with overlay({str(project / "new.py"): b"x = 1\n"}):
        plan([Path("new.py")], like=kept)
    assert len(walked) == 3  # the file named, the project, then both: not walked
    # a plan that named a file its walk does not find (.gitignore'd): another
    # plan does not take its files, which hold that one
    ignored = plan([Path("gen/g.py")])
    assert not ignored.walked and Path("gen/g.py") in ignored.analysed
    walked.clear()
    other = plan([Path("z.py")], like=ignored)
    assert len(walked) == 2 and Path("gen/g.py") not in other.analysed
    assert other.analysed == fresh.analysed


def test_a_listing_is_another_user_s_to_take_only_as_that_user(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder one user can list another may not: who walks is part of the key."""
    if not hasattr(os, "geteuid"):
        pytest.skip("no user ids here")
    cache = Cache(tmp_path / "cache" / "v", None)
    config = Config(root=tmp_path)
    listing = Listing(files.IGNORE_BUDGET, 0, [(str(tmp_path), None)], [], [])
    _listings(cache, config).save("walk", listing)
    assert _listings(cache, config).load("walk") == listing
    other = os.geteuid() + 1
    monkeypatch.setattr(os, "geteuid", lambda: other)
    assert _listings(cache, config).load("walk") is None


def test_a_walk_with_less_gitignore_allowance_left_is_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past its allowance a walk reads no more .gitignore files: a listing made
    with more allowance left does not stand for it."""
    first, second = tree(tmp_path / "one"), tree(tmp_path / "two")
    monkeypatch.setattr(files, "IGNORE_BUDGET", len("gen/\n"))  # one file's
    kept = Kept()
    forget_paths()
    collect([second], listings=kept.store)  # its .gitignore read
    forget_paths()
    both = collect([first, second], listings=kept.store)
    forget_paths()
    assert both == collect([first, second])  # the second's not read


HAZARD = """import torch

g = torch.cuda.CUDAGraph()
x = torch.zeros(1, device="cuda")
with torch.cuda.graph(g):
    y = x.item()
"""


def test_the_command_line_checks_a_file_added_between_two_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs of ``graphlint check`` with the cache: one after a file was added walks
    again and checks it; the next, with nothing changed, lists no folder."""
    project = tree(tmp_path / "project")
    (project / "pyproject.toml").write_text("[tool.graphlint]\n")
    monkeypatch.setenv("GRAPHLINT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(project)
    runner = CliRunner()
    listed: list[str] = []
    scandir = os.scandir

    def counted(path: str) -> object:
        if Path(path).is_relative_to(project):
            listed.append(os.fspath(path))
        return scandir(path)

    def run() -> str:
        listed.clear()
        done = runner.invoke(app, ["check", "--format", "json", "."])
        return done.stdout

    monkeypatch.setattr(os, "scandir", counted)
    assert "late.py" not in run()
    assert listed
    (project / "pkg" / "deep" / "late.py").write_text(HAZARD)
    assert "late.py" in run()
    assert listed
    assert "late.py" in run()
    assert listed == []
