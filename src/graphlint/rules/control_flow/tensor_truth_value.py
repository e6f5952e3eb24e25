"""GL201: Python control flow decided by the truth value of a tensor."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from graphlint.diagnostics import Applicability, Outcome
from graphlint.facts import torchapi as api
from graphlint.facts.syntax import keyword, method, plain, positional
from graphlint.facts.values import element_of
from graphlint.rule import Replacement, Rule, RuleContext, Scope, file_wide, seeing
from graphlint.signatures import DATA_DEPENDENT_COMPILE, SYNC

if TYPE_CHECKING:
    from collections.abc import Sequence


class TensorTruthValue(Rule):
    """`if`/`while`/`assert`/`and`/`not`/`any()` on a tensor value."""

    code = "GL201"
    message = "`{expr}` takes the truth value of a device tensor"
    fix_title = (
        "Compute both branches and select with `torch.where(cond, a, b)`, or capture "
        "one graph per branch (`torch.cond` fails under manual capture)"
    )
    fix_applicability = Applicability.UNSAFE
    outcome = Outcome.CAPTURE_ERROR
    # what a capture raises at the line (measured: if_tensor, while_tensor,
    # assert_tensor, isnan_any_if, builtin_any_gen, torch_cond_inside;
    # compiled_fullgraph_tensor_branch)
    capture_failures = (SYNC, DATA_DEPENDENT_COMPILE)
    fullgraph_error = "Data-dependent branching"
    # most methods ask about a test, not the node they are called for
    sees = Scope.REGION_CODE

    def __init__(self, context: RuleContext) -> None:
        super().__init__(context)
        self._done: set[cst.CSTNode] = set()  # and/or/not already decomposed
        self._elifs: set[cst.If] = set()
        self._assigned: set[cst.IfExp] = set()  # ``name = a if t else b``

    # the test of an ``if``/``while`` between ``capture_begin()`` and ``capture_end()``
    # is region code, the statement is not: these see the file and ask about the test
    @file_wide
    def visit_If(self, node: cst.If) -> None:
        if isinstance(node.orelse, cst.If):
            self._elifs.add(node.orelse)
        self.truth(node.test, node)

    def visit_Assign(self, node: cst.Assign) -> None:
        if (
            len(node.targets) == 1
            and isinstance(node.targets[0].target, cst.Name)
            and isinstance(node.value, cst.IfExp)
        ):
            self._assigned.add(node.value)

    @file_wide
    def visit_While(self, node: cst.While) -> None:
        self.truth(node.test)

    def visit_Assert(self, node: cst.Assert) -> None:
        self.truth(node.test)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self.truth(node.test, node)

    def visit_CompIf(self, node: cst.CompIf) -> None:
        self.truth(node.test)

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
        if isinstance(node.operator, cst.Not) and node not in self._done:
            self.truth(node.expression)

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        # outside a test, `a and b` only truth-tests `a`
        if node not in self._done:
            self._done.add(node)
            self.truth(node.left)

    def truth(
        self, expr: cst.BaseExpression, owner: cst.If | cst.IfExp | None = None
    ) -> None:
        """Report the tensors whose truth value ``expr``, used as a condition, takes;
        ``owner``, the ``if`` whose test it is, may become a ``torch.where``."""
        if isinstance(expr, cst.BooleanOperation):
            self._done.add(expr)
            self.truth(expr.left)
            self.truth(expr.right)
        elif isinstance(expr, cst.UnaryOperation) and isinstance(
            expr.operator, cst.Not
        ):
            self._done.add(expr)
            self.truth(expr.expression)
        elif self.in_region_code(expr) and self.value(expr).on_device:
            region = self.region(expr)
            if region is not None:
                fix = self.selection(owner) if owner is not None else []
                self.report(expr, region, expr=self.code_of(expr), fix=fix)

    @seeing(Scope.REGION)
    def visit_Call(self, node: cst.Call) -> None:
        if self.qualname(node.func) in _COND:
            self.cond(node)
            return
        if self.builtin(node) not in ("any", "all"):
            return
        args = positional(node)
        if len(args) != 1:
            return
        if element_of(self.value(args[0])).on_device:
            self.report(node, self.here, expr=self.code_of(node))

    def cond(self, node: cst.Call) -> None:
        """``torch.cond(pred, ...)`` evaluates ``pred`` on the host unless compiled."""
        region = self.here
        args = positional(node)
        if region.kind.is_compile or not args:
            return
        if self.value(args[0]).on_device:
            self.report(args[0], region, expr=self.code_of(args[0]))

    # -- the fix: select with torch.where -------------------------------------------
    def selection(
        self, owner: cst.If | cst.IfExp
    ) -> list[tuple[cst.CSTNode, Replacement]]:
        """``if t: a = x`` / ``else: a = y``, or ``a = x if t else y``, as
        ``a = torch.where(t, x, y)``: both branches are now evaluated, so they may
        only read (operators, torch functions, tensor methods); the test must be a
        bool tensor and ``torch`` the module."""
        test = owner.test
        if (
            isinstance(test, cst.NamedExpr)
            or not self.value(test).boolean
            or not self.torch_in_scope(owner)
        ):
            return []
        if isinstance(owner, cst.IfExp):
            if owner not in self._assigned or not self.selectable(
                owner.body, owner.orelse
            ):
                return []
            return [(owner, _where(test, owner.body, owner.orelse))]
        found = _branches(owner) if owner not in self._elifs else None
        if found is None or not self.selectable(found[1], found[2]):
            return []
        name, chosen, other, comment = found
        assign = cst.Assign(
            targets=[cst.AssignTarget(cst.Name(name))],
            value=_where(test, chosen, other),
        )
        if comment is None:
            return [(owner, assign)]
        return [(owner, f"{_CODEGEN.code_for_node(assign)}  {comment}")]

    def selectable(self, *values: cst.BaseExpression) -> bool:
        """Whether each value may be computed whether or not it is chosen, and is a
        number or a tensor for ``torch.where`` (not a string or None)."""
        return all(
            not isinstance(value, _NOT_SELECTED)
            and not (isinstance(value, cst.Name) and value.value == "None")
            and plain(value, self.pure)
            for value in values
        )

    def pure(self, call: cst.Call) -> bool:
        """A torch function or a tensor method that only computes a new tensor."""
        if keyword(call, "out") is not None:
            return False
        q = self.qualname(call.func)
        if q is not None:
            namespace, _, name = q.rpartition(".")
            return (
                namespace in _PURE_NAMESPACES
                and name not in api.NON_TENSOR_FUNCTIONS
                and name not in _IMPURE
                and not name.startswith("rand")
                and not name.endswith("_")
            )
        found = method(call)
        return (
            found is not None
            and found[1] in _PURE_METHODS
            and self.value(found[0]).is_tensor
        )


def _where(
    test: cst.BaseExpression, chosen: cst.BaseExpression, other: cst.BaseExpression
) -> cst.Call:
    return cst.Call(
        func=cst.Attribute(cst.Name("torch"), cst.Name("where")),
        args=[
            cst.Arg(test, comma=_COMMA),
            cst.Arg(chosen, comma=_COMMA),
            cst.Arg(other),
        ],
    )


def _branches(
    node: cst.If,
) -> tuple[str, cst.BaseExpression, cst.BaseExpression, str | None] | None:
    """``(name, value if true, value if false, comment)`` for an ``if`` and an
    ``else`` that each assign one value to the same name and hold no comment but
    on the ``if`` line (kept, where the ``else`` branch has none on its line)."""
    orelse = node.orelse
    if not (
        isinstance(orelse, cst.Else)
        and isinstance(node.body, cst.IndentedBlock)
        and isinstance(orelse.body, cst.IndentedBlock)
    ):
        return None
    first, second = _single_assign(node.body), _single_assign(orelse.body)
    if first is None or second is None or first[0] != second[0]:
        return None
    name, chosen, line = first
    _, other, other_line = second
    lost = [
        *_comments(line.leading_lines),
        line.trailing_whitespace.comment,
        *_comments(node.body.footer),
        *_comments(orelse.leading_lines),
        orelse.body.header.comment,
        *_comments(other_line.leading_lines),
    ]
    kept = node.body.header.comment
    if any(comment is not None for comment in lost) or (
        kept is not None and other_line.trailing_whitespace.comment is not None
    ):
        return None
    return name, chosen, other, kept.value if kept is not None else None


def _single_assign(
    block: cst.IndentedBlock,
) -> tuple[str, cst.BaseExpression, cst.SimpleStatementLine] | None:
    """``(name, value, line)`` for a block that is one line ``name = value``."""
    if len(block.body) != 1:
        return None
    line = block.body[0]
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
        return None
    assign = line.body[0]
    if (
        not isinstance(assign, cst.Assign)
        or len(assign.targets) != 1
        or not isinstance(assign.targets[0].target, cst.Name)
    ):
        return None
    return assign.targets[0].target.value, assign.value, line


def _comments(lines: Sequence[cst.EmptyLine]) -> list[cst.Comment | None]:
    return [line.comment for line in lines]


_COND = frozenset({"torch.cond", "torch._higher_order_ops.cond.cond"})
_CODEGEN = cst.Module(body=[])
_COMMA = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
# what torch.where cannot select
_NOT_SELECTED = (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)
_PURE_NAMESPACES = frozenset(
    {"torch", "torch.nn.functional", "torch.linalg", "torch.fft", "torch.special"}
)
# torch functions that draw random numbers, branch, or compute what host code reads
_IMPURE = frozenset(
    {
        "normal",
        "bernoulli",
        "multinomial",
        "poisson",
        "dropout",
        "dropout1d",
        "dropout2d",
        "dropout3d",
        "alpha_dropout",
        "feature_alpha_dropout",
        "rrelu",
        "gumbel_softmax",
        "cond",
        "nonzero",
        "masked_select",
        "unique",
        "unique_consecutive",
    }
)
# tensor methods that compute a new tensor on the same device, without drawing
# random numbers or a shape from the values
_PURE_METHODS = api.TENSOR_METHODS - (
    api.TENSOR_PY_METHODS
    | _IMPURE
    | {"to", "cuda", "cpu", "pin_memory", "type", "new_tensor", "share_memory_"}
    | {name for name in api.TENSOR_METHODS if name.endswith("_")}
)
