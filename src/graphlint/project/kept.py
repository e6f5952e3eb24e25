"""What a run keeps for the next one besides each file's result and summary
(``graphlint.cache``): the whole run's output, and each file's screening verdict,
both by the stamps of what they were made from, as ruff keeps its results; and,
for a run that cannot take the last one's results, what the project's last runs
asked (``Hints``)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import ClassVar

import msgspec

from graphlint.cache import Cache, code_version
from graphlint.candidates import Screened, screen
from graphlint.diagnostics import Checked, FileResult, RegionRef, Survey
from graphlint.read import overlaid, overlay_contents, real_path, unsaved
from graphlint.settings import Job, Setter, Settings
from graphlint.stamps import Stamp, stamp
from graphlint.tool_codes import InternalError, ParserLimitExceeded

# outcomes that depend on the machine or on a bug, not on the file: never kept
UNSTABLE = frozenset({ParserLimitExceeded.code, InternalError.code})


@dataclass
class Hints:
    """What a project's runs tell the next one, so that it starts at once what it
    will likely ask for: each file's project-pass job (a
    guess, run beside pass one, whose result counts only where the reach gives the
    very same job: ``check._Results``) and the modules each file was summarised
    under (summarised beside pass one). The language server keeps them in memory
    (``check._REACHED``, ``check._ASKED``); a command line's runs keep them in the
    cache, one entry for the project and the settings, whatever files a run names
    (a pre-commit run names the files a commit changes): a run after an edit, which
    cannot take the last run's results, starts what it asked."""

    reached: dict[str, Job] = field(default_factory=dict)  # by path, as checked
    asked: dict[str, set[tuple[Path, str]]] = field(default_factory=dict)


class _Guess(msgspec.Struct, array_like=True):
    """A ``Job``, as the cache keeps it."""

    path: str
    external: dict[str, RegionRef] | None
    checks: frozenset[str]
    declared: frozenset[str]
    setters: frozenset[Setter]
    typed: frozenset[tuple[str, str]]


class _Hinted(msgspec.Struct):
    """``Hints``, as the cache keeps them."""

    reached: list[_Guess]
    asked: dict[str, list[tuple[str, str]]]


class _Run(msgspec.Struct):
    """A run's results as the run cache keeps them, with what they depend on."""

    results: list[FileResult]
    survey: Survey
    warnings: list[str]
    read: dict[str, Stamp]  # files and folders, as they were
    inert: dict[str, Screened]  # ``Reads.inert``


@dataclass
class Reads:
    """What a run read, for the run cache: ``paths``, the files and folders its
    results depend on; ``stamps``, the stamps of those the project read the text of
    (summaries, searches), each taken before it was read; ``inert``, the files
    whose text counted only as pass one's screening settled them (the project read
    nothing else of them), by the path the run checked them by, with what the
    screening saw."""

    paths: list[Path]
    stamps: dict[str, Stamp] = field(default_factory=dict)
    inert: dict[str, Screened] = field(default_factory=dict)
    searched: set[Path] = field(default_factory=set)  # read as text by searches

    def reading(self, path: Path) -> None:
        """``path`` is about to be read: its stamp, if it has none yet."""
        name = os.fsdecode(path)
        if name not in self.stamps:
            self.stamps[name] = stamp(path)

    def used(self, paths: Iterable[Path]) -> None:
        """The project read more of ``paths`` than the screening saw (summarised,
        searched, analysed for the functions reached): none of them is inert."""
        reals = {real_path(path) for path in paths}
        for name in [n for n in self.inert if real_path(n) in reals]:
            del self.inert[name]


class Runs:
    """Whole runs, by their files, the settings, the caller's context, which files
    have an editor's buffer and graphlint's code. A run whose every file and folder
    read is as it was (the files, the modules it summarised, the files regions
    reach, the folders imports were looked up in), but for files whose text counted
    only as pass one's screening settled them and that screen the same again (a
    module no region reaches, edited), gives that run's results without checking
    anything; anything else is a miss, and the run proceeds file by file.

    Kept in the cache, and for the language server (``memory``) in memory too,
    where a run that reads an unsaved buffer is kept only: the text of a keystroke
    is not seen again, and a large project's run is half a megabyte."""

    _KEPT = 4  # runs in memory: one for each set of files the editor's checks plan
    _memory: ClassVar[dict[str, _Run]] = {}

    def __init__(
        self,
        cache: Cache | None,
        files: Sequence[Path],
        settings: Settings,
        asked: object,
        *,
        memory: bool = False,
    ) -> None:
        self.cache = cache if not unsaved() else None
        self.memory = memory
        self.settings = settings
        # the files' stamps before the run reads them: a file that changes while it
        # runs is not kept with results of its earlier text
        kept = memory or self.cache is not None
        self.before = {os.fsdecode(f): stamp(f) for f in files} if kept else {}
        try:
            self.key: str | None = Cache.key(
                b"run",
                code_version(),
                msgspec.json.encode(settings, order="deterministic"),
                msgspec.json.encode(
                    [asked, [os.fsdecode(f) for f in files], sorted(overlay_contents())]
                ),
            )
        except (ValueError, TypeError, UnicodeError):  # a name that is not UTF-8
            self.key = None

    @property
    def kept(self) -> bool:
        """Whether runs are kept at all: in memory or in the cache."""
        return self.key is not None and (self.memory or self.cache is not None)

    def _hints_key(self) -> str:
        return Cache.key(
            b"hints",
            code_version(),
            msgspec.json.encode(self.settings, order="deterministic"),
        )

    def hints(self) -> Hints:
        """What the last runs of the project asked (none: none), whatever has
        changed since, less the files that are gone (renamed, deleted): each
        would be asked for again at every run that cannot take the last one's
        results, and kept. An entry larger than ``_HINTS_KEPT`` files is dropped
        whole: the project's runs start again from none."""
        found = self.cache.get(self._hints_key(), _Hinted) if self.cache else None
        if found is None or len(found.reached) + len(found.asked) > _HINTS_KEPT:
            return Hints()
        reached = {
            g.path: Job(
                Path(g.path), g.external, g.checks, g.declared, g.setters, g.typed
            )
            for g in found.reached
            if _there(g.path)
        }
        asked = {
            path: {(Path(module), name) for module, name in modules if _there(module)}
            for path, modules in found.asked.items()
            if _there(path)
        }
        return Hints(reached, asked)

    def keep_hints(self, hints: Hints) -> None:
        """Keep ``hints`` for the project's next run."""
        if self.cache is None:
            return
        with contextlib.suppress(ValueError, TypeError, UnicodeError):
            self.cache.put(self._hints_key(), _hinted(hints))

    def get(self) -> _Run | None:
        if self.key is None:
            return None
        found = self._memory.get(self.key) if self.memory else None
        if found is None and self.cache is not None:
            found = self.cache.get(self.key, _Run)
        if found is None:
            return None
        for path, was in found.read.items():
            now = self.before[path] if path in self.before else stamp(path)
            if now == was:
                continue
            inert = found.inert.get(path)
            if inert is None or screen(Path(path), self.settings) != inert:
                return None
        return found

    def put(
        self, done: Checked, reads: Reads, folders: Iterable[Path], warnings: list[str]
    ) -> None:
        """Keep the run ``done``, which read what ``reads`` says and looked
        ``folders`` up; unless a file it read changed while it ran. A file stamped
        before the run read it (each file checked, most of what a run reads) is
        not stamped again: had it changed since, the next run's stamp of it
        differs from the kept one, and that run is not answered from this one."""
        unstable = any(
            r.internal_error or any(d.code in UNSTABLE for d in r.diagnostics)
            for r in done.results
        )
        if not self.kept or unstable:
            return
        assert self.key is not None
        stamps = dict(self.before)
        read = {*(os.fsdecode(p) for p in [*reads.paths, *folders]), *reads.stamps}
        for path in sorted(read.difference(self.before)):
            now = stamp(path)
            if stamps.setdefault(path, reads.stamps.get(path, now)) != now:
                return  # changed while the run read it
        results = [_kept(r) for r in done.results]
        run = _Run(results, done.survey, warnings, stamps, dict(reads.inert))
        if self.memory:
            self._memory.pop(self.key, None)
            self._memory[self.key] = run
            while len(self._memory) > self._KEPT:
                del self._memory[next(iter(self._memory))]
        if self.cache is not None:
            with contextlib.suppress(ValueError, TypeError, UnicodeError):
                self.cache.put(self.key, run)


_HINTS_KEPT = 20_000  # files a project's hints may name (a 100,000-file project's
# runs name a few hundred)


def _there(path: str) -> bool:
    """Whether a path a cache entry names is a file or folder there now (not one
    the cache's own damage made: a NUL in it)."""
    return "\0" not in path and os.path.lexists(path)


def _hinted(hints: Hints) -> _Hinted:
    reached = [
        _Guess(
            path,
            dict(job.external) if job.external is not None else None,
            job.checks,
            job.declared,
            job.setters,
            job.typed,
        )
        for path, job in sorted(hints.reached.items())
    ]
    asked = {
        path: sorted((os.fsdecode(module), name) for module, name in modules)
        for path, modules in sorted(hints.asked.items())
    }
    return _Hinted(reached, asked)


# what a kept run keeps of a file's result: what a run reports, not what the
# project pass read of it
_REPORTED = ("path", "diagnostics", "internal_error", "regions")
_UNREPORTED = tuple(f.name for f in fields(FileResult) if f.name not in _REPORTED)


def _kept(result: FileResult) -> FileResult:
    """``result`` as a kept run keeps it (``_REPORTED``): most have nothing else,
    and are kept as they are."""
    if not any(getattr(result, name) for name in _UNREPORTED):
        return result
    return FileResult(
        result.path, result.diagnostics, result.internal_error, regions=result.regions
    )


class Screens:
    """``screen``'s verdicts, kept by the file's stamp (size, times, inode), as ruff
    keeps its results: a file unchanged since the last run is not read again to be
    screened. Only the verdicts that need no diagnostic and no suppression comment
    are kept: "clean", "parsable" (clean, with code), "candidate", "compiles" (a
    candidate that writes a compile setting); never an editor's buffer's (its
    stamp is its text's, which the next keystroke changes).

    Kept in the cache, and for the language server (``memory``) in memory too:
    decoding a large project's verdicts took each edit a few milliseconds."""

    _memory: ClassVar[dict[str, dict[str, tuple[Stamp, str]]]] = {}  # the last
    # with it, what ``screen`` made of each kept verdict, by the file: the same
    # verdict gives the same (immutable) answer, not a new one at every edit
    _made: ClassVar[dict[str, tuple[tuple[Stamp, str], Screened]]] = {}

    def __init__(
        self,
        cache: Cache | None,
        settings: Settings,
        stamps: Mapping[str, Stamp] = MappingProxyType({}),
        *,
        memory: bool = False,
    ) -> None:
        self.cache = cache
        self.settings = settings
        self.stamps = stamps  # the files' stamps the run took already
        what = (settings.max_file_size, sorted(settings.markers))
        self.key = Cache.key(b"screens", code_version(), msgspec.json.encode(what))
        found = self._memory.get(self.key) if memory else None
        if found is None:
            found = cache.get(self.key, dict[str, tuple[Stamp, str]]) if cache else None
            found = found or {}
            if memory:
                Screens._memory, Screens._made = {self.key: found}, {}
        self.known: dict[str, tuple[Stamp, str]] = found
        self.made = self._made if memory else {}
        self.changed = False

    def screen(self, path: Path) -> Screened:
        """What the screening of ``path`` sees: the kept verdict of its stamp (the
        one the run took before it started, where it took one), else its text's,
        kept under a stamp taken just before it is read. A file edited since the
        run started may be screened as it was then (its kept verdict); the run is
        then not kept (``Runs.put``)."""
        name = os.fsdecode(path)
        now = self.stamps[name] if name in self.stamps else stamp(path)
        known = self.known.get(name)
        if known is not None and now is not None and known[0] == now:
            made = self.made.get(name)
            if made is not None and made[0] is known:
                return made[1]
            verdict = known[1]
            settled = verdict in ("clean", "parsable")
            seen = Screened(
                FileResult(name, ()) if settled else None,
                compiles=verdict == "compiles",
                parsable=verdict == "parsable",
            )
            self.made[name] = (known, seen)
            return seen
        if name in self.stamps:  # the text read may be newer than that stamp
            now = stamp(path)
        seen = screen(path, self.settings)
        new = _verdict(seen)
        if new is not None and now is not None and overlaid(path) is None:
            self.known[name] = (now, new)
            self.changed = True
        return seen

    def save(self) -> None:
        if self.cache is not None and self.changed:
            with contextlib.suppress(ValueError, TypeError, UnicodeError):
                self.cache.put(self.key, self.known)


def _verdict(seen: Screened) -> str | None:
    if seen.result is None:
        return "compiles" if seen.compiles else "candidate"
    if seen.result.diagnostics or seen.result.suppressions:
        # an outcome (GL002, GL003 ...), or suppression comments, which a verdict
        # does not keep (GL008 reports those nothing used): screened again
        return None
    return "parsable" if seen.parsable else "clean"


__all__ = ["UNSTABLE", "Hints", "Reads", "Runs", "Screens"]
