"""Rules, docs and fixtures correspond one to one; codes are well formed."""

from __future__ import annotations

import pytest

from graphlint import _dev
from graphlint.checks import Check
from graphlint.rule import Rule, all_checks
from tests.conftest import FIXTURES, RULE_DOCS

FAMILY_PACKAGES = {  # GL0xx, graphlint's own codes, are in graphlint.tool_codes
    "1": "host_sync",
    "2": "control_flow",
    "3": "static_memory",
    "4": "host_work",
    "5": "rng",
    "6": "transfers",
    "7": "apis",
}


def test_each_code_has_one_doc() -> None:
    docs = {p.stem for p in RULE_DOCS.glob("GL*.md")}
    keys = {check.key() for check in all_checks().values()}
    assert docs == keys


def test_each_rule_has_bad_and_good_fixtures() -> None:
    for check in all_checks().values():
        folder = FIXTURES / check.key()
        if issubclass(check, Rule):
            assert (folder / "bad.py").is_file(), folder
            assert (folder / "good.py").is_file(), folder
        else:
            assert not folder.exists()
    assert {p.name for p in FIXTURES.glob("GL*")} <= {
        c.key() for c in all_checks().values()
    }


@pytest.mark.parametrize("check", list(all_checks().values()), ids=lambda c: c.code)
def test_code_matches_family_package(check: type[Check]) -> None:
    if check.code.startswith("GL0"):  # reported by the modules that read files
        assert check.__module__ == "graphlint.tool_codes"
        return
    parts = check.__module__.split(".")
    assert parts[:2] == ["graphlint", "rules"]
    assert FAMILY_PACKAGES.get(check.code[2]) == parts[2]


def test_duplicate_code_is_rejected_at_definition() -> None:
    with pytest.raises(TypeError, match="already used"):

        class Duplicate(Check):
            """A second GL101."""

            code = "GL101"
            message = "dup"
            outcome = all_checks()["GL101"].outcome


def test_bad_code_is_rejected_at_definition() -> None:
    with pytest.raises(TypeError, match="GL123"):

        class BadCode(Check):
            """Wrong code."""

            code = "X1"
            message = "bad"


def test_rules_index_is_in_sync() -> None:
    assert _dev.sync_docs(check=True), "run `python -m graphlint._dev sync-docs`"
