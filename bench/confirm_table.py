"""``graphlint confirm`` over every fixture, as a verdict table per rule code.

Run on a GPU machine: ``python bench/confirm_table.py [--jobs 8] [--json F] [PATH...]``.
PATHs are files or folders, each one set (default: one set, every rule fixture and
every runtime scenario; add the corpus with ``../shared/corpus/cases`` and the
look-alikes with ``../shared/realworld/lookalikes``; ``fixtures`` names the default
set among others). Each file runs under ``graphlint confirm --format lsp``; several
files run at once (``--jobs``), each in its own processes, so the GPU seconds are
the sum of the files' wall times. ``--from F`` reports on the items a ``--json F``
run wrote, without a GPU.

It prints, in Markdown:
- per set: the share of the rules' findings that got a verdict (confirmed or not
  reproduced; GL0xx findings are the tool's own and are counted apart), the missed
  failures, and the confirmations by another rule's failure;
- per rule code, how the static findings in bad files fared: confirmed, not
  reproduced, not executed, no verdict, with the reasons given;
- the runtime failures a finding flagged that were still reported as missed;
- each confirmation by another rule's failure, and each by a failure this script
  cannot place;
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


# Which codes a capture failure may confirm, by the words of its message: the
# failures measured in ../shared/ground-truth/ and ground-truth/ (rules/README.md
# maps their cases to codes), the rules' own measured fixtures (GL705), and the
# checks PyTorch makes before a capture or graphing starts (GL704, GL706, GL707).
# Kept apart from the rules' declared signatures on purpose: a rule that claims
# another's failure shows here as a confirmation by another rule's failure.
SYNCS = frozenset(
    {"GL101", "GL102", "GL103", "GL104", "GL105", "GL106", "GL107", "GL201", "GL202"}
)
CLAIMS: tuple[tuple[str, frozenset[str]], ...] = (
    # a wait for the device: the error at the line, then the capture's end; a
    # blocking copy from pinned memory waits too (pinned_to_cuda_blocking: the
    # first error of its chain, seen at GL601/bad_host_made.py:26 on an H200)
    (
        "operation not permitted when stream is capturing",
        SYNCS | {"GL601", "GL702", "GL705"},
    ),
    # an event recorded in the capture, then waited on (GL103/bad.py:20, H200)
    ("operation not permitted on an event last recorded in a capturing", SYNCS),
    (
        "operation failed due to a previous error during capture",
        SYNCS | {"GL601", "GL702", "GL703"},  # pinned_to_cuda_blocking; nowarm_*
    ),
    (
        "Cannot copy between CPU and CUDA tensors",
        frozenset({"GL101", "GL102", "GL601", "GL602", "GL603"}),
    ),
    ("capturable is False", frozenset({"GL701"})),
    ("Attempt to increase offset for a CUDA generator", frozenset({"GL501"})),
    ("set_current_seed can be called during stream capture", frozenset({"GL502"})),
    ("CUDA graphs must be captured on a non-default stream", frozenset({"GL704"})),
    ("does not support the autocast caching", frozenset({"GL706"})),
    ("Modules must not have hooks registered", frozenset({"GL707"})),
    ("torch.utils.checkpoint is incompatible", frozenset({"GL708"})),
    ("not compatible with .grad()", frozenset({"GL708"})),
    ("differentiated Tensors appears to not have been used", frozenset({"GL708"})),
    ("CUBLAS_STATUS", frozenset({"GL703"})),
    ("cublasCreate", frozenset({"GL703"})),
    ("CUDNN_STATUS", frozenset({"GL703"})),
    ("NCCL error", frozenset({"GL703"})),
    # torch.compile(fullgraph=True) on a value read on the host
    ("Data-dependent branching", frozenset({"GL101", "GL201"})),
    ("data-dependent expression", frozenset({"GL101", "GL201"})),
    # CUDA-graph trees: an output (or a gradient) a later replay overwrote
    ("accessing tensor output of CUDAGraphs", frozenset({"GL303", "GL304"})),
)


def claimed_by(note: str) -> frozenset[str] | None:
    """The codes that may be confirmed by the capture failure a note cites; None
    when the note cites none this script knows."""
    found = [codes for words, codes in CLAIMS if words.lower() in note.lower()]
    return frozenset().union(*found) if found else None


def misattributed(finding: dict[str, Any]) -> str | None:
    """Why a confirmed finding was confirmed by a failure its rule does not
    predict: "another" (the failure is another rule's, or the finding is the
    tool's own), "unplaced" (a capture failure this script cannot place); None when
    it is its own or not confirmed by a failure."""
    if verdict(finding) != "confirmed":
        return None
    code = str(finding["code"])
    if code.startswith("GL0"):
        return "another"  # the tool's own findings say nothing of a capture
    note = str(finding["data"]["runtime"]["note"])
    if "breaks its CUDA graph" in note:  # Dynamo splits where the host reads
        # (GradScaler.step reads its inf flag on the host: a read of the device)
        return None if code in SYNCS | {"GL702"} else "another"
    if not ("the capture of " in note and " fails " in note):
        return None  # a replay compared, or host work run while capturing
    codes = claimed_by(note)
    if codes is None:
        return "unplaced"
    return None if code in codes else "another"


@dataclass
class FileRun:
    path: Path
    seconds: float
    code: int
    items: list[dict[str, Any]] = field(default_factory=list)
    error: str = ""
    group: str = "fixtures"  # the set it belongs to

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


def confirm(path: Path, group: str = "fixtures") -> FileRun:
    start = time.perf_counter()
    done = subprocess.run(
        [
            *(sys.executable, "-m", "graphlint", "confirm", "-q", "--format", "lsp"),
            *("--timeout", "150", str(path)),
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
        return FileRun(
            path, seconds, done.returncode, error=" ".join(tail), group=group
        )
    items = [d for doc in documents for d in doc["diagnostics"]]
    return FileRun(path, seconds, done.returncode, items, group=group)


def verdict(finding: dict[str, Any]) -> str:
    status = str(finding["data"]["runtime"]["status"])
    return "no verdict" if status == "not reached" else status


def reason(finding: dict[str, Any]) -> str:
    """The note, with paths, lines and numbers taken out, to group alike notes."""
    note = str(finding["data"]["runtime"]["note"])
    note = re.sub(r"\S+\.py:\d+", "FILE:LINE", note)
    note = re.sub(r"\b(at|line) \d+", r"\1 N", note)
    return re.sub(r"\d+(\.\d+)?", "N", note)[:110]


def files_of(paths: list[str]) -> list[tuple[str, Path]]:
    """Each file, with its set: the PATH it came from (``fixtures``: the default
    set)."""
    found: list[tuple[str, Path]] = []
    for name in paths:
        if name == "fixtures":
            found += [(name, path) for path in default_files()]
            continue
        path = Path(name).resolve()
        if path.is_dir():
            found += [
                (name, p)
                for p in sorted(path.rglob("*.py"))
                if not p.name.startswith("_")
            ]
        else:
            found.append((name, path))
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


def never_ran(finding: dict[str, Any]) -> bool:
    """Whether ``finding`` is in code the script never runs: its line, or its
    whole region, ran in no run (a function nothing calls), not a region the run
    was stopped before."""
    runtime = finding["data"]["runtime"]
    note = str(runtime["note"])
    return (
        runtime["status"] == "not executed" and note.startswith("its line never ran")
    ) or (  # not "its region did not run: the run was stopped at ..."
        note.startswith("its region did not run")
        and not note.startswith("its region did not run:")
    )


def share(judged: int, findings: int) -> str:
    return f"{judged}/{findings} ({judged / findings:.0%})" if findings else "0/0"


def sets_table(runs: list[FileRun]) -> list[str]:
    """Per set: the verdict share of the rules' findings (in every file of the
    set), and of those in code the script ran, the missed failures and the
    confirmations by another rule's failure."""
    lines = [
        "| set | files | findings with a verdict | of those in code the script "
        "runs | missed | confirmed by another rule's failure | GL0xx findings "
        "(not judged) |",
        "|---|---|---|---|---|---|---|",
    ]
    groups: dict[str, list[FileRun]] = defaultdict(list)
    for run in runs:
        groups[run.group].append(run)
    for group, members in groups.items():
        rules = [
            f
            for run in members
            for f in run.findings
            if not f["code"].startswith("GL0")
        ]
        tools = sum(
            f["code"].startswith("GL0") for run in members for f in run.findings
        )
        judged = sum(verdict(f) in ("confirmed", "not reproduced") for f in rules)
        ran = sum(not never_ran(f) for f in rules)
        missed = sum(len(run.missed) for run in members)
        wrong = sum(
            misattributed(f) == "another" for run in members for f in run.findings
        )
        lines.append(
            f"| {group} | {len(members)} | {share(judged, len(rules))} | "
            f"{share(judged, ran)} | {missed} | {wrong} | {tools} |"
        )
    return lines


def report(runs: list[FileRun], wall: float) -> str:
    lines: list[str] = [*sets_table(runs), ""]
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
    lines += [
        "",
        f"Findings in bad files with a verdict: {share(judged, findings)}.",
        f"Missed failures at a flagged line: {flagged_missed}.",
    ]
    for kind, title in (
        ("another", "Confirmed by another rule's failure"),
        ("unplaced", "Confirmed by a capture failure this table cannot place"),
    ):
        odd = [
            (run, f) for run in runs for f in run.findings if misattributed(f) == kind
        ]
        lines += ["", f"{title}: {len(odd)}."]
        lines += [
            f"- {run.path.name}:{f['range']['start']['line'] + 1} {f['code']}: "
            f"{f['data']['runtime']['note'][:160]}"
            for run, f in odd
        ]
    lines += ["", "Reasons (not confirmed):"]
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
    parser.add_argument(
        "--from",
        dest="saved",
        type=Path,
        nargs="+",
        help="report on what --json runs wrote",
    )
    parser.add_argument(
        "--shard",
        metavar="K/N",
        help="run the K-th of N parts of the files (where one run has a time "
        "limit); --from reports on the parts' --json files together",
    )
    args = parser.parse_args()
    if args.saved:
        runs = [
            FileRun(
                Path(entry["path"]),
                entry["seconds"],
                entry["code"],
                entry["items"],
                entry["error"],
                entry.get("set", "fixtures"),
            )
            for saved in args.saved
            for entry in json.loads(saved.read_text())
        ]
        print(report(runs, 0.0))
        return
    files = files_of(args.paths or ["fixtures"])
    if args.shard:
        part, _, parts = args.shard.partition("/")
        if not (part.isdigit() and parts.isdigit() and 0 < int(part) <= int(parts)):
            parser.error(f"--shard {args.shard}: give K/N with 1 <= K <= N")
        files = files[int(part) - 1 :: int(parts)]
    start = time.perf_counter()
    with ThreadPoolExecutor(args.jobs) as pool:
        runs = list(pool.map(lambda job: confirm(job[1], job[0]), files))
    wall = time.perf_counter() - start
    if args.json:
        args.json.write_text(
            json.dumps(
                [
                    {
                        "path": str(run.path),
                        "set": run.group,
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
