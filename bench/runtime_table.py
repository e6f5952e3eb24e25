"""The runtime checker on every scenario in fixtures/runtime, as one table.

Run on a GPU machine: ``python bench/runtime_table.py``. For each scenario it runs
``graphlint confirm --format lsp`` and prints a Markdown row: the static findings,
how many were confirmed, the failures no rule predicted (missed), each capture
site's verdict and, where a site captured, the measured speed-up.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def row(scenario: Path) -> str:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "graphlint",
            "confirm",
            "-q",
            "--format",
            "lsp",
            str(scenario.relative_to(ROOT)),
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    if not done.stdout:
        return f"| {scenario.name} | - | - | - | {done.stderr.strip()} | - |"
    items: list[dict[str, Any]] = [
        d for doc in json.loads(done.stdout) for d in doc["diagnostics"]
    ]
    findings = [d for d in items if d["source"] == "graphlint"]
    confirmed = [d for d in findings if d["data"]["runtime"]["status"] == "confirmed"]
    missed = [d for d in items if d["data"]["runtime"]["status"] == "missed"]
    sites = [
        d["data"]["runtime"]["site"]
        for d in items
        if d["source"] == "graphlint confirm" and d not in missed
    ]
    codes = ", ".join(
        f"{d['code']} l.{d['range']['start']['line'] + 1}" for d in findings
    )
    verdicts = ", ".join(s["status"] for s in sites) or "none ran"
    speeds = (
        ", ".join(
            f"{s['eager_ms'] / s['replay_ms']:.1f}x ({s['eager_ms']:.3f} vs "
            f"{s['replay_ms']:.3f} ms)"
            for s in sites
            if s["eager_ms"] and s["replay_ms"]
        )
        or "-"
    )
    return (
        f"| {scenario.name} | {codes or 'none'} | {len(confirmed)}/{len(findings)} "
        f"| {len(missed)} | {verdicts} | {speeds} |"
    )


def main() -> None:
    print("| scenario | static findings | confirmed | missed | verdict | speed-up |")
    print("|---|---|---|---|---|---|")
    for scenario in sorted((ROOT / "fixtures" / "runtime").glob("*.py")):
        print(row(scenario), flush=True)


if __name__ == "__main__":
    main()
