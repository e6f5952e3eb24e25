"""Run jobs (checking a file, summarising a reached module) in worker processes.

LibCST can recurse without bound or segfault on hostile input, and any parser can be
made to take a lot of time or memory (../shared/reference/reliability.md), so nothing
from a checked tree is parsed in the process that collects the results. Each worker:

- takes one job at a time, under the per-file time limit and an address-space limit
  (``max-memory`` beyond what the worker holds when it starts); a worker that dies or
  runs past the time limit is replaced, and its file gets GL005; a ``MemoryError`` is
  GL005 too; a bug in graphlint is GL009;
- imports nothing from the tree being checked: a worker is either forked (Linux, from
  a process with one thread) or started as a fresh interpreter (``_Spawned``) from a
  file alone in its folder, whose first statement replaces ``sys.path`` with
  graphlint's own, before any import; multiprocessing's ``spawn`` and
  ``forkserver`` start ``python -c``, which puts the working folder (the
  repository) first on the path and imports dozens of modules from it before any
  code of graphlint's runs (``SECURITY.md``);
- dies with its parent: it asks the kernel for SIGKILL when the parent exits (Linux,
  a worker started from the main thread) and watches its parent's pid in any case,
  and keeps no copy of the other workers' pipe ends, so an exit of the parent is an
  end of file for every worker;
- keeps no copy of the caller's stdin, stdout or stderr (a harness reading
  graphlint's output sees it end when graphlint ends; a crash dump goes nowhere) and
  ignores SIGINT, which is the parent's to handle.

The run always continues.
"""

from __future__ import annotations

import contextlib
import faulthandler
import functools
import gc
import itertools
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, TypeAlias

from graphlint.diagnostics import FileResult
from graphlint.read import forget_paths, overlay_contents, set_overlay, tool_diagnostic
from graphlint.serving import keep_between_runs, kept_between_runs
from graphlint.settings import Job, Settings
from graphlint.tool_codes import InternalError, ParserLimitExceeded

if TYPE_CHECKING:
    from graphlint.project.summary import ModuleSummary

_STACK_SIZE = 256 * 1024 * 1024  # deep but legal code must not overflow the C stack
_RECURSION_LIMIT = 20_000
_PARENT_POLL = 0.5  # seconds between checks that the parent is alive
_PR_SET_PDEATHSIG = 1
_GC_THRESHOLDS = (200_000, 100, 100)  # CPython's defaults: 700, 10, 10
_IDLE = 0.05  # seconds a worker waits for its next job before it collects garbage


@dataclass(frozen=True)
class SummaryJob:
    """Summarise one module that a region's calls resolve into (``data``: its bytes,
    already read within the size limit)."""

    module: str
    display: str
    data: bytes

    @property
    def path(self) -> str:
        return self.display


Work = Job | SummaryJob
# seconds between two looks at the workers while jobs are being found
# (``Pool.stream``): a look costs a system call, finding a job a file's screening
POLL = 0.002
# a job's outcome; the summaries' module is imported where one is made or read,
# not where the language server starts its first worker
Outcome: TypeAlias = "FileResult | ModuleSummary"


def _display(job: Work) -> str:
    return job.display if isinstance(job, SummaryJob) else str(job.path)


def _failed(job: Work, settings: Settings, detail: str) -> FileResult:
    diagnostic = tool_diagnostic(ParserLimitExceeded, _display(job), detail=detail)
    enabled = ParserLimitExceeded.code in settings.enabled
    return FileResult(_display(job), (diagnostic,) if enabled else ())


def _summarize(job: SummaryJob, settings: Settings) -> Outcome:
    from graphlint.project.summary import (  # noqa: PLC0415 - see Outcome
        ModuleSummary,
        summarize_source,
    )

    found = summarize_source(job.data, job.module, job.display, settings.target)
    return (
        found if isinstance(found, ModuleSummary) else FileResult(job.display, (found,))
    )


def check_file(job: Job, settings: Settings) -> FileResult:
    """The engine's ``check_file``: imported in the worker (``_serve``), never in the
    collecting process, which needs neither LibCST nor the rules."""
    from graphlint.engine import check_file as check  # noqa: PLC0415

    return check(job, settings)


def _guarded(job: Work, settings: Settings) -> Outcome:
    try:
        if isinstance(job, SummaryJob):
            return _summarize(job, settings)
        return check_file(job, settings)
    except MemoryError:
        detail = f"needed more than the {settings.max_memory} MiB memory limit"
        return _failed(job, settings, detail)
    except Exception as error:  # a graphlint bug: report it on the file, keep going
        detail = _describe(error)
        diagnostic = tool_diagnostic(InternalError, _display(job), detail=detail)
        enabled = InternalError.code in settings.enabled
        return FileResult(
            _display(job), (diagnostic,) if enabled else (), internal_error=True
        )


def _describe(error: BaseException) -> str:
    """``Type: message (at file:line)``, short, and never raising itself: the message
    of an error from a parser can be the repr of a 20,000-deep tree."""
    try:
        where = traceback.extract_tb(error.__traceback__)[-1]
        place = f" (at {Path(where.filename).name}:{where.lineno})"
    except (IndexError, RecursionError, MemoryError):
        place = ""
    try:
        message = str(error)
    except Exception:  # its __str__ failed too
        message = "(no message)"
    if len(message) > 200:
        message = message[:200] + "..."
    return f"{type(error).__name__}: {message}{place}"


def _import_analysis() -> None:
    """LibCST and the rules, which the collecting process never imports itself."""
    import graphlint.analysis  # noqa: F401, PLC0415


def _serve(conn: Connection, context: _Context) -> None:
    # the analysis is imported beside the first jobs (summaries need none of it; a
    # file to check waits for the import's lock), while the collecting process
    # screens the files
    threading.Thread(target=_import_analysis, daemon=True).start()
    settings, keep = context.settings, context.kept
    _limit_memory(settings.max_memory)  # now that the large stack is reserved
    # Parsing allocates millions of objects and no cycles (syntax trees have no
    # parent links): with the default thresholds the collector's passes over them,
    # and over graphlint's own modules, cost as much as the parse. Its own modules
    # are never garbage; the analysis' scopes and values do form cycles, so the
    # collector still runs, a hundred times less often.
    gc.freeze()
    gc.set_threshold(*_GC_THRESHOLDS)
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        if isinstance(job, _Context):  # a kept pool's next run
            settings = job.settings
            forget_paths()  # links and ``__init__.py`` files may have changed since
            set_overlay(job.overlay)
            keep = keep or job.kept
            continue
        if keep and isinstance(job, Job):  # the first file imports the analysis
            keep = False
            _keep_parses()
        try:
            outcome = _guarded(job, settings)
        except BaseException as error:  # even the report of a bug failed: say so
            detail = f"graphlint failed reporting an error: {type(error).__name__}"
            outcome = _failed(job, settings, detail)
        conn.send(outcome)
        collect_between_jobs(functools.partial(_job_waiting, conn))


def _job_waiting(conn: Connection) -> bool:
    """Whether a next job (or the end) comes within ``_IDLE``."""
    try:
        return conn.poll(_IDLE)
    except (EOFError, OSError):  # the pipe is gone: the next ``recv`` says so
        return True


def collect_between_jobs(busy: Callable[[], bool]) -> None:
    """After a job, unless ``busy()`` (a next job came within ``_IDLE``): collect
    the generations that CPython's thresholds say are due. A language server's
    worker is idle between keystrokes; a collection there starts the next job's
    allocations from none, so that a collection of 25-80 ms (a capture file's
    analysis: its scopes and values are cycles) does not fall inside the edit it
    answers, where one did every few edits. Jobs that follow one another (a
    command line's) are collected as before, when their allocations say so."""
    if busy():
        return
    young, middle, old = gc.get_count()
    _, middle_limit, old_limit = gc.get_threshold()
    generation = 0
    if middle + 1 > middle_limit:  # as CPython's: each older generation in turn
        generation = 2 if old + 1 > old_limit else 1
    if young or generation:
        gc.collect(generation)


def _die_with(parent: int, *, kernel: bool) -> None:
    """End this process when ``parent`` ends, however it ends: the kernel sends
    SIGKILL on Linux (``kernel``: the worker was started from the parent's main
    thread; the kernel sends it when the *thread* that started the worker ends, which
    for a thread of a pool in the language server is not the server's end);
    otherwise a thread watches the parent's pid."""
    asked = False
    if kernel and sys.platform.startswith("linux"):
        import ctypes  # noqa: PLC0415 - Linux only

        libc = ctypes.CDLL(None, use_errno=True)
        asked = libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
    if os.getppid() != parent:  # it ended before the request took effect
        os._exit(1)
    if asked:
        return

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(_PARENT_POLL)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def _detach(inherited: Sequence[int], parent: int, said: int, *, kernel: bool) -> None:
    """Cut the worker loose from everything of its parent's but its own pipe; what
    the process itself writes to its standard error (an allocator's last words
    before an abort) goes to ``said``, which only the pool reads."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):  # blocked by the parent around the fork
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    faulthandler.disable()  # it may hold a copy of the caller's stderr (pytest's does)
    _die_with(parent, kernel=kernel)
    for fd in inherited:
        with contextlib.suppress(OSError):
            os.close(fd)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(devnull, fd)
    os.close(devnull)
    if said != 2:
        os.dup2(said, 2)
        os.close(said)
    quiet = open(os.devnull, "w")  # noqa: SIM115 - for the life of the process
    sys.stdin = sys.stdout = sys.stderr = quiet  # a harness may have replaced them


def _limit_memory(mebibytes: int) -> None:
    """Let the worker allocate ``mebibytes`` more address space than it holds now
    (its imports and its stack: graphlint's own footprint is not the file's)."""
    try:
        import resource  # noqa: PLC0415 - not on Windows
    except ImportError:  # pragma: no cover
        return
    wanted = _address_space() + mebibytes * 1024 * 1024
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        wanted = min(wanted, hard)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_AS, (wanted, hard))


def _address_space() -> int:
    """Bytes of address space this process holds (0 where /proc is not there)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            pages = int(statm.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0
    return pages * os.sysconf("SC_PAGE_SIZE")


def _keep_parses() -> None:
    """A worker of a pool that lives between runs keeps its parses' pieces."""
    from graphlint.engine import keep_pieces  # noqa: PLC0415 - imports the analysis

    keep_pieces()


def _worker_main(
    conn: Connection,
    context: _Context,
    inherited: list[int],
    parent: int,
    said: int,
    kernel: bool = True,
) -> None:
    """Worker process: serve jobs on a thread with a large stack."""
    _detach(inherited, parent, said, kernel=kernel)
    set_overlay(context.overlay)  # a spawned worker starts with none
    sys.setrecursionlimit(_RECURSION_LIMIT)
    threading.stack_size(_STACK_SIZE)
    thread = threading.Thread(target=_serve, args=(conn, context), daemon=True)
    thread.start()
    thread.join()


@dataclass(frozen=True)
class _Context:
    """What a worker checks with: sent with a kept pool's next run, before the
    run's first job on each worker (a spawned worker gets its first one the same
    way)."""

    settings: Settings
    overlay: dict[str, bytes]
    run: int = 0  # a new one each run: a kept worker looks paths up again
    kept: bool = False  # the pool lives between runs: its workers keep parses


# The file a spawned worker runs, alone in its folder (it says why)
_START = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_start", "worker.py")


def _own_path() -> list[str]:
    """Where graphlint imports from: a spawned worker imports from exactly these.
    Less ``""``, the working folder that ``python -c`` puts first (``python -m
    graphlint`` takes its own entry off, ``__main__``)."""
    return [entry for entry in sys.path if entry]


class _Spawned:
    """A worker started as a fresh interpreter (the parts of ``BaseProcess`` the
    pool uses). It inherits two descriptors only: its end of the job pipe and the
    write end of ``sentinel``'s pipe, which reads as ended when the worker ends;
    its standard input and output are the null device from the start, its standard
    error ``said``."""

    def __init__(self, conn: Connection, said: int, kernel: bool) -> None:
        alive, self._alive = os.pipe()
        path = _own_path()
        args = [str(conn.fileno()), str(self._alive), *path]
        self._popen = subprocess.Popen(
            [sys.executable, _START, *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=said,
            pass_fds=(conn.fileno(), self._alive),
        )
        os.close(self._alive)
        self.sentinel = alive
        self.pid: int | None = self._popen.pid
        self.kernel = kernel

    @property
    def exitcode(self) -> int | None:
        return self._popen.poll()

    def is_alive(self) -> bool:
        return self._popen.poll() is None

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self._popen.kill()

    def join(self, timeout: float | None = None) -> None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._popen.wait(timeout)
        if self._popen.returncode is not None and self.sentinel >= 0:
            os.close(self.sentinel)
            self.sentinel = -1


def _spawned_main(job_fd: int, alive_fd: int) -> None:
    """A spawned worker: its settings, unsaved buffers and parent come first on the
    pipe; ``alive_fd`` stays open until the worker ends."""
    conn = Connection(job_fd)
    try:
        context, parent, kernel = conn.recv()
    except (EOFError, OSError):
        return
    _worker_main(conn, context, [], parent, 2, kernel)


def _start_method() -> str:
    """``fork`` where it is safe (Linux, a process with one thread): workers start
    fast and share imports. Elsewhere, and in a process with threads (the language
    server; a child forked there can inherit a lock another thread held, and hang
    on it), ``spawn``: a fresh interpreter (``_Spawned``). ``GRAPHLINT_WORKER_START``
    (``fork`` or ``spawn``) chooses, for tests."""
    forced = os.environ.get("GRAPHLINT_WORKER_START")
    can_fork = sys.platform.startswith("linux") and hasattr(os, "fork")
    if forced == "spawn" or not can_fork:
        return "spawn"
    return "fork" if forced == "fork" or threading.active_count() == 1 else "spawn"


@dataclass(frozen=True, eq=False)
class _Task:
    """A job, and what is told its outcome."""

    job: Work
    done: Callable[[Outcome], None]


@dataclass
class _Worker:
    process: BaseProcess | _Spawned
    conn: Connection
    task: _Task | None = None
    started: float = 0.0
    context: _Context | None = None  # what it checks with
    said: int = -1  # the read end of its standard error

    def last_words(self) -> str:
        """What the worker wrote to its standard error (never shown: read to tell
        why it died); the pipe is closed after."""
        if self.said < 0:
            return ""
        try:
            data = os.read(self.said, 65536)
        except OSError:  # nothing written: it would block
            data = b""
        self.forget()
        return data.decode("utf-8", "replace")

    def forget(self) -> None:
        if self.said >= 0:
            os.close(self.said)
            self.said = -1


class Pool:
    """A small pool whose workers can be killed one at a time; a context manager that
    kills them all at once when the run is interrupted. ``open_pool`` gives one
    that lives between runs (the language server's)."""

    def __init__(
        self,
        size: int,
        settings: Settings,
        progress: Callable[[int, int], None] | None = None,
        *,
        method: str | None = None,
        kept: bool = False,
    ) -> None:
        self.kept = kept  # lives between runs (``keep_workers``)
        self.progress = progress  # told (jobs done, jobs asked) after each job
        self.done = self.asked = 0
        self._seen: dict[Path, int] = {}  # a file's first job: the worker's pid
        self.method = method or _start_method()
        self.workers: list[_Worker] = []
        self._later: deque[_Task] = deque()  # jobs ``start`` gave, not yet begun
        self._runs = 0
        self.use(settings)
        for _ in range(size):
            self.workers.append(self._spawn())

    def use(self, settings: Settings) -> None:
        """Check with ``settings`` and the overlay in force from now on."""
        self.settings = settings
        self._runs += 1
        overlay = dict(overlay_contents())
        self.context = _Context(settings, overlay, self._runs, self.kept)

    def __enter__(self) -> Pool:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close(kill=kind is not None)

    def _spawn(self) -> _Worker:
        """A new worker; started from the main thread, it asks the kernel to end it
        with this process (``_die_with``)."""
        kernel = threading.current_thread() is threading.main_thread()
        said, says = os.pipe()  # never blocks the worker; read after it died
        os.set_blocking(said, False)
        os.set_blocking(says, False)
        parent, child = mp.Pipe()
        if self.method == "spawn":
            try:
                process = _Spawned(child, says, kernel)
            finally:
                child.close()
                os.close(says)
            parent.send((self.context, os.getpid(), kernel))
            return _Worker(process, parent, context=self.context, said=said)
        # every parent end the forked process inherits, its own included
        inherited = [w.conn.fileno() for w in self.workers] + [parent.fileno()]
        inherited += [w.said for w in self.workers if w.said >= 0] + [said]
        forked = mp.get_context("fork").Process(
            target=_worker_main,
            args=(
                child,
                self.context,
                inherited,
                os.getpid(),
                says,
                kernel,
            ),
            daemon=True,
        )
        # no Ctrl-C between the fork and the worker's own SIGINT handling
        blocked = {signal.SIGINT}
        masked = hasattr(signal, "pthread_sigmask")
        if masked:
            signal.pthread_sigmask(signal.SIG_BLOCK, blocked)
        try:
            forked.start()
        finally:
            if masked:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, blocked)
        child.close()
        os.close(says)
        return _Worker(forked, parent, context=self.context, said=said)

    def _replace(self, worker: _Worker) -> _Worker:
        worker.conn.close()
        worker.forget()
        if worker.process.is_alive():
            worker.process.kill()
        worker.process.join()
        index = self.workers.index(worker)
        del self.workers[index]  # its pipe is closed: no new worker may inherit it
        self.workers.insert(index, self._spawn())
        return self.workers[index]

    def _current(self, worker: _Worker) -> _Worker:
        """``worker``, or a new one in its place where the memory limit it was
        started under is not the settings' now (a kept pool's next run)."""
        before = worker.context.settings if worker.context else self.settings
        if before.max_memory == self.settings.max_memory:
            return worker
        return self._replace(worker)

    def call(self, job: Work) -> Outcome:
        """Run one job and wait for its outcome."""
        found: list[Outcome] = []
        self.run([job], lambda _, result: found.append(result))
        return found[0]

    def run(
        self,
        jobs: Sequence[Work],
        on_result: Callable[[int, Outcome], None],
    ) -> None:
        """Run ``jobs`` and wait for them; ``on_result`` is told each one's outcome
        (by its index). Jobs ``start`` gave run too, on workers these leave idle."""
        left = [len(jobs)]
        told = _counting(left, on_result)
        queues = self._queues([_Task(job, told(i)) for i, job in enumerate(jobs)])
        self.asked += len(jobs)
        self._drive(queues, lambda: left[0] > 0)

    def stream(
        self,
        jobs: Iterable[Work | None],
        on_result: Callable[[int, Outcome], None],
        *,
        queued: Sequence[Work] = (),
    ) -> None:
        """``run`` for jobs found one at a time (``None``: none found yet), after
        ``queued``: each job goes to an idle worker as it comes, and finished ones
        are collected while the rest are found (at most every ``POLL`` seconds
        between two jobs), so that the workers are not idle meanwhile; the jobs
        ``start`` gave wait until the last has come. Those still waiting then start
        largest first. ``on_result`` is told each one's outcome, by its index:
        ``queued`` first, then ``jobs``."""
        left = [0]
        told = _counting(left, on_result)
        queues = self._queues([])
        given = 0
        polled = time.monotonic()
        for job in itertools.chain(queued, jobs):
            if job is not None:
                task = _Task(job, told(given))
                queues.setdefault(self._queue_of(job), deque()).append(task)
                given += 1
                left[0] += 1
                self.asked += 1
                if given <= len(queued):
                    continue  # handed out at the next look at the workers
            elif time.monotonic() - polled < POLL:
                continue
            self._drive(queues, lambda: left[0] > 0, block=False, later=False)
            polled = time.monotonic()
        for pid, queue in queues.items():  # the summaries after the files, as ``run``
            queues[pid] = deque(sorted(queue, key=_largest_file_first))
        self._drive(queues, lambda: left[0] > 0)

    def start(
        self,
        jobs: Sequence[Work],
        on_result: Callable[[int, Outcome], None],
    ) -> None:
        """Run ``jobs`` behind the others: each goes to a worker that the jobs of
        ``run`` leave idle, from the next ``run`` on, and ``on_result`` is told its
        outcome when a ``run`` or ``finish`` collects it."""
        self._later.extend(
            _Task(job, functools.partial(on_result, i)) for i, job in enumerate(jobs)
        )
        self.asked += len(jobs)

    def finish(self) -> None:
        """Wait for the jobs ``start`` gave."""
        self._drive(
            self._queues([]),
            lambda: bool(self._later) or any(w.task for w in self.workers),
        )

    def _drive(
        self,
        queues: dict[int, deque[_Task]],
        waiting: Callable[[], bool],
        *,
        block: bool = True,
        later: bool = True,
    ) -> None:
        """Give jobs to idle workers (``queues`` first, then, with ``later``, those
        ``start`` gave) and tell their outcomes, while ``waiting()``; not
        ``block``: only those of the workers done now."""
        from graphlint.project.summary import ModuleSummary  # noqa: PLC0415 - Outcome

        timeout = self.settings.timeout
        behind = self._later if later else deque()
        while True:
            for worker in self.workers:
                if worker.task is None and (any(queues.values()) or behind):
                    worker = self._current(worker)
                    worker.task = task = self._next(queues, worker, behind)
                    worker.started = time.monotonic()
                    with contextlib.suppress(OSError):  # dead already: seen below
                        if worker.context != self.context:
                            worker.conn.send(self.context)
                            worker.context = self.context
                        worker.conn.send(task.job)
            if not waiting():
                return
            busy = [w for w in self.workers if w.task is not None]
            deadline = min(w.started for w in busy) + timeout
            ready = wait(
                [w.conn for w in busy] + [w.process.sentinel for w in busy],
                timeout=max(0.0, deadline - time.monotonic()) if block else 0.0,
            )
            if not ready and not block and time.monotonic() < deadline:
                return
            now = time.monotonic()
            for worker in busy:
                running = worker.task
                assert running is not None
                if worker.conn in ready:
                    try:
                        result = worker.conn.recv()
                    except (EOFError, OSError):
                        result = None
                    if isinstance(result, (FileResult, ModuleSummary)):
                        worker.task = None
                        self._done(running, result)
                        continue
                if worker.conn in ready or worker.process.sentinel in ready:
                    worker.process.join(timeout=1)  # its pipe can close first
                    detail = _crash_detail(
                        worker.process.exitcode, worker.last_words(), self.settings
                    )
                elif now - worker.started >= timeout:
                    detail = f"took longer than the {timeout:g} s per-file limit"
                else:
                    continue
                worker.task = None
                self._replace(worker)
                self._done(running, _failed(running.job, self.settings, detail))

    def _done(self, task: _Task, outcome: Outcome) -> None:
        task.done(outcome)
        self.done += 1
        if self.progress is not None:
            self.progress(self.done, self.asked)

    def _queues(self, tasks: Sequence[_Task]) -> dict[int, deque[_Task]]:
        """The tasks by the pid of the live worker that had their file before (it
        keeps the parsed tree), in order; 0: no such worker."""
        queues: dict[int, deque[_Task]] = {0: deque()}
        for task in tasks:
            queues.setdefault(self._queue_of(task.job), deque()).append(task)
        return queues

    def _queue_of(self, job: Work) -> int:
        """The pid of the live worker that had the job's file before; 0: none."""
        pid = self._seen.get(job.path, 0) if isinstance(job, Job) else 0
        return pid if any(w.process.pid == pid for w in self.workers) else 0

    def _next(
        self, queues: dict[int, deque[_Task]], worker: _Worker, behind: deque[_Task]
    ) -> _Task:
        """The next task for ``worker``: a file it had before, else one no worker
        had, else another worker's, else one ``start`` gave (``behind``). Each
        file's first worker is remembered."""
        pid = worker.process.pid or 0
        queue = (
            queues.get(pid)
            or queues[0]
            or next((q for q in queues.values() if q), None)
            or behind
        )
        task = queue.popleft()
        if isinstance(task.job, Job):
            self._seen.setdefault(task.job.path, pid)
        return task

    def resize(self, size: int) -> None:
        """At least ``size`` workers."""
        while len(self.workers) < size:
            self.workers.append(self._spawn())

    def close(self, *, kill: bool = False) -> None:
        if not kill:
            for worker in self.workers:
                with contextlib.suppress(OSError):
                    worker.conn.send(None)
        for worker in self.workers:
            if not kill:
                worker.process.join(timeout=5)
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join()
            worker.conn.close()
            worker.forget()


def _crash_detail(code: int | None, said: str, settings: Settings) -> str:
    """Why a worker died: its allocator's last words say when it was the memory
    limit (a parser written in Rust aborts when an allocation fails)."""
    if "memory allocation of" in said or "MemoryError" in said:
        return f"needed more than the {settings.max_memory} MiB memory limit"
    if code is not None and code < 0:
        with contextlib.suppress(ValueError):
            return f"the parser crashed ({signal.Signals(-code).name})"
    return f"the parser crashed (worker exit code {code})"


class Inline:
    """Runs jobs in this process, one after the other, as a ``Pool`` would run them
    in its workers: for ``lint_source``, which checks one text, where starting a
    worker would cost more than the check. A graphlint bug raises."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def call(self, job: Work) -> Outcome:
        if isinstance(job, SummaryJob):
            return _summarize(job, self.settings)
        return check_file(job, self.settings)

    def run(
        self, jobs: Sequence[Work], on_result: Callable[[int, Outcome], None]
    ) -> None:
        for index, job in enumerate(jobs):
            on_result(index, self.call(job))

    def stream(
        self,
        jobs: Iterable[Work | None],
        on_result: Callable[[int, Outcome], None],
        *,
        queued: Sequence[Work] = (),
    ) -> None:
        """``Pool.stream``: each job as it comes, after ``queued``."""
        found = (job for job in itertools.chain(queued, jobs) if job is not None)
        for index, job in enumerate(found):
            on_result(index, self.call(job))

    def start(
        self, jobs: Sequence[Work], on_result: Callable[[int, Outcome], None]
    ) -> None:
        """Run ``jobs`` now: there are no other workers to run them beside."""
        self.run(jobs, on_result)

    def finish(self) -> None:
        """Nothing runs behind: ``start`` ran its jobs."""


Workers = Pool | Inline  # what runs the jobs of a check


@contextlib.contextmanager
def fewer_collections() -> Iterator[None]:
    """Run with the collector tuned as a worker's (``_serve``): the collecting
    process unpickles the workers' summaries and resolves calls over them, millions
    of objects and few cycles, and CPython's default thresholds made a third of
    that time collections. The objects alive before are frozen out of them."""
    saved = gc.get_threshold()
    freeze = gc.get_freeze_count() == 0  # not what someone else froze
    if freeze:
        gc.freeze()
    gc.set_threshold(*_GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*saved)
        if freeze:
            gc.unfreeze()


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


_kept: list[Pool] = []  # keep_workers(): the one pool, once a run made it


def keep_workers(start: int = 0) -> None:
    """Keep the workers between runs (the language server: a new interpreter per
    worker per keystroke would cost more than the check). ``start`` workers are
    started now, as fresh interpreters (the server will have threads), and import
    the analysis while the server starts: its first check need not wait for them."""
    keep_between_runs()
    if start and not _kept:
        _kept.append(Pool(start, Settings(), method="spawn", kept=True))


def workers_kept() -> bool:
    """Whether workers live between runs (``keep_workers``): runs repeat."""
    return kept_between_runs()


def keep_ready(size: int) -> None:
    """Grow the kept pool to ``size`` workers now, not at its next run: a new
    worker imports the analysis while the editor waits for the next edit."""
    if _kept:
        _kept[0].resize(size)


@contextlib.contextmanager
def open_pool(
    size: int,
    settings: Settings,
    progress: Callable[[int, int], None] | None = None,
) -> Iterator[Pool]:
    """A pool of ``size`` workers for one run: a new one, or the kept one
    (``keep_workers``), which a run that fails or is interrupted ends."""
    if not kept_between_runs():
        with Pool(size, settings, progress) as made:
            yield made
        return
    if not _kept:
        _kept.append(Pool(size, settings, kept=True))
    kept = _kept[0]
    kept.use(settings)
    kept.progress, kept.done, kept.asked = progress, 0, 0
    try:
        kept.resize(size)
        yield kept
    except BaseException:
        _kept.clear()
        kept.close(kill=True)
        raise
    finally:
        kept.progress = None


def check_files(
    files: Sequence[Path | Job], settings: Settings, jobs: int | None = None
) -> list[FileResult]:
    """Check ``files`` in isolated workers; results come back in input order."""
    if not files:
        return []
    with open_pool(min(jobs or default_jobs(), len(files)), settings) as workers:
        return run_files(workers, files)


def run_files(
    pool: Workers,
    files: Sequence[Path | Job],
    besides: Sequence[SummaryJob] = (),
    made: Callable[[int, Outcome], None] = lambda index, outcome: None,
) -> list[FileResult]:
    """Check ``files`` on ``pool``; results come back in input order. The jobs
    ``besides`` run in the same batch, after them; ``made`` is told each one's
    outcome (by its index)."""
    work = [f if isinstance(f, Job) else Job(f) for f in files]
    results: list[FileResult | None] = [None] * len(work)

    def keep(index: int, result: Outcome) -> None:
        if index >= len(work):
            made(index - len(work), result)
            return
        assert isinstance(result, FileResult)
        results[order[index]] = result

    # largest first: a large file started last would keep one worker busy alone
    order = sorted(range(len(work)), key=lambda i: -_size(work[i].path))
    pool.run([*(work[i] for i in order), *besides], keep)
    return [r for r in results if r is not None]


def stream_files(
    pool: Workers,
    jobs: Iterable[Job | None],
    besides: Sequence[SummaryJob] = (),
    made: Callable[[int, Outcome], None] = lambda index, outcome: None,
) -> list[FileResult]:
    """``run_files`` for jobs found one at a time (``None``: none yet), each
    started as it comes (``Pool.stream``); results come back in their order."""
    results: dict[int, FileResult] = {}

    def keep(index: int, result: Outcome) -> None:
        if index < len(besides):
            made(index, result)
            return
        assert isinstance(result, FileResult)
        results[index - len(besides)] = result

    pool.stream(jobs, keep, queued=besides)
    return [results[i] for i in range(len(results))]


def _counting(
    left: list[int], on_result: Callable[[int, Outcome], None]
) -> Callable[[int], Callable[[Outcome], None]]:
    """What tells a job's outcome, by its index, and counts it off ``left``."""

    def told(index: int) -> Callable[[Outcome], None]:
        def done(outcome: Outcome) -> None:
            left[0] -= 1
            on_result(index, outcome)

        return done

    return told


def _largest_file_first(task: _Task) -> tuple[bool, int]:
    job = task.job
    if isinstance(job, SummaryJob):
        return True, -len(job.data)
    return False, -_size(job.path)


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except (OSError, ValueError):
        return 0
