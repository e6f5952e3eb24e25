"""What the code of a capture needs a warm-up for (GL703).

A capture with no warm-up before it fails, or records one-time set-up in the graph,
only when its code does set-up at its first run: cuBLAS, cuDNN and NCCL make their
handle or communicator, a lazy module its parameters, an optimizer its state
(``torchapi.WARMUP_*``, measured in ``ground-truth/h100-torch2.11-warmup.jsonl``).
PyTorch's own kernels (fills, copies, views, elementwise and reduction ops) need none.

``Warmup.of(region)`` reads the region's code in source order and the functions of
this file it calls (``Flow.callees``), and says:

- ``need``: the first op that needs a warm-up, with the region's call that runs it
  when it sits in a called function;
- ``unknown``: the first call whose code graphlint cannot see from here (a library,
  a computed callee, a torch function its tables do not know);
- ``deferred``: the calls that leave this file for project code: the project pass
  follows them (``project.warmup``), and settles what they run.

Code behind a test that keeps it out of capture is not read (``Rule.region``).
"""

from __future__ import annotations

import builtins
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import libcst as cst

from graphlint.facts import torchapi as api
from graphlint.facts.syntax import dotted, keyword
from graphlint.facts.values import Kind, Value, Values
from graphlint.facts.walk import walk

_PYTHON = frozenset({"builtins", *sys.stdlib_module_names})
_BUILTINS = frozenset(dir(builtins))
_DEPTH = 8  # calls followed into this file's functions


@dataclass(frozen=True)
class Op:
    """An op that needs a warm-up: what it is and why, and where it runs from."""

    node: cst.CSTNode  # the call or ``@`` expression
    what: str  # "a matmul", "an `nn.Linear`"
    why: str  # torchapi.CUBLAS ...
    through: cst.Call | None = None  # the region's call that runs it, if not the op


@dataclass
class Verdict:
    """What a region's code (or a function's) needs a warm-up for."""

    need: Op | None = None
    # the first call whose code cannot be seen, and the region's call that runs it
    unknown: tuple[cst.Call, cst.Call | None] | None = None
    deferred: list[cst.Call] = field(default_factory=list)  # left to the project pass

    @property
    def safe(self) -> bool:
        """Known to need none."""
        return self.need is None and self.unknown is None and not self.deferred


@dataclass(frozen=True)
class _Need:
    """An op that needs a warm-up: what it is, why."""

    what: str
    why: str


# how a call is classified: an op that needs a warm-up, the functions of this file
# it runs, or one of these
_SAFE = "safe"  # known to need none
_DEFER = "defer"  # project code, maybe: the project pass follows it
_UNKNOWN = "unknown"  # code graphlint cannot see
Classified = _Need | tuple[cst.FunctionDef, ...] | str


class Warmup:
    """The classification, for one file; the verdicts of its functions are kept."""

    def __init__(
        self,
        values: Values,
        callees: Callable[[cst.Call], tuple[cst.FunctionDef, ...]],
        in_region: Callable[[cst.CSTNode], bool] = lambda node: True,
        followed: Callable[[str], bool] = lambda name: False,
    ) -> None:
        self.values = values
        self.callees = callees
        self.in_region = in_region  # whether a node of a region runs under capture
        # library callables whose code the project pass follows (``library``)
        self.followed = followed
        self._functions: dict[cst.FunctionDef, Verdict] = {}

    def of(self, nodes: Iterable[cst.CSTNode]) -> Verdict:
        """The verdict of a region's nodes, in source order."""
        return self._read([n for n in nodes if self.in_region(n)], 0, top=True)

    def _read(self, nodes: Iterable[cst.CSTNode], depth: int, *, top: bool) -> Verdict:
        found = Verdict()
        for node in nodes:
            op = _matmul(node)
            if op is not None:
                found.need = op
                return found
            if type(node) is not cst.Call:
                continue
            kind = self.classify(node)
            if isinstance(kind, _Need):
                found.need = Op(node, kind.what, kind.why)
                return found
            if kind == _UNKNOWN or (isinstance(kind, tuple) and depth >= _DEPTH):
                found.unknown = found.unknown or (node, None)
            elif kind == _DEFER:
                found.deferred.append(node)
            elif isinstance(kind, tuple):
                for function in kind:
                    inner = self.function(function, depth + 1)
                    if inner.need is not None:
                        op = inner.need
                        through = node if top else op.through
                        found.need = Op(op.node, op.what, op.why, through)
                        return found
                    if inner.unknown is not None and found.unknown is None:
                        found.unknown = (inner.unknown[0], node if top else None)
                    found.deferred.extend(inner.deferred)
        return found

    def function(self, function: cst.FunctionDef, depth: int) -> Verdict:
        """The verdict of a function of this file (its body, not nested ones)."""
        known = self._functions.get(function)
        if known is not None:
            return known
        self._functions[function] = Verdict()  # a recursive call adds nothing new
        collector = _Collector()
        walk(function.body, collector)
        found = self._read(collector.nodes, depth, top=False)
        self._functions[function] = found
        return found

    # -- one call ----------------------------------------------------------------
    def classify(self, call: cst.Call) -> Classified:
        """What ``call`` runs, as far as it needs a warm-up."""
        callees = self.callees(call)
        if callees:
            return callees
        func = call.func
        q = self.values.qualify(func)
        if q is not None:
            return self._by_name(q, func)
        value = self.values.of(func)
        if value.kind is Kind.MODULE:
            return self._module(value, func)
        if type(func) is cst.Attribute:
            return self._method(func)
        if type(func) is cst.Name and func.value in _BUILTINS and not self._bound(func):
            return _SAFE
        return _later(func)

    def _bound(self, name: cst.Name) -> bool:
        scope = self.values.scope_of.get(name)
        return scope is not None and scope.lookup(name.value) is not None

    def _by_name(self, q: str, func: cst.BaseExpression) -> Classified:
        if self.followed(q):  # ``checkpoint(step, x)``: the project pass has ``step``
            return _DEFER
        found = api.WARMUP_FUNCTIONS.get(q)
        for prefix, need in api.WARMUP_NAMESPACES.items():
            if found is None and q.startswith(prefix):
                found = need
        if found is not None:
            return _Need(*found)
        if q.startswith("torch."):
            rest = q[len("torch.") :]
            if (
                rest in api.NO_WARMUP_FUNCTIONS
                or q.startswith(api.NO_WARMUP_NAMESPACES)
                or q in api.OBJECT_FACTORIES
            ):
                return _SAFE
            return _UNKNOWN
        if q.split(".", 1)[0] in _PYTHON:
            return _SAFE
        return _later(func)

    def _module(self, value: Value, func: cst.BaseExpression) -> Classified:
        """Calling a module: by its class."""
        cls = value.cls or ""
        if value.local is not None or not cls.startswith("torch.nn."):
            return _later(func)
        name = cls.rsplit(".", 1)[-1]
        if name.startswith("Lazy"):
            return _Need(f"an `nn.{name}`", api.LAZY)
        why = api.WARMUP_MODULES.get(name)
        if why is not None:
            return _Need(f"an `nn.{name}`", why)
        return _SAFE if name in api.NO_WARMUP_MODULES else _UNKNOWN

    def _method(self, func: cst.Attribute) -> Classified:
        name = func.attr.value
        receiver = self.values.of(func.value)
        kind = receiver.kind
        if kind is Kind.MODULE:
            if name in ("forward", "__call__"):
                return self._module(receiver, func)
            return _SAFE if name in api.NO_WARMUP_MODULE_METHODS else _later(func)
        if kind is Kind.OBJECT and receiver.local is not None:
            return _later(func)  # a project object's: the project pass follows it
        if kind is Kind.OBJECT:
            return self._object(receiver, name)
        if kind is Kind.PYTHON:
            return _SAFE  # a list's, a dict's, a str's: on the host
        if kind in (Kind.TENSOR, Kind.UNKNOWN):
            need = api.WARMUP_METHODS.get(name)
            if need is not None:
                return _Need(*need)
            if name in api.NO_WARMUP_METHODS:
                return _SAFE  # an untracked value's: a tensor's, as for the project
        return _later(func)

    def _object(self, receiver: Value, name: str) -> Classified:
        cls = receiver.cls or ""
        if cls in api.NO_WARMUP_OBJECTS or ".lr_scheduler." in cls:
            return _SAFE
        if not api.is_object_class(cls):
            return _UNKNOWN
        if name == "zero_grad":
            return _SAFE
        if name != "step":
            return _UNKNOWN
        if cls == "torch.optim.SGD" and not _momentum(receiver.origin):
            return _SAFE  # no state to create
        return _Need(f"an `{cls.rsplit('.', 1)[-1]}` step", api.OPTIMIZER_STATE)


def _later(func: cst.BaseExpression) -> str:
    """A call graphlint cannot classify here: the project pass follows a dotted
    callee (``self.model``, ``helpers.step``), not a computed one."""
    return _DEFER if dotted(func) is not None else _UNKNOWN


def _matmul(node: cst.CSTNode) -> Op | None:
    """``a @ b`` and ``a @= b``: a matmul."""
    if (
        type(node) is cst.BinaryOperation and type(node.operator) is cst.MatrixMultiply
    ) or (
        type(node) is cst.AugAssign and type(node.operator) is cst.MatrixMultiplyAssign
    ):
        return Op(node, "a matmul", api.CUBLAS)
    return None


def _momentum(origin: cst.Call | None) -> bool:
    """Whether an SGD built by ``origin`` keeps a momentum buffer (unknown: yes)."""
    if origin is None:
        return True
    value = keyword(origin, "momentum")
    if value is None:
        positional = [a.value for a in origin.args if a.keyword is None]
        if any(a.star for a in origin.args):
            return True
        value = positional[2] if len(positional) > 2 else None
    if value is None:
        return False
    return not (
        (type(value) is cst.Integer or type(value) is cst.Float)
        and float(value.value) == 0
    )


class _Collector(cst.CSTVisitor):
    """A function body's calls and ``@`` ops, in source order; not nested functions,
    classes or lambdas, which run when called."""

    def __init__(self) -> None:
        super().__init__()
        self.nodes: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if (
            type(node) is cst.FunctionDef
            or type(node) is cst.ClassDef
            or type(node) is cst.Lambda
        ):
            return False
        if (
            type(node) is cst.Call
            or type(node) is cst.BinaryOperation
            or type(node) is cst.AugAssign
        ):
            self.nodes.append(node)
        return True
