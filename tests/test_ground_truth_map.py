"""rules/README.md maps every measured non-ok pattern to a code, and each mapping is
proven by a capture in fixtures/_ground_truth/cases.py that the code reports."""

from __future__ import annotations

import json
import re

import pytest

from tests.conftest import FIXTURES, ROOT, RULE_DOCS, expectations

ROW = re.compile(r"^\| `(?P<case>\w+)` \| (?P<outcome>[\w-]+) \| (?P<codes>.*) \|$")
CASES = FIXTURES / "_ground_truth" / "cases.py"
MEASURED = ROOT.parent / "shared" / "ground-truth" / "h200-torch2.11.jsonl"


def table() -> dict[str, tuple[str, set[str]]]:
    """case -> (measured outcome, codes) from the README's table."""
    rows = {}
    for line in (RULE_DOCS / "README.md").read_text(encoding="utf-8").splitlines():
        match = ROW.match(line)
        if match:
            codes = set(re.findall(r"\[(GL\d{3})\]", match.group("codes")))
            rows[match.group("case")] = (match.group("outcome"), codes)
    return rows


def test_each_mapping_is_proven_by_the_fixture() -> None:
    source = CASES.read_text(encoding="utf-8")
    lines = source.splitlines()
    expected = expectations(source)
    for case, (_, codes) in table().items():
        if not codes:
            continue
        found = [
            n for n, text in enumerate(lines, 1) if re.search(rf"#.*\b{case}\b", text)
        ]
        assert found, f"{case} has no capture in {CASES.name}"
        near = {code for line, code in expected if found[0] <= line <= found[0] + 3}
        assert codes & near, (
            f"{case}: {sorted(codes)} not expected near line {found[0]}"
        )


@pytest.mark.skipif(not MEASURED.is_file(), reason="../shared/ground-truth not present")
def test_table_covers_every_measured_non_ok_pattern() -> None:
    measured = {}
    for line in MEASURED.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if "case" in record:
            measured[record["case"]] = record["outcome"]
    rows = table()
    assert set(rows) == {case for case, outcome in measured.items() if outcome != "ok"}
    for case, (outcome, _) in rows.items():
        assert measured[case] == outcome, case
