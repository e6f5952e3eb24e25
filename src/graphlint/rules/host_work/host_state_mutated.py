"""GL404: host containers and counters mutated under capture."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Outcome
from graphlint.facts.region import Region
from graphlint.facts.scopes import Scope as NameScope
from graphlint.facts.syntax import method
from graphlint.facts.values import Kind
from graphlint.files import is_test_module
from graphlint.rule import Rule, Scope

# ``d.setdefault(k, v)`` is not among them: it writes only a missing key, a memo
# that warm-up fills (``if k not in d: d[k] = v`` in one call)
_MUTATORS = frozenset(
    {
        "append",
        "extend",
        "insert",
        "pop",
        "remove",
        "clear",
        "update",
        "add",
        "discard",
        "appendleft",
        "popleft",
        "extendleft",
    }
)


class HostStateMutated(Rule):
    """`lst.append(x)`, `d[k] = v`, `n += 1` under capture run once, at capture."""

    code = "GL404"
    message = "`{stmt}` changes host state once, while capturing"
    fix_title = (
        "Do the bookkeeping outside the region, around `replay()`, or keep the state "
        "in a device tensor updated in place"
    )
    outcome = Outcome.SILENT_WRONG
    sees = Scope.CAPTURED  # recorded once for all replays: not torch.compile
    host_work = True
    consequence = "replays never run it"

    def visit_Call(self, node: cst.Call) -> None:
        found = method(node)
        if found is None or found[1] not in _MUTATORS:
            return
        region = self.here
        if (
            self.is_host_container(found[0])
            and not self.scratch_or_memo(found[0], node, region)
            and not self.state.balanced(found[0], region)
        ):
            self.report(node, region, stmt=self.code_of(node))

    def visit_Assign(self, node: cst.Assign) -> None:
        region = self.here
        for target in node.targets:
            t = target.target
            if (
                isinstance(t, cst.Subscript)
                and self.is_host_container(t.value)
                and not self.scratch_or_memo(t.value, t, region)
                and not self.state.graph_slot(t, region)
                and not self.state.staged(t, region)
            ):
                self.report(node, region, stmt=self.code_of(node))
                return

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        region = self.here
        target = node.target
        if not isinstance(target, (cst.Name, cst.Attribute, cst.Subscript)):
            return
        if isinstance(target, cst.Subscript) and (  # ``group["step"] += 1``
            not self.is_host_container(target.value)
            or self.made_in(target.value, region)
        ):
            return
        kind = self.value(target).kind
        counted = (
            kind is Kind.UNKNOWN
            and isinstance(target, cst.Subscript)
            and (
                isinstance(
                    node.value, (cst.Integer, cst.Float)
                )  # ``group["step"] += 1``
            )
        )
        if (
            (kind is Kind.PYTHON or counted)
            and not self.scratch_or_memo(target, target, region)
            and not self.probe(target)
            and not self.rebinds_a_local(target, region)
        ):
            self.report(node, region, stmt=self.code_of(node))

    def rebinds_a_local(self, target: cst.BaseExpression, region: Region) -> bool:
        """``dim %= n`` on a number, a string or None that a local or parameter of a
        function holds, where every call of the function is captured (the region is
        the function): the value is rebound in the call's own frame, which the call
        drops; nothing outlives it for replays to miss."""
        if not isinstance(target, cst.Name):
            return False
        key = self.state.key_of(target)
        value = self.value(target)
        owner = key[1] if key is not None else None
        return (
            isinstance(owner, NameScope)
            and region.root is not None
            and owner.node is region.root
            and value.element is None
            and value.items is None
        )

    def made_in(self, container: cst.BaseExpression, region: Region) -> bool:
        """Whether ``container`` (or one it lies in) is a new dict, list or set that
        the captured code makes itself (``counts = {"n": 0}``): scratch state."""
        key = self.state.key_of(container)
        while isinstance(key, tuple):
            for write in self.state.writes.get(key, ()):
                if (
                    write.region == region
                    and write.how == "assign"
                    and write.value is not None
                    and self.is_host_container(write.value)
                ):
                    return True
            key = key[1] if key[0] in ("attr", "item") else None  # type: ignore[assignment]
        return False

    def probe(self, target: cst.BaseExpression) -> bool:
        """A test's call counter (``self.calls += 1`` in a test module, read only by
        its assertions): that it runs once, at capture, is what the test checks."""
        return (
            isinstance(target, cst.Attribute)
            and is_test_module(self.context.path)
            and self.state.only_asserted(target.attr.value)
        )

    def scratch_or_memo(
        self, expr: cst.BaseExpression, node: cst.CSTNode, region: Region
    ) -> bool:
        """A container or counter the captured code makes itself is scratch state:
        it does not outlive the capture, so nothing is lost on replay (also a
        list one captured call makes and its closures fill, and the lists in a
        list it makes: ``self.users = [[] for _ in ops]`` in a constructor the
        capture calls, then ``self.users[i].append(j)``). A write only
        done when a test of the same state says so (``if k not in cache:``, ``if
        self.buf is None:``) is a memo or lazy initialisation: warm-up did it, and the
        capture finds it done."""
        key = self.state.key_of(expr)
        return key is not None and (
            self.state.made_by_the_call(key)
            or any(
                write.region == region and write.how in ("assign", "iterate")
                for write in self.state.writes.get(key, ())
            )
            or self.state.made_around(key, region)  # ``self.ins[i].append(x)``
            or self.flow.memo(node, key)
        )

    def is_host_container(self, expr: cst.BaseExpression) -> bool:
        value = self.value(expr)
        return value.kind is Kind.PYTHON and (
            value.element is not None or value.items is not None
        )
