"""Host state: which names, attributes and entries are written where, and read by
which capture region. Computed once per file, in one walk.

A *location* (``Key``) is what Python code can rebind: a variable of one scope, an
attribute of a class's instances (``self.lr``), an attribute or an entry of another
location (``model.buf``, ``state["lr"]``). A capture freezes what a region reads from
host locations: replays keep reading the values and the tensor addresses seen at
capture. So the questions rules ask are "does this location change between
replays?" (GL2xx, GL4xx) and "is this write a rebinding of something a graph reads?"
(GL3xx).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import CodeRange

from graphlint.diagnostics import RegionKind
from graphlint.facts.reaching import Reaching
from graphlint.facts.region import Region
from graphlint.facts.scopes import Scope
from graphlint.facts.syntax import is_none, source
from graphlint.facts.values import Kind, Values
from graphlint.facts.walk import node_types, subscribed, visited, walk

# statements that read no variable: their names are not walked
_NO_READS = node_types(cst.Import, cst.ImportFrom, cst.Global, cst.Nonlocal)

Key = tuple[object, ...]


@dataclass(frozen=True, eq=False)
class Write:
    """One statement that binds a location (its line looked up when first asked)."""

    key: Key
    target: cst.BaseExpression  # the Name, Attribute or Subscript written
    how: str  # "assign", "augment", "delete" or "iterate"
    value: cst.BaseExpression | None  # the right-hand side, when there is one
    function: cst.CSTNode  # the enclosing FunctionDef/Lambda, or the Module
    positions: Mapping[cst.CSTNode, CodeRange] = field(repr=False)
    region: Region | None  # the capture region the write runs in, if any

    @functools.cached_property
    def line(self) -> int:
        return self.positions[self.target].start.line


class HostState(cst.CSTVisitor):
    """The walk; rules read the result through the query methods below."""

    def __init__(
        self,
        module: cst.Module,
        values: Values,
        regions: Mapping[cst.CSTNode, Region],
        positions: Mapping[cst.CSTNode, CodeRange],
        reaching: Reaching | None = None,
    ) -> None:
        super().__init__()
        self.module = module
        self.values = values
        self.regions = regions
        self.positions = positions
        self.reaching = reaching or Reaching(module, values.scope_of)
        self.writes: dict[Key, list[Write]] = {}
        self.write_at: dict[cst.CSTNode, Write] = {}
        # keys read inside each region (every level of a dotted read)
        self.region_reads: dict[Region, set[Key]] = {}
        self.region_writes: dict[Region, set[Key]] = {}
        # outermost reads under capture: ``self.lr`` rather than ``self``
        self.reads: dict[cst.CSTNode, Key] = {}
        # if/while/ternary tests and the outermost locations each one reads
        self.tests: dict[cst.CSTNode, list[cst.BaseExpression]] = {}
        self.in_test: set[cst.CSTNode] = set()
        # reads in the index of a store target (``outs[bs] = y``): host bookkeeping
        self.in_key: set[cst.CSTNode] = set()
        # ``g.register_generator_state(gen)``: (graph source text, generator key)
        self.registered: list[tuple[str, Key | None]] = []
        # optimizers (by the call that built them) whose step a region captures
        self.stepped: dict[cst.Call, Region] = {}
        # pushes and pops of a host stack under capture: (capture, key) -> which
        self.stacked: dict[tuple[object, Key], set[str]] = {}
        self._stores: set[cst.CSTNode] = set()
        self._not_read: set[cst.CSTNode] = set()  # names that are not expressions
        self._inner: set[cst.CSTNode] = set()
        self._holders: dict[object, list[tuple[Region, Key]]] | None = None
        self._asserted: dict[str, tuple[int, int]] | None = None
        self._by_value: dict[Key, list[Write]] | None = None

    # -- keys ------------------------------------------------------------------------
    def key_of(self, expr: cst.BaseExpression) -> Key | None:
        """The location ``expr`` names, or None for anything else."""
        if type(expr) is cst.Name:
            scope = self.values.scope_of.get(expr)
            owner = scope.owner(expr.value) if scope is not None else None
            return ("name", owner, expr.value) if owner is not None else None
        if type(expr) is cst.Attribute:
            cls = self._self_class(expr.value)
            if cls is not None:
                return ("self", cls, expr.attr.value)
            base = self.key_of(expr.value)
            return ("attr", base, expr.attr.value) if base is not None else None
        if type(expr) is cst.Subscript and len(expr.slice) == 1:
            base = self.key_of(expr.value)
            index = expr.slice[0].slice
            if base is None or type(index) is not cst.Index:
                return None
            literal = index.value
            if type(literal) is cst.SimpleString:
                entry = repr(literal.evaluated_value)  # ``d['lr']`` is ``d["lr"]``
            elif type(literal) is cst.Integer:
                # the source text: ``repr`` of a 5,000-digit hex literal would exceed
                # Python's int-to-decimal limit and raise
                entry = literal.value.replace("_", "").lower()
            else:
                entry = "*"
            return ("item", base, entry)
        return None

    def bound_in(self, expr: cst.BaseExpression, region: Region) -> bool | None:
        """Whether the value ``expr`` reads (``x``, ``x.attr``, ``x[i]``) was bound
        by code ``region`` runs: True when every binding of ``x`` it can see was
        made there (not a parameter: that is handed in), False when none was, None
        when unknown or some were. A value the region binds itself is no host
        state frozen at capture: ``for i in range(n):`` inside it is unrolled,
        each copy with its own ``i``."""
        base = expr
        while type(base) is cst.Attribute or type(base) is cst.Subscript:
            base = base.value
        if type(base) is not cst.Name:
            return None
        defs = self.reaching.of(base)
        if not defs:
            return None
        inside = [
            type(d) is not cst.Param and self.regions.get(d) is region for d in defs
        ]
        return True if all(inside) else False if not any(inside) else None

    def writes_of_value(self, held: Key) -> list[Write]:
        """The assignments whose value is the location ``held`` (``self.graphs[bs]
        = g`` for ``g``), indexed on first use."""
        if self._by_value is None:
            self._by_value = {}
            for writes in self.writes.values():
                for write in writes:
                    if write.how == "assign" and write.value is not None:
                        value = self.key_of(write.value)
                        if value is not None:
                            self._by_value.setdefault(value, []).append(write)
        return self._by_value.get(held, [])

    def graph_slot(self, target: cst.Subscript, region: Region) -> bool:
        """Whether ``target`` (``self.out[key]``, written under capture) is the
        graph's own output slot: its function also stores the graph it captures
        under the same key (``self.graphs[key] = g``). One graph per key, one output
        per key: each replay rewrites that output in place, so storing it once, at
        capture, is the intended pattern."""
        graph = region.graph_expr
        index = subscript_index(target)
        if graph is None or index is None:
            return False
        graph_key = self.key_of(graph)
        function = self.function_of(target)
        for writes in self.writes.values():
            for write in writes:
                value = write.value
                if (
                    value is not None
                    and write.function is function
                    and type(write.target) is cst.Subscript
                    and write.target is not target
                    and (self.key_of(value) or source(value))
                    == (graph_key or source(graph))
                    and self._same_key(subscript_index(write.target), index)
                ):
                    return True
        return False

    def staged(self, target: cst.Subscript, region: Region) -> bool:
        """Whether ``target`` (``recv[k]``, written under capture) is a staging slot
        of its capture: the code the capture runs both fills the slot (the container
        and the index text, ``k`` in each function) and resets it to None or
        deletes it afterwards (a forward's output handed to its backward, then
        dropped; in one function, the reset below the fill). The capture leaves the
        slot as eager calls leave it, and replays, which run neither write, lose
        nothing. Across functions the order is taken to be the step's: the
        function that fills the slot runs first."""
        key = self.key_of(target)
        index = subscript_index(target)
        if key is None or index is None:
            return False
        text, capture = source(index), _capture(region)
        fills: list[Write] = []
        resets: list[Write] = []
        for write in self.writes.get(key, ()):
            if (
                write.region is None
                or _capture(write.region) != capture
                or type(write.target) is not cst.Subscript
                or (slot := subscript_index(write.target)) is None
                or source(slot) != text
            ):
                continue
            if write.how == "delete" or (
                write.how == "assign" and is_none(write.value)
            ):
                resets.append(write)
            elif write.how == "assign":
                fills.append(write)
        # in one function, the reset comes after the fill (a reset first leaves the
        # slot filled); across functions, the step calls the filling one first
        return any(
            fill.function is not reset.function or fill.line < reset.line
            for fill in fills
            for reset in resets
        )

    def _same_key(self, a: cst.BaseExpression | None, b: cst.BaseExpression) -> bool:
        """Two indexes that hold one value: the same text, and for a local name the
        same bindings."""
        if a is None or source(a) != source(b):
            return False
        if type(a) is cst.Name and type(b) is cst.Name:
            return self.reaching.of(a) == self.reaching.of(b)
        return True

    def only_asserted(self, attr: str) -> bool:
        """Whether the file reads the attribute ``attr`` (of any object) and every
        read is in an assertion (``assert m.calls == 2``, ``self.assertEqual(...)``):
        a probe a test counts with, which feeds nothing the program computes."""
        if self._asserted is None:
            probes = _Probes()
            walk(self.module, probes)
            self._asserted = probes.found
        counts = self._asserted.get(attr)
        return counts is not None and counts[0] > 0 and counts[0] == counts[1]

    def reads_variable(self, name: cst.Name) -> bool:
        """Whether ``name`` reads a variable: not a store target, ``.attr``,
        ``kw=`` or a definition's name."""
        return name not in self._not_read and name not in self._stores

    def _self_class(self, expr: cst.BaseExpression) -> str | None:
        if type(expr) is not cst.Name:
            return None
        scope = self.values.scope_of.get(expr)
        fn = scope.function() if scope is not None else None
        if fn is not None and fn.cls is not None and fn.self_name == expr.value:
            # a subclass's ``self.x`` is its base's: the root of its local hierarchy
            return self.values.bases(fn.cls)[-1].name
        return None

    def function_of(self, node: cst.CSTNode) -> cst.CSTNode:
        scope: Scope | None = self.values.scope_of.get(node)
        fn = scope.function() if scope is not None else None
        return fn.node if fn is not None else self.module

    # -- the walk --------------------------------------------------------------------
    def on_visit(self, node: cst.CSTNode) -> bool:
        # by exact type (``node_types``): this runs on every node of the file
        if type(node) in _NO_READS:
            return False
        self._skip_names(node)
        if (
            type(node) is cst.Attribute
            or type(node) is cst.Subscript
            or (type(node) is cst.Name and node not in self._not_read)
        ):
            self._read(node)
        return visited(self, node) if type(node) in _VISITED else True

    def _skip_names(self, node: cst.CSTNode) -> None:
        """Mark names that do not read a variable: ``.attr``, ``kw=``, definitions."""
        if type(node) is cst.Attribute:
            self._not_read.add(node.attr)
        elif type(node) is cst.Arg and node.keyword is not None:
            self._not_read.add(node.keyword)
        elif (
            type(node) is cst.FunctionDef
            or type(node) is cst.ClassDef
            or type(node) is cst.Param
        ):
            self._not_read.add(node.name)

    def _read(self, node: cst.Name | cst.Attribute | cst.Subscript) -> None:
        if type(node) is cst.Attribute or type(node) is cst.Subscript:
            self._inner.add(node.value)
        region = self.regions.get(node)
        if region is None or node in self._stores:
            return
        key = self.key_of(node)
        if key is None or self.bound_in(node, region):
            return
        if node not in self._inner:
            self.reads[node] = key
        self.region_reads.setdefault(region, set()).add(key)

    def _test(self, node: cst.BaseExpression) -> None:
        reads = _TestReads()
        walk(node, reads)
        self.tests[node] = reads.found
        self.in_test.update(reads.found)

    def visit_If(self, node: cst.If) -> None:
        self._test(node.test)

    def visit_While(self, node: cst.While) -> None:
        self._test(node.test)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._test(node.test)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if type(func) is not cst.Attribute:
            return
        name = func.attr.value
        if name == "register_generator_state" and node.args:
            key = self.key_of(node.args[0].value)
            self.registered.append((source(func.value), key))
        elif name in _PUSHES or name in _POPS:
            region = self.regions.get(node)
            key = self.key_of(func.value) if region is not None else None
            if region is not None and key is not None:
                which = "push" if name in _PUSHES else "pop"
                self.stacked.setdefault((_capture(region), key), set()).add(which)
        elif name == "step":
            region = self.regions.get(node)
            if region is None or region.kind.is_compile:
                return
            stepped = [func.value, *(a.value for a in node.args[:1])]
            for expr in stepped:  # opt.step() and scaler.step(opt)
                origin = self.values.of(expr).origin
                if origin is not None:
                    self.stepped.setdefault(origin, region)

    def balanced(self, container: cst.BaseExpression, region: Region) -> bool:
        """Whether the code a capture runs both pushes onto the host stack
        ``container`` and pops from it (``stack.append(msg)`` in a ``range_push``,
        ``stack.pop()`` in its ``range_pop``): the capture leaves it as it found it,
        and replays, which run neither, lose nothing."""
        key = self.key_of(container)
        return key is not None and self.stacked.get((_capture(region), key)) == {
            "push",
            "pop",
        }

    def is_registered(self, generator: cst.BaseExpression, region: Region) -> bool:
        """Whether ``generator`` is registered with the graph ``region`` records."""
        key = self.key_of(generator)
        return any(
            key is not None
            and registered == key
            and (region.graph is None or graph == region.graph)
            for graph, registered in self.registered
        )

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._store(target.target, "assign", node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._store(node.target, "assign", node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._store(node.target, "augment", node.value, also_read=True)

    def visit_For(self, node: cst.For) -> None:
        self._store(node.target, "iterate", node.iter)

    def visit_Del(self, node: cst.Del) -> None:
        self._store(node.target, "delete", None)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._store(node.target, "assign", node.value)

    def _store(
        self,
        target: cst.BaseExpression,
        how: str,
        value: cst.BaseExpression | None,
        *,
        also_read: bool = False,
    ) -> None:
        if type(target) is cst.Tuple or type(target) is cst.List:
            for element in target.elements:
                self._store(element.value, how, None)
            return
        if type(target) is cst.StarredElement:
            self._store(target.value, how, None)
            return
        if not also_read:
            self._stores.add(target)
        if (  # ``d[k] = v`` on a host container: ``k`` only files the value
            type(target) is cst.Subscript
            and self.values.of(target.value).kind is Kind.PYTHON
        ):
            for index in target.slice:
                reads = _TestReads()
                walk(index, reads)
                self.in_key.update(reads.found)
        key = self.key_of(target)
        if key is None:
            return
        region = self.regions.get(target)
        write = Write(
            key,
            target,
            how,
            value,
            self.function_of(target),
            self.positions,
            region,
        )
        self.writes.setdefault(key, []).append(write)
        self.write_at[target] = write
        if region is not None:
            self.region_writes.setdefault(region, set()).add(key)

    # -- queries ---------------------------------------------------------------------
    def inputs(self, region: Region) -> set[Key]:
        """Locations a region reads that it does not write itself."""
        reads = self.region_reads.get(region, set())
        return reads - self.region_writes.get(region, set())

    def outputs(self, region: Region) -> set[Key]:
        return self.region_writes.get(region, set())

    def readers(self, key: Key, kinds: frozenset[RegionKind]) -> list[Region]:
        """Regions of ``kinds`` that read ``key`` (or a location inside it), in the
        order of ``region_reads``."""
        found: list[Region] = []
        for region, held in self._readers().get(loose(key), ()):
            if (
                region.kind in kinds
                and (not found or found[-1] is not region)
                and same(held, key)
            ):
                found.append(region)
        return found

    def _readers(self) -> dict[object, list[tuple[Region, Key]]]:
        """Each location that holds a region's input (the input and every location
        it lies inside), by its ``loose`` form: (region, location), regions in the
        order of ``region_reads``. Built on first use, after the walk: asking every
        region about every write is quadratic in the file's size."""
        if self._holders is None:
            self._holders = {}
            for region in self.region_reads:
                for read in self.inputs(region):
                    # each enclosing location's loose form is the matching part of
                    # the read's: taken apart as the location is, not made again
                    # (quadratic in the depth of ``x.a.a.a...``)
                    current: object = read
                    form = loose(read)
                    while isinstance(current, tuple) and isinstance(form, tuple):
                        entry = (region, current)
                        self._holders.setdefault(form, []).append(entry)
                        inner = current[0] in ("attr", "item")
                        current = current[1] if inner else None
                        form = form[1] if inner else None
        return self._holders

    def made_by_the_call(self, key: Key) -> bool:
        """Whether ``key`` (``inputs``, ``inputs[k]``, ``ctx.seen``) lies in a local
        of a function that every binding makes anew (a list, set or dict, a
        comprehension, a number) while capturing: per-call scratch state, which
        the call and its closures use and drop, not host state that replays miss.
        A local bound to anything else (``pending = self.pending``) may be the
        state of the module or the instance."""
        base: object = key
        while isinstance(base, tuple) and base[0] in ("item", "attr"):
            base = base[1]
        if not isinstance(base, tuple) or base[0] != "name":
            return False
        bindings = [w for w in self.writes.get(base, ()) if w.how != "augment"]
        return bool(bindings) and all(
            w.how == "assign"
            and w.region is not None
            and w.function is not self.module
            and _made(w.value)
            for w in bindings
        )

    def made_around(self, key: Key, region: Region) -> bool:
        """Whether a container ``key`` lies in (``self.ins`` for ``self.ins[i]``)
        is a new list, set or dict that code under ``region`` makes with new
        containers in it (``_made_anew``): they are dropped with it. One bound to
        another container (``pending = self.pending``), or a copy of one
        (``list(self.pending)``, whose lists are the old ones), is not."""
        base = key
        while base[0] in ("item", "attr") and isinstance(base[1], tuple):
            base = base[1]
            if any(
                w.region == region and w.how == "assign" and _made_anew(w.value)
                for w in self.writes.get(base, ())
            ):
                return True
        return False

    def region_function(self, region: Region) -> cst.CSTNode:
        root = region.root
        if root is None:
            return self.module
        if type(root) is cst.FunctionDef or type(root) is cst.Lambda:
            return root
        return self.function_of(root)


def subscript_index(target: cst.Subscript) -> cst.BaseExpression | None:
    """The index of ``x[index]``; None for slices and several indexes."""
    if len(target.slice) != 1 or type(target.slice[0].slice) is not cst.Index:
        return None
    return target.slice[0].slice.value


_VISITED = subscribed(HostState)[0]  # the node types with a ``visit_`` of its own


class _Probes(cst.CSTVisitor):
    """Per attribute name: how often the file reads it, and how often in an
    assertion. Stores and ``x.n += 1`` (the probe's own update) are not reads."""

    def __init__(self) -> None:
        super().__init__()
        self.found: dict[str, tuple[int, int]] = {}
        self._asserting = 0
        self._written: set[cst.CSTNode] = set()
        self._opened: set[cst.CSTNode] = set()

    def on_visit(self, node: cst.CSTNode) -> bool:
        if type(node) is cst.Assign:
            self._written.update(t.target for t in node.targets)
        elif type(node) is cst.AugAssign or type(node) is cst.AnnAssign:
            self._written.add(node.target)
        elif type(node) is cst.Assert or (
            type(node) is cst.Call and _asserts(node.func)
        ):
            self._asserting += 1
            self._opened.add(node)
        elif type(node) is cst.Attribute and node not in self._written:
            reads, asserted = self.found.get(node.attr.value, (0, 0))
            self.found[node.attr.value] = (reads + 1, asserted + (self._asserting > 0))
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if original_node in self._opened:
            self._asserting -= 1


def _asserts(func: cst.BaseExpression) -> bool:
    """``assert_close``, ``self.assertEqual``, ``np.testing.assert_allclose``."""
    name = func.attr.value if type(func) is cst.Attribute else None
    if type(func) is cst.Name:
        name = func.value
    return name is not None and name.lower().startswith("assert")


class _TestReads(cst.CSTVisitor):
    """The outermost names, attributes and entries a test reads."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[cst.BaseExpression] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if (
            type(node) is cst.Name
            or type(node) is cst.Attribute
            or type(node) is cst.Subscript
        ):
            self.found.append(node)
            return False
        if type(node) is cst.Call:
            # f(x): the callee is not data; its arguments are
            for arg in node.args:
                walk(arg.value, self)
            return False
        return not isinstance(node, (cst.Lambda, cst.BaseComp))


_CONTAINERS = frozenset(
    {"list", "dict", "set", "deque", "defaultdict", "OrderedDict", "Counter"}
)


def _made_anew(value: cst.BaseExpression | None) -> bool:
    """Whether ``value`` makes a new container whose elements are new too: a
    comprehension, an empty ``list()``/``dict()``/``set()``, or a display of such
    values, numbers and strings (not ``[self.pending[0]]``)."""
    if (
        type(value) is cst.ListComp
        or type(value) is cst.SetComp
        or type(value) is cst.DictComp
    ):
        return True
    if type(value) is cst.List or type(value) is cst.Set or type(value) is cst.Tuple:
        return all(
            type(e) is cst.Element and _made_anew(e.value) for e in value.elements
        )
    if type(value) is cst.Dict:
        return all(
            type(e) is cst.DictElement and _made_anew(e.value) for e in value.elements
        )
    if type(value) is cst.Call:
        return not value.args and _made(value)
    if type(value) is cst.Name:
        return value.value in ("None", "True", "False")
    return (
        type(value) is cst.Integer
        or type(value) is cst.Float
        or type(value) is cst.SimpleString
    )


def _made(value: cst.BaseExpression | None) -> bool:
    """Whether evaluating ``value`` makes a new container or a number."""
    if (
        type(value) is cst.List
        or type(value) is cst.Dict
        or type(value) is cst.Set
        or type(value) is cst.ListComp
        or type(value) is cst.SetComp
        or type(value) is cst.DictComp
        or type(value) is cst.Integer
        or type(value) is cst.Float
    ):
        return True
    if type(value) is cst.Call:
        func = value.func
        name = func.attr if type(func) is cst.Attribute else func
        return type(name) is cst.Name and name.value in _CONTAINERS
    return False


def within(read: Key, key: Key) -> bool:
    """Whether location ``read`` is ``key`` or lies inside it (``key.attr[0]``)."""
    current: object = read
    while isinstance(current, tuple):
        if same(current, key):
            return True
        current = current[1] if current[0] in ("attr", "item") else None
    return False


def same(a: object, b: object) -> bool:
    """Locations equal up to unknown entries (``buf[k]`` may be ``buf["x"]``)."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        if len(a) != len(b) or a[0] != b[0]:
            return False
        if a[0] == "item" and "*" in (a[2], b[2]):
            return same(a[1], b[1])
        return all(same(x, y) for x, y in zip(a[1:], b[1:], strict=True))
    return a is b or a == b


def loose(location: object) -> object:
    """``location`` with every entry unknown: locations that are ``same`` have equal
    loose forms, so these index what ``same`` compares."""
    if not isinstance(location, tuple):
        return location
    if len(location) >= 3 and location[0] == "item":
        return ("item", loose(location[1]), "*")
    return tuple(loose(part) for part in location)


__all__ = [
    "HostState",
    "Key",
    "Write",
    "loose",
    "same",
    "subscript_index",
    "within",
]


_PUSHES = frozenset({"append", "appendleft"})
_POPS = frozenset({"pop", "popleft"})


def _capture(region: Region) -> object:
    """The capture a region belongs to, whichever calls reach the code."""
    return (region.origin, region.line, region.kind)
