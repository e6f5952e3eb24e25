"""Every fixture file produces exactly the diagnostics its `# expect:` markers name."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphlint.engine import lint_source
from graphlint.rule import all_checks
from graphlint.settings import Settings
from tests.conftest import FIXTURES, expectations

RULE_FILES = sorted(FIXTURES.glob("GL*/*.py"))
# _precision is checked as a project (tests/test_precision.py): it needs the calls
SHARED_FILES = sorted(
    p for p in FIXTURES.glob("_*/*.py") if p.parent.name != "_precision"
)


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


@pytest.mark.parametrize("path", RULE_FILES, ids=_id)
def test_rule_fixture(path: Path) -> None:
    """Only the rule under test runs, so other rules cannot pollute the markers."""
    code = path.parent.name.split("-")[0]
    source = path.read_text(encoding="utf-8")
    found = lint_source(source, str(path), Settings(enabled=frozenset({code})))
    got = {(d.line, d.code) for d in found}
    want = {(line, c) for line, c in expectations(source) if c == code}
    assert got == want
    if path.stem.startswith("good"):
        assert not want, "good fixtures carry no expectations"
    else:
        assert want, "bad fixtures must expect something"


@pytest.mark.parametrize("path", SHARED_FILES, ids=_id)
def test_shared_fixture(path: Path) -> None:
    """Multi-rule fixtures run with the default rule set."""
    source = path.read_text(encoding="utf-8")
    found = lint_source(source, str(path))
    assert {(d.line, d.code) for d in found} == expectations(source)


def test_every_rule_fixture_folder_names_a_known_rule() -> None:
    codes = set(all_checks())
    for folder in FIXTURES.glob("GL*"):
        assert folder.name.split("-")[0] in codes, folder
