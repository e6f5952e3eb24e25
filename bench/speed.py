"""Issue #14's table in one command: graphlint beside ruff on real trees.

    python bench/speed.py --megatron ~/rw-trees/megatron-lm --torch /path/to/torch

For each tree (Megatron-LM and torch's site-packages when given, each tree of the
``--trees`` folder, CPython's standard library, an empty folder) it runs, as
separate processes from a fresh cache folder: ``graphlint check`` cold (empty
cache), warm (nothing changed) and, for Megatron-LM and torch, on a copy of the
tree, warm after one file a region reaches was edited, and that file named alone
(as the pre-commit hook names it); then ``ruff check --no-cache`` with its default
rules and with ``--select ALL``, as the anchor. Each figure is the wall time and
the CPU time of the whole process tree (``resource.RUSAGE_CHILDREN``), the best of
``--repeat`` runs, and for cold runs the peak memory of the process tree
(proportional set sizes summed, sampled from /proc); the output is a Markdown table
with the ratios of graphlint cold and warm to ruff's default run. The output of
every graphlint run is compared with a cold ``--no-cache`` run on the same tree;
any difference fails the command. Trees are obtained as in
../shared/realworld/README.md (``--trees ~/rw-trees``: its eight, whose slowest
issue #28 bounds). ``--curve 1000,10000,100000`` adds cold runs on generated
projects of those sizes.
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
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.installed import compile_graphlint

Figure = tuple[float, float, float]  # wall, cpu seconds, peak memory (MiB)
SAMPLE = 0.02  # seconds between memory samples


def _tree_pss(root: int) -> int:
    """Proportional set size (kB) of ``root`` and every process under it: shared
    pages (a forked worker's imports) count once in all, not once per process."""
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as rollup:
                for line in rollup:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1])
                        break
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as f:
                    todo.extend(int(child) for child in f.read().split())
        except (OSError, ValueError):
            continue  # it ended meanwhile
    return total


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[Figure, str]:
    """Run ``command``: its wall and CPU time (children included), the peak of the
    memory of its process tree (sampled every 20 ms, where /proc has it), and its
    stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    process = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.wait(SAMPLE):
            peak = max(peak, _tree_pss(process.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = process.communicate()
    done.set()
    sampler.join()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if process.returncode != 0:  # both run with --exit-zero
        raise SystemExit(f"{command[0]} failed ({process.returncode}): {err!r}")
    return (wall, cpu, peak / 1024), out.decode("utf-8", "replace")


def best(figures: list[Figure]) -> Figure:
    return min(figures)


class Bench:
    def __init__(self, repeat: int, scratch: Path) -> None:
        self.repeat = repeat
        self.scratch = scratch
        self.ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
        self.differs: list[str] = []  # runs whose findings were not the reference's
        self.named: Figure | None = None  # the edited file named alone, warm

    def graphlint(
        self, tree: Path, cache: Path, *extra: str, path: str = "."
    ) -> tuple[Figure, str]:
        env = {**os.environ, "GRAPHLINT_CACHE_DIR": str(cache)}
        # -P: the checked tree is the working folder, and its modules (torch has a
        # ``types.py``) must not shadow the standard library
        command = [sys.executable, "-P", "-m", "graphlint", "check", "--exit-zero"]
        return timed([*command, *extra, path], tree, env)

    def reference(self, tree: Path) -> str:
        """What a cold ``--no-cache`` run says (it also reads the tree into the page
        cache before the timed runs)."""
        return self.graphlint(tree, self.scratch / "no-cache", "--no-cache")[1]

    def same(self, what: str, out: str, reference: str) -> None:
        if out != reference:
            self.differs.append(what)

    def cold(self, tree: Path, reference: str) -> Figure:
        figures = []
        for n in range(self.repeat):
            cache = self.scratch / f"cold-{tree.name}-{n}"
            figure, out = self.graphlint(tree, cache)
            self.same(f"{tree.name} cold", out, reference)
            figures.append(figure)
        return best(figures)

    def warm(self, tree: Path, reference: str) -> Figure:
        cache = self.scratch / f"warm-{tree.name}"
        self.graphlint(tree, cache)
        figures = []
        for _ in range(self.repeat):
            figure, out = self.graphlint(tree, cache)
            self.same(f"{tree.name} warm", out, reference)
            figures.append(figure)
        return best(figures)

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
            figure, out = self.graphlint(copy, cache)
            self.same(f"{tree.name} edited", out, self.reference(copy))
            figures.append(figure)
        self.named = best(
            [
                self.graphlint(copy, cache, path=reached[0])[0]
                for _ in range(self.repeat)
            ]
        )
        return best(figures)

    def ruff_run(self, tree: Path, *select: str) -> Figure:
        command = [self.ruff, "check", "--no-cache", *select, "--exit-zero", "-q", "."]
        env = dict(os.environ)
        return best([timed(command, tree, env)[0] for _ in range(self.repeat)])


def show(figure: Figure | None, memory: bool = False) -> str:
    if figure is None:
        return "-"
    peak = f", {figure[2]:.0f} MiB" if memory else ""
    return f"{figure[0]:.2f} s ({figure[1]:.1f} s cpu{peak})"


def row(name: str, tree: Path, bench: Bench, edit: bool) -> str:
    count = sum(1 for _ in tree.rglob("*.py"))
    reference = bench.reference(tree)
    cold = bench.cold(tree, reference)
    warm = bench.warm(tree, reference)
    bench.named = None
    edited = bench.edited(tree) if edit else None
    ruff = bench.ruff_run(tree)
    every = bench.ruff_run(tree, "--select", "ALL")
    ratio = cold[0] / ruff[0] if ruff[0] else float("inf")
    warm_ratio = warm[0] / ruff[0] if ruff[0] else float("inf")
    return (
        f"| {name} ({count:,} files) | {show(cold, memory=True)} | {show(warm)} "
        f"| {show(edited)} | {show(bench.named)} | {show(ruff)} | {show(every)} "
        f"| {ratio:.1f}x "
        f"| {warm_ratio:.1f}x |"
    )


def curve(sizes: list[int], bench: Bench) -> None:
    """Cold runs on generated projects (``bench_check.generate``: a capture region
    in every 50th module, each reaching the next nine): cost per thousand files."""
    from bench_check import generate  # noqa: PLC0415 - beside this script

    print("\n| generated files | cold | per 1,000 files |")
    print("|---|---|---|")
    for size in sizes:
        root = bench.scratch / f"generated-{size}"
        tree = generate(root, size)
        cold = bench.cold(tree, bench.reference(tree))
        per = f"{cold[0] * 1000 / size:.2f} s, {cold[2] * 1000 / size:.0f} MiB"
        print(f"| {size:,} | {show(cold, memory=True)} | {per} |", flush=True)
        shutil.rmtree(root)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megatron", type=Path, help="a Megatron-LM checkout")
    parser.add_argument("--torch", type=Path, help="an installed torch package")
    parser.add_argument(
        "--trees",
        type=Path,
        help="a folder of trees, a row each: ../shared/realworld's (get_trees.sh)",
    )
    parser.add_argument("--repeat", type=int, default=1, help="runs per figure")
    parser.add_argument(
        "--curve",
        default="",
        help="also cold runs on generated projects of these sizes (1000,10000,100000)",
    )
    parser.add_argument(
        "--no-trees", action="store_true", help="only the curve, not the table"
    )
    args = parser.parse_args()
    compile_graphlint()
    with tempfile.TemporaryDirectory() as scratch:
        bench = Bench(args.repeat, Path(scratch))
        if not args.no_trees:
            table(bench, args.megatron, args.torch, args.trees)
        if args.curve:
            curve([int(size) for size in args.curve.split(",")], bench)
        if bench.differs:
            raise SystemExit(
                "findings differ from a cold --no-cache run: "
                + ", ".join(bench.differs)
            )
        print("\nEvery cold, warm and edited run said what a --no-cache run says.")


def table(
    bench: Bench, megatron: Path | None, torch: Path | None, folder: Path | None
) -> None:
    print(
        "| tree | graphlint cold (peak memory) | warm | warm, one reached file edited "
        "| that file named alone | ruff | ruff --select ALL | cold / ruff "
        "| warm / ruff |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    empty = bench.scratch / "empty"
    empty.mkdir()
    stdlib = bench.scratch / "stdlib"  # without the packages installed in it
    shutil.copytree(
        sysconfig.get_paths()["stdlib"],
        stdlib,
        symlinks=True,
        ignore=shutil.ignore_patterns("site-packages", "__pycache__"),
    )
    trees = [
        ("Megatron-LM", megatron, True),
        ("torch", torch, True),
        *(
            (tree.name, tree, False)
            for tree in sorted(folder.iterdir() if folder else [])
            if tree.is_dir() and tree.resolve() != (megatron and megatron.resolve())
        ),
        ("CPython stdlib", stdlib, False),
        ("empty folder", empty, False),
    ]
    for name, tree, edit in trees:
        if tree is not None:
            print(row(name, tree.resolve(), bench, edit), flush=True)


if __name__ == "__main__":
    main()
