"""Lint one file: read, decode, pre-screen with CPython, parse once, run rules.

Every file gets a defined outcome. Reading and parsing problems become GL0xx
diagnostics; a bug in graphlint propagates from here (tests see it) and is turned into
GL009 by the worker that runs the file (``graphlint.runner``).
"""

from __future__ import annotations

import ast
import io
import os
import re
import stat
import tokenize
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from graphlint.comments import scan
from graphlint.diagnostics import Confidence, Diagnostic, FileResult, RegionKind
from graphlint.facts import FileFacts, Region, analyse
from graphlint.facts.names import dotted
from graphlint.project.reach import Entry, Reached
from graphlint.rule import Check, RuleContext, all_checks, tree_rules
from graphlint.rules.tool.file_checks import (
    EmptyFile,
    OversizedFile,
    ParserLimitExceeded,
    UndecodableFile,
    UnparsableFile,
    UnreadableFile,
)

DEFAULT_MAX_FILE_SIZE = 1_048_576  # LibCST took 40 s and 4.8 GB on a 5 MB file
DEFAULT_TIMEOUT = 60.0

# Text that every capture region needs somewhere in its file (torch.cuda.graph, an
# import of it under another name, x.graph(...), capture_begin, make_graphed_callables,
# a CUDA-graph compile mode, a marker); ``fx``'s ``.graph`` attributes do not match;
# files without any are clean once they compile, so they are never handed to LibCST.
_CANDIDATE = re.compile(
    r"cuda\.graph\b|\bimport\b[^\n]*\bgraph\b|\.graph\(|capture_begin"
    r"|make_graphed_callables|graphlint|reduce-overhead|max-autotune"
    r"|triton\.cudagraphs"
)


@dataclass(frozen=True)
class Settings:
    """What the engine needs from the configuration."""

    enabled: frozenset[str] = field(
        default_factory=lambda: frozenset(
            code for code, check in all_checks().items() if check.default_enabled
        )
    )
    markers: frozenset[str] = frozenset()
    max_file_size: int = DEFAULT_MAX_FILE_SIZE
    timeout: float = DEFAULT_TIMEOUT


def lint_source(
    source: str,
    path: str = "<string>",
    settings: Settings | None = None,
    *,
    package: str | None = None,
) -> list[Diagnostic]:
    """Run the enabled rules on source that CPython compiles. Bugs raise."""
    return analyse_source(source, path, settings, package=package).diagnostics


@dataclass(frozen=True)
class Analysis:
    """What one LibCST pass over a file yields: its diagnostics, the calls its regions
    make (for the project pass) and the functions that are regions themselves."""

    diagnostics: list[Diagnostic]
    entries: list[Entry]
    roots: list[str]


def analyse_source(
    source: str,
    path: str = "<string>",
    settings: Settings | None = None,
    *,
    package: str | None = None,
    module_name: str = "",
    external: Mapping[str, Reached] | None = None,
    checks: frozenset[str] = frozenset(),
) -> Analysis:
    """Lint ``source``; ``external`` names functions that regions elsewhere reach."""
    settings = settings or Settings()
    comments = scan(source)
    module = cst.parse_module(source)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    facts = analyse(
        module,
        positions,
        pragmas=comments.pragmas,
        markers=settings.markers,
        package=package,
        external={fn: _region(how) for fn, how in (external or {}).items()},
        checks=checks,
    )
    context = RuleContext(path, facts, positions, comments.suppressed)
    rules = [rule(context) for rule in tree_rules() if rule.code in settings.enabled]
    if rules and facts.captures:
        cst.visit_batched(module, rules)
    diagnostics = sorted(context.diagnostics, key=lambda d: d.sort_key)
    if external is not None:  # the project pass keeps what the reached code adds
        return Analysis([d for d in diagnostics if d.region and d.region.via], [], [])
    # calls made under capture, and graphed or compiled targets defined elsewhere
    calls = [
        (node, node.func, region)
        for node, region in facts.regions.items()
        if isinstance(node, cst.Call) and not region.via
    ]
    entries = [
        Entry(
            path,
            module_name,
            _function_path(facts, call),
            positions[call].start.line,
            positions[call].start.column,
            callee,
            region.kind.value,
            region.label,
            region.line,
        )
        for call, target, region in [*calls, *facts.unresolved]
        if (callee := dotted(target)) is not None
    ]
    roots = [
        facts.paths[region.root]
        for region in facts.all_regions()
        if isinstance(region.root, cst.FunctionDef) and region.root in facts.paths
    ]
    return Analysis(diagnostics, entries, roots)


def _function_path(facts: FileFacts, node: cst.CSTNode) -> str | None:
    scope = facts.values.scope_of.get(node)
    while scope is not None:
        if isinstance(scope.node, cst.FunctionDef):
            return facts.paths.get(scope.node)
        scope = scope.parent
    return None


def _region(how: Reached) -> Region:
    return Region(
        RegionKind(how.kind),
        how.region_line,
        how.label,
        origin=how.region_path,
        via=how.via,
    )


def tool_diagnostic(
    check: type[Check], path: str, line: int = 1, col: int = 0, **fmt: object
) -> Diagnostic:
    """A GL0xx diagnostic: a file-level outcome with no region."""
    assert check.severity is not None
    return Diagnostic(
        path=path,
        code=check.code,
        name=check.name,
        message=check.message.format(**fmt),
        line=max(line, 1),
        col=max(col, 0),
        end_line=max(line, 1),
        end_col=max(col, 0),
        severity=check.severity,
        confidence=Confidence.HIGH,
        outcome=check.outcome,
        fix_hint=check.fix_title,
    )


@dataclass(frozen=True)
class Job:
    """One file for a worker: pass one (``external`` None) or the project pass, which
    analyses the functions regions elsewhere reach."""

    path: Path
    external: Mapping[str, Reached] | None = None
    checks: frozenset[str] = frozenset()


def check_file(path: Path | Job, settings: Settings) -> FileResult:
    """Lint one file from disk; every problem with the file becomes a diagnostic."""
    job = path if isinstance(path, Job) else Job(path)
    display = str(job.path)
    found = _check_file(job, display, settings)
    if isinstance(found, Analysis):
        kept = tuple(d for d in found.diagnostics if d.code in settings.enabled)
        return FileResult(
            display, kept, entries=tuple(found.entries), roots=tuple(found.roots)
        )
    if job.external is not None:  # reading problems were reported by pass one
        return FileResult(display, ())
    return FileResult(display, tuple(d for d in found if d.code in settings.enabled))


def _check_file(
    job: Job, display: str, settings: Settings
) -> list[Diagnostic] | Analysis:
    path = job.path
    try:
        info = os.stat(path)
    except OSError as error:
        return [tool_diagnostic(UnreadableFile, display, detail=_os_reason(error))]
    if not stat.S_ISREG(info.st_mode):
        return [
            tool_diagnostic(UnreadableFile, display, detail=_file_type(info.st_mode))
        ]
    if info.st_size > settings.max_file_size:
        return [
            tool_diagnostic(
                OversizedFile, display, size=info.st_size, limit=settings.max_file_size
            )
        ]
    try:
        with open(path, "rb") as handle:
            data = handle.read(settings.max_file_size + 1)
    except OSError as error:
        return [tool_diagnostic(UnreadableFile, display, detail=_os_reason(error))]
    if not data.strip():
        return (
            [] if path.name == "__init__.py" else [tool_diagnostic(EmptyFile, display)]
        )
    decoded = decode(data, display)
    if isinstance(decoded, Diagnostic):
        return [decoded]
    problem = prescreen(decoded, display)
    if problem is not None:
        return [problem]
    if (
        job.external is None
        and not _CANDIDATE.search(decoded)
        and not _has_marker(decoded, settings.markers)
    ):
        return []
    try:
        return analyse_source(
            decoded,
            display,
            settings,
            package=package_of(path),
            module_name=module_of(path),
            external=job.external,
            checks=job.checks,
        )
    except cst.ParserSyntaxError as error:
        detail = f"LibCST cannot parse code that CPython accepts ({error.message})"
        return [tool_diagnostic(ParserLimitExceeded, display, detail=detail)]
    except RecursionError:
        detail = "nested too deeply for the syntax-tree analysis"
        return [tool_diagnostic(ParserLimitExceeded, display, detail=detail)]


def decode(data: bytes, path: str) -> str | Diagnostic:
    """Decode source bytes as CPython does (PEP 263 cookie, BOM), or say why not."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:
        return tool_diagnostic(UndecodableFile, path, detail=str(error))
    try:
        text = data.decode(encoding)
    except LookupError:
        return tool_diagnostic(
            UndecodableFile, path, detail=f"unknown encoding {encoding!r}"
        )
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        column = error.start - (data.rfind(b"\n", 0, error.start) + 1)
        detail = f"invalid {encoding} byte {data[error.start]:#04x} at line {line}"
        return tool_diagnostic(UndecodableFile, path, line, column, detail=detail)
    return text[1:] if text.startswith("\ufeff") else text


def prescreen(source: str, display: str) -> Diagnostic | None:
    """Compile with CPython first: its errors and positions are the reliable ones, and
    it rejects the nesting depths at which LibCST recurses away or crashes."""
    try:
        compile(source, display, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as error:
        detail = f"{error.msg} (line {error.lineno})" if error.lineno else error.msg
        return tool_diagnostic(
            UnparsableFile,
            display,
            error.lineno or 1,
            (error.offset or 1) - 1,
            detail=detail,
        )
    except (RecursionError, MemoryError):
        detail = "nested too deeply for CPython's parser"
        return tool_diagnostic(ParserLimitExceeded, display, detail=detail)
    except ValueError as error:  # e.g. null bytes, before Python 3.12
        return tool_diagnostic(UnparsableFile, display, detail=str(error))
    return None


def module_of(path: Path) -> str:
    """The dotted module name of a file: its package and its stem."""
    package = package_of(path)
    if path.name == "__init__.py":
        return package or path.resolve().parent.name
    return f"{package}.{path.stem}" if package else path.stem


def package_of(path: Path) -> str | None:
    """The dotted package a file belongs to, from the ``__init__.py`` files above it."""
    parts: list[str] = []
    folder = path.resolve().parent
    while (folder / "__init__.py").is_file() and folder.parent != folder:
        parts.append(folder.name)
        folder = folder.parent
    return ".".join(reversed(parts)) or None


def _has_marker(source: str, markers: frozenset[str]) -> bool:
    return any(m.rsplit(".", 1)[-1] in source for m in markers)


def _os_reason(error: OSError) -> str:
    return error.strerror or type(error).__name__


def _file_type(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return f"not a regular file ({name})"
    return "not a regular file"
