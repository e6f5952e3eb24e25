"""GL703: a manual capture with no warm-up before it, of code that needs one."""

from __future__ import annotations

import itertools

import libcst as cst

from graphlint.diagnostics import (
    Applicability,
    Confidence,
    Outcome,
    RegionKind,
    Severity,
)
from graphlint.diagnostics import WarmupVerdict as Settle
from graphlint.facts import torchapi as api
from graphlint.facts.flow import Site, is_entry
from graphlint.facts.region import Region
from graphlint.facts.syntax import dotted
from graphlint.facts.warmup import Op, Verdict, Warmup
from graphlint.rule import Rule, RuleContext, Scope
from graphlint.rules.apis._warmup_fix import captured_statements, warmup_text
from graphlint.rules.apis.ddp_warmup_too_short import DDP_WARMUP, captures_ddp
from graphlint.warmup_wording import (
    CODE,
    FAILS,
    NEED,
    NEED_THROUGH,
    RECORDED,
    UNCHECKED,
    UNCHECKED_THROUGH,
    UNSURE,
)


class CaptureWithoutWarmup(Rule):
    """A `torch.cuda.graph` capture of code that needs a warm-up, none before it."""

    code = CODE
    message = "capture without warm-up iterations before it{detail}{extra}"
    fix_title = (
        "Run the captured code 3 times (11 with DDP) inside "
        "`with torch.cuda.stream(s):` before capturing"
    )
    # the warm-up runs the captured statements, and their side effects, 3 more times
    fix_applicability = Applicability.UNSAFE
    outcome = Outcome.CAPTURE_ERROR
    sees = Scope.FILE  # what runs before each capture: the whole file
    severity = Severity.WARNING
    consequence = UNSURE
    # measured on an H100 with PyTorch 2.11 (issue #16, ground-truth/warmup_probe.py):
    # the first cuBLAS, cuDNN or NCCL call of an unwarmed region creates its handle,
    # workspace or communicator during capture
    fixed_by_warmup = True
    region_failures = (
        "CUBLAS_STATUS_NOT_INITIALIZED",
        "cublasCreate",
        "CUDNN_STATUS_INTERNAL_ERROR",
        "INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED",
        "NCCL error",
    )

    def __init__(self, context: RuleContext) -> None:
        super().__init__(context)
        self._module = cst.Module([])
        # the captures to report, at the end of the file: the traversal first
        # finds the indentation of each ``with`` that captures, for its fix
        self._found: list[tuple[Region, Verdict, str, tuple[str, ...]]] = []
        self._roots: set[cst.CSTNode] = set()
        self._indents: list[str] = []  # of the blocks the traversal is in
        self._indent_of: dict[cst.CSTNode, str] = {}

    def visit_Module(self, node: cst.Module) -> None:
        self._module = node
        facts = self.context.facts
        nodes: dict[Region, list[cst.CSTNode]] = {}
        for found, region in facts.regions.items():
            if isinstance(found, (cst.Call, cst.BinaryOperation, cst.AugAssign)):
                nodes.setdefault(region, []).append(found)
        warmup = Warmup(
            facts.values,
            self.flow.callees,
            lambda n: self.region(n) is not None,
            followed=lambda name: bool(self.context.library.matching(name)),
        )
        for region in facts.all_regions():
            if region.via:  # a function a capture elsewhere reaches
                self.settle(region, warmup.of(nodes.get(region, [])))
                continue
            if (
                region.kind is not RegionKind.MANUAL
                or region.root is None
                or region.open  # a primitive: the captured work is its caller's
            ):
                continue
            start = self.flow.unwarmed(region)
            # else, the functions on its ways that other files may call
            callers = () if start is not None else self.called_elsewhere(region)
            if start is None and not callers:
                continue
            verdict = warmup.of(nodes.get(region, []))
            if verdict.safe:
                continue  # nothing in it needs a warm-up
            first_call = "" if start is None else self.first_call(start, region)
            self._found.append((region, verdict, first_call, callers))
            self._roots.add(region.root)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        if self._roots:
            indent = node.indent
            self._indents.append(
                self._module.default_indent if indent is None else indent
            )

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock) -> None:
        if self._roots:
            self._indents.pop()

    def visit_With(self, node: cst.With) -> None:
        if node in self._roots:
            self._indent_of[node] = "".join(self._indents)

    def leave_Module(self, original_node: cst.Module) -> None:
        for region, verdict, first_call, callers in self._found:
            self.check(region, verdict, first_call, callers)

    def called_elsewhere(self, region: Region) -> tuple[str, ...]:
        """The paths of the functions on the ways to ``region`` this file shows,
        which other files may call (``Flow.called_elsewhere``)."""
        paths = self.context.facts.paths
        return tuple(
            path
            for function in self.flow.called_elsewhere(region)
            if (path := paths.get(function)) is not None
        )

    def first_call(self, start: Site, region: Region) -> str:
        """Where the way to the capture starts, when that is a function that makes the
        graph on its first call and replays it: said, since nothing else shows that
        no warm-up can come before (module code, a test and ``main`` show it)."""
        replay = self.flow.replay_after(start)
        function = start.function
        if (
            replay is None
            or not isinstance(function, cst.FunctionDef)
            or is_entry(function)
        ):
            return ""
        name = self.context.facts.paths.get(function, function.name.value)
        # under a test on the way (``if self.graph is None:``), the first call;
        # else each one
        tested = any(self.flow.way_tests(start, region))
        when = "its first call" if tested else "each call"
        return (
            f"; `{name}` captures on {when} and replays at line "
            f"{self.line(replay.node)}, so no caller can warm it up"
        )

    def check(
        self,
        region: Region,
        verdict: Verdict,
        first_call: str = "",
        callers: tuple[str, ...] = (),
    ) -> None:
        """Report ``region``; with ``callers``, for the project pass to keep only
        where some caller in another file runs none of it before."""
        assert region.root is not None
        site = self.flow.sites[region.root]
        # a runner that captures on its first call, or one whose callers are
        # elsewhere: no warm-up before it here
        fix = [] if first_call or callers else self.warmup(region)
        if verdict.need is not None:
            detail = self.need(verdict.need)
            consequence = FAILS if verdict.need.why in api.WARMUP_FAILS else RECORDED
        else:
            detail = self.unchecked(verdict)
            consequence = UNSURE
        # left to the project pass: the calls it follows, and the callers elsewhere
        deferred = verdict.need is None and verdict.unknown is None
        if deferred or callers:
            self.context.warmups.append(
                Settle(
                    "",
                    region.line,
                    unknown=verdict.unknown is not None,
                    deferred=self.deferred(verdict) if deferred else (),
                    callers=callers,
                )
            )
        self.report(
            self.anchor(region),
            region,
            # module code runs as written; a test may have fixtures that warm up
            confidence=Confidence.HIGH
            if isinstance(site.function, cst.Module)
            else Confidence.MEDIUM,
            consequence=consequence,
            detail=detail + first_call,
            extra=(
                "; `torch.backends.cudnn.benchmark = True` autotunes inside the capture"
                if self.context.facts.setup.cudnn_benchmark
                else ""
            ),
            fix=fix,
        )

    def warmup(self, region: Region) -> list[tuple[cst.CSTNode, str]]:
        """A warm-up inserted before a ``with torch.cuda.graph(g):`` that runs a
        copy of its statements, when they can be repeated as they are; nothing for
        ``capture_begin()``, for a ``with`` that enters other contexts too (the
        copy would run outside them) and where ``torch.cuda`` has no name here."""
        root = region.root
        if not isinstance(root, cst.With) or root.asynchronous or len(root.items) > 1:
            return []
        item = root.items[0]
        indent = self._indent_of.get(root)
        statements = captured_statements(root)
        cuda = self.cuda(item.item)
        if item.asname is not None or indent is None or statements is None or not cuda:
            return []
        scope = self.context.facts.values.scope_of.get(root)
        if scope is None:
            return []

        def fresh(*names: str) -> str:
            """The first of ``names`` (then numbered) that nothing here binds, but
            for ``_`` as the loops and unpackings of the file use it: thrown away."""
            numbered = (f"{names[-1]}_{n}" for n in itertools.count(1))
            tried = itertools.chain(names, numbered)
            return next(
                name
                for name in tried
                if all(
                    name == "_" and (b.how == "iterate" or b.path)
                    for b in scope.lookup(name) or []
                )
            )

        text = warmup_text(
            self._module,
            root,
            statements,
            indent=indent,
            cuda=cuda,
            stream=fresh("_warmup_stream"),
            step=fresh("_", "_warmup_step"),
            # as many as DistributedDataParallel needs, where it is captured (GL705)
            count=DDP_WARMUP if captures_ddp(self, region) else 3,
        )
        return [(root, text)]

    def cuda(self, capture: cst.BaseExpression) -> str | None:
        """How this file spells ``torch.cuda`` where ``capture`` is: as the capture
        does (``torch.cuda.graph(g)``), else ``torch.cuda`` if ``torch`` is the
        module here; None when neither."""
        if not (
            isinstance(capture, cst.Call)
            and self.qualname(capture.func) == "torch.cuda.graph"
        ):
            return None
        func = capture.func
        if (
            isinstance(func, cst.Attribute)
            and self.qualname(func.value) == "torch.cuda"
            and dotted(func.value) is not None
        ):
            return dotted(func.value)
        return "torch.cuda" if self.torch_in_scope(capture) else None

    def need(self, op: Op) -> str:
        fields = {
            "call": self.code_of(op.node),
            "line": self.line(op.node),
            "what": op.what,
            "why": op.why,
        }
        if op.through is None:
            return NEED.format(**fields)
        return NEED_THROUGH.format(
            through=self.code_of(op.through),
            through_line=self.line(op.through),
            **fields,
        )

    def unchecked(self, verdict: Verdict) -> str:
        """The first call whose code could not be checked: one graphlint cannot
        see, else one left to the project pass."""
        call: cst.CSTNode
        through: cst.CSTNode | None = None
        if verdict.unknown is not None:
            call, through = verdict.unknown
        else:
            call = verdict.deferred[0]
        fields = {"call": self.code_of(call), "line": self.line(call)}
        if through is None:
            return UNCHECKED.format(**fields)
        return UNCHECKED_THROUGH.format(
            through=self.code_of(through), through_line=self.line(through), **fields
        )

    def settle(self, region: Region, verdict: Verdict) -> None:
        """What a function a capture elsewhere reaches needs a warm-up for, for the
        project pass to settle that capture's finding (``project.warmup``)."""
        root = region.root
        if not isinstance(root, cst.FunctionDef):
            return
        path = self.context.facts.paths.get(root)
        if path is None:
            return
        need = verdict.need
        self.context.warmups.append(
            Settle(
                path,
                self.line(root),
                need=self.code_of(need.node) if need else "",
                need_line=self.line(need.node) if need else 0,
                need_what=need.what if need else "",
                need_why=need.why if need else "",
                unknown=verdict.unknown is not None,
                deferred=self.deferred(verdict),
            )
        )

    def deferred(self, verdict: Verdict) -> tuple[tuple[int, str], ...]:
        return tuple(
            (self.line(call), dotted(call.func) or "") for call in verdict.deferred
        )

    def line(self, node: cst.CSTNode) -> int:
        return self.context.positions[node].start.line

    def anchor(self, region: Region) -> cst.CSTNode:
        root = region.root
        assert root is not None
        if isinstance(root, cst.With):  # the item that captures, if it is written out
            return next(
                (
                    item.item
                    for item in root.items
                    if isinstance(item.item, cst.Call)
                    and any(a.value is region.graph_expr for a in item.item.args)
                ),
                root.items[0].item,
            )
        return root
