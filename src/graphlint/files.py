"""Which files ``graphlint check PATH...`` looks at.

Folders recurse into ``*.py``, skipping VCS folders, virtual environments, caches and
whatever .gitignore files (from the repository root down) ignore. Files named on the
command line are always checked unless a configured ``exclude`` pattern matches them
(so a pre-commit hook respects the configuration). Symlinked folders are not followed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from graphlint.gitignore import IgnoreFile

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


class MissingPathError(Exception):
    """A path given on the command line does not exist."""


def collect(paths: list[Path], excludes: IgnoreFile | None = None) -> list[Path]:
    """Files to check, in a stable order, without duplicates."""
    missing = [p for p in paths if not os.path.lexists(p)]
    if missing:
        raise MissingPathError(", ".join(str(p) for p in missing))
    found: dict[Path, Path] = {}
    for path in paths:
        if path.is_dir() and not path.is_symlink():
            for file in _walk(path, excludes):
                found.setdefault(file.resolve(), file)
        elif path.is_dir():
            continue  # a symlink to a folder named explicitly: not followed
        elif excludes is None or not excludes.excludes(path.resolve()):
            found.setdefault(path.resolve(), path)
    return sorted(found.values(), key=lambda p: p.as_posix())


def _repository_ignores(folder: Path) -> list[IgnoreFile]:
    """.gitignore files from the repository root down to ``folder``'s parent."""
    folder = folder.resolve()
    chain = [folder, *folder.parents]
    root = next((f for f in chain if (f / ".git").exists()), None)
    if root is None:
        return []
    above = [f for f in chain[1:] if f == root or root in f.parents]
    ignores = [IgnoreFile.read(f / ".gitignore") for f in reversed(above)]
    return [i for i in ignores if i is not None]


def _ignored(path: Path, is_dir: bool, ignores: list[IgnoreFile]) -> bool:
    decision = False
    for ignore in ignores:
        verdict = ignore.decide(path, is_dir)
        if verdict is not None:
            decision = verdict
    return decision


def _walk(top: Path, excludes: IgnoreFile | None) -> Iterator[Path]:
    top = top.resolve()
    inherited = _repository_ignores(top)
    if excludes is not None:
        inherited = [excludes, *inherited]
    yield from _walk_folder(top, inherited)


def _walk_folder(folder: Path, ignores: list[IgnoreFile]) -> Iterator[Path]:
    own = IgnoreFile.read(folder / ".gitignore")
    if own is not None:
        ignores = [*ignores, own]
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        path = Path(entry.path)
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError:
            continue
        if is_dir:
            if entry.name in SKIPPED_DIRS or (path / "pyvenv.cfg").exists():
                continue
            if not _ignored(path, True, ignores):
                yield from _walk_folder(path, ignores)
        elif entry.name.endswith(".py") and not _ignored(path, False, ignores):
            if entry.is_symlink() and path.is_dir():
                continue  # a folder behind a .py-named link: not followed
            yield path
