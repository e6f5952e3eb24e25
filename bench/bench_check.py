"""Benchmark ``graphlint check`` on a large tree: files per second, cold and warm.

    python bench/bench_check.py                  # a generated project of 3,000 files
    python bench/bench_check.py --files 10000
    python bench/bench_check.py --tree /path/to/site-packages/torch

A generated project is a package whose modules define nn.Modules and helpers that
call into the next modules (chains of ten), with a capture region in every 50th
module, so the run exercises pass one, the summaries and reachability, and the
project pass over the fifth of the files that captures reach.
"Cold" runs with an empty summary cache, "warm" runs again with the cache filled
(the OS page cache is warm for both: the first, unmeasured run reads every file).
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODULE = '''"""Generated module {i}."""
import torch

from . import mod_{next} as nxt


def helper_{i}(t: torch.Tensor) -> torch.Tensor:
    return {body}


class Layer{i}(torch.nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        if h.sum() > 0:
            h = h * 0.5
        return helper_{i}(h)


def summary_{i}(x: torch.Tensor) -> float:
    return float(x.mean().item())
'''

CAPTURE = """

def capture_{i}() -> torch.Tensor:
    model = Layer{i}(16).cuda()
    x = torch.randn(4, 16, device="cuda")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        model(x)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = model(x)
    return y
"""


def generate(root: Path, files: int) -> Path:
    package = root / "genproject"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    for i in range(files - 1):
        nxt = (i + 1) % (files - 1)
        # chains of ten modules: each capture reaches the next nine
        body = f"nxt.helper_{nxt}(t) * 2" if i % 10 != 9 else "t.abs()"
        text = MODULE.format(i=i, next=nxt, body=body)
        if i % 50 == 0:
            text += CAPTURE.format(i=i)
        (package / f"mod_{i}.py").write_text(text)
    return package


def run(tree: Path, cwd: Path, *extra: str) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "graphlint", "check", "--exit-zero", *extra, str(tree)],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"graphlint failed ({done.returncode}): {done.stderr}")
    return elapsed, done.stdout.strip().splitlines()[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, help="check this tree instead")
    parser.add_argument("--files", type=int, default=3000)
    parser.add_argument("--jobs", type=int, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        tree = args.tree.resolve() if args.tree else generate(work, args.files)
        count = sum(1 for _ in tree.rglob("*.py"))
        jobs = ("--jobs", str(args.jobs)) if args.jobs else ()
        run(tree, work, "--no-cache", *jobs)  # fill the OS page cache
        cache = ("--cache-dir", str(work / "cache"))  # empty: a cold run
        cold, summary = run(tree, work, *cache, *jobs)
        warm, _ = run(tree, work, *cache, *jobs)
        rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(f"tree: {tree} ({count} Python files)")
        print(f"result: {summary}")
        print(f"cold: {cold:.1f} s, {count / cold:.0f} files/s")
        print(f"warm: {warm:.1f} s, {count / warm:.0f} files/s")
        print(f"peak RSS of one run: {rss:.0f} MB")


if __name__ == "__main__":
    main()
