"""Which files ``graphlint check PATH...`` looks at.

Folders recurse into ``*.py`` and ``*.ipynb`` (Jupyter notebooks, checked as the
script their code cells make: ``graphlint.notebook``), and into the files an
``extend-include`` pattern matches, skipping VCS folders, virtual environments,
caches and whatever .gitignore files (from the repository root down) ignore. Files
named on the command line are checked whatever their names; with ``--force-exclude``
(a pre-commit hook, an editor), not where a configured ``exclude`` pattern matches
them. Symlinked folders are not followed.

The checked repository decides what its paths are, so no path stops the walk: a
folder that cannot be listed and a ``.py`` link that leads nowhere (a loop, a missing
target) come back in ``Collected.unreadable`` with the OS's reason, and everything
else is still collected.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePath

import msgspec

from graphlint.gitignore import MAX_FILE_SIZE, IgnoreFile
from graphlint.read import known_real, os_reason, overlaid
from graphlint.stamps import Stamp, on_disk, recent

INCLUDED = (".py", ".ipynb")
"""What a folder's files are checked for, by their names' ends (ruff's default
``include`` less its stubs and ``pyproject.toml``); ``extend-include`` adds more."""

SKIPPED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".bzr",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        ".eggs",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".pytype",
        "node_modules",
        "site-packages",
        "__pypackages__",
        ".direnv",
        ".ipynb_checkpoints",
        "buck-out",
        "_build",
    }
)


RACY_NS = 2_000_000_000
"""A listing is not kept where a folder or .gitignore it depends on changed less than
this long before the walk started: a file system stamps a change to the tick of its
clock (milliseconds here, two seconds on FAT), so a second change in the same tick,
after the walk listed the folder, would leave the stamp as it was (git calls such
entries racy)."""

IGNORE_BUDGET = 256 * 1024
"""Bytes of .gitignore files one walk reads in all: matching costs time in proportion
to the patterns in force, and a hostile tree could put a large file in every folder."""


class MissingPathError(Exception):
    """A path given on the command line does not exist."""


@dataclass(frozen=True, slots=True)
class Collected:
    """What ``collect`` found, each list in a stable order."""

    files: list[Path]
    """Files to check, without duplicates."""
    unreadable: list[tuple[Path, str]]
    """Paths that cannot be looked into, with the reason in words: a folder that
    cannot be listed, a file whose link is a loop or leads nowhere."""


class Listing(msgspec.Struct, frozen=True):
    """What the walk of one folder found, with what it depends on: the stamps of
    the folders it listed and of the .gitignore files it looked for (none where
    there was none), whether each folder it looked at for a ``.git`` was a
    repository's, and the .gitignore allowance it started with."""

    allowance: int
    used: int  # .gitignore bytes it read
    stamps: list[tuple[str, Stamp]]
    repositories: list[tuple[str, bool]]
    # each file found, in the walk's order, and whether it is a link: a file is its
    # own key, a link is resolved again (where it leads is no stamp of the tree's)
    files: list[tuple[str, bool]]


@dataclass(frozen=True)
class Listings:
    """The listings of earlier walks, by the real path of the folder walked
    (``load``), and where a walk keeps its own (``save``): a run whose folders are
    as they were takes the files from there instead of walking (ruff keeps no such
    listing; on Megatron-LM the walk was a third of a warm check)."""

    load: Callable[[str], Listing | None]  # by ``_key``
    save: Callable[[str, Listing], None]


@dataclass
class _Record:
    """A walk's ``Listing``, as it is taken."""

    allowance: int
    stamps: list[tuple[str, Stamp]] = field(default_factory=list)
    repositories: list[tuple[str, bool]] = field(default_factory=list)
    files: list[tuple[str, bool]] = field(default_factory=list)
    # something could not be read, or a link decided something: not kept
    failed: bool = False
    started: int = field(default_factory=time.time_ns)  # before the first stamp

    def stamp(self, path: Path | str) -> None:
        self.stamps.append((os.fspath(path), on_disk(path)))

    def racy(self) -> bool:
        """Whether the listing must not be kept: ``failed``, or something it
        depends on changed too recently for its stamp to show a later change
        (``RACY_NS``)."""
        since = self.started - RACY_NS
        return self.failed or any(recent(was, since) for _, was in self.stamps)


class _Found:
    """Files and unreadable paths, each kept once."""

    def __init__(self) -> None:
        self.files: dict[str, Path] = {}
        self.unreadable: dict[str, tuple[Path, str]] = {}
        self.allowance = IGNORE_BUDGET  # .gitignore bytes still to read in this walk
        self.record: _Record | None = None  # the listing of the walk under way

    def ignores(self, folder: Path) -> IgnoreFile | None:
        """The .gitignore of ``folder``, within the walk's allowance: past it, no
        more .gitignore files are read (more files are checked, never fewer)."""
        path = folder / ".gitignore"
        if self.record is not None:
            self.record.stamp(path)  # before it is read: a later edit is a change
        own = IgnoreFile.read(path, min(MAX_FILE_SIZE, self.allowance))
        if own is not None:
            self.allowance -= own.size
        return own

    def file(self, path: Path, key: str) -> None:
        self.files.setdefault(key, path)

    def problem(self, path: Path, error: OSError) -> None:
        self.unreadable.setdefault(os.fspath(path), (path, os_reason(error)))
        if self.record is not None:
            self.record.failed = True

    def result(self) -> Collected:
        return Collected(
            sorted(self.files.values(), key=lambda p: p.as_posix()),
            sorted(self.unreadable.values(), key=lambda u: u[0].as_posix()),
        )


def collect(
    paths: list[Path],
    excludes: IgnoreFile | None = None,
    includes: IgnoreFile | None = None,
    *,
    named: bool = True,
    listings: Listings | None = None,
) -> Collected:
    """The files to check under ``paths``, and the paths that cannot be read. A file
    in the overlay (stdin, an editor's buffer) is there even when the disk has none.
    ``excludes`` leaves out what the folders hold, and, without ``named``, the files
    and folders named themselves too (``--force-exclude``). In folders, the files
    ``INCLUDED`` names and those an ``includes`` pattern (``extend-include``)
    matches are checked. A folder whose ``listings`` say what it holds, its
    folders as they were then, is not walked again."""
    missing = [p for p in paths if _missing(p) and overlaid(p) is None]
    if missing:
        raise MissingPathError(", ".join(str(p) for p in missing))
    found = _Found()
    for path in paths:
        if overlaid(path) is not None:
            real = os.path.realpath(path)
            if named or excludes is None or not excludes.excludes(Path(real)):
                found.file(path, real)
            continue
        try:
            own = os.lstat(path)
            target = os.stat(path) if stat.S_ISLNK(own.st_mode) else own
        except OSError as error:  # a link loop or to nowhere, a folder not searchable
            found.problem(path, error)
            continue
        if stat.S_ISDIR(own.st_mode):
            real = os.path.realpath(path)
            if (
                not named
                and excludes is not None
                and excludes.decide(Path(real), is_dir=True)
            ):
                continue  # --force-exclude: an excluded folder, named
            _walk(path, excludes, includes, found, listings)
            continue
        if stat.S_ISDIR(target.st_mode):
            continue  # a symlink to a folder named explicitly: not followed
        real = os.path.realpath(path)
        if named or excludes is None or not excludes.excludes(Path(real)):
            found.file(path, real)
    return found.result()


PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")


def project_root(start: Path) -> Path | None:
    """The nearest folder at or above ``start`` that holds a project marker (a
    ``pyproject.toml``, ``setup.py``, ``setup.cfg`` or ``.git``), real; never the
    user's home folder, a folder above it, or the filesystem's root (a home folder
    kept in git is no project to survey). None where there is none."""
    folder = Path(os.path.realpath(start))
    if not os.path.isdir(folder):
        folder = folder.parent
    home = Path(os.path.realpath(os.path.expanduser("~")))
    for candidate in (folder, *folder.parents):
        if (
            candidate == home
            or candidate in home.parents
            or candidate == candidate.parent
        ):
            return None
        if any(os.path.lexists(candidate / marker) for marker in PROJECT_MARKERS):
            return candidate
    return None


def _missing(path: Path) -> bool:
    try:
        os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return True
    except OSError:
        return False  # there, but not for us: reported as unreadable
    return False


def _repository_ignores(folder: Path, found: _Found) -> list[IgnoreFile]:
    """.gitignore files from the repository root down to ``folder``'s parent."""
    chain = [folder, *folder.parents]
    root = None
    for candidate in chain:
        held = _is_repository(candidate)
        if found.record is not None:  # asked again before a replay
            found.record.repositories.append((os.fspath(candidate), held))
        if held:
            root = candidate
            break
    if root is None:
        return []
    above = [f for f in chain[1:] if f == root or root in f.parents]
    ignores = [found.ignores(f) for f in reversed(above)]
    return [i for i in ignores if i is not None]


def _is_repository(folder: Path) -> bool:
    """A ``.git`` folder, or a ``.git`` file (a worktree or submodule) is there; a
    FIFO or a dangling link of that name is not a repository."""
    git = os.path.join(folder, ".git")
    return os.path.isdir(git) or os.path.isfile(git)


def _ignored(path: Path, is_dir: bool, ignores: list[IgnoreFile]) -> bool:
    decision = False
    for ignore in ignores:
        verdict = ignore.decide(path, is_dir)
        if verdict is not None:
            decision = verdict
    return decision


def _walk(
    top: Path,
    excludes: IgnoreFile | None,
    includes: IgnoreFile | None,
    found: _Found,
    listings: Listings | None = None,
) -> None:
    """Add the files below ``top``, depth first without recursion (a tree can be
    deeper than Python's stack), never through a symlinked folder; as the last
    walk's listing says, where its folders are as they were."""
    # realpath, not Path.resolve(): it does not raise on a link loop. Below a real
    # folder reached without following links every path is real, so it is its own
    # key; only a linked file needs resolving.
    real = Path(os.path.realpath(top))
    key = _key(real, found.allowance)
    if listings is not None:
        kept = listings.load(key)
        if kept is not None and _current(kept, os.fspath(real), found.allowance):
            _replay(kept, found)
            return
        found.record = _Record(found.allowance)
    try:
        _walk_folders(real, excludes, includes, found)
    finally:
        record, found.record = found.record, None
    if listings is not None and record is not None and not record.racy():
        used = record.allowance - found.allowance
        listing = Listing(
            record.allowance, used, record.stamps, record.repositories, record.files
        )
        listings.save(key, listing)


def _key(folder: Path, allowance: int) -> str:
    """What a walk's listing is kept by: the folder, and the .gitignore allowance
    it starts with (``plan`` walks a folder twice, the second time with less)."""
    return f"{os.fspath(folder)}\0{allowance}"


def _current(listing: Listing, top: str, allowance: int) -> bool:
    """Whether a walk of ``top`` now would find what ``listing`` says: it starts
    with the same .gitignore allowance, it lists ``top`` and finds only files below
    it (a listing is nothing else), every folder and .gitignore it depends on is as
    it was (a folder's stamp changes when an entry is added, removed or renamed),
    and so is every folder's being a repository's."""
    below = top.rstrip(os.sep) + os.sep
    return (
        listing.allowance == allowance
        and any(path == top for path, _ in listing.stamps)
        and all(name.startswith(below) for name, _ in listing.files)
        and all(on_disk(path) == was for path, was in listing.stamps)
        and all(
            _is_repository(Path(folder)) == was for folder, was in listing.repositories
        )
    )


def _replay(listing: Listing, found: _Found) -> None:
    """Add the files ``listing`` says a walk finds, in its order; a link is
    resolved again."""
    found.allowance -= listing.used
    for name, link in listing.files:
        path = Path(name)
        if not link:
            known_real(path)
            found.file(path, name)
            continue
        try:
            if stat.S_ISDIR(os.stat(name).st_mode):
                continue  # a folder behind a .py-named link: not followed
        except OSError as error:
            found.problem(path, error)
            continue
        found.file(path, os.path.realpath(name))


def _walk_folders(
    real: Path, excludes: IgnoreFile | None, includes: IgnoreFile | None, found: _Found
) -> None:
    """``_walk`` of the real folder ``real``."""
    record = found.record
    inherited = _repository_ignores(real, found)
    if excludes is not None:
        inherited = [excludes, *inherited]
    pending = [(real, inherited)]
    while pending:
        folder, ignores = pending.pop()
        if record is not None and folder is real:  # stamped before it is listed
            record.stamp(folder)
        own = found.ignores(folder)
        if own is not None:
            ignores = [*ignores, own]
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError as error:
            found.problem(folder, error)
            continue
        subfolders: list[Path] = []
        for entry in entries:
            # not built for a file whose name leaves it out (most of a tree's)
            path: Path | None = None
            try:
                if entry.is_dir(follow_symlinks=False):
                    path = Path(entry.path)
                    if entry.name in SKIPPED_DIRS or _ignored(path, True, ignores):
                        continue
                    if record is not None:  # before it is looked into and listed
                        record.stamp(entry.path)
                    venv = os.path.join(entry.path, "pyvenv.cfg")
                    if record is not None and os.path.islink(venv):
                        record.failed = True  # no stamp says where a link leads
                    if not os.path.exists(venv):
                        subfolders.append(path)
                    continue
                if not entry.name.endswith(INCLUDED) and includes is None:
                    continue
                path = Path(entry.path)
                if _included(entry.name, path, includes) and not _ignored(
                    path, False, ignores
                ):
                    key = entry.path
                    if entry.is_symlink():
                        if record is not None:
                            record.files.append((entry.path, True))
                        # raises for a loop or a dangling link
                        if stat.S_ISDIR(os.stat(entry.path).st_mode):
                            continue  # a folder behind a .py-named link: not followed
                        key = os.path.realpath(entry.path)
                    else:  # in a real folder, no link: real (``read.real_path``)
                        known_real(path)
                        if record is not None:
                            record.files.append((entry.path, False))
                    found.file(path, key)
            except OSError as error:
                found.problem(path if path is not None else Path(entry.path), error)
        pending.extend((sub, ignores) for sub in reversed(subfolders))


def _included(name: str, path: Path, includes: IgnoreFile | None) -> bool:
    """Whether a file found in a folder is checked: its name ends as ``INCLUDED``
    says, or an ``extend-include`` pattern matches it (or a folder above it)."""
    return name.endswith(INCLUDED) or (includes is not None and includes.excludes(path))


def is_test_module(path: str) -> bool:
    """Whether ``path`` names a test module as pytest and unittest discovery find
    them: ``test_*.py`` or ``*_test.py``, or a file under a ``test``/``tests``
    folder."""
    parts = PurePath(path).parts
    name = parts[-1] if parts else ""
    return (
        name.startswith("test_")
        or name.endswith("_test.py")
        or any(part in ("test", "tests") for part in parts[:-1])
    )
