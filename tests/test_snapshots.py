"""Snapshots: what ``graphlint check --show-reach fixtures/`` prints, pinned line by
line, one file under ``tests/snapshots/`` per fixture file (its diagnostics, the
regions it holds with what they reach, the calls in it not followed). A change to the
analysis that moves any of it shows here as a diff; refactors must leave every
snapshot as it is.

Update after an intended change with ``pytest tests/test_snapshots.py
--update-snapshots`` (or ``GRAPHLINT_UPDATE_SNAPSHOTS=1``), and read the diff before
committing it."""

from __future__ import annotations

import difflib
import os
from collections import defaultdict
from functools import cache
from pathlib import Path

import pytest

from graphlint.lint import lint
from graphlint.output.text import format_diagnostic, format_region, format_unfollowed
from tests.conftest import FIXTURES, ROOT

SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"
NOTHING = "(nothing)\n"


@cache
def _rendered() -> dict[str, str]:
    """Each fixture file's part of one run over ``fixtures/``, from the repository's
    root, as the text format renders it."""
    checked = lint([Path("fixtures")], no_cache=True, jobs=1)
    parts: dict[str, list[str]] = defaultdict(list)
    for result in checked.results:
        for d in result.diagnostics:
            parts[result.path].append(format_diagnostic(d))
    for reach in checked.survey.regions:
        parts[str(reach.region.path)].append(format_region(reach))
    for call in checked.survey.unfollowed:
        parts[call.path].append(format_unfollowed(call))
    return {path: "\n".join(lines) + "\n" for path, lines in parts.items()}


def _fixture_files() -> list[str]:
    """The fixture files a check of ``fixtures/`` reads: scripts and notebooks."""
    return sorted(
        p.relative_to(ROOT).as_posix()
        for p in FIXTURES.rglob("*")
        if p.suffix in (".py", ".ipynb")
    )


def _snapshot(path: str) -> Path:
    return SNAPSHOTS / (path.removeprefix("fixtures/") + ".txt")


@pytest.fixture
def rendered(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.chdir(ROOT)
    return _rendered()


def _updating(config: pytest.Config) -> bool:
    return bool(config.getoption("--update-snapshots")) or bool(
        os.environ.get("GRAPHLINT_UPDATE_SNAPSHOTS")
    )


@pytest.mark.parametrize("path", _fixture_files())
def test_fixture_output_matches_its_snapshot(
    path: str, rendered: dict[str, str], request: pytest.FixtureRequest
) -> None:
    got = rendered.get(path, NOTHING)
    snapshot = _snapshot(path)
    if _updating(request.config):
        snapshot.parent.mkdir(parents=True, exist_ok=True)
        snapshot.write_text(got, encoding="utf-8")
        return
    assert snapshot.exists(), f"no snapshot for {path}: run with --update-snapshots"
    want = snapshot.read_text(encoding="utf-8")
    if got != want:
        diff = "".join(
            difflib.unified_diff(
                want.splitlines(keepends=True),
                got.splitlines(keepends=True),
                f"{snapshot.relative_to(ROOT)} (snapshot)",
                f"{path} (now)",
            )
        )
        pytest.fail(f"output changed; if intended, --update-snapshots:\n{diff}")


def test_output_outside_fixture_files_and_stale_snapshots(
    rendered: dict[str, str], request: pytest.FixtureRequest
) -> None:
    """Every line of the run belongs to a fixture file, and every snapshot to one
    (a deleted fixture takes its snapshot with it)."""
    files = set(_fixture_files())
    assert set(rendered) <= files, sorted(set(rendered) - files)
    stale = sorted(
        s.relative_to(ROOT).as_posix()
        for s in SNAPSHOTS.rglob("*.txt")
        if "fixtures/" + s.relative_to(SNAPSHOTS).as_posix()[: -len(".txt")]
        not in files
    )
    if stale and _updating(request.config):
        for name in stale:
            (ROOT / name).unlink()
        return
    assert not stale, f"snapshots of no fixture: {stale}"
