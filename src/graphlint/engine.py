"""Lint one file: read, decode, pre-screen with CPython, parse once, run rules.

Every file gets a defined outcome. Reading and parsing problems become GL0xx
diagnostics; a bug in graphlint propagates from here (tests see it) and is turned into
GL009 by the worker that runs the file (``graphlint.runner``).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import libcst as cst
from libcst.metadata import CodeRange

from graphlint.candidates import (
    may_capture,
)
from graphlint.columns import placed
from graphlint.comments import scan, unknown_suppressions
from graphlint.diagnostics import (
    CompileSite,
    Diagnostic,
    Entry,
    FileResult,
    RegionRef,
    Suppression,
    WarmupVerdict,
    shorten,
)
from graphlint.facts import reaching
from graphlint.facts.analysis import FileFacts, TreeFacts, analyse
from graphlint.facts.positions import Anchor, anchors, anchors_of, positions_of
from graphlint.facts.region import Region
from graphlint.facts.syntax import dotted, source
from graphlint.facts.values import tensor_slots
from graphlint.facts.walk import Kids, forget, listed
from graphlint.library import library_of
from graphlint.parsing import cuts, parse_module
from graphlint.project.sites import compile_sites
from graphlint.read import (
    deep_outcome,
    keep_trees,
    module_of,
    package_of,
    prescreen,
    read_text,
    skip_statements,
    skipped_note,
    source_of,
    too_deep,
    tool_diagnostic,
)
from graphlint.reparse import Pieces
from graphlint.rule import RuleContext, replay_rules, rule_sites, tree_rules
from graphlint.settings import Job, Setter, Settings
from graphlint.sparse import function_spans, sparse_source
from graphlint.tool_codes import ParserLimitExceeded


def lint_source(
    source: str,
    path: str = "<string>",
    settings: Settings | None = None,
) -> list[Diagnostic]:
    """Check source that CPython compiles as ``graphlint check PATH`` checks the
    file ``path`` alone, given this text: its regions' calls into its own functions
    are followed, in this process. Bugs raise."""
    from graphlint.project.check import check_source  # noqa: PLC0415 (a cycle)

    return check_source(source, path, settings or Settings())


@dataclass(frozen=True)
class Analysis:
    """What one LibCST pass over a file yields: its diagnostics, the calls its regions
    make (for the project pass), the functions that are regions themselves, and the
    regions."""

    diagnostics: list[Diagnostic]
    entries: list[Entry]
    roots: list[str]
    regions: list[RegionRef] = field(default_factory=list)
    suppressions: list[Suppression] = field(default_factory=list)
    used: set[tuple[int, str]] = field(default_factory=set)
    warmups: list[WarmupVerdict] = field(default_factory=list)  # GL703's, to settle
    asks: list[str] = field(default_factory=list)  # GL407's, for the project pass
    # functions handed to compile wrappers defined elsewhere
    compiles: list[CompileSite] = field(default_factory=list)


def analyse_source(
    source: str,
    path: str = "<string>",
    settings: Settings | None = None,
    *,
    package: str | None = None,
    module_name: str = "",
    external: Mapping[str, RegionRef] | None = None,
    checks: frozenset[str] = frozenset(),
    declared: frozenset[str] = frozenset(),
    setters: frozenset[Setter] = frozenset(),
    typed: frozenset[tuple[str, str]] = frozenset(),
    whole_file: Sequence[Suppression] | None = None,
    starts: Sequence[int] | None = None,
    where: Sequence[Anchor] | None = None,
) -> Analysis:
    """Lint ``source``; ``external`` names functions that regions elsewhere reach,
    ``declared`` those the configuration declares capture roots; ``whole_file``,
    the file's ``ignore-file`` comments where ``source`` is not all of the file's
    text (a statement or a function blanked: it may have held one); ``starts``:
    where a worker that keeps its parses' pieces cuts ``source`` (``keep_pieces``),
    read off CPython's parse; ``where``: where CPython's parse of ``source`` puts
    its statements (``facts.positions.anchors``: positions are then computed a
    statement at a time, when asked)."""
    settings = settings or Settings()
    comments = scan(source)
    if whole_file is not None:
        lines = [entry for entry in comments.entries if not entry.whole_file]
        comments.entries = [*lines, *whole_file]
    parsed = _parsed(source, keep=external is None, starts=starts, where=where)
    module, positions = parsed.module, parsed.positions
    forget(module, parsed.kids)  # the children of another file's nodes
    facts = analyse(
        module,
        positions,
        pragmas=comments.pragmas,
        markers=settings.markers,
        package=package,
        external={fn: _region(how) for fn, how in (external or {}).items()},
        checks=settings.checks | checks,
        path=path,
        declared=declared,
        typed=typed,
        tree=parsed.tree,
        sites=rule_sites(),
    )
    # for the project pass, when it is kept: the tree's facts and children
    parsed.tree, parsed.kids = facts.tree, listed()
    context = RuleContext(
        path,
        facts,
        positions,
        comments.suppressed,
        comments.whole_file,
        library=library_of(settings.library_runs),
        setters=setters,
        source=source,
    )
    rules = [rule(context) for rule in tree_rules() if rule.code in settings.enabled]
    if rules and facts.captures:  # their walk, from what the scope walk saw
        replay_rules(facts.tree.scopes.sites, rules, facts)
    if external is not None:  # the project pass keeps what the reached code adds
        reached = [d for d in context.diagnostics if d.region and d.region.via]
        ordered = sorted(reached, key=lambda d: d.sort_key)
        return Analysis(
            ordered,
            [],
            [],
            suppressions=comments.entries,
            used=context.used,
            warmups=[w for w in context.warmups if w.function],
        )
    found = [
        *context.diagnostics,
        *unknown_suppressions(comments, path, settings.enabled),
    ]
    diagnostics = sorted(found, key=lambda d: d.sort_key)
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
            region.site(path),
            computed=computed,
            tensors=_tensor_arguments(facts, call) if target is call.func else (),
        )
        for call, target, region in [*calls, *facts.unresolved]
        for callee, computed in _callee(target)
    ]
    roots = [
        facts.paths[region.root]
        for region in facts.all_regions()
        if isinstance(region.root, cst.FunctionDef) and region.root in facts.paths
    ]
    sites = _sites(facts, path)
    return Analysis(
        diagnostics,
        entries,
        roots,
        sites,
        comments.entries,
        context.used,
        [w for w in context.warmups if not w.function],
        sorted(set(context.asks)),
    )


@dataclass(eq=False)
class _Parsed:
    """A source's tree and positions, and the facts pass one learnt of the tree."""

    module: cst.Module
    positions: Mapping[cst.CSTNode, CodeRange]
    tree: TreeFacts | None = None
    kids: Kids | None = None  # each node's children (``facts.walk.listed``)


# Trees a worker keeps between a file's pass one and its project pass (which goes
# to the same worker when it can, ``runner.Pool``), by source, most recently used
# last, up to ``_KEPT`` characters of source.
_PARSED: dict[str, _Parsed] = {}
_KEPT = 1 << 20
# a language server's worker: the pieces of its parses, for the next version of
# the file (``keep_pieces``)
_PIECES: list[Pieces] = []


def keep_pieces() -> None:
    """Parse a file again from the pieces of its last parse that an edit left
    alone (``graphlint.reparse``): a worker that lives between runs."""
    if not _PIECES:
        _PIECES.append(Pieces())
        reaching.keep()  # and the answers of the functions an edit leaves alone
        keep_trees()  # and CPython's trees of the last texts


def _parsed(
    source: str,
    *,
    keep: bool,
    starts: Sequence[int] | None = None,
    where: Sequence[Anchor] | None = None,
) -> _Parsed:
    """``source`` parsed, with its positions (computed when asked, where ``where``
    says where its statements are): kept from pass one (``keep``) for the project
    pass, which takes it back."""
    found = _PARSED.pop(source, None)
    if found is None and _PIECES:
        found = _Parsed(*_PIECES[0].parse(source, starts))
    elif found is None:
        module = parse_module(source)
        found = _Parsed(module, positions_of(module, where))
    if keep:
        _PARSED[source] = found
        kept = sum(len(text) for text in _PARSED)
        while kept > _KEPT and len(_PARSED) > 1:
            oldest = next(iter(_PARSED))
            kept -= len(oldest)
            del _PARSED[oldest]
    return found


def _callee(target: cst.BaseExpression) -> list[tuple[str, bool]]:
    """How a region's call names what it calls: ``[(dotted, False)]``; for an
    expression that may be project code (``self.layers[i]``, ``make()``) ``[(its
    source, True)]``, which is not followed; none for a method of a computed value
    (``x.float().sum``: almost always a tensor's) or a lambda."""
    name = dotted(target)
    if name is not None:
        return [(name, False)]
    if (  # ``super().forward(x)``: the base class's method, as the summaries say
        isinstance(target, cst.Attribute)
        and isinstance(target.value, cst.Call)
        and not target.value.args
        and isinstance(target.value.func, cst.Name)
        and target.value.func.value == "super"
    ):
        return [(f"super().{target.attr.value}", False)]
    if isinstance(target, (cst.Name, cst.Attribute, cst.Lambda)):
        return []
    return [(shorten(source(target)), True)]


def _sites(facts: FileFacts, path: str) -> list[RegionRef]:
    """The file's regions, once per capture: a region that captures functions
    lists them (those defined here by path, those defined elsewhere as written)."""
    targets: dict[RegionRef, list[str]] = {}
    for region in facts.all_regions():
        site = region.site(path)
        found = targets.setdefault(site, [])
        if isinstance(region.root, cst.FunctionDef) and region.root in facts.paths:
            found.append(facts.paths[region.root])
        elif isinstance(region.root, cst.Lambda):
            found.append("lambda")
    for _, target, region in facts.unresolved:
        site = region.site(path)
        targets.setdefault(site, []).append(shorten(source(target)))
    return [replace(s, targets=tuple(dict.fromkeys(t))) for s, t in targets.items()]


def _function_path(facts: FileFacts, node: cst.CSTNode) -> str | None:
    scope = facts.values.scope_of.get(node)
    while scope is not None:
        if isinstance(scope.node, cst.FunctionDef):
            return facts.paths.get(scope.node)
        scope = scope.parent
    return None


def _skip_deep(
    source: str, tree: ast.Module, display: str, settings: Settings
) -> tuple[str, ast.Module, list[Diagnostic]] | Diagnostic:
    """``source`` and its tree without the statements nested too deeply for the
    syntax-tree analysis (``read.too_deep``), with a note for each; the file's
    GL005 where what is left does not parse or is still too deep."""
    skipped = too_deep(tree, source)
    if not skipped:
        return source, tree, []
    kept = skip_statements(source, skipped)
    again = prescreen(kept, display, settings.target)
    if not isinstance(again, ast.Module) or too_deep(again, kept):
        return deep_outcome(display, skipped[0].deep)
    return kept, again, [skipped_note(display, span) for span in skipped]


def _reached_notes(
    notes: list[Diagnostic], tree: ast.Module | None, external: Mapping[str, RegionRef]
) -> list[Diagnostic]:
    """The notes of statements skipped in the functions regions elsewhere reach,
    each with the region that reaches its function (the project pass reports
    nothing else of the file: pass one does)."""
    if not notes or tree is None:
        return []
    spans = function_spans(tree, external.keys())
    found = []
    for note in notes:
        holders = [(s, path) for path, s in spans.items() if s[0] <= note.line <= s[1]]
        if not holders:
            continue
        _, path = max(holders)  # the innermost: the latest start
        found.append(replace(note, region=external[path].shown))
    return found


def _tensor_arguments(facts: FileFacts, call: cst.Call) -> tuple[str, ...]:
    """The arguments of a call that are device tensors, by position ("0") up to the
    first ``*args``, and by keyword; a container of device tensors has a ``*``
    after its slot ("1*"), a tensor made on the host a ``!`` ("mask!"), an
    ``nn.Module`` a ``~`` ("0~": calling it gives a device tensor)."""
    return tuple(slot + mark for slot, mark in tensor_slots(call, facts.values))


def _region(how: RegionRef) -> Region:
    """A region elsewhere, as the analysis of code it reaches sees it (what it
    captures and its notebook cell are its own file's)."""
    return Region(replace(how, cell=None, targets=()))


def check_file(path: Path | Job, settings: Settings) -> FileResult:
    """Lint one file from disk; every problem with the file becomes a diagnostic."""
    job = path if isinstance(path, Job) else Job(path)
    display = str(job.path)
    text = read_text(job.path, display, settings.max_file_size)
    if isinstance(text, Diagnostic):
        found: list[Diagnostic] | Analysis = [text]
        text = ""
    else:
        found = _check_file(job, display, text, settings)
    diagnostics = found.diagnostics if isinstance(found, Analysis) else found
    kept, wide = placed([d for d in diagnostics if d.code in settings.enabled], text)
    if isinstance(found, Analysis):
        return FileResult(
            display,
            kept,
            entries=tuple(found.entries),
            compiles=tuple(found.compiles),
            roots=tuple(found.roots),
            regions=tuple(found.regions),
            suppressions=tuple(found.suppressions),
            used=tuple(sorted(found.used)),
            warmups=tuple(found.warmups),
            asks=tuple(found.asks),
            wide=wide,
        )
    # in the project pass too: a file only reached, or one that pass one skipped
    # before parsing, says here why its reached functions were not analysed
    return FileResult(display, kept, wide=wide)


def _check_file(
    job: Job, display: str, text: str, settings: Settings
) -> list[Diagnostic] | Analysis:
    path = job.path
    found = source_of(text, display, settings.target)
    if isinstance(found, Diagnostic):
        return [found]
    source = text = found.text
    # pass one: functions compiled through wrappers other modules define
    sites = (
        compile_sites(found.tree, display, module_of(path), source)
        if job.external is None and found.tree is not None
        else []
    )
    if not source or (
        job.external is None
        and not job.declared
        and not may_capture(source, found.tree, settings.markers)
    ):
        comments = scan(source)  # a file's own comments, in every pass
        problems = (
            unknown_suppressions(comments, display, settings.enabled)
            if job.external is None
            else []
        )
        return Analysis(problems, [], [], suppressions=comments.entries, compiles=sites)
    tree = found.tree
    notes: list[Diagnostic] = []  # statements skipped
    if tree is not None:
        skipped = _skip_deep(source, tree, display, settings)
        if isinstance(skipped, Diagnostic):
            return [skipped]
        source, tree, notes = skipped
        del skipped  # see below
    if job.external is not None:  # only the notes in the reached functions count
        notes = _reached_notes(notes, tree, job.external)
    whole = source
    if (
        job.external is not None
        and tree is not None
        and not may_capture(source, tree, settings.markers)
        and ".replay(" not in source
    ):
        # a file that neither captures nor replays a graph itself: only the reached
        # functions matter (otherwise the order of its own functions is evidence for
        # what a reached function does)
        source = sparse_source(source, tree, job.external.keys())
    # where a kept parse's pieces start (``keep_pieces``), read off CPython's tree
    starts = (
        tuple(cuts(source, 1, tree.body))
        if _PIECES and tree is not None and source is whole
        else None
    )
    # where CPython puts the statements LibCST will parse: their positions are
    # computed when asked (a sparse text is parsed again: ten times cheaper than
    # computing every position)
    where = (
        None
        if tree is None
        else anchors(tree.body)
        if source is whole
        else anchors_of(source)
    )
    # CPython's tree (75 bytes a source byte) is done with: freed before LibCST
    # parses and the analysis runs, not held through them
    del found, tree
    try:
        analysis = analyse_source(
            source,
            display,
            settings,
            package=package_of(path),
            module_name=module_of(path),
            external=job.external,
            checks=job.checks,
            declared=job.declared,
            setters=job.setters,
            typed=job.typed,
            # read where the file is not given whole: they cover every line
            whole_file=scan(text).whole_file if source is not text else None,
            starts=starts,
            where=where,
        )
        if notes:
            every = sorted([*analysis.diagnostics, *notes], key=lambda d: d.sort_key)
            analysis = replace(analysis, diagnostics=every)
        return replace(analysis, compiles=sites)
    except cst.ParserSyntaxError as error:
        detail = f"LibCST cannot parse code that CPython accepts ({error.message})"
        return [tool_diagnostic(ParserLimitExceeded, display, detail=detail)]
    except RecursionError:
        detail = "nested too deeply for the syntax-tree analysis"
        return [tool_diagnostic(ParserLimitExceeded, display, detail=detail)]
