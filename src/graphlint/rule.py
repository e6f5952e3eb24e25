"""Rule base classes, the report() every rule goes through, and rule discovery.

A rule is one small class in one module under ``graphlint.rules``: metadata as class
attributes, detection in ``visit_*`` methods, findings through ``self.report()``.
Nothing registers a rule by hand: importing the package's modules is enough, and
``__init_subclass__`` validates each class when it is defined.

All rules of a file run in one batched LibCST traversal. Two consequences: returning
``False`` from a ``visit_*`` method does not prune the subtree, and matcher decorators
(``@m.call_if_inside``) are not available. Context such as "is this node under
capture?" or "is this a tensor?" therefore comes from the file's facts
(``graphlint.facts``), computed once before the traversal.

What a rule sees is declared, and the engine applies it (``Rule.sees``). A region
rule's ``visit_*``/``leave_*`` methods are called only for nodes of a capture region's
code, with the region already settled in ``self.here``, so the rule neither tests
for it nor asks for it:

- ``Scope.REGION``, the default: the nodes ``self.region(node)`` gives a region for,
  region code except behind a test that is false whenever the capture records
  (``Flow.never_captured``);
- ``Scope.CAPTURED``: those ``self.captured(node)`` gives one for, the same less
  torch.compile's regions (a capture that records once for all replays);
- ``Scope.REGION_CODE``: every node of region code (``facts.region_of`` is not
  None), recorded or not, for bookkeeping, or a method that asks about another
  node than the one it is called for (the test of an ``if``);
- ``Scope.FILE``: every node of the file, for checks that look at what happens
  around and outside regions (set-up, stores between replays, schedulers);
  ``self.here`` is not set.

A method that sees otherwise than its rule says so with ``@seeing(scope)``
(``@file_wide`` is ``@seeing(Scope.FILE)``): the statements a fix may remove, or an
``if`` whose test is region code while the statement is not. ``self.region(node)``,
``self.captured(node)`` and ``self.in_region_code(node)`` remain, for questions
about other nodes than the one visited.
"""

from __future__ import annotations

import enum
import functools
import importlib
import pkgutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, TypeAlias, TypeVar

import libcst as cst
from libcst._nodes.internal import CodegenState
from libcst.metadata import CodeRange

from graphlint.checks import REGISTRY, Check
from graphlint.columns import line_starts, offset
from graphlint.comments import suppresses
from graphlint.diagnostics import (
    Applicability,
    Confidence,
    Diagnostic,
    Edit,
    Outcome,
    Related,
    Severity,
    Suppression,
    WarmupVerdict,
)
from graphlint.facts.walk import Sites, Subscription, joined, subscribed
from graphlint.library import Library, library_of
from graphlint.settings import Setter

if TYPE_CHECKING:
    from graphlint.facts.analysis import FileFacts
    from graphlint.facts.flow import Flow
    from graphlint.facts.region import Region
    from graphlint.facts.state import HostState
    from graphlint.facts.values import Value


class Scope(enum.Enum):
    """What a rule's ``visit_*``/``leave_*`` methods are called for (``Rule.sees``)."""

    REGION = "region"  # region code, less what is behind a test false at capture
    CAPTURED = "captured"  # the same, less torch.compile's regions
    REGION_CODE = "region code"  # nodes that are part of a region's code
    FILE = "file"  # every node of the file


_Visit = TypeVar("_Visit", bound=Callable[..., None])


def seeing(scope: Scope) -> Callable[[_Visit], _Visit]:
    """Mark a ``visit_*``/``leave_*`` method that sees otherwise than its rule
    (``Rule.sees``). A method that overrides it is not marked unless it says so
    too."""

    def mark(method: _Visit) -> _Visit:
        method.sees = scope  # type: ignore[attr-defined]
        return method

    return mark


# a method of a region rule that must see every node of the file (what it records,
# or the node it judges, may lie outside region code)
file_wide = seeing(Scope.FILE)


# each rule class's visit_/leave_ method names, with the scope each is called in
_VISITOR_NAMES: dict[type, tuple[tuple[str, Scope], ...]] = {}
# what replaces a node of the file: a node, source text, or nothing (a statement)
Replacement: TypeAlias = cst.CSTNode | str | cst.RemovalSentinel

# What a hazard does, by its measured outcome and the kind of region it sits in.
_CONSEQUENCE: dict[tuple[Outcome, bool], str] = {
    (Outcome.CAPTURE_ERROR, False): "fails capture",
    (Outcome.CAPTURE_ERROR, True): "graph break under torch.compile: the CUDA graph is"
    " split",
    (
        Outcome.SILENT_WRONG,
        False,
    ): "frozen at capture: replays reuse the captured value",
    (Outcome.SILENT_WRONG, True): "frozen at capture: replays reuse the captured value",
    (Outcome.PERF, False): "slows or splits the graph",
    (Outcome.PERF, True): "slows or splits the graph",
    (
        Outcome.VERSION_DEPENDENT,
        False,
    ): "fails capture on some PyTorch versions (captured fine on 2.11)",
    (
        Outcome.VERSION_DEPENDENT,
        True,
    ): "fails capture on some PyTorch versions (captured fine on 2.11)",
}


@dataclass
class RuleContext:
    """What a rule may read about the file it runs on, and where its reports go."""

    path: str
    facts: FileFacts
    positions: Mapping[cst.CSTNode, CodeRange]
    suppressed: Mapping[int, frozenset[str] | None]  # line -> codes (None: all)
    # the ``# graphlint: ignore-file`` comments, which cover every line
    whole_file: Sequence[Suppression] = ()
    diagnostics: list[Diagnostic] = field(default_factory=list)
    # (line, code) of each finding dropped: the line of the comment that dropped it
    used: set[tuple[int, str]] = field(default_factory=set)
    warmups: list[WarmupVerdict] = field(default_factory=list)  # GL703's, to settle
    # what library callables run of what they are given: the project pass follows
    # those calls into the code they run
    library: Library = field(default_factory=lambda: library_of(()))
    # project callables that set an optimizer's hyper-parameters (``Job.setters``),
    # and those the file's calls ask about (``FileResult.asks``)
    setters: frozenset[Setter] = frozenset()
    asks: list[str] = field(default_factory=list)
    source: str = ""  # the file's text, which fixes are edits of
    _starts: list[int] = field(default_factory=list)

    def offset(self, line: int, col: int) -> int:
        """The offset in ``source`` of a position (1-based line, 0-based column)."""
        if not self._starts:
            self._starts[:] = line_starts(self.source)
        return offset(self._starts, line, col)

    def indentation(self, line: int) -> str:
        """The leading whitespace of ``line``."""
        start = self.offset(line, 0)
        text = self.source[start : self.offset(line + 1, 0)]
        return text[: len(text) - len(text.lstrip(" \t"))]


class Rule(Check, cst.BatchableCSTVisitor):
    """A check that inspects the syntax tree. Subclass it in ``graphlint.rules``."""

    abstract: ClassVar[bool] = True
    # which nodes the traversal calls the rule's visit_/leave_ methods for
    sees: ClassVar[Scope] = Scope.REGION
    # the region of the node a region rule's method is called for, as its scope
    # settles it (not set for a file rule's)
    here: Region

    def __init__(self, context: RuleContext) -> None:
        super().__init__()
        self.context = context

    def get_visitors(self) -> Mapping[str, Callable[[cst.CSTNode], None]]:
        """The ``visit_*``/``leave_*`` methods, found once per class (LibCST's default
        inspects every instance, which cost more than the traversal itself); those
        that see region code only are called for it alone, with its region in
        ``self.here``."""
        return {
            name: getattr(self, name)
            if scope is Scope.FILE
            else self._in_regions(getattr(self, name), scope)
            for name, scope in _visitor_names(type(self))
        }

    def _in_regions(
        self, method: Callable[[cst.CSTNode], None], scope: Scope
    ) -> Callable[[cst.CSTNode], None]:
        """``method``, called only for the nodes ``scope`` sees, with their region
        in ``self.here``: one lookup a node (and the guards of the few a test
        decides, for ``Scope.REGION`` and ``Scope.CAPTURED``)."""
        regions, flow = self.context.facts.regions, self.flow

        def visit(node: cst.CSTNode) -> None:
            region = regions.get(node)
            if region is not None and _sees(scope, region, node, flow):
                self.here = region
                method(node)

        return visit

    # -- facts ---------------------------------------------------------------------
    def region(self, node: cst.CSTNode) -> Region | None:
        """The capture region ``node`` runs in, or None outside capture and behind
        a test that is false whenever the capture records (see ``Flow.never_captured``;
        under torch.compile, which traces what the first call runs, there is none)."""
        region = self.context.facts.region_of(node)
        if region is None or region.kind.is_compile:
            return region
        return None if self.flow.never_captured(node, region) else region

    def in_region_code(self, node: cst.CSTNode) -> bool:
        """Whether ``node`` is part of a region's code, recorded by the capture or
        not (``region`` says None behind a test that is false at capture)."""
        return self.context.facts.region_of(node) is not None

    def captured(self, node: cst.CSTNode) -> Region | None:
        """The region ``node`` runs in when a capture records it once for all
        replays (manual capture, make_graphed_callables, marked); None outside
        capture and under torch.compile, which guards Python values and recompiles."""
        region = self.region(node)
        return None if region is None or region.kind.is_compile else region

    @property
    def state(self) -> HostState:
        """Where host locations are written and which regions read them."""
        return self.context.facts.state

    @property
    def flow(self) -> Flow:
        """The capture timeline: what runs before a capture, what between replays."""
        return self.context.facts.flow

    def value(self, expr: cst.BaseExpression) -> Value:
        """What ``expr`` evaluates to, as far as the file's dataflow knows."""
        return self.context.facts.value_of(expr)

    def builtin(self, call: cst.Call) -> str | None:
        """The builtin ``call`` invokes (``float`` in ``float(t)``), unless a
        binding of the file shadows it there."""
        func = call.func
        if type(func) is not cst.Name:
            return None
        scope = self.context.facts.values.scope_of.get(func)
        if scope is not None and scope.lookup(func.value) is not None:
            return None
        return func.value

    def qualname(self, expr: cst.BaseExpression) -> str | None:
        """The dotted name ``expr`` refers to through the file's imports, if any."""
        return self.context.facts.qualname(expr)

    def torch_in_scope(self, node: cst.CSTNode) -> bool:
        """Whether the name ``torch`` is the torch module where ``node`` is (for a
        fix that writes ``torch.``): imported there, and bound to nothing else."""
        values = self.context.facts.values
        scope = values.scope_of.get(node)
        bindings = scope.lookup("torch") if scope is not None else None
        return (
            bool(bindings)
            and all(binding.how == "import" for binding in bindings or ())
            and values.names.qualify(cst.Name("torch")) == "torch"
        )

    def code_of(self, node: cst.CSTNode) -> str:
        """Source text of ``node``, shortened for messages."""
        text = " ".join(cst.Module([]).code_for_node(node).split())
        return text if len(text) <= 60 else text[:57] + "..."

    # -- reporting -----------------------------------------------------------------
    def report(
        self,
        node: cst.CSTNode,
        region: Region,
        *,
        confidence: Confidence = Confidence.HIGH,
        fullgraph_error: str | None = None,
        related: Sequence[tuple[cst.CSTNode, str]] = (),
        fix: Sequence[tuple[cst.CSTNode, Replacement]] = (),
        applicability: Applicability | None = None,
        consequence: str | None = None,
        **fmt: object,
    ) -> None:
        """Record a finding on ``node``: suppression, severity and wording live here.
        ``fullgraph_error`` overrides the class's for this finding; ``related`` are
        other nodes of the file that are part of the evidence, with what each is;
        ``fix``, where the fix is a mechanical edit: nodes of the file, each with the
        node (or the source text, with ``\n`` for its line breaks) that replaces it,
        or ``cst.RemovalSentinel.REMOVE`` for a statement deleted with its lines,
        and its ``applicability`` (the class's
        ``fix_applicability`` unless given); ``consequence``, the class's for this
        finding."""
        pos = self.context.positions[node]
        line = pos.start.line
        if self._suppressed(line):
            return
        if region.confidence is Confidence.MEDIUM:
            confidence = Confidence.MEDIUM
        is_compile = region.kind.is_compile
        consequence = (
            consequence or self.consequence or _CONSEQUENCE[(self.outcome, is_compile)]
        )
        severity = self.severity
        if severity is None:
            severity = (
                Severity.WARNING
                if is_compile or self.outcome is Outcome.PERF
                else Severity.ERROR
            )
        error = fullgraph_error or self.fullgraph_error
        if region.fullgraph and error is not None:
            severity = Severity.ERROR
            consequence = (
                "fails to compile: fullgraph=True turns the graph break into an "
                f'error ("{error}")'
            )
        message = f"{self.message.format(**fmt)}: {consequence}"
        self.context.diagnostics.append(
            Diagnostic(
                path=self.context.path,
                code=self.code,
                name=self.name,
                message=message,
                line=line,
                col=pos.start.column,
                end_line=pos.end.line,
                end_col=pos.end.column,
                severity=severity,
                confidence=confidence,
                outcome=self.outcome,
                region=region.ref.shown,
                fix_hint=self.fix_title.format(**fmt) if self.fix_title else None,
                related=tuple(
                    Related(
                        self.context.positions[other].start.line,
                        self.context.positions[other].start.column,
                        text,
                    )
                    for other, text in related
                ),
                edits=tuple(self._edit(old, new) for old, new in fix),
                applicability=(
                    (applicability or self.fix_applicability or Applicability.UNSAFE)
                    if fix
                    else None
                ),
            )
        )

    def _suppressed(self, line: int) -> bool:
        """Whether a comment drops this rule's finding on ``line``: the line's own,
        else one of the file's ``ignore-file`` comments; the comment is marked used
        (GL008)."""
        context = self.context
        if suppresses(context.suppressed.get(line, frozenset()), self.code):
            context.used.add((line, self.code))
            return True
        for entry in context.whole_file:
            if suppresses(entry.codes, self.code):
                context.used.add((entry.line, self.code))
                return True
        return False

    def _edit(self, old: cst.CSTNode, new: Replacement) -> Edit:
        span = self.context.positions[old]
        start, end = (
            (span.start.line, span.start.column),
            (span.end.line, span.end.column),
        )
        text = ""
        if isinstance(new, cst.RemovalSentinel):
            if not isinstance(
                old, (cst.SimpleStatementLine, cst.BaseCompoundStatement)
            ):
                raise TypeError(f"{type(old).__name__} is not a statement to remove")
            # a statement starts its line and ends with its comment and newline: its
            # lines go whole (the comments above it stay)
            start, end = (span.start.line, 0), (span.end.line + 1, 0)
        elif isinstance(new, str):
            text = new
        else:
            text = _rendered(new, self.context.indentation(span.start.line))
        context = self.context
        held = context.source[context.offset(*start) : context.offset(*end)]
        return Edit(*start, *end, text, old=held)


def _rendered(node: cst.CSTNode, indent: str) -> str:
    """``node``'s code as it reads at a place indented by ``indent``: its lines that
    LibCST indents with their block (arguments one a line) get that indentation,
    which a node rendered on its own would lose."""
    state = CodegenState(default_indent="    ", default_newline="\n")
    state.indent_tokens.append(indent)
    node._codegen(state)
    return "".join(state.tokens)


def all_checks() -> dict[str, type[Check]]:
    """Every code graphlint knows, by code: discovered from ``graphlint.rules``, and
    graphlint's own GL0xx (``graphlint.tool_codes``)."""
    _discover()
    return dict(sorted(REGISTRY.items()))


@functools.cache
def _discover() -> None:
    """Import every module of ``graphlint.rules`` (which registers its rules), once
    a process: each analysis asks for the rules, and listing the package's folders
    took it a few milliseconds."""
    import graphlint.rules as package  # noqa: PLC0415 - rules import this module
    import graphlint.tool_codes  # noqa: F401, PLC0415 - registers the GL0xx codes

    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        importlib.import_module(info.name)


def _visitor_names(kind: type[Rule]) -> tuple[tuple[str, Scope], ...]:
    """The ``visit_*``/``leave_*`` methods of a rule class, with the scope each
    sees, found once per class."""
    names = _VISITOR_NAMES.get(kind)
    if names is None:
        names = _VISITOR_NAMES[kind] = tuple(
            (name, getattr(getattr(kind, name), "sees", kind.sees))
            for name in dir(kind)
            if name.startswith(("visit_", "leave_"))
            and not getattr(getattr(kind, name), "_is_no_op", False)
        )
    return names


# a rule's method for one node type, with the scope it sees and the rule
_Step = tuple[Callable[[cst.CSTNode], None], Scope, "Rule"]


def replay_rules(sites: Sites, rules: Sequence[Rule], facts: FileFacts) -> None:
    """The rules' walk over what the scope walk recorded (``sites``): what
    ``walk.replay_batched`` of the rules calls, in the same order, with a node's
    region asked once for all the region methods of its type (a call outside
    regions is handed to some twenty), not once by each method's own gate
    (``Rule.get_visitors``); both gates are ``_sees``."""
    regions, flow = facts.regions, facts.flow
    tables: tuple[dict[str, list[_Step]], dict[str, list[_Step]]] = ({}, {})
    for rule in rules:
        for name, scope in _visitor_names(type(rule)):
            prefix, _, kind = name.partition("_")
            table = tables[prefix == "leave"]
            table.setdefault(kind, []).append((getattr(rule, name), scope, rule))
    by_type: dict[tuple[type, bool], tuple[_Step, ...]] = {}
    for node, entering in sites:
        key = (type(node), entering)
        steps = by_type.get(key)
        if steps is None:
            table = tables[not entering]
            steps = by_type[key] = tuple(table.get(type(node).__name__, ()))
        asked = False
        region: Region | None = None
        for method, scope, rule in steps:
            if scope is Scope.FILE:
                method(node)
                continue
            if not asked:
                region, asked = regions.get(node), True
            if region is not None and _sees(scope, region, node, flow):
                rule.here = region
                method(node)


def _sees(scope: Scope, region: Region, node: cst.CSTNode, flow: Flow) -> bool:
    """Whether a method that sees ``scope`` (not ``Scope.FILE``) is called for
    ``node``, which is code of ``region``: all region code; less, for
    ``Scope.REGION`` and ``Scope.CAPTURED``, what a test false at capture keeps
    out (``Flow.never_captured``); less, for ``Scope.CAPTURED``, torch.compile's
    regions."""
    if scope is Scope.REGION_CODE:
        return True
    if region.kind.is_compile:
        return scope is not Scope.CAPTURED
    return not flow.never_captured(node, region)


@functools.cache
def rule_sites() -> Subscription:
    """The node types some rule acts on where a walk enters them, and where it
    leaves them: what the scope walk records for the rules' replay."""
    return joined(*(subscribed(rule) for rule in tree_rules()))


def tree_rules() -> Iterator[type[Rule]]:
    """The rules that run on a syntax tree."""
    for check in all_checks().values():
        if issubclass(check, Rule):
            yield check
