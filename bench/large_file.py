"""Benchmark ``graphlint check`` on one large generated file: seconds and peak memory.

    python bench/large_file.py                        # 100 KB, 200 KB, 400 KB, 1 MiB
    python bench/large_file.py --sizes 400000 --keep /tmp/large

The file repeats one unit: a module class with a ``forward`` that branches on a
tensor, a step function with hazards (``.item()``, ``print``, ``time.time()``), and
a training function that warms up on a side stream, captures ``with
torch.cuda.graph(g):`` calling both, then rebinds the static input between
replays: five findings a unit. Every unit adds capture regions,
writes and reads, so a per-file analysis that compares regions with writes, or
regions with call sites, shows as time that grows with the square of the size.
The largest size is 1,048,576 bytes, the default ``--max-file-size``.

Each size is checked by ``graphlint check --no-cache --timeout 600 FILE`` in a
separate process; the figures are its wall time and its peak resident memory: the
``ru_maxrss`` that ``os.wait4`` reports for it, the largest of the process and of
the workers it waited for (as ``RUSAGE_CHILDREN`` counts them, but for this run
alone).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEADER = '''"""A generated large module (bench/large_file.py)."""
import time

import torch

'''

UNIT = """

class Block{i}(torch.nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(dim, dim)
        self.scale = 0.5

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        if h.sum() > 0:
            h = h * self.scale
        return h


def step_{i}(model: Block{i}, x: torch.Tensor, log: list[float]) -> torch.Tensor:
    y = model(x)
    loss = y.pow(2).mean()
    log.append(loss.item())
    print("step {i}", time.time())
    return loss


def train_{i}(steps: int) -> torch.Tensor:
    model = Block{i}(16).cuda()
    static_x = torch.randn(4, 16, device="cuda")
    log: list[float] = []
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        for _ in range(3):
            step_{i}(model, static_x, log)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = step_{i}(model, static_x, log)
    for _ in range(steps):
        static_x = torch.randn(4, 16, device="cuda")
        g.replay()
    return out
"""

SIZES = (100_000, 200_000, 400_000, 1_048_576)


def generate(size: int) -> str:
    """Whole units of the module, as many as fit in ``size`` bytes."""
    parts, length, i = [HEADER], len(HEADER), 0
    while True:
        unit = UNIT.format(i=i)
        if length + len(unit) > size:
            break
        parts.append(unit)
        length += len(unit)
        i += 1
    return "".join(parts)


def measure(path: Path) -> tuple[float, float, str]:
    """Check ``path`` alone: wall seconds, peak RSS in MiB, the last output line."""
    command = [sys.executable, "-m", "graphlint", "check", "--no-cache"]
    command += ["--timeout", "600", str(path)]
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        # the usage of this child and of the workers it waited for: its own peak
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode()
    if process.returncode not in (0, 1):  # 1: diagnostics were reported, as they must
        raise SystemExit(f"graphlint failed ({process.returncode}): {text[-2000:]}")
    if "GL005" in text:
        raise SystemExit(f"{path} ran out of time or memory: {text[-500:]}")
    return seconds, usage.ru_maxrss / 1024, text.strip().splitlines()[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes",
        default=",".join(str(s) for s in SIZES),
        help="comma-separated file sizes in bytes (default: %(default)s)",
    )
    parser.add_argument("--keep", type=Path, help="write the files here and keep them")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        print("| bytes | units | seconds | peak MiB | result |")
        print("|---:|---:|---:|---:|---|")
        for size in sizes:
            text = generate(size)
            path = folder / f"large_{size}.py"
            path.write_text(text)
            seconds, peak, last = measure(path)
            units = text.count("\nclass Block")
            print(f"| {len(text)} | {units} | {seconds:.1f} | {peak:.0f} | {last} |")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
