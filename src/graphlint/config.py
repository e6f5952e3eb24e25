"""graphlint's configuration: find it, validate it, apply it.

It is ``.graphlint.toml`` or ``graphlint.toml`` (the keys at the top), or the
``[tool.graphlint]`` table of a ``pyproject.toml``, whichever a folder has first in
that order; the closest one above a file governs it.

Configuration is data only: nothing in it can make graphlint import or run code.
A repository's configuration is confined to the repository: it reads no file outside
it (``extend``, ``source-roots``, a linked configuration file), and it may lower the
limits, never raise them; the user raises them (``user_limits``).
"""

from __future__ import annotations

import contextlib
import enum
import math
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from types import MappingProxyType
from typing import Any

from graphlint.codes import CODES, code_of
from graphlint.diagnostics import Severity
from graphlint.files import project_root
from graphlint.gitignore import PatternSet
from graphlint.library import ModelError
from graphlint.library import parse as parse_model
from graphlint.read import RUNNING, ReadError, Version, read_bounded, real_path
from graphlint.settings import (
    DEFAULT_MAX_FILE_SIZE,
    DEFAULT_MAX_MEMORY,
    DEFAULT_TIMEOUT,
    Settings,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

KEYS = {
    "select": "codes or prefixes to enable, replacing the defaults",
    "extend-select": "codes or prefixes to enable in addition to the defaults",
    "ignore": "codes or prefixes to disable",
    "exclude": "gitignore-style patterns of paths not to check",
    "extend-include": "gitignore-style patterns of more files to check in folders, "
    'besides *.py and *.ipynb: ["*.pyw"]',
    "capture-markers": "qualified names of your own capture-region decorators/contexts",
    "capture-checks": "qualified names of functions that say whether the current "
    "stream is capturing (PyTorch's and TransformerEngine's are known)",
    "capture-roots": 'functions a framework captures, as "module:qualname" '
    '("pkg.model:Model.forward"): each is a region',
    "max-file-size": "bytes above which a file is reported (GL003) and not analysed",
    "timeout": "seconds one file may take before it is reported (GL005)",
    "max-memory": "MiB one worker may use before its file is reported (GL005)",
    "target-version": 'the Python version the code is written for, "3.12"',
    "source-roots": "folders imports are resolved from, besides each package root",
    "eager-functions": "qualified names of functions (or decorators) that run eagerly "
    "between graph pieces: calls into them are not followed",
    "per-file-ignores": "codes or prefixes to disable in the files a gitignore-style "
    'pattern matches: {"tests/**" = ["GL1"]}',
    "library-runs": "what library callables run of what they are given, as "
    '"pkg.mod.fn(params) -> param, self.method" (besides the bundled models)',
    "fail-on": 'the least severe diagnostic that makes `check` exit 1: "error", '
    '"warning" or "note" (any diagnostic, the default)',
    "preview": "true to follow code handed over to a capture elsewhere in the project "
    "(a wrapper's stored callable, a factory's returned function): more found, not "
    "yet judged precise on every tree",
    "extend": "another configuration file whose values this one starts from (its "
    "paths stay relative to it)",
}
_EXTEND_DEPTH = 8  # configurations a chain of ``extend`` may hold
# what a configuration below the run's own decides for its files: which codes are
# reported; the other keys are the run's (one analysis, one set of limits)
SELECTION = frozenset({"select", "extend-select", "ignore", "per-file-ignores"})
NAMES = (".graphlint.toml", "graphlint.toml", "pyproject.toml")


# Limits keep graphlint from hanging or exhausting memory on a hostile repository; the
# user may raise them up to these ceilings, a repository may only lower them, and
# nothing switches them off (README, "Configuration").
LIMITS = ("max-file-size", "timeout", "max-memory")
CEILINGS = {"max-file-size": 16 * 1_048_576, "timeout": 600, "max-memory": 16_384}
FLOORS = {"max-file-size": 1, "timeout": 0.001, "max-memory": 256}
DEFAULTS = {
    "max-file-size": DEFAULT_MAX_FILE_SIZE,
    "timeout": DEFAULT_TIMEOUT,
    "max-memory": DEFAULT_MAX_MEMORY,
}
LIMIT_ENV = {
    "max-file-size": "GRAPHLINT_MAX_FILE_SIZE",
    "timeout": "GRAPHLINT_TIMEOUT",
    "max-memory": "GRAPHLINT_MAX_MEMORY",
}
CONFIG_DIR_ENV = "GRAPHLINT_CONFIG_DIR"  # the folder of the user's graphlint.toml
USER_CONFIG = "graphlint.toml"
DEFAULT_ORIGIN = "graphlint's default"
MAX_PER_FILE_IGNORES = 1000  # patterns of one configuration's per-file-ignores
_MAX_CONFIG_SIZE = 128 * 1024  # tomllib is quadratic on long dotted headers
_OLDEST = (3, 7)
_NEWEST = (3, 15)


class ConfigError(Exception):
    """A configuration or selection problem the user must fix (exit code 2)."""


class FailOn(str, enum.Enum):
    """The least severe diagnostic that makes ``check`` exit 1 (``fail-on``,
    ``--fail-on``): the others are reported and pass."""

    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"  # any diagnostic: notes (LSP's information) and hints too

    def fails(self, severity: Severity) -> bool:
        """Whether a diagnostic of ``severity`` makes the run fail."""
        return severity <= _THRESHOLDS[self]


_THRESHOLDS = {
    FailOn.ERROR: Severity.ERROR,
    FailOn.WARNING: Severity.WARNING,
    FailOn.NOTE: Severity.HINT,
}


@dataclass(frozen=True)
class Config:
    """Validated settings; ``root`` is what ``exclude`` patterns are relative to."""

    root: Path
    source: Path | None = None
    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    extend_include: tuple[str, ...] = ()
    capture_markers: tuple[str, ...] = ()
    capture_checks: tuple[str, ...] = ()
    capture_roots: tuple[str, ...] = ()
    max_file_size: int = DEFAULT_MAX_FILE_SIZE
    timeout: float = DEFAULT_TIMEOUT
    max_memory: int = DEFAULT_MAX_MEMORY
    target_version: Version = RUNNING
    source_roots: tuple[Path, ...] = ()
    eager_functions: tuple[str, ...] = ()
    library_runs: tuple[str, ...] = ()
    preview: bool = False
    fail_on: FailOn = FailOn.NOTE
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # the folders ``exclude`` and ``per-file-ignores`` patterns are relative to, when
    # they come from an extended configuration (None: ``root``)
    exclude_root: Path | None = None
    include_root: Path | None = None
    per_file_root: Path | None = None
    # where each limit's value comes from ("from /repo/graphlint.toml"), for the
    # limits a file set or that ``limited`` decided; a limit not listed is the default
    limit_origins: tuple[tuple[str, str], ...] = ()

    def enabled(self) -> frozenset[str]:
        return self._enabled

    @cached_property
    def _enabled(self) -> frozenset[str]:
        return enabled_codes(self.select, self.extend_select, self.ignore)

    @cached_property
    def _per_file_patterns(self) -> PatternSet:
        """Every ``per-file-ignores`` pattern, compiled once for this configuration
        (a run asks for every file)."""
        base = self.per_file_root or self.root
        return PatternSet(base, [pattern for pattern, _ in self.per_file_ignores])

    def enabled_for(self, path: Path) -> frozenset[str]:
        """The codes reported in ``path`` (real): the selection, less the
        ``per-file-ignores`` whose pattern matches it."""
        enabled = self.enabled()
        if not self.per_file_ignores:
            return enabled
        matching = self._per_file_patterns.matching(path)
        prefixes = {p for i in matching for p in self.per_file_ignores[i][1]}
        if not prefixes:
            return enabled
        return frozenset(
            c for c in enabled if not any(c.startswith(p) for p in prefixes)
        )

    def limit(self, key: str) -> float:
        """The value of the limit ``key`` ("max-file-size")."""
        value: float = getattr(self, key.replace("-", "_"))
        return value

    def origin(self, key: str) -> str:
        """Where the value of the limit ``key`` comes from, in words."""
        return dict(self.limit_origins).get(key, DEFAULT_ORIGIN)

    def settings(self) -> Settings:
        return Settings(
            enabled=enabled_codes(self.select, self.extend_select, self.ignore),
            markers=frozenset(self.capture_markers),
            checks=frozenset(self.capture_checks),
            max_file_size=self.max_file_size,
            timeout=self.timeout,
            max_memory=self.max_memory,
            target=self.target_version,
            preview=self.preview,
            library_runs=self.library_runs,
        )


def find(
    start: Path, warn: Callable[[str], None] = lambda message: None
) -> Path | None:
    """The closest configuration at or above ``start`` (``NAMES``, in that order in
    each folder), or None.

    A ``pyproject.toml`` that does not mention graphlint is not parsed at all; one
    that mentions it and does not parse is ours, and a ConfigError; one that cannot
    be read (a FIFO, a device, over 128 KiB, a link out of its repository) is
    skipped with a ``warn``ing. A ``.graphlint.toml`` or ``graphlint.toml`` that
    links out of its repository is a ConfigError, and is not read.

    A ``start`` that is a link is not followed: the configuration of the folder it
    is in governs it, not that of the file it leads to."""
    folder = Path(os.path.realpath(folder_of(start)))
    for candidate in (folder, *folder.parents):
        found = _in_folder(candidate, warn)
        if found is not None:
            return found
    return None


def folder_of(path: Path) -> Path:
    """``path`` itself where it is a folder, else the folder it is in (for a link,
    the folder the link is in, not the one it leads to)."""
    if os.path.isdir(path) and not os.path.islink(path):
        return path
    return Path(os.path.dirname(os.path.abspath(path)))


def _in_folder(folder: Path, warn: Callable[[str], None]) -> Path | None:
    """The configuration file of ``folder`` (real) itself, if it has one."""
    for name in NAMES:
        path = folder / name
        if not os.path.lexists(path):
            continue
        out_of = _links_out(path)
        if name != "pyproject.toml":
            if out_of is not None:
                raise ConfigError(
                    f"{path} is a link out of its repository ({out_of}); it is not read"
                )
            return path
        if out_of is not None:
            warn(f"skipping {path}: a link out of its repository ({out_of})")
            continue
        try:
            data = _read(path)
        except ConfigError as error:
            warn(f"skipping {error}")
            continue
        if b"graphlint" in data and "graphlint" in _parse(path, data).get("tool", {}):
            return path
    return None


def repository(folder: Path) -> Path:
    """The repository ``folder`` (real) belongs to, which its configuration may read
    from: the nearest folder at or above it with a ``.git``, else its project root
    (``files.project_root``), else ``folder`` itself; never the user's home folder
    or a folder above it."""
    home = Path(os.path.realpath(os.path.expanduser("~")))
    for candidate in (folder, *folder.parents):
        if candidate == home or candidate in home.parents:
            break
        if os.path.lexists(candidate / ".git"):
            return candidate
    return project_root(folder) or folder


def within(path: Path | str, folder: Path) -> bool:
    """Whether ``path`` is ``folder`` or below it (both absolute, compared as
    written: resolve links first where they matter)."""
    text, top = os.fspath(path), os.fspath(folder)
    return text == top or text.startswith(top.rstrip(os.sep) + os.sep)


def _links_out(path: Path) -> Path | None:
    """The repository of ``path``'s folder (real), when ``path`` is a link that
    leads out of it; else None."""
    if not os.path.islink(path):
        return None
    top = repository(path.parent)
    return None if within(os.path.realpath(path), top) else top


@dataclass(frozen=True)
class Tree:
    """What the files of a checked tree may lead to: a file in ``top`` (the
    repository) that is a link, or lies below a linked folder, is read only when
    it leads into ``top`` or into one of the ``allowed`` folders (the source roots
    of a configuration the user named)."""

    top: Path
    allowed: tuple[Path, ...] = ()

    def leads_out(self, path: Path) -> bool:
        """Whether ``path`` lies in ``top`` but leads out of it (and ``allowed``)."""
        located = os.path.abspath(path)
        if not within(located, self.top):
            parent = real_path(os.path.dirname(located))
            if not within(parent / os.path.basename(located), self.top):
                return False  # outside the tree: named by the user
        real = real_path(located)
        return not any(within(real, folder) for folder in (self.top, *self.allowed))


class Nested:
    """The configuration that governs each file: the closest one above it, up to the
    run's own (``top``); a folder's answer is looked up once. Only ``SELECTION``
    keys of a nested configuration apply; ``flags`` (the command line's selection)
    apply on top of every configuration."""

    def __init__(
        self,
        top: Config,
        flags: Callable[[Config], Config],
        warn: Callable[[str], None],
        confined: Path | None = None,
    ) -> None:
        self.top = top
        self.flags = flags
        self.warn = warn
        self.confined = confined  # the repository, which they may read from
        self._folders: dict[str, Config] = {}  # by absolute folder
        self._given: dict[str, Config] = {}  # by folder as the files name it
        self._loaded: dict[Path, Config] = {}

    def of(self, path: Path) -> Config:
        """``path``: a collected file, so a real path or one relative to the real
        working folder (no link to resolve). Folders are strings here: this runs
        for every file of a run."""
        given = os.path.dirname(path)  # as written: most files share a few folders
        known = self._given.get(given)
        if known is not None:
            return known
        folder = os.path.abspath(given)
        known = self._given[given] = self._of_folder(folder)
        return known

    def _of_folder(self, folder: str) -> Config:
        known = self._folders.get(folder)
        if known is not None:
            return known
        top = str(self.top.root)
        if folder != top and not folder.startswith(top.rstrip(os.sep) + os.sep):
            return self.top  # outside the run's configuration: the run's
        chain = []
        found = None
        while found is None:
            if folder in self._folders:
                found = self._folders[folder]
            elif folder == top:
                found = self.top
            else:
                found = self._own(folder)
                if found is None:
                    chain.append(folder)
                    folder = os.path.dirname(folder)
                    continue
            chain.append(folder)
        for seen in chain:
            self._folders[seen] = found
        return found

    def _own(self, folder: str) -> Config | None:
        """The configuration of ``folder`` itself; None where it has none, or has
        one that cannot be used (broken, unreadable, a link out of the repository):
        a warning says so, and the configuration above governs its files."""
        try:
            source = _in_folder(Path(folder), self.warn)
            if source is None or source == self.top.source:
                return None
            return self._load(source)
        except ConfigError as error:
            self.warn(f"skipping {error}; the configuration above applies there")
            return None

    def _load(self, source: Path) -> Config:
        if source not in self._loaded:
            config = load(source, source.parent, confined=self.confined, warn=self.warn)
            outside = sorted(
                key
                for key, value in _table(source).items()
                if key not in SELECTION and key != "extend" and value
            )
            if outside:
                self.warn(
                    f"{source}: only {', '.join(sorted(SELECTION))} apply from a "
                    f"configuration below {self.top.source}; "
                    f"{', '.join(outside)} ignored"
                )
            self._loaded[source] = self.flags(config)
        return self._loaded[source]

    def configs(self) -> list[Config]:
        return [self.top, *self._loaded.values()]


def _read(path: Path) -> bytes:
    try:
        return read_bounded(path, _MAX_CONFIG_SIZE)
    except ReadError as error:
        raise ConfigError(f"cannot read {path}: {error.reason}") from None


def _parse(path: Path, raw: bytes | None = None) -> dict[str, Any]:
    try:
        text = (_read(path) if raw is None else raw).decode("utf-8")
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path} is not UTF-8: {error.reason}") from None
    try:
        data: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path} is not valid TOML: {error}") from None
    except RecursionError:
        raise ConfigError(f"{path} is nested too deeply to read") from None
    return data


def load(
    path: Path | None,
    cwd: Path,
    extending: tuple[Path, ...] = (),
    *,
    confined: Path | None = None,
    warn: Callable[[str], None] = lambda message: None,
) -> Config:
    """Read and validate ``path`` (None: defaults rooted at ``cwd``), starting from
    the configuration it ``extend``s, if any (``extending``: the files on the way).

    ``confined``: the repository the configuration is part of, which it may not
    read out of: an ``extend`` out of it is a ConfigError, a ``source-roots`` entry
    out of it is dropped with a ``warn``ing (None: a file the user named, trusted).
    """
    if path is None:
        return Config(root=cwd)
    table = _table(path)
    where = (
        f"[tool.graphlint] of {path}" if path.name == "pyproject.toml" else str(path)
    )
    base = _extended(table, path, where, cwd, extending, confined, warn)
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        known = ", ".join(KEYS)
        raise ConfigError(
            f"unknown key{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(repr(k) for k in unknown)} in {where}; known keys: {known}"
        )
    config = Config(
        root=Path(os.path.realpath(path.parent)),
        source=path,
        select=_codes(table, "select", where) if "select" in table else None,
        extend_select=_codes(table, "extend-select", where),
        ignore=_codes(table, "ignore", where),
        exclude=_strings(table, "exclude", where),
        extend_include=_strings(table, "extend-include", where),
        capture_markers=_strings(table, "capture-markers", where),
        capture_checks=_strings(table, "capture-checks", where),
        capture_roots=_roots(table, where),
        max_file_size=int(_limit(table, "max-file-size", where, DEFAULT_MAX_FILE_SIZE)),
        timeout=float(_limit(table, "timeout", where, DEFAULT_TIMEOUT)),
        max_memory=int(_limit(table, "max-memory", where, DEFAULT_MAX_MEMORY)),
        target_version=_version(table, where),
        source_roots=_source_roots(table, path, where, confined, warn),
        eager_functions=_strings(table, "eager-functions", where),
        library_runs=_library_runs(table, where),
        preview=_flag(table, "preview", where),
        fail_on=_fail_on(table, where),
        per_file_ignores=_per_file(table, where),
        limit_origins=tuple((key, f"from {where}") for key in LIMITS if key in table),
    )
    if base is not None:
        config = _inherit(config, base, table)
    try:  # validate now
        enabled_codes(config.select, config.extend_select, config.ignore)
        for _, codes in config.per_file_ignores:
            enabled_codes(None, (), codes)
    except ConfigError as error:
        raise ConfigError(f"{where}: {error}") from None
    return config


def _source_roots(
    table: dict[str, Any],
    path: Path,
    where: str,
    confined: Path | None,
    warn: Callable[[str], None],
) -> tuple[Path, ...]:
    """``source-roots``, real, relative to ``path``'s folder; those that lead out of
    the repository (``confined``) are dropped with a warning."""
    roots = []
    for root in _strings(table, "source-roots", where):
        real = Path(os.path.realpath(path.parent / root))
        if confined is not None and not within(real, confined):
            warn(
                f"'source-roots' in {where}: {root!r} leads out of the repository "
                f"({confined}); it is not used"
            )
            continue
        roots.append(real)
    return tuple(roots)


def _extended(
    table: dict[str, Any],
    path: Path,
    where: str,
    cwd: Path,
    extending: tuple[Path, ...],
    confined: Path | None,
    warn: Callable[[str], None],
) -> Config | None:
    """The configuration ``extend`` names, relative to ``path``'s folder."""
    value = table.get("extend")
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ConfigError(f"'extend' in {where} must be the path of a file")
    target = Path(os.path.realpath(path.parent / value))
    if confined is not None and not within(target, confined):
        # said before looking at it: nothing about a file out there is told
        raise ConfigError(
            f"'extend' in {where} leads out of the repository ({confined}); "
            "it is not read"
        )
    chain = (*extending, Path(os.path.realpath(path)))
    if target in chain:
        raise ConfigError(f"'extend' in {where} makes a cycle: {value!r}")
    if len(chain) >= _EXTEND_DEPTH:
        raise ConfigError(f"'extend' in {where}: more than {_EXTEND_DEPTH} files")
    if not os.path.lexists(target):
        raise ConfigError(f"'extend' in {where} names no file: {target}")
    return load(target, cwd, chain, confined=confined, warn=warn)


def _inherit(config: Config, base: Config, table: dict[str, Any]) -> Config:
    """``config`` with each key its table does not set taken from ``base``."""
    taken = {
        key.replace("-", "_"): getattr(base, key.replace("-", "_"))
        for key in KEYS
        if key not in table and key != "extend"
    }
    if "exclude" in taken:
        taken["exclude_root"] = base.exclude_root or base.root
    if "extend_include" in taken:
        taken["include_root"] = base.include_root or base.root
    if "per_file_ignores" in taken:
        taken["per_file_root"] = base.per_file_root or base.root
    own = [(key, origin) for key, origin in config.limit_origins]
    inherited = [(k, o) for k, o in base.limit_origins if k not in table]
    return replace(config, **taken, limit_origins=(*own, *inherited))


def _table(path: Path) -> dict[str, Any]:
    """graphlint's table in ``path``: a pyproject.toml's [tool.graphlint], or the
    whole of another file."""
    data = _parse(path)
    table = (
        data.get("tool", {}).get("graphlint") if path.name == "pyproject.toml" else data
    )
    if table is None:
        return {}
    if not isinstance(table, dict):
        raise ConfigError(f"[tool.graphlint] in {path} must be a table")
    return table


def _per_file(
    table: dict[str, Any], where: str
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    value = table.get("per-file-ignores", {})
    if not isinstance(value, dict) or not all(
        isinstance(codes, list) and all(isinstance(c, str) for c in codes)
        for codes in value.values()
    ):
        raise ConfigError(
            f"'per-file-ignores' in {where} must be a table of lists of codes, "
            'such as {"tests/**" = ["GL1"]}'
        )
    if len(value) > MAX_PER_FILE_IGNORES:
        raise ConfigError(
            f"'per-file-ignores' in {where} has {len(value)} patterns, more than "
            f"the {MAX_PER_FILE_IGNORES} allowed"
        )
    return tuple(
        (pattern, tuple(code_of(c) for c in codes)) for pattern, codes in value.items()
    )


def _flag(table: dict[str, Any], key: str, where: str) -> bool:
    value = table.get(key, False)
    if not isinstance(value, bool):
        raise ConfigError(f"'{key}' in {where} must be true or false")
    return value


def _fail_on(table: dict[str, Any], where: str) -> FailOn:
    value = table.get("fail-on", FailOn.NOTE.value)
    try:
        return FailOn(value)
    except ValueError:
        choices = ", ".join(f'"{level.value}"' for level in FailOn)
        raise ConfigError(
            f"'fail-on' in {where} must be one of {choices}, not {value!r}"
        ) from None


def _strings(table: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"'{key}' in {where} must be a list of strings")
    return tuple(value)


def _roots(table: dict[str, Any], where: str) -> tuple[str, ...]:
    """``capture-roots``: "module:qualname" strings, both parts dotted identifiers."""
    roots = _strings(table, "capture-roots", where)
    for root in roots:
        module, colon, qualname = root.partition(":")
        if not (colon and _dotted_name(module) and _dotted_name(qualname)):
            raise ConfigError(
                f"'capture-roots' in {where} must name functions as "
                f'"module:qualname", such as "pkg.model:Model.forward", not {root!r}'
            )
    return roots


def _library_runs(table: dict[str, Any], where: str) -> tuple[str, ...]:
    """``library-runs``: library models (``graphlint.library``)."""
    models = _strings(table, "library-runs", where)
    for model in models:
        try:
            parse_model(model)
        except ModelError as error:
            raise ConfigError(
                f"'library-runs' in {where}: {model!r}: {error}; write "
                '"pkg.mod.fn(parameters) -> what it runs", such as '
                '"mylib.run(fn, *args) -> fn"'
            ) from None
    return models


def _dotted_name(text: str) -> bool:
    return all(part.isidentifier() for part in text.split("."))


def _codes(table: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    return tuple(code_of(c) for c in _strings(table, key, where))


def _limit(table: dict[str, Any], key: str, where: str, default: float) -> float:
    """A finite number between the key's floor and ceiling (whole for sizes)."""
    return _checked(key, table.get(key, default), f"'{key}' in {where}")


def _checked(key: str, value: object, subject: str, written: object = None) -> float:
    """``value``, when it is a finite number between the limit ``key``'s floor and
    ceiling (whole for sizes); else a ConfigError about ``subject``, quoting what
    was ``written`` (by default, ``value``)."""
    whole = key != "timeout"
    kinds = (int,) if whole else (int, float)
    low, high = FLOORS[key], CEILINGS[key]
    if (
        isinstance(value, bool)
        or not isinstance(value, kinds)
        or not math.isfinite(value)
        or not low <= value <= high
    ):
        what = "a whole number" if whole else "a number"
        shown = value if written is None else written
        raise ConfigError(
            f"{subject} must be {what} from {low} to {high}, not {shown!r}"
        )
    return value


def parse_limit(key: str, text: str, subject: str) -> float:
    """The limit ``key`` written as ``text`` (on the command line, in the
    environment), checked as a configuration's; ``subject`` names where."""
    value: object = text
    with contextlib.suppress(ValueError):
        value = int(text) if key != "timeout" else float(text)
    return _checked(key, value, subject, text)


@dataclass(frozen=True)
class Limits:
    """The limits the user allows (``user_limits``), each with where it comes
    from, in words; a repository may only lower them."""

    values: Mapping[str, float]
    origins: Mapping[str, str]


def user_config_path(environ: Mapping[str, str] = os.environ) -> Path:
    """The user's own configuration: ``graphlint.toml`` in ``$GRAPHLINT_CONFIG_DIR``,
    else in the user's configuration folder (``platformdirs``)."""
    folder = environ.get(CONFIG_DIR_ENV)
    if not folder:
        from platformdirs import user_config_dir  # noqa: PLC0415 - a light start

        folder = user_config_dir("graphlint", appauthor=False)
    return Path(folder) / USER_CONFIG


def user_limits(
    command_line: Mapping[str, float] = MappingProxyType({}),
    named: Config | None = None,
    environ: Mapping[str, str] = os.environ,
) -> Limits:
    """The limits the user allows, each from the first that sets it: the
    ``command_line``, the environment (``LIMIT_ENV``), the configuration the user
    ``named`` with ``--config``, the user's configuration file, graphlint's
    defaults. Raises ConfigError for a value out of range, or a user configuration
    that is broken or holds other keys."""
    values = dict(DEFAULTS)
    origins = dict.fromkeys(LIMITS, DEFAULT_ORIGIN)
    path = user_config_path(environ)
    if os.path.lexists(path):
        table = _parse(path)
        unknown = sorted(set(table) - set(LIMITS))
        if unknown:
            raise ConfigError(
                f"unknown key{'s' if len(unknown) > 1 else ''} "
                f"{', '.join(repr(k) for k in unknown)} in {path}; the user's "
                f"configuration holds only {', '.join(LIMITS)}"
            )
        for key in LIMITS:
            if key in table:
                values[key] = _limit(table, key, str(path), 0)
                origins[key] = f"from the user configuration {path}"
    if named is not None:
        for key, origin in named.limit_origins:
            values[key], origins[key] = named.limit(key), origin
    for key, variable in LIMIT_ENV.items():
        text = environ.get(variable, "")
        if text.strip():
            values[key] = parse_limit(key, text, variable)
            origins[key] = f"from {variable}"
    for key, value in command_line.items():
        values[key], origins[key] = value, f"from --{key}"
    return Limits(values, origins)


def limited(
    config: Config, limits: Limits, trusted: bool, warn: Callable[[str], None]
) -> Config:
    """``config`` with the limits in force: those the user allows (``limits``), or
    the value ``config`` sets where it is lower. Unless ``trusted`` (a file the
    user named, already in ``limits``), a higher value is not taken: a warning
    names the key and the value kept."""
    values: dict[str, float] = {}
    origins: list[tuple[str, str]] = []
    own = dict(config.limit_origins)
    for key in LIMITS:
        value, origin = limits.values[key], limits.origins[key]
        asked = config.limit(key)
        if not trusted and key in own:
            if asked <= value:
                value, origin = asked, own[key]
            else:
                warn(
                    f"{own[key].removeprefix('from ')} asks for {key} = "
                    f"{_number(asked)}, more than the {_number(value)} allowed "
                    f"({origin}); {_number(value)} is kept: a repository may only "
                    f"lower limits (raise them with --{key} or {LIMIT_ENV[key]})"
                )
        values[key] = value
        origins.append((key, origin))
    return replace(
        config,
        max_file_size=int(values["max-file-size"]),
        timeout=float(values["timeout"]),
        max_memory=int(values["max-memory"]),
        limit_origins=tuple(origins),
    )


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def parse_version(text: str) -> Version:
    """``"3.12"`` -> (3, 12), within the versions graphlint can check for."""
    match = re.fullmatch(r"(?:py)?3\.?(\d{1,2})", text.strip())
    version = (3, int(match.group(1))) if match else None
    if version is None or not _OLDEST <= version <= _NEWEST:
        oldest, newest = (f"{v[0]}.{v[1]}" for v in (_OLDEST, _NEWEST))
        raise ConfigError(
            f"target version {text!r} is not a Python version from {oldest} "
            f'to {newest}, such as "3.12"'
        )
    return version


def _version(table: dict[str, Any], where: str) -> Version:
    value = table.get("target-version")
    if value is None:
        return RUNNING
    if not isinstance(value, str):
        raise ConfigError(
            f"'target-version' in {where} must be a string, like \"3.12\""
        )
    return parse_version(value)


def split_codes(values: Iterable[str]) -> tuple[str, ...]:
    """``["GL1,GL201", "GL3"]`` (from repeated/comma-separated flags) -> codes; a
    rule's name stands for its code."""
    return tuple(
        code_of(part) for value in values for part in value.split(",") if part.strip()
    )


def enabled_codes(
    select: Sequence[str] | None, extend_select: Sequence[str], ignore: Sequence[str]
) -> frozenset[str]:
    """Apply selection: the longest matching prefix decides, as in ruff."""
    for prefix in (*(select or ()), *extend_select, *ignore):
        if prefix != "ALL" and not any(code.startswith(prefix) for code in CODES):
            raise ConfigError(
                f"unknown code or prefix {prefix!r}; run `graphlint rules` for the list"
            )

    def strength(prefixes: Iterable[str], code: str) -> int:
        best = -1
        for prefix in prefixes:
            if prefix == "ALL":
                best = max(best, 0)
            elif code.startswith(prefix):
                best = max(best, len(prefix))
        return best

    enabled = set()
    for code, found in CODES.items():
        chosen = (
            strength(select, code)
            if select is not None
            else (0 if found.default else -1)
        )
        chosen = max(chosen, strength(extend_select, code))
        if chosen >= 0 and chosen > strength(ignore, code):
            enabled.add(code)
    return frozenset(enabled)
