"""Checking files as the command line and the language server do: the configuration
that governs them, the files under the paths given, the project they belong to, and
what the analysis finds there."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path

from graphlint.cache import Cache
from graphlint.config import (
    Config,
    ConfigError,
    find,
    load,
    parse_version,
    split_codes,
)
from graphlint.diagnostics import Checked, FileResult
from graphlint.files import MissingPathError, collect, project_root
from graphlint.gitignore import IgnoreFile
from graphlint.read import real_path, tool_diagnostic
from graphlint.rules.tool.file_checks import UnreadableFile
from graphlint.settings import Settings


class LintError(Exception):
    """Bad input (a configuration error, a missing path): the message says what."""


def lint(
    targets: list[Path],
    *,
    config_file: Path | None = None,
    select: list[str] | None = None,
    extend_select: list[str] | None = None,
    ignore: list[str] | None = None,
    no_cache: bool = False,
    cache_dir: Path | None = None,
    target_version: str | None = None,
    jobs: int | None = None,
    alone: bool = False,
    warn: Callable[[str], None] = lambda message: None,
    progress: Callable[[int, int], None] | None = None,
) -> Checked:
    """What ``check`` finds in ``targets``, with the configuration that governs
    them, and what the analysis saw. Unless ``alone``, targets inside a project are
    checked as part of it: the whole project is analysed (its cached results make
    that cheap), and what concerns the targets is kept. Alone, the analysis starts
    from the targets, and what it finds in the files they reach is kept too.
    Raises ``LintError`` for bad input; ``warn`` gets what is worth a warning."""
    cwd = real_path(Path.cwd())
    try:
        source = config_file if config_file is not None else find(targets[0], warn)
        if config_file is not None and not os.path.lexists(config_file):
            raise LintError(f"config file not found: {config_file}")
        config = load(source, cwd)
        config = _with_flags(config, select, extend_select, ignore)
        if target_version is not None:
            config = replace(config, target_version=parse_version(target_version))
        settings = config.settings()
    except ConfigError as error:
        raise LintError(str(error)) from None
    excludes = IgnoreFile(config.root, list(config.exclude)) if config.exclude else None
    try:
        named = collect(targets, excludes)
    except MissingPathError as error:
        raise LintError(f"no such file or directory: {error}") from None
    shown = [display_path(f, cwd) for f in named.files]
    if not shown:
        return _with_unreadable(Checked([]), named.unreadable, settings, cwd)
    project = None if alone else _project(targets, config.root if source else None)
    folders = [t for t in targets if os.path.isdir(t)]  # never raises
    analysed = shown
    if project is not None:
        folders = [project, *folders]
        whole = collect([project, *targets], excludes).files
        analysed = [display_path(f, cwd) for f in whole]
    from graphlint.project.check import survey_project  # noqa: PLC0415 - files to check

    checked = survey_project(
        analysed,
        settings,
        jobs,
        roots=config.source_roots,
        eager=frozenset(config.eager_functions),
        cache=None if no_cache else Cache.for_project(config.root, cache_dir),
        excluded=(lambda path: excludes.excludes(real_path(path)))
        if excludes is not None
        else (lambda path: False),
        display=lambda path: str(display_path(path, cwd)),
        capture_roots=config.capture_roots,
        base=config.root,
        warn=warn,
        folders=folders,
        # what else the results depend on: paths are shown from the working folder
        context=os.fsencode(f"{cwd}\0{config.root}\0{config.exclude!r}"),
        progress=progress,
    )
    if project is not None:
        checked = checked.about({str(path) for path in shown})
    return _with_unreadable(checked, named.unreadable, settings, cwd)


def _project(targets: list[Path], configured: Path | None) -> Path | None:
    """The project whose regions may reach ``targets``: the configuration's folder,
    else the first target's ``project_root``; None where the targets already hold
    all of it (``graphlint check .`` at its root) or there is no project."""
    root = configured if configured is not None else project_root(targets[0])
    if root is None:
        return None
    for target in targets:
        real = Path(os.path.realpath(target))
        if os.path.isdir(real) and (real == root or real in root.parents):
            return None
    return root


def _with_unreadable(
    checked: Checked,
    unreadable: Iterable[tuple[Path, str]],
    settings: Settings,
    cwd: Path,
) -> Checked:
    """``checked`` with a GL004 for each file or folder collecting could not read."""
    if UnreadableFile.code in settings.enabled:
        for path, reason in unreadable:  # the link itself, not where it leads
            where = str(display_path(path.parent, cwd) / path.name)
            problem = tool_diagnostic(UnreadableFile, where, detail=reason)
            checked.results.append(FileResult(where, (problem,)))
    return checked


def _with_flags(
    config: Config,
    select: list[str] | None,
    extend_select: list[str] | None,
    ignore: list[str] | None,
) -> Config:
    return replace(
        config,
        select=split_codes(select) if select else config.select,
        extend_select=(*config.extend_select, *split_codes(extend_select or [])),
        ignore=(*config.ignore, *split_codes(ignore or [])),
    )


def display_path(path: Path, cwd: Path) -> Path:
    """Paths under the working directory are shown relative to it."""
    try:
        return real_path(path).relative_to(cwd)
    except ValueError:
        return path
