"""rules/README.md maps every measured non-ok pattern to a code, and each mapping is
proven by a region in fixtures/_ground_truth/ (cases.py: manual capture,
compiled.py: torch.compile, warmup.py: captures with no warm-up) that the code
reports."""

from __future__ import annotations

import json
import re

from tests.conftest import FIXTURES, ROOT, RULE_DOCS, expectations

ROW = re.compile(r"^\| `(?P<case>\w+)` \| (?P<outcome>[\w-]+) \| (?P<codes>.*) \|$")
# manual capture, and torch.compile's CUDA graphs
CASES = [
    FIXTURES / "_ground_truth" / name
    for name in ("cases.py", "compiled.py", "warmup.py")
]
# measurements: manual capture (../shared and this repository's probes, on an
# H200; captures with no warm-up on an H100), torch.compile (this repository;
# its training loops on an H200)
MEASURED = [
    ROOT.parent / "shared" / "ground-truth" / "h200-torch2.11.jsonl",
    ROOT / "ground-truth" / "h200-torch2.11-slice.jsonl",
    ROOT / "ground-truth" / "h200-torch2.11-host-copy.jsonl",
    ROOT / "ground-truth" / "h200-torch2.11-rng-restore.jsonl",
    ROOT / "ground-truth" / "h200-torch2.11-checkpoint-rng.jsonl",
    ROOT / "ground-truth" / "h100-torch2.11-warmup.jsonl",
    ROOT / "ground-truth" / "h200-torch2.11-compile-train.jsonl",
    ROOT / "ground-truth" / "h200-torch2.11-stream-object.jsonl",
    ROOT / "ground-truth" / "h100-torch2.11-compile.jsonl",
]


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
    sources = [path.read_text(encoding="utf-8") for path in CASES]
    for case, (_, codes) in table().items():
        if not codes:
            continue
        proven = False
        for source in sources:
            lines = source.splitlines()
            found = [
                n
                for n, text in enumerate(lines, 1)
                if re.search(rf"#.*\b{case}\b", text)
            ]
            if found:
                expected = expectations(source)
                near = {c for line, c in expected if found[0] <= line <= found[0] + 3}
                assert codes & near, (
                    f"{case}: {sorted(codes)} not expected near line {found[0]}"
                )
                proven = True
        assert proven, f"{case} has no region in {[p.name for p in CASES]}"


def test_table_covers_every_measured_non_ok_pattern() -> None:
    """Each non-ok case measured has its row, with the outcome measured; with every
    measurement present, the table has no other row."""
    present = [path for path in MEASURED if path.is_file()]
    assert MEASURED[-1] in present, "ground-truth/ is part of the repository"
    measured = {}
    for path in present:
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if "case" in record:
                measured[record["case"]] = record["outcome"]
    rows = table()
    not_ok = {case for case, outcome in measured.items() if outcome != "ok"}
    assert not_ok <= set(rows)
    for case in not_ok:
        assert rows[case][0] == measured[case], case
    if present == MEASURED:
        assert set(rows) == not_ok
