"""Issue #14's table in one command: graphlint beside ruff on real trees.

    python bench/speed.py --megatron ~/rw-trees/megatron-lm --torch /path/to/torch

For each tree (Megatron-LM and torch's site-packages when given, CPython's standard
library, an empty folder) it runs, as separate processes from a fresh cache folder:
``graphlint check`` cold (empty cache), warm (nothing changed) and, on a copy of the
tree, warm after one file a region reaches was edited; then ``ruff check --no-cache``
with its default rules and with ``--select ALL``, as the anchor. Each figure is the
wall time and the CPU time of the whole process tree (``resource.RUSAGE_CHILDREN``),
the best of ``--repeat`` runs; the output is a Markdown table with the ratio of
graphlint cold to ruff's default run. Trees are obtained as in
../shared/realworld/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

Figure = tuple[float, float]  # wall, cpu seconds


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[Figure, str]:
    """Run ``command``; its wall and CPU time (children included) and its stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:  # both run with --exit-zero
        raise SystemExit(f"{command[0]} failed ({done.returncode}): {done.stderr}")
    return (wall, cpu), done.stdout


def best(figures: list[Figure]) -> Figure:
    return min(figures)


class Bench:
    def __init__(self, repeat: int, scratch: Path) -> None:
        self.repeat = repeat
        self.scratch = scratch
        self.ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")

    def graphlint(self, tree: Path, cache: Path, *extra: str) -> tuple[Figure, str]:
        env = {**os.environ, "GRAPHLINT_CACHE_DIR": str(cache)}
        # -P: the checked tree is the working folder, and its modules (torch has a
        # ``types.py``) must not shadow the standard library
        command = [sys.executable, "-P", "-m", "graphlint", "check", "--exit-zero"]
        return timed([*command, *extra, "."], tree, env)

    def cold(self, tree: Path) -> Figure:
        figures = []
        for n in range(self.repeat):
            cache = self.scratch / f"cold-{tree.name}-{n}"
            figures.append(self.graphlint(tree, cache)[0])
        return best(figures)

    def warm(self, tree: Path) -> Figure:
        cache = self.scratch / f"warm-{tree.name}"
        self.graphlint(tree, cache)
        return best([self.graphlint(tree, cache)[0] for _ in range(self.repeat)])

    def edited(self, tree: Path) -> Figure | None:
        """Warm, after one file that a region reaches was edited (on a copy)."""
        copy = self.scratch / f"copy-{tree.name}"
        shutil.copytree(
            tree, copy, symlinks=True, ignore=shutil.ignore_patterns(".git")
        )
        cache = self.scratch / f"edit-{tree.name}"
        _, out = self.graphlint(copy, cache, "--format", "lsp", "--show-reach")
        reached = [
            fn["path"]
            for region in json.loads(out)["reach"]["regions"]
            for fn in region["reached"]
            if not fn["region"] and not fn["excluded"]
        ]
        if not reached:
            return None
        target = copy / reached[0]
        figures = []
        for n in range(self.repeat):
            with target.open("a", encoding="utf-8") as handle:
                handle.write(f"\n# edited {n}\n")
            figures.append(self.graphlint(copy, cache)[0])
        return best(figures)

    def ruff_run(self, tree: Path, *select: str) -> Figure:
        command = [self.ruff, "check", "--no-cache", *select, "--exit-zero", "-q", "."]
        env = dict(os.environ)
        return best([timed(command, tree, env)[0] for _ in range(self.repeat)])


def row(name: str, tree: Path, bench: Bench, edit: bool) -> str:
    count = sum(1 for _ in tree.rglob("*.py"))
    bench.graphlint(tree, bench.scratch / "page-cache", "--no-cache")  # read it all
    cold = bench.cold(tree)
    warm = bench.warm(tree)
    edited = bench.edited(tree) if edit else None
    ruff = bench.ruff_run(tree)
    every = bench.ruff_run(tree, "--select", "ALL")
    ratio = cold[0] / ruff[0] if ruff[0] else float("inf")

    def show(figure: Figure | None) -> str:
        return "-" if figure is None else f"{figure[0]:.2f} s ({figure[1]:.1f} s cpu)"

    return (
        f"| {name} ({count:,} files) | {show(cold)} | {show(warm)} | {show(edited)} "
        f"| {show(ruff)} | {show(every)} | {ratio:.1f}x |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megatron", type=Path, help="a Megatron-LM checkout")
    parser.add_argument("--torch", type=Path, help="an installed torch package")
    parser.add_argument("--repeat", type=int, default=1, help="runs per figure")
    args = parser.parse_args()
    print(
        "| tree | graphlint cold | warm | warm, one reached file edited "
        "| ruff | ruff --select ALL | cold / ruff |"
    )
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as scratch:
        bench = Bench(args.repeat, Path(scratch))
        empty = Path(scratch) / "empty"
        empty.mkdir()
        stdlib = Path(scratch) / "stdlib"  # without the packages installed in it
        shutil.copytree(
            sysconfig.get_paths()["stdlib"],
            stdlib,
            symlinks=True,
            ignore=shutil.ignore_patterns("site-packages", "__pycache__"),
        )
        trees = [
            ("Megatron-LM", args.megatron, True),
            ("torch", args.torch, True),
            ("CPython stdlib", stdlib, False),
            ("empty folder", empty, False),
        ]
        for name, tree, edit in trees:
            if tree is not None:
                print(row(name, tree.resolve(), bench, edit), flush=True)


if __name__ == "__main__":
    main()
