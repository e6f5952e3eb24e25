"""``graphlint confirm`` over every fixture, as a verdict table per rule code.

Run on a GPU machine: ``python bench/confirm_table.py [--jobs 8] [--json F] [PATH...]``.
PATHs are files or folders (default: every rule fixture and every runtime scenario;
add the corpus with ``../shared/corpus/cases``). Each file runs under
``graphlint confirm --format lsp``; several files run at once (``--jobs``), each in
its own processes, so the GPU seconds are the sum of the files' wall times.

It prints, in Markdown:
- per rule code, how the static findings in bad files fared: confirmed, not
  reproduced, not executed, no verdict, with the reasons given;
- the share of findings in bad files that got a verdict (confirmed or not
  reproduced), and the runtime failures a finding flagged that were still reported
  as missed;
- every good file that did not capture cleanly, run to its end and match eager;
- the wall time and GPU seconds.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
VERDICTS = ("confirmed", "not reproduced", "not executed", "no verdict")
# the checker compares every kind with eager (issue #30), except a compiled function
# that draws random numbers (compiled code draws otherwise): its detail says so
UNCOMPARED: set[str] = set()


@dataclass
class FileRun:
    path: Path
    seconds: float
    code: int
    items: list[dict[str, Any]] = field(default_factory=list)
    error: str = ""

    @property
    def role(self) -> str:
        name = self.path.stem
        return "good" if "good" in name or "lookalike" in name else "bad"

    @property
    def findings(self) -> list[dict[str, Any]]:
        return [d for d in self.items if d["source"] == "graphlint"]

    @property
    def sites(self) -> list[dict[str, Any]]:
        return [
            d["data"]["runtime"]["site"]
            for d in self.items
            if d["source"] == "graphlint confirm"
            and d["code"] != "script"
            and d["data"]["runtime"]["status"] != "missed"
        ]

    @property
    def missed(self) -> list[dict[str, Any]]:
        return [
            d
            for d in self.items
            if d["source"] == "graphlint confirm"
            and d["data"]["runtime"]["status"] == "missed"
        ]

    @property
    def ending(self) -> str:
        for d in self.items:
            if d["source"] == "graphlint confirm" and d["code"] == "script":
                return str(d["data"]["runtime"]["status"])
        return self.error or "unknown"


def confirm(path: Path) -> FileRun:
    start = time.perf_counter()
    done = subprocess.run(
        [
            *(sys.executable, "-m", "graphlint", "confirm", "-q", "--format", "lsp"),
            *("--timeout", "300", str(path)),
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    seconds = time.perf_counter() - start
    try:
        documents = json.loads(done.stdout)
    except json.JSONDecodeError:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:]
        return FileRun(path, seconds, done.returncode, error=" ".join(tail))
    items = [d for doc in documents for d in doc["diagnostics"]]
    return FileRun(path, seconds, done.returncode, items)


def verdict(finding: dict[str, Any]) -> str:
    status = str(finding["data"]["runtime"]["status"])
    return "no verdict" if status == "not reached" else status


def reason(finding: dict[str, Any]) -> str:
    """The note, with paths, lines and numbers taken out, to group alike notes."""
    note = str(finding["data"]["runtime"]["note"])
    note = re.sub(r"\S+\.py:\d+", "FILE:LINE", note)
    note = re.sub(r"\b(at|line) \d+", r"\1 N", note)
    return re.sub(r"\d+(\.\d+)?", "N", note)[:110]


def files_of(paths: list[str]) -> list[Path]:
    found: list[Path] = []
    for name in paths:
        path = Path(name).resolve()
        if path.is_dir():
            found += sorted(p for p in path.rglob("*.py") if not p.name.startswith("_"))
        else:
            found.append(path)
    return found


def default_files() -> list[Path]:
    fixtures = ROOT / "fixtures"
    return sorted(fixtures.glob("GL*/*.py")) + sorted(
        (fixtures / "runtime").glob("*.py")
    )


def good_problems(run: FileRun) -> list[str]:
    problems = []
    if run.ending != "ran to its end":
        problems.append(f"script: {run.ending}")
    if not run.sites:
        problems.append("no capture site ran")
    for site in run.sites:
        if site["status"] != "captured":
            problems.append(f"{site['name']} l.{site['line']}: {site['status']}")
        elif not (
            site["compared"]
            or site["kind"] in UNCOMPARED
            or (site["random"] and "draws random numbers" in site["detail"])
        ):
            problems.append(f"{site['name']} l.{site['line']}: nothing compared")
    problems += [f"missed l.{m['range']['start']['line'] + 1}" for m in run.missed]
    return problems


def report(runs: list[FileRun], wall: float) -> str:
    lines: list[str] = []
    table: dict[str, Counter[str]] = defaultdict(Counter)
    reasons: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    flagged_missed = 0
    for run in runs:
        if run.role != "bad":
            continue
        for finding in run.findings:
            code = str(finding["code"])
            table[code][verdict(finding)] += 1
            if verdict(finding) != "confirmed":
                reasons[(code, verdict(finding))][reason(finding)] += 1
        flagged = {d["range"]["start"]["line"] for d in run.findings}
        flagged_missed += sum(
            m["range"]["start"]["line"] in flagged for m in run.missed
        )
    lines.append("| code | " + " | ".join(VERDICTS) + " |")
    lines.append("|---|" + "---|" * len(VERDICTS))
    total: Counter[str] = Counter()
    for code in sorted(table):
        total.update(table[code])
        lines.append(
            f"| {code} | " + " | ".join(str(table[code][v]) for v in VERDICTS) + " |"
        )
    lines.append(
        "| **all** | " + " | ".join(f"**{total[v]}**" for v in VERDICTS) + " |"
    )
    findings = sum(total.values())
    judged = total["confirmed"] + total["not reproduced"]
    share = judged / findings if findings else 1.0
    lines += [
        "",
        f"Findings in bad files with a verdict: {judged}/{findings} ({share:.0%}).",
        f"Missed failures at a flagged line: {flagged_missed}.",
        "",
        "Reasons (not confirmed):",
    ]
    for (code, status), counts in sorted(reasons.items()):
        for text, count in counts.most_common():
            lines.append(f"- {code} {status} x{count}: {text}")
    goods = [run for run in runs if run.role == "good"]
    bad_goods = [(run, good_problems(run)) for run in goods]
    bad_goods = [(run, problems) for run, problems in bad_goods if problems]
    lines += [
        "",
        f"Good files that capture, run to their end and match eager: "
        f"{len(goods) - len(bad_goods)}/{len(goods)}",
    ]
    for run, problems in bad_goods:
        lines.append(f"- {run.path.relative_to(run.path.parents[1])}: {problems}")
    errors = [run for run in runs if run.error]
    for run in errors:
        lines.append(f"- no report from {run.path}: {run.error}")
    gpu = sum(run.seconds for run in runs)
    lines += ["", f"{len(runs)} files; wall {wall:.0f} s; GPU seconds {gpu:.0f}."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", help="files or folders")
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--json", type=Path, help="write every file's items here")
    args = parser.parse_args()
    files = files_of(args.paths) if args.paths else default_files()
    start = time.perf_counter()
    with ThreadPoolExecutor(args.jobs) as pool:
        runs = list(pool.map(confirm, files))
    wall = time.perf_counter() - start
    if args.json:
        args.json.write_text(
            json.dumps(
                [
                    {
                        "path": str(run.path),
                        "seconds": run.seconds,
                        "code": run.code,
                        "error": run.error,
                        "items": run.items,
                    }
                    for run in runs
                ],
                indent=1,
            )
        )
    print(report(runs, wall))


if __name__ == "__main__":
    main()
