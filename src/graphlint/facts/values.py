"""What an expression evaluates to: a tensor (on which device), a module, a value.

A light, flow-insensitive dataflow over each scope: a name's value is the join of
everything bound to it. It knows torch factories and ops, tensor methods, module
outputs, parameters and buffers, annotated parameters and the arguments of captured
callables. Anything it cannot tell is UNKNOWN, and rules treat UNKNOWN as "not a
tensor" unless the construct itself is tensor-specific (``.item()``), in which case
they report with MEDIUM confidence.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import libcst as cst

from graphlint.diagnostics import HOST_MARK, MODULE_MARK, TENSORS_MARK, RegionKind
from graphlint.facts import torchapi as api
from graphlint.facts.names import Names
from graphlint.facts.reaching import Reaching
from graphlint.facts.scopes import Binding, ClassInfo, Scope
from graphlint.facts.syntax import dotted, is_none, is_true
from graphlint.facts.walk import children


class Kind(enum.Enum):
    BOTTOM = "bottom"  # nothing known yet (a cycle being evaluated)
    TENSOR = "tensor"
    MODULE = "module"  # an nn.Module instance
    OBJECT = "object"  # an instance of a known class: optimizer, stream, graph ...
    PYTHON = "python"  # a known non-tensor value: number, str, bool, container, shape
    UNKNOWN = "unknown"


class Device(enum.Enum):
    CUDA = "cuda"
    CPU = "cpu"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Value:
    """An abstract value. Fields beyond ``kind`` refine it where known."""

    kind: Kind
    device: Device = Device.UNKNOWN  # a tensor's device, or what a device spec names
    zero_dim: bool = False  # a 0-d tensor (a full reduction, torch.tensor(3))
    boolean: bool = False  # a bool tensor (a comparison, isnan)
    pinned: bool = False  # a pinned host tensor
    cls: str | None = None  # qualified class of a MODULE/OBJECT, or a local class name
    local: ClassInfo | None = (
        None  # the local class of an instance (or the class itself)
    )
    is_class: bool = False  # the value is the class ``local``, not an instance
    function: cst.FunctionDef | cst.Lambda | None = None  # a function object
    origin: cst.Call | None = None  # the call that constructed it
    element: Value | None = None  # what iterating it yields
    items: tuple[Value, ...] | None = None  # a fixed tuple's members

    @property
    def is_tensor(self) -> bool:
        return self.kind is Kind.TENSOR

    @property
    def on_device(self) -> bool:
        """A tensor that is not known to live on the host."""
        return self.kind is Kind.TENSOR and self.device is not Device.CPU


BOTTOM = Value(Kind.BOTTOM)
UNKNOWN = Value(Kind.UNKNOWN)
PYTHON = Value(Kind.PYTHON)
TENSOR = Value(Kind.TENSOR)
HOST = Value(Kind.UNKNOWN, device=Device.CPU)  # host memory of some kind, by its name
_CUDA_SPEC = re.compile(r"^cuda(:\d+)?$")


# words of a name that say where a tensor lives (``lens_cpu``, ``host_ids``,
# ``pinned_buf``): frameworks name their host copies so, beside the device ones
_HOST_WORDS = frozenset({"cpu", "host", "pinned"})
# first words of names of flags and counts (``use_cpu_offload``, ``num_host_ranks``)
_FLAG_WORDS = frozenset(
    {"is", "use", "has", "enable", "enabled", "disable", "should", "num", "n"}
)


def _named(name: str, value: Value) -> Value:
    """A value read through ``name``: one whose device is not known, named as host
    memory, is ``HOST``. The name is the only evidence: it rules a device out, and
    proves nothing about what the value is."""
    if value.device is not Device.UNKNOWN or value.kind not in (
        Kind.TENSOR,
        Kind.UNKNOWN,
    ):
        return value
    words = name.lower().split("_")
    if not _HOST_WORDS.intersection(words):
        return value
    if value.kind is Kind.UNKNOWN and words[0] in _FLAG_WORDS:
        return value  # a flag or a count, unless known to be a tensor
    return HOST


def join(a: Value, b: Value) -> Value:
    """The least value covering both."""
    if a.kind is Kind.BOTTOM:
        return b
    if b.kind is Kind.BOTTOM or a == b:
        return a
    if a.kind is not b.kind:
        return UNKNOWN
    if a.kind is Kind.TENSOR:
        return Value(
            Kind.TENSOR,
            device=a.device if a.device is b.device else Device.UNKNOWN,
            zero_dim=a.zero_dim and b.zero_dim,
            boolean=a.boolean and b.boolean,
            pinned=a.pinned and b.pinned,
        )
    if a.kind in (Kind.MODULE, Kind.OBJECT):
        same = a.cls == b.cls and a.local is b.local
        return Value(
            a.kind,
            cls=a.cls if same else None,
            local=a.local if same else None,
            origin=a.origin if a.origin is b.origin else None,
        )
    if a.kind is Kind.PYTHON:
        element = None
        if a.element is not None and b.element is not None:
            element = join(a.element, b.element)
        device = a.device if a.device is b.device else Device.UNKNOWN
        return Value(Kind.PYTHON, device=device, element=element)
    return UNKNOWN


def join_all(values: Iterable[Value]) -> Value:
    result = BOTTOM
    for value in values:
        result = join(result, value)
    return result


def element_of(value: Value, index: int | None = None) -> Value:
    """What iterating or indexing ``value`` yields (member ``index`` if known)."""
    if index is not None and value.items is not None and index < len(value.items):
        return value.items[index]
    if value.element is not None:
        return value.element
    if value.kind is Kind.TENSOR:
        return Value(Kind.TENSOR, device=value.device, boolean=value.boolean)
    if value.kind is Kind.MODULE:
        return Value(Kind.MODULE)  # only containers iterate: their members
    return UNKNOWN


def tensor(
    device: Device = Device.UNKNOWN,
    *,
    zero_dim: bool = False,
    boolean: bool = False,
    pinned: bool = False,
) -> Value:
    return Value(
        Kind.TENSOR, device=device, zero_dim=zero_dim, boolean=boolean, pinned=pinned
    )


def tuple_of(*members: Value) -> Value:
    return Value(Kind.PYTHON, items=members, element=join_all(members))


_K = TypeVar("_K")
_ROUNDS = 10  # rounds of a cycle's evaluation (``Values._fixpoint``)


class Values:
    """Evaluates expressions of one module, memoised; see the module docstring."""

    def __init__(
        self,
        names: Names,
        scope_of: dict[cst.CSTNode, Scope],
        classes: dict[str, ClassInfo],
        class_infos: dict[cst.ClassDef, ClassInfo],
    ) -> None:
        self.names = names
        self.scope_of = scope_of
        self.classes = classes
        self.class_infos = class_infos  # each class by its definition
        self._memo: dict[cst.CSTNode, Value] = {}
        self._busy: set[cst.CSTNode] = set()
        self._binding_memo: dict[int, Value] = {}
        self._binding_busy: set[int] = set()
        # values computed with a cycle cut, kept for the evaluation under way
        self._partial: dict[cst.CSTNode, Value] = {}
        self._binding_partial: dict[int, Value] = {}
        self._cuts = 0  # cycles cut so far (see ``_remember``)
        # a cycle's members as the last round of ``_fixpoint`` left them
        self._approx: dict[object, Value] = {}
        self._module_classes: dict[int, bool] = {}
        self._returns: dict[cst.FunctionDef, list[cst.BaseExpression]] = {}
        # functions whose arguments are provided by a capture API, and which kind
        self.captured: dict[cst.CSTNode, RegionKind] = {}
        # reached functions' parameters that every call under capture passes a
        # device tensor (the project pass says which)
        self.tensor_params: dict[cst.CSTNode, frozenset[str]] = {}
        # which bindings each read sees (set once the regions are found: until
        # then a name is every value it is bound to)
        self.reaching: Reaching | None = None

    def reset(self) -> None:
        """Forget memoised values (after ``captured`` changed)."""
        self._memo.clear()
        self._binding_memo.clear()

    # -- entry points --------------------------------------------------------------
    def of(self, expr: cst.BaseExpression) -> Value:
        cached = self._memo.get(expr)
        if cached is not None:
            return cached
        cached = self._partial.get(expr)
        if cached is not None:
            self._cuts += 1  # what reads it is partial too (``_remember``)
            return cached
        if expr in self._busy:
            self._cuts += 1
            return self._approx.get(expr, BOTTOM)
        cuts = self._cuts
        outermost = not (self._busy or self._binding_busy)
        self._busy.add(expr)  # inline: each level of a deep evaluation is a frame
        try:
            value = self._eval(expr)
        finally:
            self._busy.discard(expr)
        if outermost and self._cuts != cuts:
            value = self._fixpoint(expr, value, self._busy, lambda: self._eval(expr))
        self._remember(self._memo, self._partial, expr, value, cuts)
        return value

    def _fixpoint(
        self, key: _K, value: Value, busy: set[_K], evaluate: Callable[[], Value]
    ) -> Value:
        """The value of ``key``, which entered a cycle of bindings (``value``: with
        each read of a member the cycle cut as BOTTOM), whatever member a query
        enters the cycle at: its members are evaluated again, each cut read giving
        that member's value of the round before, until none changes (at most
        ``_ROUNDS`` rounds)."""
        last = self._members(key, value)
        try:
            for _ in range(_ROUNDS):
                self._approx = last
                self._partial.clear()
                self._binding_partial.clear()
                busy.add(key)
                try:
                    value = evaluate()
                finally:
                    busy.discard(key)
                now = self._members(key, value)
                if now == last:
                    break
                last = now
        finally:  # a deep evaluation that raised leaves no round behind
            self._approx = {}
        return value

    def _members(self, key: object, value: Value) -> dict[object, Value]:
        """What one round gave the members of a cycle: those whose evaluation read
        a cut, and ``key``."""
        found: dict[object, Value] = {}
        found.update(self._partial.items())
        found.update(self._binding_partial.items())
        found[key] = value
        return found

    def _remember(
        self,
        memo: dict[Any, Value],
        partial: dict[Any, Value],
        key: object,
        value: Value,
        cuts: int,
    ) -> None:
        """Memoise a value. One computed while a cycle was cut inside a larger
        evaluation, or that read a value computed so, is partial (it depends on
        where evaluation started): it is kept only until that evaluation ends, so
        each node is evaluated once per query and no query sees another's partial
        values."""
        outermost = not (self._busy or self._binding_busy)
        if self._cuts == cuts or outermost:
            memo[key] = value
        else:
            partial[key] = value
        if outermost:
            self._partial.clear()
            self._binding_partial.clear()

    def qualify(self, expr: cst.BaseExpression) -> str | None:
        """Qualified name of ``expr`` unless a local binding shadows its root name."""
        root = expr
        while type(root) is cst.Attribute:
            root = root.value
        if type(root) is cst.Name:
            scope = self.scope_of.get(root)
            bindings = scope.lookup(root.value) if scope is not None else None
            # a local variable, parameter or definition is not an import alias,
            # unless every binding is a plain alias (graph_fn = torch.cuda.graph)
            if (
                bindings
                and not any(b.how == "import" for b in bindings)
                and not all(b.how == "assign" and not b.path for b in bindings)
            ):
                return None
        return self.names.qualify(expr)

    def is_module_class(self, info: ClassInfo) -> bool:
        """Whether a local class derives from ``torch.nn.Module``, or holds state
        only a module has (``nn.Parameter``, ``register_buffer``) where its bases
        come from elsewhere."""
        known = self._module_classes.get(id(info))
        if known is not None:
            return known
        self._module_classes[id(info)] = False  # cycle guard
        result = False
        for base in info.node.bases:
            q = self.qualify(base.value)
            local = self.local_class(base.value)
            if q is not None and api.is_module_class(q):
                result = True
            elif local is not None:
                result = self.is_module_class(local)
            if result:
                break
        if not result:
            result = info.registers or any(
                type(value) is cst.Call
                and self.qualify(value.func) == "torch.nn.Parameter"
                for values in info.attrs.values()
                for value, _ in values
            )
        self._module_classes[id(info)] = result
        return result

    def local_class(self, expr: cst.BaseExpression) -> ClassInfo | None:
        """The class of this file a name refers to, by Python's scoping: of several
        classes with one name (one per test function), the one in scope."""
        if type(expr) is not cst.Name:
            return None
        scope = self.scope_of.get(expr)
        for binding in (scope.lookup(expr.value) or []) if scope is not None else []:
            if binding.how == "class" and type(binding.node) is cst.ClassDef:
                found = self.class_infos.get(binding.node)
                if found is not None:
                    return found
        return self.classes.get(expr.value)

    def bases(self, info: ClassInfo) -> list[ClassInfo]:
        """A class and its local base classes, nearest first."""
        found: list[ClassInfo] = []
        todo = [info]
        while todo:
            cls = todo.pop(0)
            if any(cls is f for f in found):
                continue
            found.append(cls)
            todo.extend(
                base
                for b in cls.node.bases
                if (base := self.local_class(b.value)) is not None
            )
        return found

    def attribute_of_class(self, info: ClassInfo, attr: str) -> Value | None:
        """Join of all values assigned to ``self.<attr>`` in the class or its bases."""
        for cls in self.bases(info):
            if attr in cls.attrs:
                return join_all(self.of(value) for value, _ in cls.attrs[attr])
        return None

    def held_object(self, expr: cst.BaseExpression) -> Value:
        """The object ``expr`` holds, as ``of`` says, where that is an object of a
        known class; for ``self.attr``, also where the class binds it to ``None``
        besides (a placeholder: ``self.graph = None`` in ``__init__``, the graph
        made before use). Anything else is unknown."""
        value = self.of(expr)
        if value.kind is Kind.OBJECT and value.cls is not None:
            return value
        if type(expr) is not cst.Attribute:
            return UNKNOWN
        owner = self.of(expr.value)
        info = owner.local if owner.kind in (Kind.MODULE, Kind.OBJECT) else None
        if info is None or owner.is_class:
            return UNKNOWN
        for cls in self.bases(info):
            stored = cls.attrs.get(expr.attr.value, [])
            made = [value for value, _ in stored if not is_none(value)]
            if made:
                found = join_all(self.of(value) for value in made)
                return found if found.kind is Kind.OBJECT else UNKNOWN
        return UNKNOWN

    def class_attribute(self, info: ClassInfo, attr: str) -> Value:
        """``Cls.attr``: the join of what the class body and ``Cls.attr = value``
        anywhere in the file bind to it, in the class or its bases, when that is an
        object (a generator, a stream); anything else stays unknown, so class-level
        containers and counters shared by design do not become host state. A
        ``None`` is a placeholder (``generator = None``, set before use)."""
        for cls in self.bases(info):
            stored = [value for value, _ in cls.class_attrs.get(attr, [])]
            stored.extend(
                b.value
                for b in cls.scope.bindings.get(attr, [])
                if b.how == "assign" and not b.path and b.value is not None
            )
            if stored:
                found = join_all(self.of(v) for v in stored if not is_none(v))
                return found if found.kind is Kind.OBJECT else UNKNOWN
        return UNKNOWN

    # -- names ---------------------------------------------------------------------
    def _name(self, node: cst.Name) -> Value:
        if node.value in ("True", "False", "None"):
            return PYTHON
        scope = self.scope_of.get(node)
        bindings = scope.lookup(node.value) if scope is not None else None
        if bindings is None:
            return UNKNOWN
        seen = self.reaching.of(node) if self.reaching is not None else None
        if seen is not None:  # the bindings this read can see, where known
            reached = [b for b in bindings if b.node is None or b.node in seen]
            bindings = reached or bindings
        return join_all(self.binding(b) for b in bindings)

    def binding(self, binding: Binding) -> Value:
        """The value one binding gives its name."""
        key = id(binding)
        if key in self._binding_busy:
            self._cuts += 1
            return self._approx.get(key, BOTTOM)
        cached = self._binding_memo.get(key)
        if cached is not None:
            return cached
        cached = self._binding_partial.get(key)
        if cached is not None:
            self._cuts += 1  # what reads it is partial too (``_remember``)
            return cached
        cuts = self._cuts
        outermost = not (self._busy or self._binding_busy)
        self._binding_busy.add(key)
        try:
            value = self._binding_uncached(binding)
        finally:
            self._binding_busy.discard(key)
        if outermost and self._cuts != cuts:
            value = self._fixpoint(
                key, value, self._binding_busy, lambda: self._binding_uncached(binding)
            )
        self._remember(self._binding_memo, self._binding_partial, key, value, cuts)
        return value

    def _binding_uncached(self, b: Binding) -> Value:
        if b.how == "assign" and b.value is not None:
            return self._unpack(b.value, b.path)
        if b.how == "iterate" and b.value is not None:
            value = element_of(self.of(b.value))
            for index in b.path:
                value = element_of(value, index)
            return value
        if b.how == "augment" and b.value is not None:
            added = self.of(b.value)
            if added.is_tensor:
                return added
            # ``step += 1``: what the name held before (the bindings its read sees)
            target = b.node
            return self.of(target) if type(target) is cst.Name else BOTTOM
        if b.how == "param" and type(b.node) is cst.Param:
            return self._param(b.node, b.scope)
        if b.how == "annotated" and b.value is not None:
            return self._annotation(b.value)
        if b.how == "def" and type(b.node) is cst.FunctionDef:
            return Value(Kind.PYTHON, function=b.node)
        if b.how == "class" and type(b.node) is cst.ClassDef:
            info = self.class_infos.get(b.node) or self.classes.get(b.node.name.value)
            return Value(Kind.PYTHON, local=info, is_class=True)
        return UNKNOWN

    def _unpack(self, expr: cst.BaseExpression, path: tuple[int, ...]) -> Value:
        for depth, index in enumerate(path):
            if (type(expr) is cst.Tuple or type(expr) is cst.List) and index < len(
                expr.elements
            ):
                element = expr.elements[index]
                if type(element) is cst.StarredElement:
                    return UNKNOWN
                expr = element.value
                continue
            value = self.of(expr)
            for rest in path[depth:]:
                value = element_of(value, rest)
            return value
        return self.of(expr)

    def _param(self, param: cst.Param, scope: Scope) -> Value:
        if scope.self_name == param.name.value and scope.cls is not None:
            kind = Kind.MODULE if self.is_module_class(scope.cls) else Kind.OBJECT
            return Value(kind, cls=scope.cls.name, local=scope.cls)
        if param.annotation is not None:
            return self._annotation(param.annotation.annotation)
        passed = self.tensor_params.get(scope.node, frozenset())
        if param.name.value in passed:
            return TENSOR  # what every call under capture passes it
        if param.name.value + "*" in passed:
            return Value(Kind.PYTHON, element=TENSOR)
        if param.name.value + "!" in passed:
            return tensor(Device.CPU)  # every call under capture passes a host tensor
        if param.name.value + "~" in passed:
            return Value(Kind.MODULE)  # ... a module: calling it gives a tensor
        if param.default is not None:
            # ``kind="causal"``, ``eps=1e-5``: a graphed callable's inputs are the
            # tensors it is called with, not its options; ``mask=None`` may be either
            default = param.default
            if is_none(default):
                return UNKNOWN
            return PYTHON if _is_literal(default) else self.of(default)
        if self.captured.get(scope.node) is RegionKind.GRAPHED:
            return TENSOR  # make_graphed_callables requires tensor arguments
        return UNKNOWN

    def _annotation(self, node: cst.BaseExpression) -> Value:
        if type(node) is cst.SimpleString:
            return UNKNOWN
        if (
            type(node) is cst.BinaryOperation and type(node.operator) is cst.BitOr
        ):  # Tensor | None
            parts = [self._annotation(node.left), self._annotation(node.right)]
            tensors = [p for p in parts if p.is_tensor]
            return tensors[0] if tensors else UNKNOWN
        if type(node) is cst.Subscript:
            outer = self.qualify(node.value) or dotted(node.value) or ""
            if outer.split(".")[-1] == "Optional" and node.slice:
                inner = node.slice[0].slice
                if type(inner) is cst.Index:
                    return self._annotation(inner.value)
            return UNKNOWN
        q = self.qualify(node)
        if q in api.TENSOR_TYPES:
            return TENSOR
        if q in api.ANNOTATED_OBJECTS:  # ``stream: torch.cuda.Stream``
            return Value(Kind.OBJECT, cls=api.ANNOTATED_OBJECTS[q])
        if q is not None and api.is_module_class(q):
            return Value(Kind.MODULE, cls=q)
        name = dotted(node)
        if name in ("int", "float", "bool", "str", "bytes", "complex"):
            return PYTHON
        return UNKNOWN

    # -- expressions ---------------------------------------------------------------
    def _eval(self, e: cst.BaseExpression) -> Value:
        if type(e) is cst.Name:
            return _named(e.value, self._name(e))
        if type(e) is cst.Call:
            return self._call(e)
        if type(e) is cst.Attribute:
            return _named(e.attr.value, self._attribute(e))
        if type(e) is cst.Subscript:
            return self._subscript(e)
        if type(e) is cst.BinaryOperation:
            return self._arith(self.of(e.left), self.of(e.right), e.operator)
        if type(e) is cst.Comparison:
            return self._comparison(e)
        if type(e) is cst.UnaryOperation:
            if type(e.operator) is cst.Not:
                return PYTHON
            return self.of(e.expression)
        if type(e) is cst.BooleanOperation:
            return join(self.of(e.left), self.of(e.right))
        if type(e) is cst.IfExp:
            return join(self.of(e.body), self.of(e.orelse))
        if type(e) is cst.SimpleString or type(e) is cst.ConcatenatedString:
            text = e.evaluated_value
            if isinstance(text, str) and _CUDA_SPEC.match(text):
                return Value(Kind.PYTHON, device=Device.CUDA)
            if text == "cpu":
                return Value(Kind.PYTHON, device=Device.CPU)
            return PYTHON
        if (
            type(e) is cst.Integer
            or type(e) is cst.Float
            or type(e) is cst.Imaginary
            or type(e) is cst.FormattedString
        ):
            return PYTHON
        if type(e) is cst.Tuple or type(e) is cst.List or type(e) is cst.Set:
            members = tuple(
                UNKNOWN if type(el) is cst.StarredElement else self.of(el.value)
                for el in e.elements
            )
            return tuple_of(*members)
        if type(e) is cst.Dict:
            values = [
                self.of(el.value) for el in e.elements if type(el) is cst.DictElement
            ]
            return Value(Kind.PYTHON, element=join_all(values))
        if (
            type(e) is cst.ListComp
            or type(e) is cst.SetComp
            or type(e) is cst.GeneratorExp
        ):
            return Value(Kind.PYTHON, element=self.of(e.elt))
        if type(e) is cst.DictComp:
            return Value(Kind.PYTHON, element=self.of(e.value))
        if type(e) is cst.Lambda:
            return Value(Kind.PYTHON, function=e)
        if type(e) is cst.NamedExpr:
            return self.of(e.value)
        return UNKNOWN

    def _arith(self, left: Value, right: Value, op: cst.BaseBinaryOp) -> Value:
        if left.kind is Kind.BOTTOM or right.kind is Kind.BOTTOM:
            return BOTTOM  # a cycle being evaluated: the other bindings decide
        tensors = [v for v in (left, right) if v.is_tensor]
        if tensors:
            devices = {t.device for t in tensors}
            device = (
                Device.CUDA
                if Device.CUDA in devices
                else devices.pop()
                if len(devices) == 1
                else Device.UNKNOWN
            )
            others_scalar = all(
                v.is_tensor or v.kind is Kind.PYTHON for v in (left, right)
            )
            boolean = (
                type(op) is cst.BitAnd
                or type(op) is cst.BitOr
                or type(op) is cst.BitXor
            ) and all(t.boolean for t in tensors)
            return tensor(
                device,
                zero_dim=others_scalar and all(t.zero_dim for t in tensors),
                boolean=boolean,
            )
        return PYTHON if left.kind is right.kind is Kind.PYTHON else UNKNOWN

    def _comparison(self, e: cst.Comparison) -> Value:
        if all(
            (
                type(t.operator) is cst.Is
                or type(t.operator) is cst.IsNot
                or type(t.operator) is cst.In
                or type(t.operator) is cst.NotIn
            )
            for t in e.comparisons
        ):
            return PYTHON
        operands = [self.of(e.left), *(self.of(t.comparator) for t in e.comparisons)]
        tensors = [v for v in operands if v.is_tensor]
        if tensors:
            devices = {t.device for t in tensors}
            device = devices.pop() if len(devices) == 1 else Device.UNKNOWN
            scalar = all(v.is_tensor or v.kind is Kind.PYTHON for v in operands)
            return tensor(
                device,
                boolean=True,
                zero_dim=scalar and all(t.zero_dim for t in tensors),
            )
        if any(v.kind is Kind.BOTTOM for v in operands):
            return BOTTOM
        if all(v.kind is Kind.PYTHON for v in operands):
            return PYTHON
        return UNKNOWN

    def _subscript(self, e: cst.Subscript) -> Value:
        base = self.of(e.value)
        if base.kind is Kind.BOTTOM:
            return BOTTOM  # a cycle being evaluated: nothing known yet
        if base.is_tensor:
            return tensor(base.device, boolean=base.boolean)
        if base == HOST:
            return HOST  # ``lens_cpu[:n]``
        index = None
        if len(e.slice) == 1 and type(e.slice[0].slice) is cst.Index:
            inner = e.slice[0].slice.value
            if type(inner) is cst.Integer:
                index = int(inner.evaluated_value)
        if base.kind is Kind.PYTHON and (base.element or base.items):
            if any(type(s.slice) is cst.Slice for s in e.slice):
                return base  # a slice of a container is a container
            return element_of(base, index)
        if base.kind is Kind.MODULE and base.cls in api.MODULE_CONTAINERS:
            return Value(Kind.MODULE)
        return UNKNOWN

    def _attribute(self, e: cst.Attribute) -> Value:
        q = self.qualify(e)
        if q is not None:
            if q in api.DTYPES or q in api.PYTHON_CONSTANTS:
                return PYTHON
            return UNKNOWN
        base = self.of(e.value)
        if base.kind is Kind.BOTTOM:
            return BOTTOM
        attr = e.attr.value
        if base.is_tensor:
            if attr in api.TENSOR_ATTRS:
                return tensor(base.device)
            if attr == "shape":
                return Value(Kind.PYTHON, element=PYTHON)
            if attr == "device":  # ``.to(x.device)`` moves to where ``x`` lives
                return Value(Kind.PYTHON, device=base.device)
            if attr in api.TENSOR_PY_ATTRS:
                return PYTHON
            return UNKNOWN
        if base.is_class and base.local is not None:
            return self.class_attribute(base.local, attr)
        if base.kind in (Kind.MODULE, Kind.OBJECT):
            if base.local is not None:
                found = self.attribute_of_class(base.local, attr)
                if found is not None and base.kind is Kind.MODULE and found.is_tensor:
                    # module.cuda() / .to() moves parameters and buffers together
                    return tensor(
                        Device.UNKNOWN if found.device is Device.CPU else found.device
                    )
                if found is not None:
                    return found
                if attr in base.local.methods:
                    return Value(Kind.PYTHON, function=base.local.methods[attr])
            if base.kind is Kind.MODULE:
                if (
                    base.cls in api.MODULE_CONTAINERS
                    and attr not in api.MODULE_PY_ATTRS
                ):
                    return Value(Kind.MODULE)  # ``self.transformer.wte``: a member
                if attr in api.MODULE_TENSOR_ATTRS:
                    return TENSOR
                if attr in api.MODULE_PY_ATTRS:
                    return PYTHON
            return UNKNOWN
        return UNKNOWN

    # -- calls ---------------------------------------------------------------------
    def _call(self, e: cst.Call) -> Value:
        q = self.qualify(e.func)
        if q is not None:
            return self._qualified_call(q, e)
        if type(e.func) is cst.Attribute:
            return self._method(self.of(e.func.value), e.func.attr.value, e)
        if type(e.func) is cst.Name:
            scope = self.scope_of.get(e.func)
            if scope is None or scope.lookup(e.func.value) is None:
                return self._builtin(e.func.value, e)
        return self._call_value(self.of(e.func), e)

    def _call_value(self, callee: Value, e: cst.Call) -> Value:
        if callee.kind is Kind.MODULE:
            return TENSOR  # module output
        if callee.is_class and callee.local is not None:
            kind = Kind.MODULE if self.is_module_class(callee.local) else Kind.OBJECT
            return Value(kind, cls=callee.local.name, local=callee.local, origin=e)
        if type(callee.function) is cst.FunctionDef:
            # a factory of this file: the object it builds (``make_optimizer()``),
            # with the call that built it; other results stay unknown
            function = callee.function
            if function not in self._returns:  # a factory is called many times
                self._returns[function] = _returned(function)
            made = join_all(self.of(r) for r in self._returns[function])
            if made.kind in (Kind.OBJECT, Kind.MODULE):
                return made
        return UNKNOWN

    def _args(self, e: cst.Call) -> tuple[list[cst.Arg], dict[str, cst.Arg]]:
        positional = [a for a in e.args if a.keyword is None and not a.star]
        keywords = {a.keyword.value: a for a in e.args if a.keyword is not None}
        return positional, keywords

    def device_of_spec(self, expr: cst.BaseExpression) -> Device:
        """The device a ``device=`` argument or ``.to()`` target names."""
        value = self.of(expr)
        if value.kind is Kind.PYTHON or value.is_tensor:
            return value.device
        return Device.UNKNOWN

    def _qualified_call(self, q: str, e: cst.Call) -> Value:
        positional, keywords = self._args(e)
        if q == "torch.device":
            return Value(
                Kind.PYTHON,
                device=self.device_of_spec(positional[0].value)
                if positional
                else Device.UNKNOWN,
            )
        if q in api.OBJECT_FACTORIES:
            return Value(Kind.OBJECT, cls=api.OBJECT_FACTORIES[q], origin=e)
        if api.is_module_class(q):
            return Value(Kind.MODULE, cls=q, origin=e)
        if api.is_object_class(q):
            return Value(Kind.OBJECT, cls=q, origin=e)
        if q == "torch.nn.Parameter":
            return tensor(self._first_tensor_device(e))
        if q in api.TUPLE_FUNCTIONS:
            return Value(Kind.PYTHON, element=tensor(self._first_tensor_device(e)))
        if not api.returns_tensor(q):
            return PYTHON if q.startswith("torch.") else UNKNOWN
        name = q.rsplit(".", 1)[-1]
        pin = keywords.get("pin_memory")
        pinned = is_true(pin.value if pin is not None else None)
        if "device" in keywords:
            device = self.device_of_spec(keywords["device"].value)
        elif name in api.FACTORIES or q in api.CPU_FACTORIES:
            device = Device.CPU
        elif name.endswith("Tensor") and not q.startswith("torch.cuda."):
            # ``torch.Tensor([1.0, 2.0])``, ``torch.LongTensor(n)``: legacy
            # constructors of Python data (lists, sizes) build on the host
            known = bool(positional) and all(
                self.of(a.value).kind is Kind.PYTHON for a in positional
            )
            device = Device.CPU if known else self._first_tensor_device(e)
        elif name.endswith("_like") and positional:
            device = self.of(positional[0].value).device
        elif q.startswith("torch.cuda."):
            device = Device.CUDA
        else:
            device = self._first_tensor_device(e)
        zero_dim = (
            name in api.REDUCTIONS and len(positional) == 1 and not _has_dim(keywords)
        ) or (name in ("tensor", "scalar_tensor") and _is_scalar_literal(positional))
        return tensor(
            device,
            zero_dim=zero_dim,
            boolean=name in api.BOOLEAN_OPS,
            pinned=pinned,
        )

    def _first_tensor_device(self, e: cst.Call) -> Device:
        for arg in e.args:
            value = self.of(arg.value)
            if value.is_tensor:
                return value.device
        return Device.UNKNOWN

    def _method(self, recv: Value, name: str, e: cst.Call) -> Value:
        if recv.kind is Kind.BOTTOM:
            return BOTTOM
        positional, keywords = self._args(e)
        if recv.is_tensor:
            if name in api.TENSOR_PY_METHODS:
                return PYTHON
            if name in api.TUPLE_FUNCTIONS_SHORT:
                return Value(Kind.PYTHON, element=tensor(recv.device))
            device = recv.device
            if name == "cpu":
                device = Device.CPU
            elif name == "cuda":
                device = Device.CUDA
            elif name == "to":
                device = self._to_device(recv, positional, keywords)
            elif name == "pin_memory":
                return tensor(Device.CPU, pinned=True, zero_dim=recv.zero_dim)
            zero_dim = (recv.zero_dim and name in api.SHAPE_PRESERVING) or (
                name in api.REDUCTIONS and not positional and not _has_dim(keywords)
            )
            boolean = name in api.BOOLEAN_OPS or (
                recv.boolean and name in api.SHAPE_PRESERVING and name != "float"
            )
            return tensor(
                device,
                zero_dim=zero_dim,
                boolean=boolean,
                pinned=recv.pinned and name in ("to", "contiguous"),
            )
        if recv.kind is Kind.MODULE:
            if name in api.MODULE_SELF_METHODS:
                return recv
            if name in ("parameters", "buffers"):
                return Value(Kind.PYTHON, element=TENSOR)
            if name in ("named_parameters", "named_buffers"):
                return Value(Kind.PYTHON, element=tuple_of(PYTHON, TENSOR))
            if name in ("children", "modules"):
                return Value(Kind.PYTHON, element=Value(Kind.MODULE))
            if name == "forward":
                return TENSOR
            if recv.cls in api.MODULE_CONTAINERS and name not in _CONTAINER_METHODS:
                return TENSOR  # ``self.transformer.wte(idx)``: a member's output
        if recv.kind in (Kind.MODULE, Kind.OBJECT) and recv.local is not None:
            attr = self.attribute_of_class(recv.local, name)
            if attr is not None:
                return self._call_value(attr, e)
        if recv == HOST and name not in ("cuda", "to"):
            return HOST  # ``lens_cpu.max()``
        return UNKNOWN

    def _to_device(
        self, recv: Value, positional: list[cst.Arg], keywords: dict[str, cst.Arg]
    ) -> Device:
        spec = keywords.get("device") or (positional[0] if positional else None)
        if spec is None:
            return recv.device
        value = self.of(spec.value)
        if value.is_tensor or value.device is not Device.UNKNOWN:
            return value.device
        q = self.qualify(spec.value)
        if q in api.DTYPES:
            return recv.device  # a dtype conversion stays on the device
        return Device.UNKNOWN

    def _builtin(self, name: str, e: cst.Call) -> Value:
        args = [self.of(a.value) for a in e.args if a.keyword is None]
        if name in ("abs", "round") and args and args[0].is_tensor:
            return args[0]
        if name in ("max", "min", "sum"):
            if any(v.kind is Kind.BOTTOM for v in args):
                return BOTTOM  # a cycle being evaluated: the other bindings decide
            candidates = args if len(args) > 1 else [element_of(a) for a in args]
            if any(v.is_tensor for v in candidates):
                return tensor(join_all(v for v in candidates if v.is_tensor).device)
            return PYTHON if all(v.kind is Kind.PYTHON for v in candidates) else UNKNOWN
        if name == "range":
            return Value(Kind.PYTHON, element=PYTHON)
        if name == "enumerate" and args:
            return Value(Kind.PYTHON, element=tuple_of(PYTHON, element_of(args[0])))
        if name == "zip":
            return Value(Kind.PYTHON, element=tuple_of(*(element_of(a) for a in args)))
        if name in ("list", "tuple", "sorted", "reversed", "iter", "set", "frozenset"):
            return Value(Kind.PYTHON, element=element_of(args[0]) if args else BOTTOM)
        if name == "dict":
            return Value(Kind.PYTHON, element=BOTTOM)
        if name == "next" and args:
            return element_of(args[0])
        if name in api.PYTHON_BUILTINS:
            return PYTHON
        return UNKNOWN


# Methods of nn.ModuleList / ModuleDict / Sequential themselves (not members).
_CONTAINER_METHODS = frozenset(
    {
        "append",
        "extend",
        "insert",
        "pop",
        "keys",
        "items",
        "values",
        "update",
        "clear",
        "get",
        "index",
        "add_module",
        "register_module",
        "get_submodule",
        "named_children",
        "named_modules",
        "state_dict",
        "load_state_dict",
        "zero_grad",
        "register_forward_hook",
        "register_forward_pre_hook",
        "register_full_backward_hook",
    }
)


def _returned(function: cst.FunctionDef) -> list[cst.BaseExpression]:
    """What ``function``'s own ``return`` statements return (not nested ones)."""
    found: list[cst.BaseExpression] = []
    todo: list[cst.CSTNode] = [function.body]
    while todo:
        node = todo.pop()
        if type(node) is cst.Return:
            if node.value is not None:
                found.append(node.value)
        elif not (
            type(node) is cst.FunctionDef
            or type(node) is cst.ClassDef
            or type(node) is cst.Lambda
        ):
            todo.extend(children(node))
    return found


def _is_literal(expr: cst.BaseExpression) -> bool:
    """A str, number or bool written out (``-1`` too)."""
    if type(expr) is cst.UnaryOperation:
        expr = expr.expression
    if type(expr) is cst.Name:
        return expr.value in ("True", "False")
    return (
        type(expr) is cst.SimpleString
        or type(expr) is cst.ConcatenatedString
        or type(expr) is cst.Integer
        or type(expr) is cst.Float
    )


def _has_dim(keywords: dict[str, cst.Arg]) -> bool:
    return "dim" in keywords or "axis" in keywords


def _is_scalar_literal(positional: list[cst.Arg]) -> bool:
    if not positional:
        return False
    value = positional[0].value
    if type(value) is cst.UnaryOperation:
        value = value.expression
    return (type(value) is cst.Integer or type(value) is cst.Float) or (
        type(value) is cst.Name and value.value in ("True", "False")
    )


def tensor_slots(call: cst.Call, values: Values) -> Iterator[tuple[str, str]]:
    """The arguments of ``call`` that ``tensor_mark`` marks, in order, each as its
    slot (its position, "0", up to the first ``*args``, or its keyword) and its
    mark."""
    position = 0
    for arg in call.args:
        if arg.star:
            if arg.star == "*":
                position = -1  # the positions after it are not known
            continue
        if arg.keyword is not None:
            slot = arg.keyword.value
        elif position >= 0:
            slot, position = str(position), position + 1
        else:
            continue
        mark = tensor_mark(values.of(arg.value))
        if mark is not None:
            yield slot, mark


def tensor_mark(value: Value) -> str | None:
    """How an argument slot is marked for what a call passes there
    (``Entry.tensors``): "" a device tensor, ``*`` a container of them, ``!`` a
    tensor made on the host, ``~`` an ``nn.Module``; None for anything else."""
    if value.on_device:
        return ""
    if value.kind is Kind.PYTHON and element_of(value).on_device:
        return TENSORS_MARK
    if value.is_tensor and value.device is Device.CPU:
        return HOST_MARK
    if value.kind is Kind.MODULE:
        return MODULE_MARK
    return None


__all__ = [
    "BOTTOM",
    "PYTHON",
    "TENSOR",
    "UNKNOWN",
    "Device",
    "Kind",
    "Value",
    "Values",
    "element_of",
    "join",
    "tensor_mark",
    "tensor_slots",
]
