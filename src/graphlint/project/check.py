"""Checking a set of files as part of a project: follow what capture regions call.

1. Pass one analyses each file on its own (``graphlint.engine``): diagnostics for
   code inside regions, and the calls each region makes.
2. Reachability (``graphlint.project.reach``) resolves those calls over per-module
   summaries, lazily and across files, and records how each function is reached.
3. The project pass analyses the reached functions as regions, in their own files
   (also files that were not named on the command line), and adds what it finds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from graphlint.diagnostics import FileResult
from graphlint.engine import Job, Settings, module_of
from graphlint.project.reach import Entry, Project
from graphlint.runner import check_files


def source_root(path: Path) -> Path:
    """The folder imports of ``path`` are relative to: above its top package."""
    folder = path.resolve().parent
    while (folder / "__init__.py").is_file() and folder.parent != folder:
        folder = folder.parent
    return folder


def check_project(
    files: Sequence[Path],
    settings: Settings,
    jobs: int | None = None,
    *,
    roots: Iterable[Path] = (),
    eager: frozenset[str] = frozenset(),
    cache_dir: Path | None = None,
    excluded: Callable[[Path], bool] = lambda path: False,
    display: Callable[[Path], str] = str,
) -> list[FileResult]:
    """Check ``files`` and the project code their capture regions reach."""
    results = check_files(files, settings, jobs)
    entries = [e for r in results for e in r.entries if isinstance(e, Entry)]
    if not entries:
        return results
    project = Project(
        [*roots, *(source_root(f) for f in files)],
        eager=eager,
        cache_dir=cache_dir,
        display=display,
    )
    analysed = {
        (module_of(Path(result.path)), root)
        for result in results
        for root in result.roots
    }
    reached = project.reach(entries, analysed)
    checks = project.checks()
    work = [
        Job(Path(path), functions, checks)
        for path, functions in sorted(reached.items())
        if not excluded(Path(path))
    ]
    extra = check_files(work, settings, jobs)
    by_path = {r.path: i for i, r in enumerate(results)}
    merged = list(results)
    for found in extra:
        if found.path in by_path:
            index = by_path[found.path]
            old = merged[index]
            diagnostics = tuple(
                sorted({*old.diagnostics, *found.diagnostics}, key=lambda d: d.sort_key)
            )
            merged[index] = FileResult(
                old.path, diagnostics, old.internal_error or found.internal_error
            )
        else:  # a file only reached: listed even when clean, so editors clear it
            merged.append(found)
    return merged


__all__ = ["check_project", "source_root"]
