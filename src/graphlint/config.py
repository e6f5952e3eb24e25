"""``[tool.graphlint]`` in the nearest pyproject.toml: find it, validate it, apply it.

Configuration is data only: nothing in it can make graphlint import or run code.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graphlint.engine import DEFAULT_MAX_FILE_SIZE, DEFAULT_TIMEOUT, Settings
from graphlint.rule import all_checks

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

KEYS = {
    "select": "codes or prefixes to enable, replacing the defaults",
    "extend-select": "codes or prefixes to enable in addition to the defaults",
    "ignore": "codes or prefixes to disable",
    "exclude": "gitignore-style patterns of paths not to check",
    "capture-markers": "qualified names of your own capture-region decorators/contexts",
    "max-file-size": "bytes above which a file is reported (GL003) and not analysed",
    "timeout": "seconds one file may take before it is reported (GL005)",
    "source-roots": "folders imports are resolved from, besides each package root",
    "eager-functions": "qualified names of functions (or decorators) that run eagerly "
    "between graph pieces: calls into them are not followed",
}


class ConfigError(Exception):
    """A configuration or selection problem the user must fix (exit code 2)."""


@dataclass(frozen=True)
class Config:
    """Validated settings; ``root`` is what ``exclude`` patterns are relative to."""

    root: Path
    source: Path | None = None
    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    capture_markers: tuple[str, ...] = ()
    max_file_size: int = DEFAULT_MAX_FILE_SIZE
    timeout: float = DEFAULT_TIMEOUT
    source_roots: tuple[Path, ...] = ()
    eager_functions: tuple[str, ...] = ()

    def settings(self) -> Settings:
        return Settings(
            enabled=enabled_codes(self.select, self.extend_select, self.ignore),
            markers=frozenset(self.capture_markers),
            max_file_size=self.max_file_size,
            timeout=self.timeout,
        )


def find(start: Path) -> Path | None:
    """The nearest pyproject.toml with a [tool.graphlint] table, from ``start`` up."""
    folder = start.resolve()
    if not folder.is_dir():
        folder = folder.parent
    for candidate in (folder, *folder.parents):
        path = candidate / "pyproject.toml"
        if path.is_file():
            try:
                data = tomllib.loads(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
                continue  # someone else's broken file is not our configuration
            if "graphlint" in data.get("tool", {}):
                return path
    return None


def load(path: Path | None, cwd: Path) -> Config:
    """Read and validate ``path`` (None: defaults rooted at ``cwd``)."""
    if path is None:
        return Config(root=cwd)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read {path}: {error}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path} is not valid TOML: {error}") from None
    table = (
        data.get("tool", {}).get("graphlint") if path.name == "pyproject.toml" else data
    )
    if table is None:
        table = {}
    if not isinstance(table, dict):
        raise ConfigError(f"[tool.graphlint] in {path} must be a table")
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        known = ", ".join(KEYS)
        raise ConfigError(
            f"unknown key{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(repr(k) for k in unknown)} in [tool.graphlint] of {path}; "
            f"known keys: {known}"
        )
    where = f"[tool.graphlint] of {path}"
    config = Config(
        root=path.parent.resolve(),
        source=path,
        select=_codes(table, "select", where) if "select" in table else None,
        extend_select=_codes(table, "extend-select", where),
        ignore=_codes(table, "ignore", where),
        exclude=_strings(table, "exclude", where),
        capture_markers=_strings(table, "capture-markers", where),
        max_file_size=_positive(table, "max-file-size", where, DEFAULT_MAX_FILE_SIZE),
        timeout=float(_positive(table, "timeout", where, DEFAULT_TIMEOUT)),
        source_roots=tuple(
            (path.parent / root).resolve()
            for root in _strings(table, "source-roots", where)
        ),
        eager_functions=_strings(table, "eager-functions", where),
    )
    enabled_codes(config.select, config.extend_select, config.ignore)  # validate now
    return config


def _strings(table: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"'{key}' in {where} must be a list of strings")
    return tuple(value)


def _codes(table: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    return tuple(c.strip().upper() for c in _strings(table, key, where))


def _positive(table: dict[str, Any], key: str, where: str, default: float) -> Any:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ConfigError(f"'{key}' in {where} must be a positive number")
    return value


def split_codes(values: Iterable[str]) -> tuple[str, ...]:
    """``["GL1,GL201", "GL3"]`` (from repeated/comma-separated flags) -> codes."""
    return tuple(
        part.strip().upper()
        for value in values
        for part in value.split(",")
        if part.strip()
    )


def enabled_codes(
    select: Sequence[str] | None, extend_select: Sequence[str], ignore: Sequence[str]
) -> frozenset[str]:
    """Apply selection: the longest matching prefix decides, as in ruff."""
    checks = all_checks()
    for prefix in (*(select or ()), *extend_select, *ignore):
        if prefix != "ALL" and not any(code.startswith(prefix) for code in checks):
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
    for code, check in checks.items():
        chosen = (
            strength(select, code)
            if select is not None
            else (0 if check.default_enabled else -1)
        )
        chosen = max(chosen, strength(extend_select, code))
        if chosen >= 0 and chosen > strength(ignore, code):
            enabled.add(code)
    return frozenset(enabled)
