"""Run ``check_file`` over many files in worker processes.

LibCST can recurse without bound or segfault on hostile input
(../shared/reference/reliability.md), so no file is parsed in the process that
collects the results. Each worker takes one file at a time; a worker that dies or
runs past the per-file time limit is replaced, and its file gets a GL005 diagnostic.
An exception in graphlint itself becomes GL009 for that file. The run always continues.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from graphlint.diagnostics import FileResult
from graphlint.engine import Job, Settings, check_file, tool_diagnostic
from graphlint.rules.tool.file_checks import InternalError, ParserLimitExceeded

_STACK_SIZE = 256 * 1024 * 1024  # deep but legal code must not overflow the C stack
_RECURSION_LIMIT = 20_000


def _guarded(job: Job, settings: Settings) -> FileResult:
    path = job.path
    try:
        return check_file(job, settings)
    except Exception as error:  # a graphlint bug: report it on the file, keep going
        where = traceback.extract_tb(error.__traceback__)[-1]
        detail = (
            f"{type(error).__name__}: {error} "
            f"(at {Path(where.filename).name}:{where.lineno})"
        )
        diagnostic = tool_diagnostic(InternalError, str(path), detail=detail)
        enabled = InternalError.code in settings.enabled
        return FileResult(
            str(path), (diagnostic,) if enabled else (), internal_error=True
        )


def _serve(conn: Connection, settings: Settings) -> None:
    while True:
        try:
            path = conn.recv()
        except EOFError:
            return
        if path is None:
            return
        conn.send(_guarded(path, settings))


def _worker_main(conn: Connection, settings: Settings) -> None:
    """Worker process: serve files on a thread with a large stack."""
    sys.setrecursionlimit(_RECURSION_LIMIT)
    threading.stack_size(_STACK_SIZE)
    thread = threading.Thread(target=_serve, args=(conn, settings), daemon=True)
    thread.start()
    thread.join()


@dataclass
class _Worker:
    process: BaseProcess
    conn: Connection
    job: tuple[int, Job] | None = None
    started: float = 0.0


def _context() -> Any:
    """fork where it is safe (Linux): workers start fast and share imports."""
    fork = "fork" in mp.get_all_start_methods() and sys.platform.startswith("linux")
    return mp.get_context("fork" if fork else "spawn")


class Pool:
    """A small pool whose workers can be killed one at a time."""

    def __init__(self, size: int, settings: Settings) -> None:
        self.settings = settings
        self.ctx = _context()
        self.workers = [self._spawn() for _ in range(size)]

    def _spawn(self) -> _Worker:
        parent, child = self.ctx.Pipe()
        process = self.ctx.Process(
            target=_worker_main, args=(child, self.settings), daemon=True
        )
        process.start()
        child.close()
        return _Worker(process, parent)

    def _replace(self, worker: _Worker) -> None:
        worker.conn.close()
        if worker.process.is_alive():
            worker.process.kill()
        worker.process.join()
        self.workers[self.workers.index(worker)] = self._spawn()

    def run(
        self,
        files: Sequence[Job],
        on_result: Callable[[int, FileResult], None],
    ) -> None:
        todo = deque(enumerate(files))
        timeout = self.settings.timeout
        while todo or any(w.job for w in self.workers):
            for worker in self.workers:
                if worker.job is None and todo:
                    worker.job = todo.popleft()
                    worker.started = time.monotonic()
                    worker.conn.send(worker.job[1])
            busy = [w for w in self.workers if w.job is not None]
            deadline = min(w.started for w in busy) + timeout
            ready = wait(
                [w.conn for w in busy] + [w.process.sentinel for w in busy],
                timeout=max(0.0, deadline - time.monotonic()),
            )
            now = time.monotonic()
            for worker in busy:
                assert worker.job is not None
                index, job = worker.job
                path = job.path
                if worker.conn in ready:
                    try:
                        result = worker.conn.recv()
                    except (EOFError, OSError):
                        result = None
                    if isinstance(result, FileResult):
                        worker.job = None
                        on_result(index, result)
                        continue
                if worker.conn in ready or worker.process.sentinel in ready:
                    code = worker.process.exitcode
                    detail = f"the parser crashed (worker exit code {code})"
                elif now - worker.started >= timeout:
                    detail = f"took longer than the {timeout:g} s per-file limit"
                else:
                    continue
                worker.job = None
                self._replace(worker)
                diagnostic = tool_diagnostic(
                    ParserLimitExceeded, str(path), detail=detail
                )
                enabled = ParserLimitExceeded.code in self.settings.enabled
                on_result(
                    index, FileResult(str(path), (diagnostic,) if enabled else ())
                )

    def close(self) -> None:
        for worker in self.workers:
            with contextlib.suppress(OSError):
                worker.conn.send(None)
        for worker in self.workers:
            worker.process.join(timeout=5)
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join()
            worker.conn.close()


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


def check_files(
    files: Sequence[Path | Job], settings: Settings, jobs: int | None = None
) -> list[FileResult]:
    """Check ``files`` in isolated workers; results come back in input order."""
    if not files:
        return []
    work = [f if isinstance(f, Job) else Job(f) for f in files]
    results: list[FileResult | None] = [None] * len(files)

    def keep(index: int, result: FileResult) -> None:
        results[index] = result

    pool = Pool(min(jobs or default_jobs(), len(files)), settings)
    try:
        pool.run(work, keep)
    finally:
        pool.close()
    return [r for r in results if r is not None]
