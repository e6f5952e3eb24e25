"""Every bad fixture with a fix, fixed, then run by ``graphlint confirm`` on a GPU.

Run on a GPU machine: ``python bench/fix_table.py [--jobs 4] [--json F]``. For each
``fixtures/GL*/bad*.py`` with a finding that has a fix, a copy is fixed with
``graphlint check --fix --unsafe-fixes`` and confirmed; it prints, in Markdown, per
rule code and applicability: the fixtures fixed, those left with no finding at all,
and those that then ran to their end with every capture made and every replay
compared equal to eager (``captures, matches eager``). A fixture that still has
findings after the fix (of shapes with no fix) is listed, and so is every problem.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from confirm_table import FileRun, confirm, good_problems

ROOT = Path(__file__).resolve().parents[1]
GRAPHLINT = (sys.executable, "-m", "graphlint", "check", "--no-cache", "--alone")


@dataclass
class Fixed:
    fixture: Path
    codes: dict[str, str]  # code fixed -> applicability
    remaining: list[str]  # codes still reported after the fix
    run: FileRun | None = None
    problems: list[str] = field(default_factory=list)


def lint(path: Path) -> list[dict[str, object]]:
    done = subprocess.run(
        [*GRAPHLINT, "--format", "json", "--exit-zero", str(path)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    found: list[dict[str, object]] = json.loads(done.stdout)
    return found


def fix(fixture: Path, folder: Path) -> Fixed | None:
    before = lint(fixture)
    codes = {str(d["code"]): str(d["applicability"]) for d in before if d.get("edits")}
    if not codes:
        return None
    copy = folder / f"{fixture.parent.name}__{fixture.name}"
    copy.write_bytes(fixture.read_bytes())
    subprocess.run(
        [*GRAPHLINT, "--fix", "--unsafe-fixes", "--exit-zero", str(copy)],
        capture_output=True,
        check=True,
        cwd=ROOT,
    )
    remaining = sorted({str(d["code"]) for d in lint(copy)})
    return Fixed(copy, codes, remaining)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    start = time.perf_counter()
    fixtures = sorted((ROOT / "fixtures").glob("GL*/bad*.py"))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        with ThreadPoolExecutor(args.jobs) as pool:
            found = [f for f in pool.map(lambda p: fix(p, folder), fixtures) if f]
        clean = [f for f in found if not f.remaining]
        with ThreadPoolExecutor(args.jobs) as pool:
            runs = list(pool.map(lambda f: confirm(f.fixture), clean))
    for item, run in zip(clean, runs, strict=True):
        item.run = run
        item.problems = good_problems(run)
    rows: dict[tuple[str, str], list[Fixed]] = defaultdict(list)
    for item in found:
        for code, applicability in item.codes.items():
            rows[(code, applicability)].append(item)
    print(
        "| rule | applicability | fixtures fixed | no finding left "
        "| captures, matches eager |"
    )
    print("|---|---|---|---|---|")
    for (code, applicability), items in sorted(rows.items()):
        left = [i for i in items if not i.remaining]
        captures = [i for i in left if i.run is not None and not i.problems]
        print(
            f"| {code} | {applicability} | {len(items)} | {len(left)} | "
            f"{len(captures)} |"
        )
    print()
    for item in found:
        name = item.fixture.name.replace("__", "/")
        if item.remaining:
            print(
                f"- {name}: still reported after the fix: {', '.join(item.remaining)}"
            )
        elif item.problems:
            print(f"- {name}: {'; '.join(item.problems)}")
    print(f"\n{len(found)} fixtures fixed in {time.perf_counter() - start:.0f} s")
    if args.json:
        args.json.write_text(
            json.dumps(
                [
                    {
                        "fixture": i.fixture.name,
                        "codes": i.codes,
                        "remaining": i.remaining,
                        "problems": i.problems,
                    }
                    for i in found
                ],
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
