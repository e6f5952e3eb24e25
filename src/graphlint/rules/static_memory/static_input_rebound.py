"""GL301: a tensor a captured graph reads is rebound instead of updated in place."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Applicability, Outcome, RegionKind
from graphlint.facts.region import Region
from graphlint.facts.state import Write
from graphlint.facts.values import Kind, element_of
from graphlint.rule import Rule, RuleContext, Scope
from graphlint.rules.static_memory._copy import copy_into

MANUAL = frozenset({RegionKind.MANUAL})


class StaticInputRebound(Rule):
    """A tensor the graph reads is rebound (`x = new`) instead of copied into."""

    code = "GL301"
    fix_applicability = Applicability.UNSAFE
    message = (
        "`{target}` rebinds a tensor that the graph captured at line {line} reads, "
        "before the replay at line {replay}{through}"
    )
    fix_title = (
        "Update it in place: `{name}.copy_(new)`, `{name}.fill_(v)` or "
        "`{name}[...] = v`"
    )
    outcome = Outcome.SILENT_WRONG
    sees = Scope.FILE  # rebinding happens outside regions, between replays
    consequence = "replays keep reading the old tensor"

    def __init__(self, context: RuleContext) -> None:
        super().__init__(context)
        # ``x = new`` by its target: the statements a fix may turn into a copy
        self._assigns: dict[cst.CSTNode, cst.Assign] = {}

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) == 1:  # not ``a = b = new``
            self._assigns[node.targets[0].target] = node

    def leave_Module(self, original_node: cst.Module) -> None:
        """Each write the file's host state recorded, once the walk has seen every
        assignment (the fixes need them)."""
        for write in self.state.write_at.values():
            target = write.target
            if isinstance(target, cst.Attribute) and target.attr.value == "data":
                continue  # GL302
            # what the graphs read first: the values asked below cost far more
            readers = self.state.readers(write.key, MANUAL)
            if not readers or write.how == "augment":
                continue
            if isinstance(target, cst.Subscript) and self.value(target.value).is_tensor:
                continue  # t[...] = v is in place
            self.check(target, write, readers)

    def check(
        self, target: cst.BaseExpression, write: Write, readers: list[Region]
    ) -> None:
        if not self.holds_tensor(write):
            return
        for region in readers:
            change = self.flow.between_replays(write, region)
            if change is not None:
                name = self.code_of(target)
                self.report(
                    target,
                    region,
                    confidence=change.confidence,
                    target=f"{name} = ..." if write.how == "assign" else name,
                    line=region.line,
                    replay=change.replay,
                    through=change.through(),
                    name=name,
                    fix=self.fix(write, region),
                )
                return

    def fix(self, write: Write, region: Region) -> list[tuple[cst.CSTNode, cst.Call]]:
        """``x = new`` -> ``x.copy_(new)``, for a plain assignment to a name or an
        attribute that holds a tensor by then. Not for ``buf[k] = t`` (it may add
        the entry), unpacking, ``a = b = new``, annotated or walrus bindings."""
        statement = self._assigns.get(write.target)
        if (
            statement is None
            or not isinstance(write.target, (cst.Name, cst.Attribute))
            or self.value(statement.value).kind not in {Kind.TENSOR, Kind.UNKNOWN}
            or not self.bound_before(write, region)
        ):
            return []
        return copy_into(statement, write.target)

    def bound_before(self, write: Write, region: Region) -> bool:
        """Whether the location holds a tensor whenever ``write`` runs, so that
        copying into it works. In the function that captures: the write comes
        after the capture (which read it) and shares no loop with it (on the
        first pass a loop may bind it before the capture). Elsewhere: some other
        statement binds it too (``__init__``, module set-up); the write may not
        be the one that makes it."""
        capture = self.flow.capture_of(region)
        here = self.flow.sites.get(write.target)
        there = self.flow.sites.get(capture.root) if capture and capture.root else None
        if here is None or there is None:
            return False
        if here.function is there.function:
            return there.end < here.start and not set(here.loops) & set(there.loops)
        return any(
            other is not write and other.how == "assign" and other.value is not None
            for other in self.state.writes.get(write.key, ())
        )

    def holds_tensor(self, write: Write) -> bool:
        """Whether the location holds a tensor, by this or any other write to it."""
        for other in self.state.writes.get(write.key, ()):
            if other.value is None:
                continue
            value = self.value(other.value)
            if other.how == "iterate":
                value = element_of(value)
            if value.is_tensor:
                return True
        return False
