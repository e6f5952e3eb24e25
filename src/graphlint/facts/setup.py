"""How captures are set up: warm-up on side streams, autocast blocks, module hooks,
DistributedDataParallel, cuDNN autotuning. Computed once per file, in the walk
``facts.analysis.analyse`` shares with host state and flow.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import libcst as cst
from libcst.metadata import CodeRange

from graphlint.facts.region import Region
from graphlint.facts.state import HostState, Key
from graphlint.facts.syntax import keyword, positional
from graphlint.facts.torchapi import CURRENT_STREAMS, STREAM_CONTEXTS
from graphlint.facts.values import Kind, Values

STREAM_SWITCHES = frozenset({"torch.cuda.set_stream", "torch.cuda.stream"})
AUTOCAST_CONTEXTS = frozenset(
    {"torch.autocast", "torch.amp.autocast", "torch.cuda.amp.autocast"}
)
DDP_CLASSES = frozenset(
    {
        "torch.nn.parallel.DistributedDataParallel",
        "torch.nn.DistributedDataParallel",
        "torch.nn.parallel.distributed.DistributedDataParallel",
    }
)
HOOK_METHODS = frozenset(
    {
        "register_forward_hook",
        "register_forward_pre_hook",
        "register_backward_hook",
        "register_full_backward_hook",
        "register_full_backward_pre_hook",
    }
)


@dataclass(frozen=True, eq=False)
class Block:
    """A ``with`` block of interest, where it is, and its warm-up loop if any."""

    node: cst.With
    function: cst.CSTNode
    line: int
    end_line: int
    cache_enabled: bool = True  # autocast(cache_enabled=False) -> False
    iterations: int | None = None  # ``for _ in range(N)`` inside a side stream
    loop: cst.BaseExpression | None = None  # that ``range(N)`` call
    item: cst.BaseExpression | None = None  # the context expression, ``autocast()``

    def encloses(self, function: cst.CSTNode, line: int) -> bool:
        return function is self.function and self.line <= line <= self.end_line


@dataclass
class CaptureSetup(cst.CSTVisitor):
    """The walk; its lists are what rules read."""

    values: Values
    state: HostState
    positions: Mapping[cst.CSTNode, CodeRange]
    regions: Mapping[cst.CSTNode, Region]
    side_streams: list[Block] = field(default_factory=list)
    stream_blocks: set[cst.With] = field(default_factory=set)  # their ``with``s
    autocasts: list[Block] = field(default_factory=list)
    hooks: list[tuple[Key, cst.Call, cst.CSTNode, int]] = field(default_factory=list)
    graphed_calls: list[cst.Call] = field(default_factory=list)
    ddp: list[cst.Call] = field(default_factory=list)
    cudnn_benchmark: bool = False
    # functions that switch streams without a ``with`` block
    stream_switches: set[cst.CSTNode] = field(default_factory=set)
    # ``torch.cuda.stream(s)`` calls that a ``with`` enters: a block, not a switch
    _stream_items: set[cst.Call] = field(default_factory=set)

    def __post_init__(self) -> None:
        super().__init__()

    def line(self, node: cst.CSTNode) -> int:
        return self.positions[node].start.line

    def visit_With(self, node: cst.With) -> None:
        for item in node.items:
            call = item.item
            if type(call) is not cst.Call:
                if self._entered_stream(call):  # ``with s:``, ``with self.stream:``
                    self._side_stream(node)
                continue
            q = self.values.qualify(call.func)
            if q in STREAM_CONTEXTS:
                self._stream_items.add(call)
                self._side_stream(node)
            elif self._entered_stream(call):  # ``with torch.cuda.Stream():``
                self._side_stream(node)
            elif q in AUTOCAST_CONTEXTS:
                cache = keyword(call, "cache_enabled")
                disabled = type(cache) is cst.Name and cache.value == "False"
                self.autocasts.append(
                    self.block(node, cache_enabled=not disabled, item=call)
                )

    def _side_stream(self, node: cst.With) -> None:
        """``node`` runs its block on a side stream."""
        count, loop = first_warmup_loop(node)
        self.side_streams.append(self.block(node, iterations=count, loop=loop))
        self.stream_blocks.add(node)

    def _entered_stream(self, expr: cst.BaseExpression) -> bool:
        """Whether ``expr`` is a stream that a ``with`` entering it makes the
        current stream: any stream but the one in use already
        (``torch.cuda.current_stream()``, a ``Stream(stream_id=...)`` that may wrap
        it). One of unknown make (a parameter, what a helper returns) counts: its
        code chose to run the block on it."""
        value = self.values.of(expr)
        if value.kind is not Kind.OBJECT or value.cls != "torch.cuda.Stream":
            return False
        made = [value.origin] if value.origin is not None else self._made(expr)
        return not any(self._in_use(call) for call in made)

    def _in_use(self, call: cst.Call) -> bool:
        """Whether ``call`` may give the stream in use rather than a new one."""
        q = self.values.qualify(call.func)
        return q in CURRENT_STREAMS or keyword(call, "stream_id") is not None

    def _made(self, expr: cst.BaseExpression) -> list[cst.Call]:
        """The calls a name's bindings make (both sides of a conditional), for a
        stream whose value joins several."""
        found: list[cst.Call] = []
        if type(expr) is not cst.Name:
            return found
        scope = self.values.scope_of.get(expr)
        bindings = (scope.lookup(expr.value) or []) if scope is not None else []
        todo = [b.value for b in bindings if b.how == "assign" and b.value is not None]
        while todo:
            value = todo.pop()
            if type(value) is cst.IfExp:
                todo.extend((value.body, value.orelse))
            elif type(value) is cst.Call:
                found.append(value)
        return found

    def block(self, node: cst.With, **details: Any) -> Block:
        return Block(
            node,
            self.state.function_of(node),
            self.line(node),
            self.positions[node].end.line,
            **details,
        )

    def visit_Call(self, node: cst.Call) -> None:
        q = self.values.qualify(node.func)
        function = self.state.function_of(node)
        if (q in STREAM_SWITCHES and node not in self._stream_items) or (
            type(node.func) is cst.Attribute and node.func.attr.value == "__enter__"
        ):
            self.stream_switches.add(function)
        if q in DDP_CLASSES:
            self.ddp.append(node)
        elif type(node.func) is cst.Attribute and node.func.attr.value in (
            HOOK_METHODS
        ):
            key = self.state.key_of(node.func.value)
            if key is not None:
                self.hooks.append(
                    (key, node, self.state.function_of(node), self.line(node))
                )

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if (
                self.values.qualify(target.target) == "torch.backends.cudnn.benchmark"
                and type(node.value) is cst.Name
                and node.value.value == "True"
            ):
                self.cudnn_benchmark = True

    # -- queries ---------------------------------------------------------------------
    def warmups_before(self, region: Region) -> list[Block]:
        """Side-stream blocks that end before ``region`` starts, in its function."""
        home = self.state.region_function(region)
        return [
            b
            for b in self.side_streams
            if b.function is home and b.end_line < region.line
        ]


def first_warmup_loop(node: cst.With) -> tuple[int | None, cst.Call | None]:
    """The first ``for _ in range(N):`` directly inside a ``with`` block."""
    if type(node.body) is cst.IndentedBlock:
        for statement in node.body.body:
            found = warmup_loop(statement)
            if found is not None:
                return found
    return None, None


def warmup_loop(statement: cst.BaseStatement) -> tuple[int | None, cst.Call] | None:
    """``for _ in range(N):`` -> (N if a literal, the range call)."""
    if type(statement) is not cst.For or type(statement.iter) is not cst.Call:
        return None
    call = statement.iter
    if not (type(call.func) is cst.Name and call.func.value == "range"):
        return None
    args = positional(call)
    if len(args) == 1 and type(args[0]) is cst.Integer:
        return int(args[0].evaluated_value), call
    return None, call


__all__ = ["Block", "CaptureSetup"]
