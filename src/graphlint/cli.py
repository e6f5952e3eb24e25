"""The ``graphlint`` command: check, rules, explain.

Exit codes: 0 clean, 1 diagnostics reported, 2 usage, configuration or internal error.
"""

from __future__ import annotations

import enum
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from graphlint import __version__
from graphlint.config import Config, ConfigError, find, load, split_codes
from graphlint.docs import doc_path
from graphlint.files import MissingPathError, collect
from graphlint.gitignore import IgnoreFile
from graphlint.output import FORMATTERS, OutputFormat
from graphlint.project.check import check_project
from graphlint.rule import all_checks

CACHE_DIR = ".graphlint_cache"

EXIT_CLEAN, EXIT_FOUND, EXIT_ERROR = 0, 1, 2

app = typer.Typer(
    name="graphlint",
    help="Find CUDA-graph capture hazards in PyTorch code.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


class ColorMode(str, enum.Enum):
    AUTO = "auto"
    ALWAYS = "always"
    NEVER = "never"


def fail(message: str) -> NoReturn:
    typer.echo(f"graphlint: error: {message}", err=True)
    raise typer.Exit(EXIT_ERROR)


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


def _display(path: Path, cwd: Path) -> Path:
    """Paths under the working directory are shown relative to it."""
    try:
        return path.resolve().relative_to(cwd)
    except ValueError:
        return path


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
        ),
    ] = None,
    select: Annotated[
        list[str] | None,
        typer.Option(
            "--select",
            metavar="CODES",
            help="Codes or prefixes to enable, replacing the defaults (GL1,GL201).",
        ),
    ] = None,
    extend_select: Annotated[
        list[str] | None,
        typer.Option(
            "--extend-select",
            metavar="CODES",
            help="Codes or prefixes to enable as well.",
        ),
    ] = None,
    ignore: Annotated[
        list[str] | None,
        typer.Option("--ignore", metavar="CODES", help="Codes or prefixes to disable."),
    ] = None,
    output_format: Annotated[
        OutputFormat,
        typer.Option(
            "--format",
            metavar="text|lsp",
            help="text for people, lsp for editors and tools.",
        ),
    ] = OutputFormat.TEXT,
    config_file: Annotated[
        Path | None,
        typer.Option(
            "--config",
            metavar="FILE",
            help="A pyproject.toml (its [tool.graphlint]) or graphlint.toml to use "
            "instead of the nearest pyproject.toml.",
        ),
    ] = None,
    exit_zero: Annotated[
        bool,
        typer.Option("--exit-zero", help="Exit 0 even when diagnostics are reported."),
    ] = False,
    color: Annotated[
        ColorMode,
        typer.Option(
            "--color", metavar="auto|always|never", help="Colour text output."
        ),
    ] = ColorMode.AUTO,
    no_cache: Annotated[
        bool,
        typer.Option(
            "--no-cache",
            help=f"Do not read or write the summary cache ({CACHE_DIR}/ in the "
            "project root).",
        ),
    ] = False,
    jobs: Annotated[
        int | None,
        typer.Option(
            "--jobs", "-j", min=1, metavar="N", help="Worker processes (default: CPUs)."
        ),
    ] = None,
) -> None:
    """Check Python files for CUDA-graph capture hazards."""
    cwd = Path.cwd().resolve()
    targets = paths or [Path(".")]
    try:
        source = config_file if config_file is not None else find(targets[0])
        if config_file is not None and not config_file.is_file():
            fail(f"config file not found: {config_file}")
        config = load(source, cwd)
        config = _with_flags(config, select, extend_select, ignore)
        settings = config.settings()
    except ConfigError as error:
        fail(str(error))
    excludes = IgnoreFile(config.root, list(config.exclude)) if config.exclude else None
    try:
        files = collect(targets, excludes)
    except MissingPathError as error:
        fail(f"no such file or directory: {error}")
    shown = [_display(f, cwd) for f in files]
    results = check_project(
        shown,
        settings,
        jobs,
        roots=config.source_roots,
        eager=frozenset(config.eager_functions),
        cache_dir=None if no_cache else config.root / CACHE_DIR,
        excluded=(lambda path: excludes.excludes(path.resolve()))
        if excludes is not None
        else (lambda path: False),
        display=lambda path: str(_display(path, cwd)),
    )
    formatter = FORMATTERS[output_format]
    use_color = _use_color(color)
    typer.echo(formatter(results, use_color), nl=False, color=use_color)
    if any(r.internal_error for r in results):
        raise typer.Exit(EXIT_ERROR)
    found = any(r.diagnostics for r in results)
    raise typer.Exit(EXIT_FOUND if found and not exit_zero else EXIT_CLEAN)


def _with_flags(
    config: Config,
    select: list[str] | None,
    extend_select: list[str] | None,
    ignore: list[str] | None,
) -> Config:
    return replace(
        config,
        select=split_codes(select) if select else config.select,
        extend_select=(*config.extend_select, *split_codes(extend_select or [])),
        ignore=(*config.ignore, *split_codes(ignore or [])),
    )


@app.command()
def rules() -> None:
    """List every code with its name, whether it is on by default, and a summary."""
    for code, check_cls in all_checks().items():
        default = " " if check_cls.default_enabled else "*"
        typer.echo(f"{code}{default} {check_cls.name:<34} {check_cls.summary()}")
    typer.echo("\n* off by default: enable with --select/--extend-select")


@app.command()
def explain(
    code: Annotated[str, typer.Argument(help="A code such as GL101.")],
) -> None:
    """Print a rule's documentation."""
    code = code.strip().upper()
    check_cls = all_checks().get(code)
    if check_cls is None:
        fail(f"unknown code {code!r}; run `graphlint rules` for the list")
    path = doc_path(code)
    if path is None:
        typer.echo(f"{code} {check_cls.name}: {check_cls.summary()}")
        return
    typer.echo(path.read_text(encoding="utf-8"), nl=False)


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
        float, typer.Option(help="Absolute tolerance, replay vs eager.")
    ] = 1e-5,
    rtol: Annotated[
        float, typer.Option(help="Relative tolerance, replay vs eager.")
    ] = 1e-4,
) -> None:
    """Run SCRIPT [-- ARGS] with each function marked @graphlint.capture_region
    captured on the GPU: capture errors, replays that differ from eager, speed-up.
    Needs torch-graphlint[runtime] and a CUDA GPU."""
    from graphlint.runtime import confirm as runtime  # noqa: PLC0415
    from graphlint.runtime import session  # noqa: PLC0415

    session.SETTINGS.update(warmup=warmup, atol=atol, rtol=rtol)
    if not script.is_file():
        fail(f"no such file: {script}")
    try:
        device = runtime.require_cuda()
        ended = runtime.run_script(script, list(ctx.args))
    except runtime.ConfirmError as error:
        fail(str(error))
    text, failed = runtime.report(device, ended)
    typer.echo(text, nl=False)
    raise typer.Exit(EXIT_FOUND if failed else EXIT_CLEAN)


def main() -> None:
    """Console entry point: never a traceback, exit 2 on an internal failure."""
    try:
        app()
    except SystemExit:
        raise
    except KeyboardInterrupt:
        typer.echo("graphlint: interrupted", err=True)
        sys.exit(130)
    except Exception as error:  # a bug: say so in one line, exit 2
        typer.echo(
            f"graphlint: internal error: {type(error).__name__}: {error}", err=True
        )
        sys.exit(EXIT_ERROR)
