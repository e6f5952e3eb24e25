"""The ``graphlint`` command: check, rules, explain.

Exit codes: 0 clean, 1 diagnostics reported, 2 usage, configuration or internal error.
"""

from __future__ import annotations

import contextlib
import enum
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from graphlint import __version__, cache
from graphlint.cache import ENV as CACHE_ENV
from graphlint.codes import CODES, code_of
from graphlint.config import CEILINGS, LIMIT_ENV, ConfigError, FailOn, parse_limit
from graphlint.diagnostics import Applicability, Checked, FileResult
from graphlint.docs import doc_path
from graphlint.entry import EXIT_ERROR, guarded, interrupted
from graphlint.lint import (
    Choices,
    LintError,
    Plan,
    cache_of,
    cache_root,
    describe,
    lint,
    plan,
    stdin_limit,
)
from graphlint.output import FORMATTERS, STATISTICS, OutputFormat
from graphlint.output.escape import printable, shown_path
from graphlint.output.statistics import statistics_text
from graphlint.output.text import format_text
from graphlint.progress import progress_bar
from graphlint.read import os_reason, overlay, real_path

if TYPE_CHECKING:  # imported by the runs that fix, diff or add comments only
    from graphlint import fixer

EXIT_CLEAN, EXIT_FOUND = 0, 1
STDIN = Path("-")  # the path that reads the source from standard input

app = typer.Typer(
    name="graphlint",
    help="Find CUDA-graph capture hazards in PyTorch code.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


class ConfirmFormat(str, enum.Enum):
    """What ``confirm`` reports in: check's text, or its lsp JSON with verdicts."""

    TEXT = "text"
    LSP = "lsp"


class ColorMode(str, enum.Enum):
    AUTO = "auto"
    ALWAYS = "always"
    NEVER = "never"


class Verbosity(enum.IntEnum):
    """What ``check`` prints besides its exit code, least first."""

    SILENT = 0  # --silent, -qq: nothing (an error that stops the run still is)
    QUIET = 1  # -q: the report, without its summary; no warnings, no progress bar
    NORMAL = 2
    VERBOSE = 3  # -v: also what was checked and how long it took, on stderr


def fail(message: str) -> NoReturn:
    typer.echo(f"graphlint: error: {printable(message)}", err=True)
    raise typer.Exit(EXIT_ERROR)


def warn(message: str) -> None:
    typer.echo(f"graphlint: warning: {printable(message)}", err=True)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"graphlint {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Show the version."
        ),
    ] = False,
) -> None:
    """Find CUDA-graph capture hazards in PyTorch code.

    Run `graphlint check PATH...`; `graphlint rules` lists the codes and
    `graphlint explain CODE` prints a rule's documentation.
    """


def _use_color(mode: ColorMode) -> bool:
    if mode is ColorMode.ALWAYS:
        return True
    if mode is ColorMode.NEVER or os.environ.get("NO_COLOR"):
        return False
    return sys.stdout.isatty()


@app.command()
def check(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Files and folders to check (default: the current folder).",
            metavar="PATH",
            show_default=False,
            readable=False,  # an unreadable file is reported (GL004), not refused
        ),
    ] = None,
    select: Annotated[
        list[str] | None,
        typer.Option(
            "--select",
            metavar="CODES",
            help="Codes, prefixes or rule names to enable instead of the default "
            "set, such as GL1,GL201.",
        ),
    ] = None,
    extend_select: Annotated[
        list[str] | None,
        typer.Option(
            "--extend-select",
            metavar="CODES",
            help="Codes, prefixes or rule names to enable as well.",
        ),
    ] = None,
    ignore: Annotated[
        list[str] | None,
        typer.Option(
            "--ignore",
            metavar="CODES",
            help="Codes, prefixes or rule names to disable.",
        ),
    ] = None,
    extend_include: Annotated[
        list[str] | None,
        typer.Option(
            "--extend-include",
            metavar="PATTERNS",
            help="gitignore-style patterns of more files to check in folders, "
            "besides *.py and *.ipynb, such as *.pyw (added to extend-include in "
            "the configuration, relative to its folder).",
            show_default=False,
        ),
    ] = None,
    output_format: Annotated[
        OutputFormat,
        typer.Option(
            "--format",
            metavar="text|json|sarif|github|lsp",
            help="text for people; json (a flat list) for scripts; sarif for code "
            "scanning; github for workflow annotations; lsp for editors.",
        ),
    ] = OutputFormat.TEXT,
    output_file: Annotated[
        Path | None,
        typer.Option(
            "--output-file",
            "-o",
            metavar="FILE",
            help="Write the report to FILE (its folders are made) instead of "
            "standard output.",
            show_default=False,
        ),
    ] = None,
    statistics: Annotated[
        bool,
        typer.Option(
            "--statistics",
            help="Count the diagnostics per code instead of listing them (with "
            "--format text or json).",
        ),
    ] = False,
    config_file: Annotated[
        Path | None,
        typer.Option(
            "--config",
            metavar="FILE",
            help="A pyproject.toml (its [tool.graphlint]) or graphlint.toml to use "
            "for every file, instead of the closest configuration.",
        ),
    ] = None,
    exit_zero: Annotated[
        bool,
        typer.Option("--exit-zero", help="Exit 0 even when diagnostics are reported."),
    ] = False,
    fail_on: Annotated[
        FailOn | None,
        typer.Option(
            "--fail-on",
            metavar="error|warning|note",
            help="The least severe diagnostic that makes the exit code 1; the others "
            "are reported and pass (default: fail-on in the configuration, else note: "
            "any diagnostic).",
            show_default=False,
        ),
    ] = None,
    quiet: Annotated[
        int,
        typer.Option(
            "--quiet",
            "-q",
            count=True,
            metavar="",
            help="Print the report only: no summary line, warning or progress bar; "
            "-qq: as --silent.",
            show_default=False,
        ),
    ] = 0,
    silent: Annotated[
        bool,
        typer.Option(
            "--silent",
            help="Print nothing: the exit code says (an error that stops the run is "
            "still printed, and --output-file still written).",
        ),
    ] = False,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose",
            "-v",
            help="Also say on stderr what is checked: the configuration, the "
            "project, the files, the cache, and how long each phase took.",
        ),
    ] = False,
    apply_fixes: Annotated[
        bool,
        typer.Option(
            "--fix",
            help="Apply the safe fixes, then report what remains (with the path -, "
            "print the fixed source).",
            rich_help_panel="Fixes",
        ),
    ] = False,
    unsafe_fixes: Annotated[
        bool,
        typer.Option(
            "--unsafe-fixes",
            help="With --fix or --diff, apply the unsafe fixes too (they change "
            "behaviour in a way to check: each rule's page says how).",
            rich_help_panel="Fixes",
        ),
    ] = False,
    show_diff: Annotated[
        bool,
        typer.Option(
            "--diff",
            help="Print the fixes as a unified diff instead of writing them; exit 1 "
            "if there are any.",
            rich_help_panel="Fixes",
        ),
    ] = False,
    show_fixes: Annotated[
        bool,
        typer.Option(
            "--show-fixes",
            help="With --fix, list the diagnostics that were fixed.",
            rich_help_panel="Fixes",
        ),
    ] = False,
    add_noqa: Annotated[
        bool,
        typer.Option(
            "--add-noqa",
            help="Add a `# graphlint: ignore[CODE]` comment for every diagnostic "
            "reported (after --fix, for those that remain).",
            rich_help_panel="Fixes",
        ),
    ] = False,
    color: Annotated[
        ColorMode,
        typer.Option(
            "--color", metavar="auto|always|never", help="Colour text output."
        ),
    ] = ColorMode.AUTO,
    no_cache: Annotated[
        bool,
        typer.Option("--no-cache", help="Do not read or write the cache."),
    ] = False,
    cache_dir: Annotated[
        Path | None,
        typer.Option(
            "--cache-dir",
            metavar="DIR",
            help=f"Where to keep the cache (default: ${CACHE_ENV}, else the user's "
            "cache folder; never the checked tree).",
            show_default=False,
        ),
    ] = None,
    target_version: Annotated[
        str | None,
        typer.Option(
            "--target-version",
            metavar="3.N",
            help="The Python version the code is written for (default: "
            "target-version in the configuration, else this Python's).",
            show_default=False,
        ),
    ] = None,
    preview: Annotated[
        bool | None,
        typer.Option(
            "--preview/--no-preview",
            help="Follow code handed over to a capture elsewhere (a wrapper's stored "
            "callable, a factory's returned function): more found, not yet judged "
            "precise on every tree (default: preview in the configuration, else off).",
            show_default=False,
        ),
    ] = None,
    jobs: Annotated[
        int | None,
        typer.Option(
            "--jobs", "-j", min=1, metavar="N", help="Worker processes (default: CPUs)."
        ),
    ] = None,
    stdin_filename: Annotated[
        Path | None,
        typer.Option(
            "--stdin-filename",
            metavar="PATH",
            help="With the path -, read the source from standard input and check it "
            "as this file (its configuration, project and name).",
            show_default=False,
        ),
    ] = None,
    show_files: Annotated[
        bool,
        typer.Option(
            "--show-files", help="List the files that would be checked, and exit."
        ),
    ] = False,
    show_settings: Annotated[
        bool,
        typer.Option(
            "--show-settings",
            help="Print the configuration that governs the first path, and exit.",
        ),
    ] = False,
    force_exclude: Annotated[
        bool,
        typer.Option(
            "--force-exclude",
            help="Leave out a file or folder named on the command line that the "
            "configuration excludes (a pre-commit hook or an editor names every "
            "file; by default naming one checks it).",
        ),
    ] = False,
    alone: Annotated[
        bool,
        typer.Option(
            "--alone",
            help="Check the named files alone. By default, a file named inside a "
            "project (the configuration's folder, else the nearest one with a "
            "pyproject.toml, setup.py, setup.cfg or .git) is checked with the capture "
            "regions elsewhere in the project that reach it; only the named files' "
            "diagnostics are shown.",
        ),
    ] = False,
    show_reach: Annotated[
        bool,
        typer.Option(
            "--show-reach",
            help="Also list every capture region, the functions it reaches, and "
            "every call out of them that was not followed, with the reason (with "
            '--format lsp: an object, {"files": [...], "reach": {...}}).',
        ),
    ] = False,
    max_file_size: Annotated[
        str | None,
        typer.Option(
            "--max-file-size",
            metavar="BYTES",
            help="Report larger files (GL003) instead of analysing them, 1 to "
            f"{CEILINGS['max-file-size']} (default: ${LIMIT_ENV['max-file-size']}, "
            "the user configuration, else 1048576). Limits set here, in the "
            "environment, in the user configuration or in a --config file may "
            "raise graphlint's defaults; a repository's configuration only lowers "
            "them.",
            show_default=False,
        ),
    ] = None,
    timeout: Annotated[
        str | None,
        typer.Option(
            "--timeout",
            metavar="SECONDS",
            help="Seconds one file may take (more is GL005), above 0 and at most "
            f"{CEILINGS['timeout']} (default: ${LIMIT_ENV['timeout']}, the user "
            "configuration, else 60).",
            show_default=False,
        ),
    ] = None,
    max_memory: Annotated[
        str | None,
        typer.Option(
            "--max-memory",
            metavar="MIB",
            help="MiB one worker may use (more is GL005 for its file), 256 to "
            f"{CEILINGS['max-memory']} (default: ${LIMIT_ENV['max-memory']}, the "
            "user configuration, else 2048).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Check Python files for CUDA-graph capture hazards."""
    started = time.perf_counter()
    if statistics and output_format not in STATISTICS:
        fail(f"--statistics prints text or json, not {output_format.value}")
    voice = _voice(quiet, silent, verbose)

    def said(message: str) -> None:  # a warning, unless -q
        if voice >= Verbosity.NORMAL:
            warn(message)

    limits = _limits(
        {"max-file-size": max_file_size, "timeout": timeout, "max-memory": max_memory}
    )
    chosen = Choices(
        config_file,
        select,
        extend_select,
        ignore,
        target_version,
        alone,
        limits=limits,
        preview=preview,
        force_exclude=force_exclude,
        fail_on=fail_on,
        extend_include=extend_include,
    )
    targets = paths or [Path(".")]
    given: dict[str, bytes] = {}
    if STDIN in targets:
        name = stdin_filename if stdin_filename is not None else STDIN
        targets = [name if path == STDIN else path for path in targets]
        given[str(name)] = _read_stdin(chosen)
    elif stdin_filename is not None:
        fail("--stdin-filename names the source read from standard input: pass -")
    if show_files or show_settings:
        with overlay(given):
            _show(targets, show_settings, chosen, said)
        return
    fixing = apply_fixes or show_diff or add_noqa
    if unsafe_fixes and not (apply_fixes or show_diff):
        fail("--unsafe-fixes applies with --fix or --diff")
    if show_fixes and not apply_fixes:
        fail("--show-fixes lists what --fix fixed: pass --fix")
    if show_diff and (apply_fixes or add_noqa):
        fail(
            "--diff shows the fixes instead of applying them: not with --fix or "
            "--add-noqa"
        )
    if given and (apply_fixes or add_noqa) and len(targets) > 1:
        fail("--fix and --add-noqa print standard input's fixed text: pass - alone")
    timings: dict[str, float] = {}
    passes = 0
    drawn = progress_bar() if voice >= Verbosity.NORMAL else contextlib.nullcontext()
    with _interruptible(), overlay(given), drawn as progress:
        run = _plan(targets, chosen, said, cache_dir, not no_cache)
        timings["planning"] = time.perf_counter() - started
        if voice >= Verbosity.VERBOSE:
            _tell_plan(run, None if no_cache else cache_dir, no_cache)

        def once() -> Checked:
            nonlocal passes
            passes += 1
            return _lint(
                targets,
                warn=said,
                progress=progress,
                no_cache=no_cache,
                cache_dir=cache_dir,
                jobs=jobs,
                chosen=chosen,
                planned=run,
            )

        if not fixing:
            checked = once()
        else:
            from graphlint import fixer  # noqa: PLC0415

            done = fixer.fix(
                once, unsafe=unsafe_fixes, applying=apply_fixes or show_diff
            )
            checked = done.checked
    to_stderr = False
    if fixing:
        with _interruptible(), overlay(given):  # standard input's text, as read
            checked, to_stderr = _apply(
                done,
                once,
                given,
                diff=show_diff,
                noqa=add_noqa,
                listing=show_fixes,
                exit_zero=exit_zero,
                voice=voice,
            )
    timings["checking"] = time.perf_counter() - started - timings["planning"]
    results = checked.results
    if voice >= Verbosity.QUIET or output_file is not None:
        use_color = output_file is None and _use_color(color)
        text = _report(
            checked,
            output_format,
            use_color,
            statistics=statistics,
            show_reach=show_reach,
            summary=voice >= Verbosity.NORMAL,
        )
        if output_file is None:
            typer.echo(text, nl=False, color=use_color, err=to_stderr)
        else:
            _write(output_file, text)
    if voice >= Verbosity.VERBOSE:
        _tell_timings(timings, passes, time.perf_counter() - started)
    raise typer.Exit(_exit_code(results, run.config.fail_on, exit_zero))


def _voice(quiet: int, silent: bool, verbose: bool) -> Verbosity:
    """What ``-q``/``-qq``/``--silent``/``-v`` ask for (not both ways at once)."""
    if verbose and (quiet or silent):
        fail("--verbose says more, --quiet and --silent less: pass one of them")
    if silent or quiet >= 2:
        return Verbosity.SILENT
    if quiet:
        return Verbosity.QUIET
    return Verbosity.VERBOSE if verbose else Verbosity.NORMAL


def _exit_code(results: list[FileResult], fail_on: FailOn, exit_zero: bool) -> int:
    """2 where graphlint failed on a file; 1 where a diagnostic at least as severe
    as ``fail_on`` is reported (and not ``exit_zero``); else 0."""
    if any(r.internal_error for r in results):
        return EXIT_ERROR
    found = any(fail_on.fails(d.severity) for r in results for d in r.diagnostics)
    return EXIT_FOUND if found and not exit_zero else EXIT_CLEAN


def _report(
    checked: Checked,
    output_format: OutputFormat,
    use_color: bool,
    *,
    statistics: bool,
    show_reach: bool,
    summary: bool,
) -> str:
    """The report in ``output_format``; text's without its summary line where not
    ``summary`` (-q: the machine formats have none)."""
    results, survey = checked.results, checked.survey
    text_format = output_format is OutputFormat.TEXT
    if statistics and text_format:
        return statistics_text(results, survey, summary=summary)
    if statistics:
        return STATISTICS[output_format](results, survey)
    if text_format:
        return format_text(
            results, use_color, survey=survey, show_reach=show_reach, summary=summary
        )
    formatter = FORMATTERS[output_format]
    return formatter(results, use_color, survey=survey, show_reach=show_reach)


def _tell_plan(run: Plan, cache_dir: Path | None, no_cache: bool) -> None:
    """-v: what the run checks, and with what."""
    config = run.config
    source = config.source if config.source is not None else "none (the defaults)"
    project = run.project if run.project is not None else "none (paths alone)"
    shown, analysed = len(run.shown), len(run.analysed)
    files = f"{shown} to report on" + (
        f", {analysed} analysed (the project)" if analysed != shown else ""
    )
    try:
        used = "off (--no-cache)" if no_cache else str(cache_of(run, cache_dir).project)
    except LintError as error:
        fail(str(error))
    for line in (
        f"configuration: {source}",
        f"project: {project}",
        f"files: {files}",
        f"cache: {used}",
        f"fail-on: {config.fail_on.value}",
    ):
        typer.echo(f"graphlint: {printable(line)}", err=True)


def _tell_timings(timings: dict[str, float], passes: int, total: float) -> None:
    """-v: how long the run took, by phase (``checking``: each pass of the
    analysis, with the fixes applied between them)."""
    timings["reporting"] = total - sum(timings.values())
    phases = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in timings.items())
    again = f" ({passes} passes)" if passes > 1 else ""
    typer.echo(f"graphlint: took {total:.2f} s: {phases}{again}", err=True)


def _apply(
    done: fixer.Fixing,
    once: Callable[[], Checked],
    given: dict[str, bytes],
    *,
    diff: bool,
    noqa: bool,
    listing: bool,
    exit_zero: bool,
    voice: Verbosity,
) -> tuple[Checked, bool]:
    """What ``--diff``, ``--add-noqa`` and ``--fix`` do once the fixer has run (in
    the overlay of standard input's text): the diff and its exit; the comments
    and their count; the files written (the findings then read again from disk
    where one was not). The findings to report, and whether the report goes to
    stderr (stdout holds standard input's fixed text). The counts and warnings
    are not said with -q, the diff not with --silent."""
    from graphlint import fixer  # noqa: PLC0415

    talk = voice >= Verbosity.NORMAL

    def echo(text: str, err: bool = True) -> None:
        if talk:
            typer.echo(text, nl=False, err=err)

    if diff:
        if voice >= Verbosity.QUIET:
            _echo(fixer.diff(done.changed))
        if talk:
            warn_each(done.problems)
            _notebooks_untouched(done, noqa=False)
        echo(_fix_summary(done, would=True))
        raise typer.Exit(EXIT_FOUND if done.changed and not exit_zero else EXIT_CLEAN)
    if noqa:
        added, skipped = fixer.suppress(done.sources, done.remaining(), read_more=True)
        unwritten = _save(done, given, talk)
        if talk:
            _notebooks_untouched(done, noqa=True)
        count = sum(n for path, n in added.items() if path not in unwritten)
        if done.fixed:
            echo(_fix_summary(done))
        if skipped and talk:
            warn(
                f"{skipped} finding{'s' * (skipped != 1)} left without a comment: "
                "the line goes on with a backslash or inside a string"
            )
        echo(f"Added {count} suppression comment{'s' * (count != 1)}.\n", bool(given))
        raise typer.Exit(EXIT_CLEAN)
    checked = done.checked
    unwritten = _save(done, given, talk)
    if talk:
        _notebooks_untouched(done, noqa=False)
    if unwritten:  # report the files as they are on disk
        checked = once()
    if listing or done.fixed:
        lines = _fix_listing(done) if listing else []
        echo("".join(lines) + _fix_summary(done))
    return checked, bool(given)


def _notebooks_untouched(done: fixer.Fixing, *, noqa: bool) -> None:
    """Warn about each notebook with findings: fixes and suppression comments are
    not written into notebooks (they are left as they are)."""
    from graphlint import fixer  # noqa: PLC0415

    for path, count in sorted(fixer.untouched(done.remaining()).items()):
        findings = f"{count} finding{'s' * (count != 1)} there"
        if noqa:
            warn(
                f"{path}: no suppression comments added: graphlint does not change "
                f"notebooks ({findings}); write `# graphlint: ignore[CODE]` in the "
                "cells"
            )
        else:
            warn(
                f"{path}: not fixed: graphlint does not change notebooks "
                f"({findings}); fix them in the notebook"
            )


def _save(done: fixer.Fixing, given: dict[str, bytes], talk: bool) -> set[str]:
    """Write the fixed files (warning about each one that could not be, when
    ``talk``), or, for standard input, print its fixed text; the files not
    written."""
    if talk:
        warn_each(done.problems)
    if given:
        for name, data in given.items():
            source = done.sources.get(name)
            sys.stdout.buffer.write(source.data if source is not None else data)
        sys.stdout.buffer.flush()
        return set()
    from graphlint import fixer  # noqa: PLC0415

    unwritten: set[str] = set()
    for source in done.changed:
        why = fixer.write(source)
        if why is not None:
            if talk:
                warn(f"{printable(source.path)}: {why}")
            done.fixed = [f for f in done.fixed if f.path != source.path]
            unwritten.add(source.path)
    return unwritten


def _fix_listing(done: fixer.Fixing) -> list[str]:
    """``--show-fixes``: what was fixed, by file."""
    lines: list[str] = []
    for path in sorted({f.path for f in done.fixed}):
        lines.append(f"Fixed in {shown_path(path)}:\n")
        for f in sorted(
            (f for f in done.fixed if f.path == path), key=lambda f: (f.line, f.col)
        ):
            kind = " (unsafe)" if f.applicability is Applicability.UNSAFE else ""
            lines.append(
                f"  {f.line}:{f.col + 1} {f.code}{kind} {printable(f.message)}\n"
            )
    return lines


def _fix_summary(done: fixer.Fixing, would: bool = False) -> str:
    count = len(done.fixed)
    files = len({f.path for f in done.fixed})
    verb = "Would fix" if would else "Fixed"
    return (
        f"{verb} {count} diagnostic{'s' * (count != 1)} in "
        f"{files} file{'s' * (files != 1)}.\n"
    )


def warn_each(messages: Iterable[str]) -> None:
    for message in messages:
        warn(printable(message))


def _echo(text: str) -> None:
    typer.echo(text, nl=False)


def _limits(given: dict[str, str | None]) -> tuple[tuple[str, float], ...]:
    """The limits given on the command line, checked as a configuration's are."""
    try:
        return tuple(
            (key, parse_limit(key, text, f"--{key}"))
            for key, text in given.items()
            if text is not None
        )
    except ConfigError as error:
        fail(str(error))


def _read_stdin(chosen: Choices) -> bytes:
    """Standard input, up to one byte more than a run can check: more is GL003,
    as for a file on disk, and an endless stream is not read to its end."""
    try:
        limit = stdin_limit(chosen)
    except LintError as error:
        fail(str(error))
    return sys.stdin.buffer.read(limit + 1)


def _lint(
    targets: list[Path], warn: Callable[[str], None] = warn, **options: Any
) -> Checked:
    """``lint``, with bad input as one error line and exit code 2."""
    try:
        return lint(targets, warn=warn, **options)
    except LintError as error:
        fail(str(error))


def _plan(
    targets: list[Path],
    chosen: Choices,
    warn: Callable[[str], None] = warn,
    cache_dir: Path | None = None,
    keep_listings: bool = False,
) -> Plan:
    """``plan``, with bad input as one error line and exit code 2."""
    try:
        return plan(
            targets, chosen, warn, cache_dir=cache_dir, keep_listings=keep_listings
        )
    except LintError as error:
        fail(str(error))


def _show(
    targets: list[Path], settings: bool, chosen: Choices, warn: Callable[[str], None]
) -> None:
    """--show-files: the files a check would report on, one a line; --show-settings:
    the configuration of the first of them (or of the run, for a folder)."""
    run = _plan(targets, chosen, warn)
    if not settings:
        for path in run.shown:
            typer.echo(shown_path(str(path)))
        return
    first = run.shown[0] if run.shown and not targets[0].is_dir() else None
    config = run.governing.get(first, run.config) if first is not None else run.config
    for line in describe(config, first, run.project, run.config):
        typer.echo(printable(line))


def _write(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as error:
        fail(f"cannot write {path}: {os_reason(error)}")


@app.command()
def clean(
    path: Annotated[
        Path | None,
        typer.Argument(
            help="A file or folder whose configuration names the project whose "
            "cache to remove (default: the current folder); without a "
            "configuration, the cache is the one checks run from here use.",
            metavar="PATH",
            show_default=False,
        ),
    ] = None,
    every: Annotated[
        bool,
        typer.Option("--all", help="Remove the cache of every project."),
    ] = False,
    cache_dir: Annotated[
        Path | None,
        typer.Option(
            "--cache-dir",
            metavar="DIR",
            help=f"The cache folder (default: ${CACHE_ENV}, else the user's cache "
            "folder).",
            show_default=False,
        ),
    ] = None,
    config_file: Annotated[
        Path | None,
        typer.Option(
            "--config",
            metavar="FILE",
            help="The configuration `check --config FILE` uses: its folder is the "
            "project.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Remove the project's cache, or every project's (--all).

    The project is the folder of the configuration, else the current folder, as
    `check` keys its cache. Only what graphlint writes is removed; a folder that
    does not look like its cache (a link, a name it does not write) is refused,
    and nothing removed.
    """
    base = Path(os.path.realpath(cache_dir or cache.default_base()))
    if every and (path is not None or config_file is not None):
        fail("--all removes every project's cache: pass no PATH or --config")
    try:
        if every:
            removed = cache.clean_all(base)
        else:
            root = cache_root(path or Path("."), config_file)
            folder = cache.project_folder(root, base)
            removed = cache.clean_project(folder)
    except (LintError, cache.CacheError) as error:
        fail(str(error))
    except OSError as error:
        fail(f"cannot clean the cache in {base}: {os_reason(error)}")
    if every and not removed:
        typer.echo(printable(f"No cache to remove in {base}."))
    elif every and removed:
        count = f"{removed.projects} project{'s' * (removed.projects != 1)}"
        typer.echo(
            printable(f"Removed the caches of {count} in {base}: {_weight(removed)}.")
        )
    elif not removed:
        typer.echo(printable(f"No cache to remove for {root} ({folder})."))
    else:
        typer.echo(
            printable(f"Removed the cache of {root}: {_weight(removed)} ({folder}).")
        )


def _weight(removed: cache.Removed) -> str:
    """``650 files, 5.7 MiB``."""
    files = f"{removed.files:,} file{'s' * (removed.files != 1)}"
    return f"{files}, {_size(removed.size)}"


def _size(count: int) -> str:
    """``512 bytes``, ``4.1 MiB``."""
    if count < 1024:
        return f"{count} byte{'s' * (count != 1)}"
    value = float(count)
    for unit in ("KiB", "MiB", "GiB"):
        value /= 1024
        if value < 1024 or unit == "GiB":
            break
    return f"{value:.1f} {unit}"


@app.command()
def server() -> None:
    """Run the language server over stdin and stdout (LSP), for editors."""
    from graphlint import entry  # noqa: PLC0415

    entry.server()


@app.command()
def rules() -> None:
    """List every code with its name, whether it is on by default, a summary, and
    whether it has a fix."""
    for code, found in CODES.items():
        default = " " if found.default else "*"
        fix = {"safe": " [fix]", "unsafe": " [unsafe fix]"}.get(found.fix or "", "")
        typer.echo(f"{code}{default} {found.name:<34} {found.summary}{fix}")
    typer.echo(
        "\n* off by default: enable with --select/--extend-select"
        "\n[fix]: check --fix applies it; [unsafe fix]: check --fix --unsafe-fixes"
    )


@app.command()
def explain(
    rule: Annotated[
        str, typer.Argument(help="A code or a rule's name: GL101, device-to-host-copy.")
    ],
) -> None:
    """Print a rule's documentation (rendered on a terminal, Markdown otherwise)."""
    code = _code_of(rule)
    path = doc_path(code)
    if path is None:
        found = CODES[code]
        typer.echo(f"{code} {found.name}: {found.summary}")
        return
    text = path.read_text(encoding="utf-8")
    if not sys.stdout.isatty():
        typer.echo(text, nl=False)
        return
    from rich.console import Console  # noqa: PLC0415 - only for a terminal
    from rich.markdown import Markdown  # noqa: PLC0415

    Console().print(Markdown(text))


def _code_of(rule: str) -> str:
    """The code a rule is named by: its code in any case, or its name."""
    code = code_of(rule)
    if code not in CODES:
        fail(f"unknown rule {rule!r}; run `graphlint rules` for the list")
    return code


@app.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True}
)
def confirm(
    ctx: typer.Context,
    script: Annotated[Path, typer.Argument(help="The Python script to run.")],
    warmup: Annotated[
        int, typer.Option(min=1, help="Warm-up calls on a side stream before capture.")
    ] = 3,
    atol: Annotated[
        float, typer.Option(min=0, help="Absolute tolerance, replay vs eager.")
    ] = 1e-5,
    rtol: Annotated[
        float, typer.Option(min=0, help="Relative tolerance, replay vs eager.")
    ] = 1e-4,
    compare: Annotated[
        int,
        typer.Option(min=0, help="Calls or replays compared with eager, per region."),
    ] = 10,
    timeout: Annotated[
        float | None,
        typer.Option(
            min=1,
            metavar="SECONDS",
            help="Seconds each run of the script may take (the survey, each "
            "region's run, each variant's): a run that takes longer is stopped, "
            "with every process it started, and the report says so. Default: no "
            "limit.",
            show_default=False,
        ),
    ] = None,
    variants: Annotated[
        int,
        typer.Option(
            min=0,
            help="Runs again after an explained failure, each with the failing "
            "statement moved out of the capture (or the capture warmed up), so "
            "the findings behind it get a verdict too.",
        ),
    ] = 20,
    output_format: Annotated[
        ConfirmFormat,
        typer.Option(
            "--format",
            metavar="text|lsp",
            help="text for people; lsp: check's JSON with data.runtime.",
        ),
    ] = ConfirmFormat.TEXT,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No progress lines on stderr.")
    ] = False,
) -> None:
    """Run SCRIPT [-- ARGS] and capture its regions on the GPU for real.

    Functions and blocks marked with graphlint.capture_region are warmed up,
    captured and replayed on the live inputs, and each replay is compared with
    eager execution; the program's own torch.cuda.graph blocks and
    make_graphed_callables calls are observed. The script runs once to survey,
    then once per region, each in a fresh process; after an explained failure,
    again with the failing statement moved out of the capture (--variants). The
    report merges the verdicts with `graphlint check`'s findings for the same files:
    confirmed, not reproduced, not executed, no verdict, and failures no rule
    predicted (missed).
    Exit 1 when a capture failed, a replay was wrong or a failure was missed.
    Needs torch-graphlint[runtime] and a CUDA GPU.
    """
    from graphlint.runtime import confirm as runtime  # noqa: PLC0415
    from graphlint.runtime import report, uncalled  # noqa: PLC0415

    if not script.is_file():
        fail(f"no such file: {script}")
    try:
        device = runtime.require_cuda()
    except runtime.ConfirmError as error:
        fail(str(error))
    settings = {
        "warmup": warmup,
        "atol": atol,
        "rtol": rtol,
        "compare": compare,
        # functions holding a region, called on stand-ins if the program never does
        "drive": uncalled.targets(_lint([script]).results, script),
    }
    explain = report.Explainer(lambda paths: _lint(paths).results)
    trials, runs = runtime.run_all(
        script,
        list(ctx.args),
        settings,
        timeout,
        progress=(lambda line: None)
        if quiet
        else (lambda line: typer.echo(f"graphlint confirm: {line}", err=True)),
        explain=explain,
        variants=variants,
    )
    places = [
        Path(path)
        for trial in trials
        for site in trial.sites
        for path in (site.path, site.error_path)
        if path is not None
    ]
    files = [script, *(path for path in places if path.is_file())]
    unique = list({real_path(path): path for path in files}.values())
    results = _lint(unique).results
    merged = report.merge(results, trials, device=device, runs=runs, script=str(script))
    typer.echo(report.FORMATTERS[output_format.value](merged), nl=False)
    raise typer.Exit(EXIT_FOUND if merged.failed else EXIT_CLEAN)


def main() -> None:
    """Console entry point: never a traceback, exit 2 on an internal failure."""
    guarded(app)


@contextlib.contextmanager
def _interruptible() -> Iterator[None]:
    """Ctrl-C inside a command: one line and exit 130 (click would print "Aborted!"
    and exit 1); the workers ignore SIGINT and are killed by the pool."""
    try:
        yield
    except KeyboardInterrupt:
        interrupted()
