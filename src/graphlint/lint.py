"""Checking files as the command line and the language server do: the configuration
that governs them, the files under the paths given, the project they belong to, and
what the analysis finds there."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path

import msgspec

from graphlint.cache import (
    Cache,
    CacheError,
    code_version,
    configured_max_size,
    pattern_library,
)
from graphlint.config import (
    LIMITS,
    Config,
    ConfigError,
    FailOn,
    Limits,
    Nested,
    Tree,
    find,
    folder_of,
    limited,
    load,
    parse_version,
    repository,
    split_codes,
    user_limits,
)
from graphlint.diagnostics import Checked, FileResult
from graphlint.files import (
    Collected,
    Listing,
    Listings,
    MissingPathError,
    collect,
    project_root,
)
from graphlint.gitignore import IgnoreFile
from graphlint.notebook import in_cells
from graphlint.project.survey import survey_project
from graphlint.read import (
    LINK_OUT,
    confined,
    forget_paths,
    notebook_cells,
    real_path,
    run_folder,
    tool_diagnostic,
)
from graphlint.settings import Settings
from graphlint.tool_codes import UnreadableFile


class LintError(Exception):
    """Bad input (a configuration error, a missing path): the message says what."""


@dataclass(frozen=True)
class Plan:
    """What a run checks, and with what, decided before any file is analysed."""

    cwd: Path
    config: Config  # the run's: the closest to the folder that holds every target
    excludes: IgnoreFile | None
    shown: list[Path]  # the files named or found under the targets: reported on
    unreadable: list[tuple[Path, str]]
    analysed: list[Path]  # those, or the whole project they belong to
    project: Path | None
    folders: list[Path]
    governing: dict[Path, Config]  # each analysed file's configuration
    settings: Settings  # the run's, every governing configuration's codes enabled
    tree: Tree  # the repository checked: what its files may lead to
    cache: Cache | None = None  # the project's, where the plan kept its listings
    chosen: Choices | None = None  # what the command line chose, besides the paths
    # ``analysed`` is what a walk of ``project`` finds, no file named besides
    walked: bool = False


@dataclass(frozen=True)
class Choices:
    """What the command line chose for a run, besides its paths."""

    config_file: Path | None = None
    select: list[str] | None = None
    extend_select: list[str] | None = None
    ignore: list[str] | None = None
    target_version: str | None = None
    alone: bool = False
    # --max-file-size, --timeout, --max-memory: (key, value) pairs, checked
    limits: tuple[tuple[str, float], ...] = ()
    preview: bool | None = None  # --preview / --no-preview
    # --force-exclude: a file named on the command line stays out when excluded (a
    # pre-commit hook, an editor); otherwise naming it checks it, as ruff does
    force_exclude: bool = False
    fail_on: FailOn | None = None  # --fail-on
    # --extend-include: patterns added to the configuration's extend-include
    extend_include: list[str] | None = None


def _excluded(
    excludes: IgnoreFile | None, targets: list[Path], force: bool
) -> Callable[[Path], bool]:
    """Whether the analysis leaves a file out: the configuration excludes it, and
    (unless ``force``) no target named on the command line that it excludes holds
    it (``graphlint check fixtures/`` checks what an excluded folder holds)."""
    if excludes is None:
        return lambda path: False
    named = [] if force else [real_path(t) for t in targets]
    named = [
        t
        for t in named
        if excludes.excludes(t) or (t.is_dir() and excludes.excludes(t / "_"))
    ]

    def excluded(path: Path) -> bool:
        real = real_path(path)
        if not excludes.excludes(real):
            return False
        return not any(real == t or real.is_relative_to(t) for t in named)

    return excluded


@run_folder()
def plan(
    targets: list[Path],
    chosen: Choices = Choices(),
    warn: Callable[[str], None] = lambda message: None,
    *,
    cache_dir: Path | None = None,
    keep_listings: bool = False,
    like: Plan | None = None,
) -> Plan:
    """The configuration that governs ``targets``, the files to check and the
    project they belong to. Unless ``chosen.alone``, targets inside a project are
    checked as part of it. With ``keep_listings``, the folders' listings are kept
    in the project's cache (under ``cache_dir``, else the default) for the next
    run's walk (``files.Listings``). ``like``: a plan whose project's files, and
    the configurations that govern them, are known to be as they were (a language
    server told of every file made or removed and of every configuration
    changed): files of the same project, planned with the same configuration and
    choices, take its project's files and their configurations instead of
    walking the project again. Raises ``LintError`` for bad input."""
    forget_paths()  # links and ``__init__.py`` files may have changed since a last run
    cwd = real_path(Path.cwd())
    config_file, target_version = chosen.config_file, chosen.target_version
    trusted = config_file is not None  # the user named it: it may raise limits
    common = _common(targets)

    def flags(config: Config) -> Config:
        return _with_flags(config, chosen.select, chosen.extend_select, chosen.ignore)

    def included(config: Config) -> Config:
        more = split_patterns(chosen.extend_include or [])
        if not more:
            return config
        return replace(config, extend_include=(*config.extend_include, *more))

    try:
        source = config_file if config_file is not None else find(common, warn)
        if config_file is not None and not os.path.lexists(config_file):
            raise LintError(f"config file not found: {config_file}")
        # a configuration found in the tree reads nothing out of its repository
        inside = (
            repository(Path(os.path.realpath(source.parent)))
            if source is not None and not trusted
            else None
        )
        config = included(flags(load(source, cwd, confined=inside, warn=warn)))
        named_limits = _user_limits(chosen, config if trusted else None)
        config = limited(config, named_limits, trusted, warn)
        if target_version is not None:
            config = replace(config, target_version=parse_version(target_version))
        if chosen.preview is not None:
            config = replace(config, preview=chosen.preview)
        if chosen.fail_on is not None:
            config = replace(config, fail_on=chosen.fail_on)
        settings = config.settings()
    except ConfigError as error:
        raise LintError(str(error)) from None
    tree = Tree(
        inside or repository(Path(os.path.realpath(folder_of(common)))),
        config.source_roots if trusted else (),
    )
    root = config.exclude_root or config.root
    excludes = IgnoreFile(root, list(config.exclude)) if config.exclude else None
    includes = (
        IgnoreFile(config.include_root or config.root, list(config.extend_include))
        if config.extend_include
        else None
    )
    cache = _project_cache(config, cache_dir) if keep_listings else None
    listings = _listings(cache, config) if cache is not None else None
    try:
        named = collect(
            targets,
            excludes,
            includes,
            named=not chosen.force_exclude,
            listings=listings,
        )
    except MissingPathError as error:
        raise LintError(f"no such file or directory: {error}") from None
    # a committed link out of the repository is not read: GL004
    linked_out = [(f, LINK_OUT) for f in named.files if tree.leads_out(f)]
    unreadable = sorted([*named.unreadable, *linked_out], key=lambda u: u[0].as_posix())
    refused = {f for f, _ in linked_out}
    shown = [display_path(f, cwd) for f in named.files if f not in refused]
    project = None
    if shown and not chosen.alone:
        project = _project(targets, config.root if source else None)
    folders = [t for t in targets if os.path.isdir(t)]  # never raises
    analysed = shown
    known: dict[Path, Config] | None = None  # the project's, from ``like``
    walked = False
    if project is not None:
        if (
            like is not None
            and like.walked
            and not folders
            and (like.project, like.cwd, like.config, like.tree, like.chosen)
            == (project, cwd, config, tree, chosen)
            and set(shown) <= set(like.governing)
        ):  # what the walk finds holds the files named: the walk's files
            analysed, known, walked = like.analysed, like.governing, True
        else:
            whole, walked = _project_files(
                project, targets, named, excludes, includes, chosen, listings
            )
            analysed = [display_path(f, cwd) for f in whole if not tree.leads_out(f)]
        folders = [project, *folders]
    nested = Nested(config, flags, warn, tree.top) if config_file is None else None
    try:
        governing = (
            known
            if known is not None
            else {path: _governing(nested, config, path) for path in analysed}
        )
        distinct = {id(c): c for c in governing.values()}.values()
        enabled = frozenset().union(settings.enabled, *(c.enabled() for c in distinct))
    except ConfigError as error:
        raise LintError(str(error)) from None
    settings = replace(settings, enabled=enabled)
    return Plan(
        cwd,
        config,
        excludes,
        shown,
        unreadable,
        analysed,
        project,
        folders,
        governing,
        settings,
        tree,
        cache,
        chosen,
        walked,
    )


def _project_files(
    project: Path,
    targets: list[Path],
    named: Collected,
    excludes: IgnoreFile | None,
    includes: IgnoreFile | None,
    chosen: Choices,
    listings: Listings | None,
) -> tuple[list[Path], bool]:
    """The files of ``project`` and ``targets`` (``named``, collected), as
    ``collect([project, *targets])`` finds them; and whether they are what the
    project's walk alone finds (no file named besides: a plan of other files of
    it may take them, ``plan``'s ``like``)."""
    walk = collect(
        [project],
        excludes,
        includes,
        named=not chosen.force_exclude,
        listings=listings,
    ).files
    found = {os.fspath(f) for f in walk}
    if all(os.path.realpath(f) in found for f in named.files):
        return walk, True
    whole = collect(
        [project, *targets],
        excludes,
        includes,
        named=not chosen.force_exclude,
        listings=listings,
    ).files
    return whole, False


def _project_cache(config: Config, cache_dir: Path | None) -> Cache | None:
    """The cache of the project ``config`` is of; None where its size limit is not
    one (``lint`` says so)."""
    try:
        return Cache.for_project(config.root, cache_dir, configured_max_size())
    except CacheError:
        return None


def _listings(cache: Cache, config: Config) -> Listings:
    """The folders' listings in ``cache``, by the folder walked and what decides
    which files a walk finds: the patterns of ``exclude`` and ``extend-include``,
    where they are relative to, who walks (a folder one user can list another may
    not), graphlint's code and the pattern library's."""
    posix = hasattr(os, "geteuid")
    context = msgspec.json.encode(
        [
            os.fsdecode(config.exclude_root or config.root),
            list(config.exclude),
            os.fsdecode(config.include_root or config.root),
            list(config.extend_include),
            [os.geteuid(), os.getegid(), sorted(os.getgroups())] if posix else [],
            pattern_library(),
        ]
    )

    def key(walk: str) -> str:
        return Cache.key(b"listing", code_version(), context, os.fsencode(walk))

    return Listings(
        lambda folder: cache.get(key(folder), Listing),
        lambda folder, listing: cache.put(key(folder), listing),
    )


def _user_limits(chosen: Choices, named: Config | None) -> Limits:
    return user_limits(dict(chosen.limits), named)


def stdin_limit(chosen: Choices) -> int:
    """The most bytes of standard input a run can check (more is GL003): the
    ``max-file-size`` the user allows, which a repository may only lower. Raises
    ``LintError`` for bad input."""
    named = chosen.config_file
    try:
        trusted = (
            load(named, real_path(Path.cwd()))
            if named is not None and os.path.lexists(named)
            else None
        )
        return int(_user_limits(chosen, trusted).values["max-file-size"])
    except ConfigError as error:
        raise LintError(str(error)) from None


@run_folder()
def lint(
    targets: list[Path],
    *,
    no_cache: bool = False,
    cache_dir: Path | None = None,
    jobs: int | None = None,
    warn: Callable[[str], None] = lambda message: None,
    progress: Callable[[int, int], None] | None = None,
    chosen: Choices = Choices(),
    planned: Plan | None = None,
) -> Checked:
    """What ``check`` finds in ``targets`` (``plan``'s, with ``chosen`` options,
    unless it is ``planned`` already), and what the analysis saw. In a project,
    the whole project is analysed (its cached results make that cheap), and what
    concerns the targets is kept; alone, the analysis starts from the targets, and
    what it finds in the files they reach is kept too. Raises ``LintError`` for
    bad input; ``warn`` gets what is worth a warning."""
    run = planned if planned is not None else plan(targets, chosen, warn)
    config, cwd, excludes = run.config, run.cwd, run.excludes
    if not run.shown:
        return _with_unreadable(Checked([]), run.unreadable, run.settings, cwd)

    tree = run.tree
    with confined(tree.leads_out):
        checked = survey_project(
            run.analysed,
            run.settings,
            jobs,
            roots=config.source_roots,
            eager=frozenset(config.eager_functions),
            cache=None if no_cache else cache_of(run, cache_dir),
            excluded=_excluded(excludes, targets, chosen.force_exclude),
            display=lambda path: str(display_path(path, cwd)),
            capture_roots=config.capture_roots,
            base=config.root,
            warn=warn,
            folders=run.folders,
            # what else the results depend on: paths are shown from the working
            # folder; a link is read or not as the repository's bounds say
            context=os.fsencode(
                f"{cwd}\0{config.exclude_root or config.root}\0{config.exclude!r}"
                f"\0{tree.top}\0{tree.allowed!r}"
            ),
            progress=progress,
            paths_current=True,  # as planned
        )
        if run.project is not None:
            checked = checked.about({str(path) for path in run.shown})
        checked = _selected(checked, run.governing, config)
        checked = _with_unreadable(checked, run.unreadable, run.settings, cwd)
        # places in notebooks as cells and their lines, the cells read as the
        # analysis read them (the overlay's text, within the repository's bounds)
        size = run.settings.max_file_size
        return in_cells(checked, lambda path: notebook_cells(Path(path), path, size))


def cache_of(run: Plan, cache_dir: Path | None = None) -> Cache:
    """The cache of the run's project: its configuration's folder (else the working
    folder), under ``cache_dir`` (else the default, ``cache.default_base``). Raises
    ``LintError`` for a size limit that is not one."""
    if run.cache is not None:  # the plan's, opened with the same ``cache_dir``
        return run.cache
    try:
        return Cache.for_project(run.config.root, cache_dir, configured_max_size())
    except CacheError as error:
        raise LintError(str(error)) from None


def cache_root(target: Path, config_file: Path | None = None) -> Path:
    """The folder whose cache ``check TARGET`` uses (``Config.root``): that of the
    configuration ``--config`` names, else of the closest one, else the working
    folder. Raises ``LintError`` for bad input."""
    if not os.path.lexists(target):
        raise LintError(f"no such file or directory: {target}")
    if config_file is not None and not os.path.lexists(config_file):
        raise LintError(f"config file not found: {config_file}")
    try:
        source = config_file or find(Path(_located(target)))
    except ConfigError as error:
        raise LintError(str(error)) from None
    if source is None:
        return real_path(Path.cwd())
    return Path(os.path.realpath(source.parent))


def _common(targets: list[Path]) -> Path:
    """The folder that holds every target: where the run's configuration is looked
    for, so that the order of the targets does not matter. A target that is a link
    counts where it is, not where it leads."""
    try:
        return Path(os.path.commonpath([_located(t) for t in targets]))
    except ValueError:  # paths on different drives
        return targets[0]


def _located(path: Path) -> str:
    """Where ``path`` is: the real path of its folder, and its own name."""
    absolute = os.path.abspath(path)
    folder, name = os.path.split(absolute)
    return os.path.join(os.path.realpath(folder), name)


def _governing(nested: Nested | None, config: Config, path: Path) -> Config:
    return nested.of(path) if nested is not None else config


def _selected(
    checked: Checked, governing: dict[Path, Config], config: Config
) -> Checked:
    """Each file's diagnostics as the configuration that governs it selects them
    (a nested configuration, ``per-file-ignores``); the others as the run's."""
    if all(c is config for c in governing.values()) and not config.per_file_ignores:
        return checked
    by_path = {str(path): c for path, c in governing.items()}
    results = []
    for result in checked.results:
        own = by_path.get(result.path, config)
        codes = own.enabled_for(Path(os.path.realpath(result.path)))
        kept = tuple(d for d in result.diagnostics if d.code in codes)
        results.append(
            result
            if len(kept) == len(result.diagnostics)
            else replace(result, diagnostics=kept)
        )
    return Checked(results, checked.survey)


def _project(targets: list[Path], configured: Path | None) -> Path | None:
    """The project whose regions may reach ``targets``: the configuration's folder,
    else the first target's ``project_root``; None where the targets already hold
    all of it (``graphlint check .`` at its root) or there is no project."""
    first = Path(_located(targets[0]))
    root = configured if configured is not None else project_root(folder_of(first))
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


def split_patterns(values: list[str]) -> tuple[str, ...]:
    """``["*.pyw,*.pyi", "x/*"]`` (repeated or comma-separated options) -> patterns."""
    return tuple(
        part.strip() for value in values for part in value.split(",") if part.strip()
    )


def display_path(path: Path, cwd: Path) -> Path:
    """Paths under the working directory are shown relative to it."""
    try:
        return real_path(path).relative_to(cwd)
    except ValueError:
        return path


def describe(
    config: Config,
    path: Path | None,
    project: Path | None,
    run: Config | None = None,
) -> list[str]:
    """--show-settings: where the configuration comes from, and every value in force
    (for ``path``, when given: its ``per-file-ignores`` applied); the limits are the
    ``run``'s (its configuration's, by default), each with where it comes from."""
    codes = (
        config.enabled_for(Path(os.path.abspath(path))) if path else config.enabled()
    )
    source = str(config.source) if config.source else "none (graphlint's defaults)"
    lines = [
        f"configuration: {source}",
        f"project: {project if project is not None else 'none (paths checked alone)'}",
        *([f"file: {path}"] if path is not None else []),
        f"enabled: {', '.join(sorted(codes))}",
    ]
    values: dict[str, object] = {
        "exclude": list(config.exclude),
        "extend-include": list(config.extend_include),
        "per-file-ignores": {p: list(c) for p, c in config.per_file_ignores},
        "capture-markers": list(config.capture_markers),
        "capture-checks": list(config.capture_checks),
        "capture-roots": list(config.capture_roots),
        "eager-functions": list(config.eager_functions),
        "library-runs": list(config.library_runs),
        "source-roots": [str(root) for root in config.source_roots],
        "target-version": "{}.{}".format(*config.target_version),
        "preview": config.preview,
        "fail-on": (run or config).fail_on.value,
    }
    limits = run or config
    return [
        *lines,
        *(f"{key} = {json.dumps(value)}" for key, value in values.items()),
        *(
            f"{key} = {json.dumps(limits.limit(key))}  # {limits.origin(key)}"
            for key in LIMITS
        ),
    ]
