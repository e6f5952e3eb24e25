"""Checking a set of files as part of a project: follow what capture regions call.

1. Pass one analyses each file on its own (``graphlint.engine``): diagnostics for
   code inside regions, the calls each region makes, and the functions each file
   hands to compile wrappers it imports (``graphlint.project.sites``).
2. Reachability (``graphlint.project.reach``) resolves those calls over per-module
   summaries, lazily and across files, and records how each function is reached;
   a function handed to a wrapper whose summary compiles with CUDA graphs is a
   region of its own.
   Summaries are made in the workers, under the same limits as checking a file, and
   cached (``graphlint.cache``); a module that cannot be summarised is reported with
   its GL0xx outcome instead of silently ending the chain.
3. The project pass analyses the reached functions as regions, in their own files
   (also files that were not named on the command line), and adds what it finds.

One worker pool serves all three. What the passes saw (the regions, the functions
each reaches, the calls not followed) comes back as a ``Survey``.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import replace
from functools import partial
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Generic, ParamSpec, TypeVar, cast

import msgspec

from graphlint.cache import Cache, code_version
from graphlint.candidates import Screened
from graphlint.comments import with_unused
from graphlint.diagnostics import (
    Checked,
    Diagnostic,
    Entry,
    FileResult,
    RegionReach,
    RegionRef,
    Survey,
    Unfollowed,
    Wide,
)
from graphlint.facts import guards
from graphlint.library import library_of
from graphlint.project.kept import UNSTABLE, Hints, Reads, Screens
from graphlint.project.sites import defines_wrapper
from graphlint.project.summary import FunctionSummary, ModuleSummary
from graphlint.project.survey import survey_project
from graphlint.project.warmup import settle_warmups, unwarmed_callers
from graphlint.read import (
    module_of,
    overlay,
    package_of,
    paths_state,
    read_file,
    real_path,
    source_root,
    tool_diagnostic,
    unsaved_file,
)
from graphlint.runner import (
    Inline,
    Outcome,
    SummaryJob,
    Workers,
    default_jobs,
    fewer_collections,
    keep_ready,
    open_pool,
    run_files,
    stream_files,
    workers_kept,
)
from graphlint.settings import Job, Setter, Settings
from graphlint.stamps import Stamp, digest_of
from graphlint.tool_codes import UNANALYSED, ParserLimitExceeded

if TYPE_CHECKING:  # resolution and reach load when a run needs them, not on a hit
    from graphlint.project.reach import Project
    from graphlint.project.resolve import Dropped

T = TypeVar("T")
P = ParamSpec("P")


def _collecting_less(survey: Callable[P, Checked]) -> Callable[P, Checked]:
    """``survey`` with the garbage collector run less often while it runs
    (``runner.fewer_collections``)."""

    def run(*args: P.args, **kwargs: P.kwargs) -> Checked:
        with fewer_collections():
            return survey(*args, **kwargs)

    return run


class _Results:
    """Checks files on the pool, or takes their results from the cache. A result is
    keyed by the file's bytes, its name and module, the job (the functions reached
    and how), the settings, and graphlint's own code; a pass-one result depends on
    nothing else.

    ``guesses``: the project-pass job each file had in an earlier run (a kept
    pool's, ``_REACHED``). A file that pass one checks runs its guess behind pass
    one, on a worker the jobs leave idle, and runs on while the reach is followed;
    the next ``run`` (the project pass's) waits for it first, and takes its result
    when the reach gives the very same job (the results are those of the jobs,
    whenever they run), and checks the file again when it does not."""

    def __init__(
        self,
        pool: Workers,
        settings: Settings,
        cache: Cache | None,
        guesses: Mapping[str, Job] | None = None,
    ) -> None:
        self.pool = pool
        self.settings = settings
        self.cache = cache
        self._settings = msgspec.json.encode(settings, order="deterministic")
        self.guesses = guesses or {}
        self.ahead: list[tuple[Job, FileResult]] = []  # the guesses run so far
        self.behind = False  # guesses still running, on workers the jobs left idle

    def run(
        self,
        jobs: Sequence[Job],
        first: Sequence[Job] | None = None,
        besides: tuple[list[SummaryJob], Callable[[int, Outcome], None]] | None = None,
    ) -> list[FileResult]:
        """The results of ``jobs``. The summaries ``besides`` (with what keeps
        each) run in the same batch; the guesses of the pass-one jobs ``first`` (by
        default, of those of ``jobs`` that run) start behind it, and run on after
        it until a ``run`` of project-pass jobs, which may be one of them, or
        ``finish`` (``Pool.start``)."""
        if any(job.external is not None for job in jobs):
            self.finish()  # a guess may be one of them
        keys = [self._key(job) for job in jobs]
        found = [self._known(job, key) for job, key in zip(jobs, keys, strict=True)]
        missing = [i for i, result in enumerate(found) if result is None]
        self._guess(first if first is not None else [jobs[i] for i in missing])
        ran = [(jobs[i], keys[i]) for i in missing]
        fresh = run_files(self.pool, [job for job, _ in ran], *(besides or ()))
        for (_, key), result in zip(ran, fresh, strict=True):
            self._keep(key, result)
        for index, result in zip(missing, fresh, strict=True):
            found[index] = result
        return [r for r in found if r is not None]

    def stream(
        self,
        jobs: Iterable[Job | None],
        first: Sequence[Job],
        besides: tuple[list[SummaryJob], Callable[[int, Outcome], None]] | None = None,
    ) -> list[FileResult]:
        """``run`` for jobs found one at a time (None: none found yet), as pass
        one screens the files: each starts as it comes, after the summaries
        ``besides``, so that the workers check the files found while the others
        are screened; the guesses of ``first`` start behind them."""
        self._guess(first)
        found: list[FileResult | None] = []
        ran: list[tuple[int, str | None]] = []

        def missing() -> Iterator[Job | None]:
            for job in jobs:
                known = key = None
                if job is not None:
                    key = self._key(job)
                    known = self._known(job, key)
                    found.append(known)
                if job is None or known is not None:
                    yield None
                    continue
                ran.append((len(found) - 1, key))
                yield job

        fresh = stream_files(self.pool, missing(), *(besides or ()))
        for (index, key), result in zip(ran, fresh, strict=True):
            self._keep(key, result)
            found[index] = result
        return [r for r in found if r is not None]

    def _guess(self, jobs: Sequence[Job]) -> None:
        """Start the guessed project-pass jobs of the pass-one ``jobs``, on the
        workers the jobs leave idle: the reach starts sooner."""
        guessed = self._guessed(jobs)
        if not guessed:
            return
        self.behind = True

        def ahead(index: int, result: Outcome) -> None:
            assert isinstance(result, FileResult)
            job, key = guessed[index]
            self._keep(key, result)
            self.ahead.append((job, result))

        self.pool.start([job for job, _ in guessed], ahead)

    def finish(self) -> None:
        """Wait for the guesses still running."""
        if self.behind:
            self.pool.finish()
            self.behind = False

    def _keep(self, key: str | None, result: FileResult) -> None:
        """Cache ``result`` under ``key``, unless it says something about the
        machine or a bug rather than the file."""
        stable = not result.internal_error and not any(
            d.code in UNSTABLE for d in result.diagnostics
        )
        if self.cache is not None and key is not None and stable:
            self.cache.put(key, result)
            _RESULTS.keep(key, result)

    def _known(self, job: Job, key: str | None) -> FileResult | None:
        """The job's result where a guess ran it ahead or the cache has it."""
        early = next((result for done, result in self.ahead if done == job), None)
        if early is not None or self.cache is None or key is None:
            return early
        return _RESULTS.get(self.cache, key)

    def _guessed(self, jobs: Sequence[Job]) -> list[tuple[Job, str | None]]:
        """The guessed project-pass jobs of the pass-one ``jobs`` not yet known,
        with their keys."""
        guessed: list[tuple[Job, str | None]] = []
        for job in jobs:
            guess = self.guesses.get(str(job.path)) if job.external is None else None
            if guess is None or any(guess == done for done, _ in guessed):
                continue
            key = self._key(guess)
            if self._known(guess, key) is None:
                guessed.append((guess, key))
        return guessed

    def _key(self, job: Job) -> str | None:
        """The job's key; None where it is not cached: no cache, the worker says why
        the file cannot be read, or its text is an editor's unsaved edit (no later
        run may check that text again, and one a keystroke would push out useful
        entries)."""
        if self.cache is None:
            return None
        data = digest_of(job.path, str(job.path), self.settings.max_file_size)
        if isinstance(data, Diagnostic) or unsaved_file(job.path):
            return None
        job_id = (str(job.path), module_of(job.path), job.external, job.checks)
        try:
            what = msgspec.json.encode(
                (*job_id, job.declared, sorted(job.setters), sorted(job.typed)),
                order="deterministic",
            )
        except (ValueError, TypeError):  # a name that is not UTF-8: not cached
            return None
        return Cache.key(b"result", code_version(), self._settings, what, data.encode())


class _Summaries:
    """Loads module summaries for the resolver: from the cache, else from a worker.
    Remembers the modules that could not be summarised, with their outcome."""

    def __init__(
        self,
        pool: Workers,
        settings: Settings,
        cache: Cache | None,
        display: Callable[[Path], str],
        reads: Reads | None = None,
    ) -> None:
        self.pool = pool
        self.settings = settings
        self.cache = cache
        self.display = display
        self.reads = reads or Reads([])  # each module's stamp, before it is read
        self.failed: list[tuple[Path, FileResult]] = []  # by the file looked up
        # made ahead (``prefetch``), by the path and name the resolver will ask for
        self._ready: dict[tuple[Path, str], ModuleSummary | FileResult] = {}
        self.read: set[Path] = set()  # the modules summarised or looked up
        # what this run summarised, by file, with the text: asked for under another
        # name, the same file's summary is renamed, not made again (``renamed``)
        self._made: dict[Path, tuple[bytes, ModuleSummary]] = {}
        self.asked: set[tuple[Path, str]] = set()  # by the resolver or ``prefetch``

    def __call__(self, path: Path, name: str) -> ModuleSummary | None:
        self.asked.add((path, name))
        found = self._ready.pop((path, name), None)
        if found is None:
            key, known = self._lookup(path, name)
            found = known if not isinstance(known, SummaryJob) else None
            if found is None:
                assert isinstance(known, SummaryJob)
                found = self._store(key, self.pool.call(known), path, known)
        if isinstance(found, FileResult):
            self.failed.append((path, found))
            return None
        return found

    def prefetch(self, modules: Iterable[tuple[Path, str]]) -> None:
        """Summarise ``modules`` (path, name) on every worker at once: the resolver
        asks for them one at a time, and would wait for each."""
        modules = list(dict.fromkeys(modules))
        self.asked.update(modules)
        jobs, keep, later = self._jobs(modules)
        self.pool.run(jobs, keep)
        if later:  # renamed now, where they can be
            self.prefetch(later)

    def ahead(
        self, modules: Iterable[tuple[Path, str]]
    ) -> tuple[list[SummaryJob], Callable[[int, Outcome], None]]:
        """The jobs that summarise those of ``modules`` (path, name) the cache does
        not have, to run in another batch (``_Results.run``), and what keeps each
        one's outcome ready for the resolver."""
        jobs, keep, _ = self._jobs(modules)
        return jobs, keep

    def _jobs(
        self, modules: Iterable[tuple[Path, str]]
    ) -> tuple[
        list[SummaryJob], Callable[[int, Outcome], None], list[tuple[Path, str]]
    ]:
        """The jobs that summarise ``modules``, what keeps their outcomes, and the
        modules of a file asked for under a second name (summarised first under
        the first); the others are made ready now."""
        jobs: list[tuple[tuple[Path, str], str | None, SummaryJob]] = []
        later: list[tuple[Path, str]] = []
        queued: set[Path] = set()
        for module in dict.fromkeys(modules):
            if module in self._ready:
                continue
            if module[0] in queued:
                later.append(module)
                continue
            key, known = self._lookup(*module)
            if isinstance(known, SummaryJob):
                jobs.append((module, key, known))
                queued.add(module[0])
            else:
                self._ready[module] = known

        def keep(index: int, made: Outcome) -> None:
            module, key, job = jobs[index]
            self._ready[module] = self._store(key, made, module[0], job)

        return [job for _, _, job in jobs], keep, later

    def _lookup(
        self, path: Path, name: str
    ) -> tuple[str | None, SummaryJob | ModuleSummary | FileResult]:
        """A module's cache key, with its summary from the cache, the outcome of
        reading it, or the job that summarises it."""
        self.read.add(path)
        self.reads.reading(path)
        shown = self.display(path)
        digest = digest_of(path, shown, self.settings.max_file_size)
        if isinstance(digest, Diagnostic):
            return None, FileResult(shown, (digest,))
        target = f"{self.settings.target}".encode()
        kind = os.fsencode(path.name)  # pkg.py and pkg/__init__.py: other packages

        def key_of(digest: str) -> str | None:
            # an editor's unsaved edit is summarised afresh and not kept (``_Results``)
            if unsaved_file(path):
                return None
            return Cache.key(
                b"summary", target, os.fsencode(name), kind, digest.encode()
            )

        key = key_of(digest)
        cached = _SUMMARIES.get(self.cache, key) if self.cache and key else None
        if cached is not None:
            return key, cached if cached.path == shown else replace(cached, path=shown)
        data = read_file(path, shown, self.settings.max_file_size)
        if isinstance(data, Diagnostic):
            return None, FileResult(shown, (data,))
        key = key_of(hashlib.sha256(data).hexdigest())  # of the text summarised
        text, made = self._made.get(path, (None, None))
        renamed = made.renamed(name) if made is not None and text == data else None
        if renamed is not None:
            return key, self._store(key, renamed)
        return key, SummaryJob(name, shown, data)

    def _store(
        self,
        key: str | None,
        made: object,
        path: Path | None = None,
        job: SummaryJob | None = None,
    ) -> ModuleSummary | FileResult:
        """Cache what was made (from ``job``, the summary of ``path``)."""
        assert isinstance(made, (ModuleSummary, FileResult))
        if isinstance(made, ModuleSummary):
            if self.cache is not None and key:
                self.cache.put(key, made)
                _SUMMARIES.keep(key, made)
            if path is not None and job is not None:
                self._made[path] = (job.data, made)
        return made


@_collecting_less
def survey_files(
    files: Sequence[Path],
    settings: Settings,
    jobs: int | None,
    reads: Reads,
    *,
    roots: Iterable[Path],
    eager: frozenset[str],
    cache: Cache | None,
    excluded: Callable[[Path], bool],
    display: Callable[[Path], str],
    capture_roots: Sequence[str],
    base: Path | None,
    warn: Callable[[str], None],
    folders: Sequence[Path],
    progress: Callable[[int, int], None] | None,
    inline: bool,
    hints: Hints | None = None,
) -> Checked:
    """``survey.survey_project``'s work, where no kept run answers it; adds to
    ``reads`` what it read besides ``files`` (``kept.Reads``). ``hints``: what the
    project's last runs asked, which this run starts at once and updates (the
    language server's, in memory, where none are given and workers are kept)."""
    from graphlint.project.reach import Project  # noqa: PLC0415 - see TYPE_CHECKING

    if hints is None and not inline and workers_kept():
        hints = Hints(_REACHED, _ASKED)
    guesses = _guesses(files, hints) if not inline else None
    workers = min(
        jobs or default_jobs(), len(files) + len(capture_roots) + len(guesses or ())
    )
    runs = (
        nullcontext(Inline(settings))
        if inline
        else open_pool(workers, settings, progress)
    )
    with runs as pool:
        summaries = _Summaries(pool, settings, cache, display, reads)
        project = Project(
            # the project's folder last: a namespace package (``megatron/`` with
            # no ``__init__.py``) is imported from there
            [*roots, *_source_roots(files), *([base] if base else [])],
            summaries,
            eager=eager,
            checks=settings.checks,
            prefetch=summaries.prefetch,
            sources=files,
            read=partial(_source, max_size=settings.max_file_size, reads=reads),
            handoffs=settings.preview,
            library=library_of(settings.library_runs),
        )
        declared = _declared(project, capture_roots, base, warn)
        work = [
            Job(f, declared=declared.pop(real_path(f), (f, frozenset()))[1])
            if declared
            else Job(f)
            for f in files
        ]
        work.extend(  # roots in files not named: analysed too, unless excluded
            Job(shown, declared=functions)
            for shown, functions in sorted(declared.values())
            if not excluded(shown)
        )
        checked = _Results(pool, settings, cache, guesses)
        whole = _whole(files, roots, folders)
        results = _pass_one(
            checked,
            work,
            settings,
            whole,
            lambda paths: _wrap(summaries, paths),
            summaries.ahead(_asked(files, hints)) if guesses is not None else None,
            reads.inert,
            reads.stamps,
        )
        entries = [e for r in results for e in r.entries]
        compiles = [e for r in results for e in r.compiles]
        project.index.prefetch(
            entries, compiles
        )  # what the helpers and reach load first
        again = _helpers_used(project, entries)
        setters = _setters(project, results)
        typed = _typed(project, entries) if settings.preview else {}
        if again or setters or typed:  # pass one did not know them: those files again
            checks = project.checks()
            redo = [
                replace(
                    j,
                    checks=checks if str(j.path) in again else j.checks,
                    setters=setters.get(str(j.path), j.setters),
                    typed=typed.get(str(j.path), j.typed),
                )
                for j in work
                if str(j.path) in again
                or str(j.path) in setters
                or str(j.path) in typed
            ]
            redone = {r.path: r for r in checked.run(redo)}
            results = [redone.get(r.path, r) for r in results]
            entries = [e for r in results for e in r.entries]
            compiles = [e for r in results for e in r.compiles]
            project.index.prefetch(entries, compiles)
        sites = _once(s for r in results for s in r.regions)
        compiled = project.compiled(compiles)
        entries.extend(compiled)
        sites.extend(  # a function compiled by a wrapper another module defines
            _once(replace(e.region, targets=(e.callee,)) for e in compiled)
        )
        reads.paths.extend(job.path for job in work)
        if not entries:
            checked.finish()  # a guess the reach would have taken
            failed = [result for _, result in summaries.failed]
            results = settle_warmups(
                results, [], [], set(), set(), unwarmed_callers(project, results)
            )
            merged = _merge(results, failed, settings.enabled)
            reads.paths.extend([*summaries.read, *project.index.looked])
            _remember(work, [], files, summaries.asked, hints)
            reads.used([*summaries.read, *reads.searched])
            return Checked(merged, _survey(sites))
        analysed = {
            (module_of(Path(result.path)), root)
            for result in results
            for root in result.roots
        }
        reached = project.reach(entries, analysed)
        checks = project.checks()
        first = work  # pass one's
        work = [
            Job(Path(path), functions, checks)
            for path, functions in sorted(reached.items())
            if not excluded(Path(path))
        ]
        extra = [
            _reached_by(result, (job.external or {}).values())
            for job, result in zip(work, checked.run(work), strict=True)
        ]
        # the next run's workers start now
        if guessed := _remember(first, work, files, summaries.asked, hints):
            wanted = len(files) + len(capture_roots) + guessed
            keep_ready(min(jobs or default_jobs(), wanted))
        ways = unwarmed_callers(project, results)
        reads.paths.extend(
            [*(job.path for job in work), *summaries.read, *project.index.looked]
        )
    dropped: dict[str, list[Dropped]] = {}  # once per file
    for call in dict.fromkeys(project.abandoned):
        dropped.setdefault(call.path, []).append(call)
    abandoned = [
        _reached_by(
            FileResult(path, (_abandoned(calls),)), project.abandoned_by.get(path, ())
        )
        for path, calls in dropped.items()
    ]
    failed = [
        _reached_by(result, project.blocked.get(path, ()))
        for path, result in summaries.failed
    ]
    survey = project.survey(sites, lambda path: excluded(Path(path)))
    lost = {(u.path, u.line) for u in project.unfollowed}  # calls not followed
    lost.update((d.path, d.line) for d in project.abandoned)
    results = settle_warmups(results, extra, survey, project.followed, lost, ways)
    merged = _merge(results, [*failed, *abandoned, *extra], settings.enabled)
    reads.used([*summaries.read, *reads.searched, *(job.path for job in work)])
    return Checked(merged, _survey(sites, survey, project.unfollowed))


def _once(sites: Iterable[RegionRef]) -> list[RegionRef]:
    """Each region found once, as first found (``RegionRef.found``)."""
    found: dict[object, RegionRef] = {}
    for site in sites:
        found.setdefault(site.found, site)
    return list(found.values())


def _helpers_used(project: Project, entries: Sequence[Entry]) -> set[str]:
    """The files with regions whose conditions call a capture-check helper that the
    project defines elsewhere (``if not is_capturing(): print(...)`` with
    ``is_capturing`` imported): pass one, which reads one file, took the call for
    anything. Asking ``project.is_check`` of the calls in the conditions of each
    region's own calls records the helpers (``project.checks()``); each name is
    asked once per function."""
    from graphlint.project.reach import site_of  # noqa: PLC0415 - loaded by now

    found: set[str] = set()
    asked: set[tuple[str, str, str]] = set()
    for entry in entries:
        module = project.index.module(
            entry.module, prefer=project.index.root_of_file(entry.path)
        )
        if module is None:
            continue
        fn = module.functions.get(entry.function) if entry.function else None
        site = site_of(entry, fn.calls if fn is not None else module.calls)
        if site is None or not site.guards:
            continue
        scope = fn.path if fn is not None else ""

        def helper(
            callee: str,
            module: ModuleSummary = module,
            fn: FunctionSummary | None = fn,
            at: tuple[int, int] = (site.line, site.col),
            path: str = entry.path,
            scope: str = scope,
        ) -> bool:
            key = (module.path, scope, callee)
            if key in asked:
                return False  # asked already: said then
            asked.add(key)
            if not project.is_check(module, fn, callee, at=at):
                return False
            if project.qualify(module, callee) not in project.known:
                found.add(path)
            return True

        for text in site.guards:
            guards.under_capture(guards.decode(text), helper)
    return found


def _setters(
    project: Project, results: Sequence[FileResult]
) -> dict[str, frozenset[Setter]]:
    """For each file whose calls GL407 asked about (``FileResult.asks``), the
    callables among them that set hyper-parameters of an optimizer they are given:
    a function, through a parameter; a method, through an attribute of ``self``
    that ``__init__`` stores one of its parameters in."""
    found: dict[str, frozenset[Setter]] = {}
    for result in results:
        if not result.asks:
            continue
        near = project.index.root_of_file(result.path)
        setters = [s for name in result.asks for s in project.setters(name, near)]
        if setters:
            found[result.path] = frozenset(setters)
    return found


def _typed(
    project: Project, entries: Sequence[Entry]
) -> dict[str, frozenset[tuple[str, str]]]:
    """For each file with a function that makes a capture and is called from other
    files, what every call of it passes its parameters (``Project.typed_by_callers``),
    where that is known. In preview: the search reads the files that call them,
    which the hand-offs read too."""
    found: dict[str, set[tuple[str, str]]] = {}
    for path, function in dict.fromkeys((e.path, e.function) for e in entries):
        if not function or function.rpartition(".")[2].startswith("__"):
            continue  # ``__call__``: its calls are any call of an object
        for mark in project.typed_by_callers(path, function):
            found.setdefault(path, set()).add((function, mark))
    return {path: frozenset(marks) for path, marks in found.items()}


def _source(path: Path, max_size: int, reads: Reads) -> bytes | None:
    """A checked file's text, for the hand-off screen (None: it cannot be read,
    and its own diagnostic says why); noted in ``reads``."""
    reads.searched.add(path)
    reads.reading(path)
    data = read_file(path, str(path), max_size)
    return None if isinstance(data, Diagnostic) else data


# the language server's runs (a kept pool's) ``Hints``: the project-pass job each
# file that was in both passes of the last run had, by path; that file's next run
# guesses its reach is the same (``_Results``). And the module names each file
# checked was summarised under, by path: its next run summarises it beside pass one.
_REACHED: dict[str, Job] = {}
_ASKED: dict[str, set[tuple[Path, str]]] = {}  # by path, as checked


def _guesses(files: Sequence[Path], hints: Hints | None) -> dict[str, Job]:
    """The guessed project-pass jobs of ``files``."""
    if hints is None or not hints.reached:
        return {}
    names = _by_paths("names", [files], lambda: frozenset(str(f) for f in files))
    return {path: job for path, job in hints.reached.items() if path in names}


def _asked(files: Sequence[Path], hints: Hints | None) -> list[tuple[Path, str]]:
    """The modules of ``files`` the last run summarised (path, name)."""
    if hints is None or not hints.asked:
        return []
    return [m for f in files for m in sorted(hints.asked.get(str(f), ()))]


def _remember(
    first: Sequence[Job],
    reached: Sequence[Job],
    files: Sequence[Path],
    asked: Iterable[tuple[Path, str]],
    hints: Hints | None,
) -> int:
    """Keep in ``hints`` the project-pass job of each file that pass one checked
    (``first``) and the reach gave one (``reached``), and the names each of
    ``files`` was summarised under (``asked``); how many jobs."""
    if hints is None:
        return 0
    checked = {str(job.path) for job in first}
    for path in [p for p in hints.reached if p in checked]:
        del hints.reached[path]
    for job in reached:
        if str(job.path) in checked:
            hints.reached[str(job.path)] = job
    named, shown = _by_paths("named", [files], lambda: _named(files))
    for path in [p for p in hints.asked if p in shown]:
        del hints.asked[path]
    for module in asked:
        if (checked_as := named.get(real_path(module[0]))) is not None:
            hints.asked.setdefault(checked_as, set()).add(module)
    return sum(str(job.path) in checked for job in reached)


def _named(files: Sequence[Path]) -> tuple[dict[Path, str], frozenset[str]]:
    """``files`` by their real paths (as checked), and as checked."""
    named = {real_path(f): str(f) for f in files}
    return named, frozenset(named.values())


class _Decoded(Generic[T]):
    """What a language server's runs read from the cache or made, of one kind, by
    key (a key's entry never changes), kept decoded where workers are kept, most
    recently used last: decoding them again cost an edit 0.03-0.06 s for the
    summaries (a check of all of Megatron-LM reads 39, 3 MiB) and some
    milliseconds for the project pass's results (a reached file's, tens)."""

    def __init__(self, kind: type[T], limit: int) -> None:
        self.kind = kind
        self.limit = limit
        self._kept: dict[str, T] = {}

    def get(self, cache: Cache, key: str) -> T | None:
        """The cache's entry under ``key``; where workers are kept, as decoded by
        an earlier run."""
        if not workers_kept():
            return cache.get(key, self.kind)
        found = self._kept.get(key)
        if found is None:
            found = cache.get(key, self.kind)
        if found is not None:
            self.keep(key, found)
        return found

    def keep(self, key: str, value: T) -> None:
        """Keep ``value`` decoded, where workers are kept."""
        if not workers_kept():
            return
        self._kept.pop(key, None)
        self._kept[key] = value
        while len(self._kept) > self.limit:
            del self._kept[next(iter(self._kept))]


_SUMMARIES = _Decoded(ModuleSummary, 1024)
_RESULTS = _Decoded(FileResult, 4096)


def _pass_one(
    checked: _Results,
    work: Sequence[Job],
    settings: Settings,
    whole: bool,
    wrappers: Callable[[list[Path]], bool],
    besides: tuple[list[SummaryJob], Callable[[int, Outcome], None]] | None = None,
    inert: dict[str, Screened] | None = None,
    stamps: Mapping[str, Stamp] = MappingProxyType({}),
) -> list[FileResult]:
    """Each file's own regions. A file whose text names nothing a region needs is
    settled without a worker and without parsing, unless compile wrappers may be in
    play: a function of any file may be handed to a wrapper another module defines
    (``compile_sites``), which pass one cannot see without parsing every file.

    A wrapper that captures has its CUDA-graph setting written out in its own module
    or at the call (then the calling file is a candidate anyway). So when ``whole``
    (the files checked hold every package they belong to) and ``wrappers`` says
    that none of the files that write a setting defines a wrapper, no other file
    is parsed; otherwise every file is. ``inert`` gets what the screening saw of
    each file it settled; ``stamps`` are the files' stamps the run has taken."""
    found: list[FileResult | None] = [None] * len(work)
    settled: list[int] = []  # clean by their text, but with code to parse
    settings_written: list[Path] = []
    screens = Screens(checked.cache, settings, stamps, memory=workers_kept())
    seen_of: dict[int, Screened] = {}
    todo: list[int] = []  # analysed, in the order they were found

    def screened() -> Iterator[Job | None]:
        """The jobs to analyse, each as the screening finds it (None: a file
        settled)."""
        for index, job in enumerate(work):
            if not job.declared:
                seen = seen_of[index] = screens.screen(job.path)
                found[index] = seen.result
                if seen.compiles:
                    settings_written.append(job.path)
                if seen.parsable:
                    settled.append(index)
                if seen.result is not None and (whole or not seen.parsable):
                    yield None
                    continue
            todo.append(index)
            yield job
        screens.save()

    # beside them: the guessed project pass of every file (also of one settled by
    # its text: a file reached from regions elsewhere) and ``besides``
    done = checked.stream(screened(), first=work, besides=besides)
    if whole and settings_written and wrappers(settings_written):
        done.extend(checked.run([work[i] for i in settled]))
        todo.extend(settled)
    for index, result in zip(todo, done, strict=True):
        found[index] = result
    if inert is not None:
        analysed = set(todo)
        inert.update(
            (os.fsdecode(work[i].path), seen)
            for i, seen in seen_of.items()
            if i not in analysed
        )
    return [r for r in found if r is not None]


# the last answer of each kind (the files' source roots, names, real paths, whether
# they are the whole project), with its key
_PATHS_ANSWERS: dict[str, tuple[tuple[object, ...], object]] = {}


def _by_paths(
    kind: str, arguments: Sequence[Sequence[Path]], answer: Callable[[], T]
) -> T:
    """``answer()``, an answer about ``arguments`` (lists of paths) that holds while
    the lookups' answers do (``read.paths_state``): kept for the next run, as a
    server's edit asks it about every file of the project again, and its plan's
    files are the same objects."""
    key = (paths_state(), *(tuple(paths) for paths in arguments))
    kept = _PATHS_ANSWERS.get(kind)
    if kept is not None and kept[0] == key:
        return cast(T, kept[1])
    found = answer()
    _PATHS_ANSWERS[kind] = (key, found)
    return found


def _source_roots(files: Sequence[Path]) -> list[Path]:
    """The source roots of ``files``, each once, in the order of the files."""
    return _by_paths(
        "roots", [files], lambda: list(dict.fromkeys(source_root(f) for f in files))
    )


def _whole(
    files: Sequence[Path], roots: Iterable[Path], folders: Sequence[Path]
) -> bool:
    """Whether the files are the whole of what they import from: the checked
    ``folders`` hold the top package of each file (the folder of one outside any
    package) and the configured source ``roots``. Other packages beside them in a
    source root (``numpy`` beside ``torch`` in site-packages) are other projects."""
    listed = list(roots)
    return _by_paths(
        "whole", [files, listed, folders], lambda: _whole_now(files, listed, folders)
    )


def _whole_now(
    files: Sequence[Path], roots: Sequence[Path], folders: Sequence[Path]
) -> bool:
    tops: set[tuple[Path, str]] = set()  # a source root and a top package in it
    for path in files:
        package = package_of(path)
        tops.add(
            (source_root(path), package.partition(".")[0])
            if package
            else (path.parent, "")
        )
    units = {*roots, *(root / top if top else root for root, top in tops)}
    return bool(folders) and all(
        any(_within(unit, folder) for folder in folders) for unit in units
    )


def _within(path: Path, folder: Path) -> bool:
    return real_path(path).is_relative_to(real_path(folder))


def _wrap(summaries: _Summaries, paths: list[Path]) -> bool:
    """Whether one of these modules defines a compile wrapper (or cannot be
    summarised, so that it may)."""
    modules = [(path, module_of(path)) for path in paths]
    summaries.prefetch(modules)
    found = [summaries(path, name) for path, name in modules]
    return any(summary is None or defines_wrapper(summary) for summary in found)


def _results_of(survey: Callable[P, Checked]) -> Callable[P, list[FileResult]]:
    def check(*args: P.args, **kwargs: P.kwargs) -> list[FileResult]:
        return survey(*args, **kwargs).results

    check.__doc__ = "``survey_project``'s results alone."
    return check


check_project = _results_of(survey_project)


def check_source(source: str, path: str, settings: Settings) -> list[Diagnostic]:
    """``source`` checked as ``graphlint check PATH`` checks the file ``path`` alone
    (given this text, saved or not), in this process: the engine path of
    ``lint_source``. Its diagnostics, those of code its regions reach included."""
    # a name that is no file's (``<string>``) is given one that its module's
    # lookup finds
    file = Path(path if path.endswith((".py", ".pyi")) else f"{path}.py")
    real = real_path(file)
    cwd = real_path(Path.cwd())

    def display(found: Path) -> str:  # as the CLI shows them
        shown = real_path(found)
        if shown == real:
            return str(file)
        return str(shown.relative_to(cwd)) if shown.is_relative_to(cwd) else str(found)

    with overlay({str(file): source.encode("utf-8", "surrogatepass")}):
        checked = survey_project([file], settings, 1, display=display, inline=True)
    found = [d for result in checked.results for d in result.diagnostics]
    return [_renamed(d, str(file), path) for d in found] if str(file) != path else found


def _renamed(found: Diagnostic, old: str, new: str) -> Diagnostic:
    """``found`` with the file ``old`` called ``new``, wherever it names it."""

    def name(path: str) -> str:
        return new if path == old else path

    region = found.region
    if region is not None:
        region = replace(
            region,
            path=name(region.path) if region.path is not None else None,
            via=tuple(replace(hop, path=name(hop.path)) for hop in region.via),
        )
    wide = tuple(replace(entry, path=name(entry.path)) for entry in found.wide)
    return replace(found, path=name(found.path), region=region, wide=wide)


def _survey(
    sites: list[RegionRef],
    reached: Sequence[RegionReach] | None = None,
    unfollowed: Iterable[Unfollowed] = (),
) -> Survey:
    """The survey, sorted: regions by file and line, calls by site, each once."""
    regions = (
        reached
        if reached is not None
        else [RegionReach(s, ()) for s in sorted(sites, key=lambda s: s.key)]
    )
    calls = sorted(dict.fromkeys(unfollowed), key=lambda u: u.sort_key)
    return Survey(tuple(regions), tuple(calls))


def _declared(
    project: Project,
    capture_roots: Sequence[str],
    base: Path | None,
    warn: Callable[[str], None],
) -> dict[Path, tuple[Path, frozenset[str]]]:
    """The files that hold the ``capture-roots``, by real path: the file as shown,
    with the paths of the functions named in it; ``warn`` says why a root names
    nothing."""
    found: dict[Path, set[str]] = {}
    shown: dict[Path, Path] = {}
    for root in capture_roots:
        name, _, qualname = root.partition(":")
        module = _module(project, name, base)
        function = project.function(module, qualname) if module is not None else None
        if function is None:
            why = _missing(project, module, name, qualname, base)
            warn(f"capture root {root!r} names nothing: {why}")
            continue
        holder, summary = function
        path = real_path(Path(holder.path))
        shown.setdefault(path, Path(holder.path))
        found.setdefault(path, set()).add(summary.path)
    return {p: (shown[p], frozenset(f)) for p, f in found.items()}


def _bases(base: Path | None) -> list[Path]:
    """Where a capture root's module is looked for before the source roots: the
    configuration's folder, then its ``src`` folder (a src layout)."""
    if base is None:
        return []
    return [base, *([base / "src"] if os.path.isdir(base / "src") else [])]


def _module(project: Project, name: str, base: Path | None) -> ModuleSummary | None:
    preferred: list[Path | None] = [*_bases(base)] or [None]
    for prefer in preferred:
        found = project.index.module(name, prefer=prefer)
        if found is not None:
            return found
    return None


def _missing(
    project: Project,
    module: ModuleSummary | None,
    name: str,
    qualname: str,
    base: Path | None,
) -> str:
    """Why a capture root names no function."""
    if module is None:
        preferred: list[Path | None] = [*_bases(base)] or [None]
        for prefer in preferred:
            file = project.index.file_of(name, prefer=prefer)
            if file is not None:
                return f"{file} could not be read (see its diagnostic)"
        folders = [str(f) for f in dict.fromkeys([*_bases(base), *project.index.roots])]
        more = f" and {len(folders) - 3} more" if len(folders) > 3 else ""
        return f"no module {name} under {', '.join(folders[:3])}{more}"
    if qualname in module.classes:
        return (
            f"{qualname} is a class in {module.path}: name a method, "
            f"such as {qualname}.forward"
        )
    return f"{module.path} defines no function {qualname}"


def _abandoned(calls: list[Dropped]) -> Diagnostic:
    """GL005 at the first of a file's calls whose resolution went over the budget:
    the file was analysed; what those calls run was not followed."""
    from graphlint.project.resolve import BUDGET  # noqa: PLC0415 - loaded by now

    first, *rest = sorted(calls, key=lambda c: (c.line, c.col, c.guard, c.callee))
    steps = f"{BUDGET:,} steps"
    if first.guard:  # the call itself is followed
        message = (
            f"a condition of this call calls `{first.callee}`, which was not "
            f"resolved within {steps}, so the condition was not taken for a capture "
            "check"
        )
    else:
        message = (
            f"call of `{first.callee}` not followed: resolving it took over {steps}, "
            "so the project code it may run was not checked"
        )
    if rest:
        numbers = list(dict.fromkeys(str(c.line) for c in rest))
        lines = numbers[:3] + ["..."] * (len(numbers) > 3)
        where = f"lines {', '.join(lines)}" if len(lines) > 1 else f"line {lines[0]}"
        message += f"; {len(rest)} more in this file went over too ({where})"
    message += "; the rest of the file was checked"
    found = tool_diagnostic(
        ParserLimitExceeded, first.path, first.line, first.col, detail=""
    )
    hint = "Please report the call: ordinary code resolves in far fewer steps"
    return replace(found, message=message, fix_hint=hint)


def _reached_by(result: FileResult, hows: Iterable[RegionRef]) -> FileResult:
    """A reached file's result with each of its outcomes that says it could not be
    analysed (GL001-GL005, ``UNANALYSED``) given the region that reaches it: once
    for each file whose regions do (the first of them, by the shortest chain), so
    that a check of one of those files alone shows it (``Checked.about``). An
    outcome that already has a region (a statement skipped in a reached function)
    keeps it."""
    firsts: dict[str, RegionRef] = {}
    for how in sorted(hows, key=_chain_order):
        firsts.setdefault(how.path or "", how)
    if not firsts:
        return result
    diagnostics: list[Diagnostic] = []
    for found in result.diagnostics:
        if found.code not in UNANALYSED or found.region is not None:
            diagnostics.append(found)
            continue
        diagnostics.extend(replace(found, region=how.shown) for how in firsts.values())
    return replace(result, diagnostics=tuple(diagnostics))


def _chain_order(
    how: RegionRef,
) -> tuple[str, int, int, str, list[tuple[str, int, int]]]:
    hops = [(hop.path, hop.line, hop.col) for hop in how.via]
    return (how.path or "", len(how.via), how.line, how.label, hops)


def _reached_first(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    """Without an outcome that says a file could not be analysed where the same
    outcome is there with the regions that reach the file (``_reached_by``): a
    file named and reached gives both."""
    found = list(diagnostics)
    reached = {
        _outcome(d) for d in found if d.code in UNANALYSED and d.region is not None
    }
    return [
        d
        for d in found
        if d.code not in UNANALYSED
        or d.region is not None
        or _outcome(d) not in reached
    ]


def _order(found: Diagnostic) -> tuple[tuple[str, int, int, str], str, str]:
    """Diagnostics by place and code, then by message and region: one outcome
    reached from several files is listed in the same order in every run."""
    return (found.sort_key, found.message, repr(found.region))


def _outcome(found: Diagnostic) -> tuple[str, int, int, str]:
    return (found.code, found.line, found.col, found.message)


def _merge(
    results: list[FileResult], extra: list[FileResult], enabled: frozenset[str]
) -> list[FileResult]:
    """Add what the project pass found (of the ``enabled`` codes), by path; a file
    only reached is listed even when clean, so editors clear it. Then, all passes
    done, say which suppression comments dropped nothing (GL008), and give each
    diagnostic what its places need for UTF-16 columns (``_widened``)."""
    by_path = {r.path: i for i, r in enumerate(results)}
    merged = list(results)
    wide = {r.path: dict(r.wide) for r in [*results, *extra] if r.wide}
    for found in extra:
        if found.path not in by_path:
            by_path[found.path] = len(merged)
            merged.append(FileResult(found.path, ()))
        index = by_path[found.path]
        old = merged[index]
        new = (d for d in found.diagnostics if d.code in enabled)
        diagnostics = tuple(
            sorted(_reached_first({*old.diagnostics, *new}), key=_order)
        )
        merged[index] = FileResult(
            old.path,
            diagnostics,
            old.internal_error or found.internal_error,
            regions=old.regions,
            suppressions=old.suppressions or found.suppressions,
            used=tuple(sorted({*old.used, *found.used})),
        )
    merged = [with_unused(result, enabled) for result in merged]
    return [_widened(result, wide) for result in merged] if wide else merged


def _widened(
    result: FileResult, wide: dict[str, dict[int, tuple[int, ...]]]
) -> FileResult:
    """``result`` with each diagnostic given the lines with characters outside the
    BMP among the places it names (its own, its edits', its related locations', the
    calls of its chain), from the ``wide`` lines of every file checked: what LSP
    and SARIF need to count its columns in UTF-16."""
    changed = []
    for d in result.diagnostics:
        places = {(d.path, d.line), (d.path, d.end_line)}
        places.update((d.path, line) for e in d.edits for line in (e.line, e.end_line))
        places.update((d.path, other.line) for other in d.related)
        if d.region is not None:
            places.update((hop.path, hop.line) for hop in d.region.via)
        found = tuple(
            Wide(path, line, wide[path][line])
            for path, line in sorted(places)
            if line in wide.get(path, {})
        )
        changed.append(replace(d, wide=found) if found else d)
    return replace(result, diagnostics=tuple(changed))


__all__ = ["Checked", "check_project", "check_source", "survey_files"]
