"""``graphlint confirm`` for the GPU tests (marker ``gpu``): one process per file,
several files at once on the one GPU, each under a time limit (issue #30).

The pool starts every file the selected GPU tests name as soon as the first of them
runs, the slowest kind (``torch.compile``) first; each test then waits for its own
file only, so results are reported file by file as they come. A file that runs past
its limit is stopped, with every process it started, and fails its own test with
the progress it had made; the others go on.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from graphlint.runtime.confirm import kill_group, run_in_group

ROOT = Path(__file__).resolve().parents[1]
RUN_TIMEOUT = 240  # seconds one run of a script may take: confirm --timeout
FILE_TIMEOUT = 480  # seconds all the runs of one file may take, a safety limit
GRAPHLINT_CONFIRM = (sys.executable, "-m", "graphlint", "confirm")
EXPECT = re.compile(r"#\s*expect[+-]?\d*:")
COMPILE_COST = 6  # findings' worth: on an H200, as slow as a file with six


@dataclass(frozen=True)
class Confirmation:
    """What ``graphlint confirm --format lsp`` said of one file: its exit code and
    every diagnostic of every document, or why there is no report."""

    path: Path
    code: int
    items: list[dict[str, Any]]
    seconds: float
    problem: str | None = None


def _tail(text: str, lines: int = 8) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def confirm_file(
    path: Path,
    env: Mapping[str, str],
    run_timeout: float = RUN_TIMEOUT,
    file_timeout: float = FILE_TIMEOUT,
    started: Callable[[subprocess.Popen[str]], None] = lambda process: None,
    command: Iterable[str] = GRAPHLINT_CONFIRM,
) -> Confirmation:
    """``graphlint confirm`` on ``path`` with its progress lines kept (they say
    where a file that ran too long was)."""
    args = [*command, "--format", "lsp", "--timeout", f"{run_timeout:g}", str(path)]
    begun = time.monotonic()
    try:
        done = run_in_group(args, file_timeout, started, cwd=ROOT, env=dict(env))
    except subprocess.TimeoutExpired as late:
        return Confirmation(
            path,
            -1,
            [],
            time.monotonic() - begun,
            f"graphlint confirm {path} ran past its limit of {file_timeout:g} s "
            f"and was stopped; its last lines:\n{_tail(str(late.stderr or ''))}",
        )
    seconds = time.monotonic() - begun
    try:
        documents = json.loads(done.stdout)
    except ValueError:
        return Confirmation(
            path,
            done.returncode,
            [],
            seconds,
            f"graphlint confirm {path} gave no report (exit code "
            f"{done.returncode}):\n{_tail(done.stdout + done.stderr)}",
        )
    items = [d for document in documents for d in document["diagnostics"]]
    return Confirmation(path, done.returncode, items, seconds)


def cost(path: Path) -> int:
    """How long ``path`` is likely to take, roughly in runs of the script: one to
    survey, often one more per finding (a variant), and more when it compiles with
    torch (each run compiles again)."""
    text = path.read_text(encoding="utf-8")
    return 1 + len(EXPECT.findall(text)) + COMPILE_COST * ("torch.compile" in text)


def slowest_first(paths: Iterable[Path]) -> list[Path]:
    """``paths`` without repeats, those likely to take longest first, so that
    none of them starts last."""
    unique = list(dict.fromkeys(paths))
    costs = {p: cost(p) for p in unique}
    return sorted(unique, key=lambda p: -costs[p])


@dataclass
class ConfirmPool:
    """``graphlint confirm`` on many files, ``jobs`` at a time."""

    env: Mapping[str, str]
    jobs: int
    run_timeout: float = RUN_TIMEOUT
    file_timeout: float = FILE_TIMEOUT
    command: tuple[str, ...] = GRAPHLINT_CONFIRM
    _futures: dict[Path, Future[Confirmation]] = field(default_factory=dict)
    _running: set[subprocess.Popen[str]] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _pool: ThreadPoolExecutor | None = None
    _closed: bool = False  # close() began: a process that starts now is stopped

    def start(self, paths: Iterable[Path]) -> None:
        for path in slowest_first(paths):
            self._submit(path)

    def _submit(self, path: Path) -> Future[Confirmation]:
        if path not in self._futures:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.jobs)
            self._futures[path] = self._pool.submit(self._confirm, path)
        return self._futures[path]

    def _confirm(self, path: Path) -> Confirmation:
        def started(process: subprocess.Popen[str]) -> None:
            with self._lock:
                if self._closed:  # its file was taken before close() ran
                    kill_group(process)
                self._running.add(process)

        try:
            return confirm_file(
                path,
                self.env,
                self.run_timeout,
                self.file_timeout,
                started,
                self.command,
            )
        finally:
            with self._lock:
                self._running = {p for p in self._running if p.poll() is None}

    def __call__(self, path: Path) -> Confirmation:
        """The confirmation of ``path`` (started now if the pool was not asked
        for it); a test fails, with the reason, where there is no report."""
        confirmed = self._submit(path).result()
        if confirmed.problem is not None:
            pytest.fail(confirmed.problem, pytrace=False)
        return confirmed

    def ended(self) -> list[Confirmation]:
        """The confirmations that ended, in the order they were asked for."""
        return [
            f.result() for f in self._futures.values() if f.done() and not f.cancelled()
        ]

    def slowest(self, count: int) -> list[Confirmation]:
        """The ``count`` files that took longest, of those that ended."""
        return sorted(self.ended(), key=lambda c: -c.seconds)[:count]

    def table(self) -> list[dict[str, Any]]:
        """What ended, as ``bench/confirm_table.py --json`` writes it (the set
        ``fixtures``), so that one GPU run gives the tests and the table
        (``--gpu-json``; the table reads it back with ``--from``)."""
        return [
            {
                "path": str(done.path),
                "set": "fixtures",
                "seconds": done.seconds,
                "code": done.code,
                "error": done.problem or "",
                "items": done.items,
            }
            for done in self.ended()
        ]

    def close(self) -> None:
        """Stop what has not run yet, and kill what still runs (an interrupted
        session)."""
        if self._pool is None:
            return
        self._pool.shutdown(wait=False, cancel_futures=True)
        with self._lock:
            self._closed = True
            for process in self._running:
                if process.poll() is None:
                    kill_group(process)
        self._pool.shutdown(wait=True)


def environment(cache: Path, config: Path) -> dict[str, str]:
    """The confirm processes' environment, fixed once for the session (the tests'
    own monkeypatching must not reach the threads): private cache and
    configuration, no limits from whoever runs the tests, and torch's compiler
    and CPU ops in one thread per process, since the files already share the
    CPUs."""
    from graphlint.config import LIMIT_ENV  # noqa: PLC0415

    env = {k: v for k, v in os.environ.items() if k not in LIMIT_ENV.values()}
    env.update(GRAPHLINT_CACHE_DIR=str(cache), GRAPHLINT_CONFIG_DIR=str(config))
    env.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def shard(costs: list[int], spec: str) -> list[int]:
    """The positions, among GPU tests of these costs, that shard ``spec`` ("K/N",
    K from 1 to N) runs: the costliest first, each to the part with the least so
    far, so that the parts take about as long."""
    try:
        k, n = (int(part) for part in spec.split("/"))
    except ValueError:
        raise pytest.UsageError(f"--gpu-shard takes K/N, not {spec!r}") from None
    if not 1 <= k <= n:
        raise pytest.UsageError(f"--gpu-shard {spec}: K must be from 1 to N")
    loads = [0] * n
    mine = []
    for i in sorted(range(len(costs)), key=lambda i: -costs[i]):
        part = loads.index(min(loads))
        loads[part] += costs[i]
        if part == k - 1:
            mine.append(i)
    return sorted(mine)
