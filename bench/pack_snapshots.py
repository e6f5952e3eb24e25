"""Snapshots of graphlint on the real-world pack, to pin a refactor line by line.

    python bench/pack_snapshots.py ~/rw-trees            # compare with bench/snapshots/
    python bench/pack_snapshots.py ~/rw-trees --update   # rewrite them
    python bench/pack_snapshots.py ~/rw-trees --only megatron-lm,vllm-0.33.0

For each tree of ``../shared/realworld/expectations.json`` found in the folder, it
runs ``graphlint check --no-cache --exit-zero --show-reach .`` from the tree's root
(paths as the tree shows them) and compares the text it prints with
``bench/snapshots/<tree>.txt``: every diagnostic, every region with what it reaches,
every call not followed, the summary line. A difference is printed as a unified diff
and the command exits 1; ``--update`` writes the current output instead. The trees
are not in this repository (``../shared/realworld/get_trees.sh`` gets them), so the
test suite cannot run this: run it before and after each step of a change that must
not alter what graphlint finds (issue #28), and commit the snapshots with the step
that changes them on purpose.
"""

from __future__ import annotations

import argparse
import difflib
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SNAPSHOTS = HERE / "snapshots"
EXPECTATIONS = HERE.parent.parent / "shared" / "realworld" / "expectations.json"


def trees(folder: Path, only: set[str] | None) -> list[Path]:
    """The pack's trees present in ``folder``, in the order the pack lists them."""
    names = list(json.loads(EXPECTATIONS.read_text(encoding="utf-8"))["trees"])
    if only is not None:
        unknown = only - set(names)
        if unknown:
            raise SystemExit(f"not trees of the pack: {', '.join(sorted(unknown))}")
        names = [n for n in names if n in only]
    return [folder / n for n in names if (folder / n).is_dir()]


def render(tree: Path) -> str:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "graphlint",
            "check",
            "--no-cache",
            "--exit-zero",
            "--show-reach",
            ".",
        ],
        cwd=tree,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        why = f"{tree.name}: graphlint exited {done.returncode}\n{done.stderr}"
        raise SystemExit(why)
    return done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", type=Path, help="holds the pack's trees")
    parser.add_argument("--update", action="store_true", help="rewrite the snapshots")
    parser.add_argument("--only", help="comma-separated tree names")
    args = parser.parse_args()
    only = set(args.only.split(",")) if args.only else None
    found = trees(args.folder, only)
    if not found:
        print(f"no tree of the pack in {args.folder}", file=sys.stderr)
        return 2
    changed = 0
    for tree in found:
        got = render(tree)
        snapshot = SNAPSHOTS / f"{tree.name}.txt"
        if args.update:
            SNAPSHOTS.mkdir(exist_ok=True)
            snapshot.write_text(got, encoding="utf-8")
            print(f"{tree.name}: written ({len(got.splitlines())} lines)")
            continue
        want = snapshot.read_text(encoding="utf-8") if snapshot.exists() else ""
        if got == want:
            print(f"{tree.name}: same")
            continue
        changed += 1
        print(f"{tree.name}: changed")
        sys.stdout.writelines(
            difflib.unified_diff(
                want.splitlines(keepends=True),
                got.splitlines(keepends=True),
                f"bench/snapshots/{tree.name}.txt",
                f"{tree.name} (now)",
            )
        )
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
