"""bench/phases.py: every phase is counted, and the check it times is left as it was."""

from __future__ import annotations

from pathlib import Path

import graphlint.project.check as check
from bench import phases

REGION = (
    "import torch\n\n"
    "def step(x):\n    return x.sum().item()\n\n"
    "x = torch.zeros(4, device='cuda')\ng = torch.cuda.CUDAGraph()\n"
    "with torch.cuda.graph(g):\n    y = step(x)\n"
)


def test_phases_time_a_real_check_and_put_everything_back(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "train.py").write_text(REGION)
    places = [p for found in phases.PHASES.values() for p in found]
    places.append((check, phases.POOL))
    before = [getattr(owner, attribute) for owner, attribute in places]
    spent, calls, total = phases.measure(tmp_path, preview=False)
    assert [getattr(owner, attribute) for owner, attribute in places] == before
    assert set(spent) == set(phases.PHASES)
    # pass one and the project pass (the region calls ``step``) each analyse it,
    # on one tree, whose scopes pass one computed; each replays the set-up's sites
    # and walks for state and flow
    assert calls["parse (LibCST)"] >= 1
    assert calls["facts: scopes"] == 1
    assert calls["facts: state, set-up, flow"] == 4
    assert calls["rules"] == 2
    assert calls["reach"] == 1
    assert all(seconds >= 0 for seconds in spent.values())
    assert sum(spent.values()) <= total
    table = phases.table(spent, calls, total)
    assert table.splitlines()[-1].startswith("| **all** |")
    assert "| other |" in table
