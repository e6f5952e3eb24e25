"""Every rule fixture tells the truth on a GPU (marker ``gpu``; issue #16).

A good fixture runs to its end, every capture in it succeeds and matches eager on
compared replays, and no rule finds anything in it. A bad fixture's findings of its
own rule are each confirmed by ``graphlint confirm`` (the capture fails at the line,
a replay differs from eager, or the host work ran while capturing), unless the line
says otherwise and why (``# gpu: not reproduced - it fails eagerly too``), and
nothing fails that no rule predicted. Each file is confirmed in its own process, a
few at a time (``--gpu-jobs``), under a time limit (tests/confirming.py).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.confirming import ConfirmPool
from tests.conftest import FIXTURES

RULE_FILES = sorted(FIXTURES.glob("GL*/*.py"))
# compared replays are not asked of captures of these kinds (every kind is compared
# now, issue #30); nor of a compiled function that draws random numbers, which
# compiled code draws otherwise than eager (README, "Runtime checker")
UNCOMPARED: set[str] = set()


GPU_VERDICT = re.compile(r"#\s*gpu:\s*(?P<status>[a-z ]+?)\s+-\s+\S")


def declared(path: Path) -> dict[int, str]:
    """The verdicts a bad fixture declares on its lines, where not "confirmed"."""
    found = {}
    for number, text in enumerate(path.read_text().splitlines(), start=1):
        match = GPU_VERDICT.search(text)
        if match:
            found[number] = match["status"]
    return found


def _id(path: Path) -> str:
    return f"{path.parent.name.split('-')[0]}/{path.stem}"


@pytest.mark.gpu
@pytest.mark.parametrize("path", RULE_FILES, ids=_id)
def test_gpu_rule_fixture(path: Path, confirmed: ConfirmPool) -> None:
    done = confirmed(path)
    code, items = done.code, done.items
    findings = [d for d in items if d["source"] == "graphlint"]
    runtime = [d for d in items if d["source"] == "graphlint confirm"]
    missed = [d for d in runtime if d["data"]["runtime"]["status"] == "missed"]
    (script,) = [d for d in runtime if d["code"] == "script"]
    sites = [
        d["data"]["runtime"]["site"] for d in runtime if "site" in d["data"]["runtime"]
    ]
    assert missed == [], missed
    if path.stem.startswith("good"):
        assert findings == [], findings
        assert script["data"]["runtime"]["status"] == "ran to its end", script
        assert sites, "no capture ran"
        for site in sites:
            assert site["status"] == "captured", site
            drawn = site["random"] and "draws random numbers" in site["detail"]
            assert site["compared"] or site["kind"] in UNCOMPARED or drawn, site
        assert code == 0
        return
    own = path.parent.name.split("-")[0]
    verdicts = {
        d["range"]["start"]["line"] + 1: d["data"]["runtime"]["status"]
        for d in findings
        if d["code"] == own
    }
    assert verdicts, "a bad fixture's own rule finds something"
    wanted = {line: declared(path).get(line, "confirmed") for line in verdicts}
    assert verdicts == wanted, [
        (
            line,
            status,
            next(
                d["data"]["runtime"]["note"]
                for d in findings
                if d["range"]["start"]["line"] + 1 == line
            ),
        )
        for line, status in verdicts.items()
        if status != wanted[line]
    ]
