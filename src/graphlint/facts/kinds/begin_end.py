"""Captures that statements open and close, in order, within one function:
``g.capture_begin()`` ... ``g.capture_end()``, and a capture context entered on an
exit stack (``stack.enter_context(torch.cuda.graph(g))``) until the stack closes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from graphlint import lazy
from graphlint.diagnostics import Confidence, RegionKind, RegionRef
from graphlint.facts.kinds.base import Recogniser, Screen

if TYPE_CHECKING:
    import libcst as cst

    from graphlint.facts import region, syntax
    from graphlint.facts.regions import RegionFinder
else:
    cst = lazy.module("libcst", __name__)
    region = lazy.module("graphlint.facts.region", __name__)
    syntax = lazy.module("graphlint.facts.syntax", __name__)

_STACK_CLOSES = ("close", "__exit__")  # what ends an exit stack's contexts
_BEGIN = "capture_begin"


class BeginEndScreen(Screen):
    """``capture_begin``, in the text and in the code (a capture context entered on
    an exit stack is ``torch.cuda.graph``'s: ``graph_block``'s screen sees it)."""

    letters = (_BEGIN,)
    pattern = _BEGIN

    def names(self, source: str) -> frozenset[str]:
        return frozenset({_BEGIN})


class BeginEnd(Recogniser):
    screen = BeginEndScreen

    def statements(self, module: cst.Module) -> None:
        """The spans of the module's statements, then of each function's."""
        scanner = BeginEndScanner(self.finder)
        scanner.scan(module.body)
        scanner.finish()
        for fn in self.scopes.functions:
            if type(fn) is cst.FunctionDef and type(fn.body) is cst.IndentedBlock:
                scanner = BeginEndScanner(self.finder)
                scanner.scan(fn.body.body)
                scanner.finish()


@dataclass
class _Span:
    """A capture opened by a statement and not yet closed: by ``g.capture_begin()``,
    or by a capture context entered on an exit stack
    (``stack.enter_context(torch.cuda.graph(g))``)."""

    begin: cst.CSTNode  # the statement that opens it
    graph: cst.BaseExpression | None
    kind: RegionKind = RegionKind.MANUAL
    label: str = "capture_begin()"
    confidence: Confidence = Confidence.HIGH
    begin_end: bool = True  # by ``capture_begin()``: on the stream its caller chose
    nodes: list[cst.CSTNode] = field(default_factory=list)  # what runs under it


class BeginEndScanner:
    """Captures opened and closed by statements of one function, in order:
    ``g.capture_begin()`` ... ``g.capture_end()``, and a capture context entered on
    an exit stack (``stack.enter_context(torch.cuda.graph(g))``) until the stack
    closes (``stack.close()``, or the end of ``with ExitStack() as stack:``)."""

    def __init__(self, finder: RegionFinder) -> None:
        self.finder = finder
        self.open: dict[str, _Span] = {}  # by the receiver's source (``g``, ``stack``)

    def scan(
        self, body: Sequence[cst.BaseStatement] | Sequence[cst.BaseSmallStatement]
    ) -> None:
        for statement in body:
            self.statement(statement)

    def finish(self) -> None:
        """Spans never closed run to their last statement."""
        for receiver in list(self.open):
            self.close(receiver, None)

    def statement(self, node: cst.CSTNode) -> None:
        if type(node) is cst.SimpleStatementLine:
            for small in node.body:
                if not self.toggle(small) and self.open:
                    self.add(small)
            return
        if type(node) is cst.FunctionDef or type(node) is cst.ClassDef:
            return  # bodies are scanned as their own functions
        if self.open:
            for header in headers(node):
                self.add(header)
        for block in blocks(node):
            if type(block) is cst.SimpleStatementSuite:
                for small in block.body:
                    if not self.toggle(small) and self.open:
                        self.add(small)
            elif type(block) is cst.IndentedBlock:
                self.scan(block.body)
        if type(node) is cst.With:  # ``with ExitStack() as stack:`` closes it
            for item in node.items:
                name = item.asname.name if item.asname is not None else None
                if type(name) is cst.Name and name.value in self.open:
                    self.close(name.value, node)

    def toggle(self, small: cst.BaseSmallStatement) -> bool:
        if not (type(small) is cst.Expr and type(small.value) is cst.Call):
            return False
        call = small.value
        func = call.func
        if type(func) is not cst.Attribute:
            return False
        receiver = syntax.source(func.value)
        method = func.attr.value
        if method == _BEGIN:
            self.open.setdefault(receiver, _Span(small, func.value))
            return True
        if method == "enter_context" and call.args:
            found = self.finder.capture_context(call.args[0].value, set())
            if found is None:
                return False
            kind, label, confidence, graph = found
            entered = _Span(small, graph, kind, label, confidence, begin_end=False)
            self.open.setdefault(receiver, entered)
            return True
        span = self.open.get(receiver)
        if span is None:
            return False
        if method in (("capture_end",) if span.begin_end else _STACK_CLOSES):
            self.close(receiver, small)
            return True
        return False

    def add(self, node: cst.CSTNode) -> None:
        first = min(self.open.values(), key=lambda o: self.finder.line(o.begin))
        first.nodes.append(node)

    def close(self, receiver: str, end: cst.CSTNode | None) -> None:
        span = self.open.pop(receiver)
        nodes = span.nodes
        last = end if end is not None else (nodes[-1] if nodes else span.begin)
        graph = span.graph
        found = region.Region(
            RegionRef(
                span.kind,
                self.finder.line(span.begin),
                span.label,
                confidence=span.confidence,
            ),
            end_line=self.finder.end(last),
            root=span.begin,
            graph=syntax.source(graph) if graph is not None else None,
            graph_expr=graph,
            begin_end=span.begin_end,
            open=end is None,
        )
        for node in nodes:
            self.finder.spans.setdefault(node, found)


def headers(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The parts of a compound statement evaluated before its blocks."""
    if type(node) is cst.If or type(node) is cst.While:
        return [node.test]
    if type(node) is cst.For:
        return [node.target, node.iter]
    if type(node) is cst.With:
        return list(node.items)
    return []


def blocks(node: cst.CSTNode) -> list[cst.BaseSuite]:
    """The statement blocks of a compound statement, in source order."""
    found: list[cst.BaseSuite] = []
    body = getattr(node, "body", None)
    if isinstance(body, cst.BaseSuite):
        found.append(body)
    for handler in getattr(node, "handlers", ()):
        found.extend(blocks(handler))
    orelse = getattr(node, "orelse", None)
    if type(orelse) is cst.If:
        found.extend([*blocks(orelse)])
    elif orelse is not None and isinstance(
        getattr(orelse, "body", None), cst.BaseSuite
    ):
        found.append(orelse.body)
    final = getattr(node, "finalbody", None)
    if final is not None:
        found.append(final.body)
    return found


__all__ = ["BeginEnd", "BeginEndScanner", "BeginEndScreen", "blocks", "headers"]
