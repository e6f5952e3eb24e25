"""A check of files as part of their project (``graphlint.project.check``), or the
run an earlier check kept (``graphlint.project.kept``) where nothing it read has
changed. A kept run imports nothing of the project pass: a warm check of a large
project is mostly the time it takes to start."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from graphlint.cache import Cache
from graphlint.diagnostics import Checked
from graphlint.project.kept import Reads, Runs
from graphlint.read import forget_paths, package_folders
from graphlint.serving import kept_between_runs
from graphlint.settings import Settings


def survey_project(
    files: Sequence[Path],
    settings: Settings,
    jobs: int | None = None,
    *,
    roots: Iterable[Path] = (),
    eager: frozenset[str] = frozenset(),
    cache: Cache | None = None,
    excluded: Callable[[Path], bool] = lambda path: False,
    display: Callable[[Path], str] = str,
    capture_roots: Sequence[str] = (),
    base: Path | None = None,
    warn: Callable[[str], None] = lambda message: None,
    folders: Sequence[Path] = (),
    context: bytes = b"",
    progress: Callable[[int, int], None] | None = None,
    inline: bool = False,
    paths_current: bool = False,
) -> Checked:
    """Check ``files`` and the project code their capture regions reach, and say
    what the analysis saw (``Checked.survey``); ``progress`` is told how many of the
    workers' jobs are done, of how many asked so far. With ``inline``, the jobs run
    in this process (``runner.Inline``), and a graphlint bug raises.

    ``capture_roots`` ("module:qualname") are functions a framework captures; their
    modules are looked up as imports are, first under ``base`` (the folder of the
    configuration), and each is analysed as a region; one that names nothing found
    is reported through ``warn``. ``folders``: the folders ``files`` were collected
    from (where they hold every source root, the files are the whole project).

    With a ``cache`` (and, where workers are kept, in memory), a run whose files,
    settings and ``context`` (what else the caller's results depend on: the working
    folder, the exclusions) are those of an earlier run, and whose every file and
    folder read is unchanged but for files only its screening read that screen the
    same again, gives that run's results without checking anything
    (``kept.Runs``).

    ``paths_current``: what ``read.real_path`` and ``read.package_of`` found since
    the caller planned the run still holds (``lint.plan`` starts afresh, and a
    language server plans again after any file is made or removed); else they are
    looked up again."""
    if not files:
        return Checked([])
    roots = list(roots)
    asked = [
        [os.fsdecode(r) for r in roots],
        sorted(eager),
        list(capture_roots),
        os.fsdecode(base) if base is not None else None,
        [os.fsdecode(f) for f in folders],
        os.fsdecode(context),
    ]
    # the language server's runs are kept in memory too (the text of an unsaved
    # buffer, only there), and checks of several files may share one
    runs = Runs(
        cache, files, settings, asked, memory=kept_between_runs() and not inline
    )
    stored = runs.get()
    if stored is not None:
        for message in stored.warnings:
            warn(message)
        return Checked(list(stored.results), stored.survey)
    warnings: list[str] = []

    def said(message: str) -> None:
        warnings.append(message)
        warn(message)

    if not paths_current:
        forget_paths()
    # what the results depend on; the files' stamps, taken before the run
    reads = Reads([*files], dict(runs.before))
    # what the last runs of the project asked, which this one starts at once (the
    # language server keeps its own in memory)
    hints = runs.hints() if runs.cache is not None and not runs.memory else None
    # the project pass: what a kept run spares, its imports too
    from graphlint.project.check import survey_files  # noqa: PLC0415

    done = survey_files(
        files,
        settings,
        jobs,
        reads,
        roots=roots,
        eager=eager,
        cache=cache,
        excluded=excluded,
        display=display,
        capture_roots=capture_roots,
        base=base,
        warn=said,
        folders=folders,
        progress=progress,
        inline=inline,
        hints=hints,
    )
    runs.put(done, reads, package_folders(), warnings)
    if hints is not None:
        runs.keep_hints(hints)
    return done


__all__ = ["survey_project"]
