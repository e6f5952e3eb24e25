"""GL407: the learning rate of an optimizer whose step a graph captured changes."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import libcst as cst

from graphlint.diagnostics import Applicability, Confidence, Outcome
from graphlint.facts.region import Region
from graphlint.facts.scopes import ClassInfo
from graphlint.facts.syntax import argument_of, keyword, method, positional
from graphlint.facts.torchapi import HYPERPARAMETERS
from graphlint.rule import Rule, RuleContext, Scope
from graphlint.rules.apis._options import with_keyword
from graphlint.settings import Setter

_HYPERPARAMETERS = frozenset(f"'{key}'" for key in HYPERPARAMETERS)  # as keys read
_MAX_SUPER = 4  # ``super().__init__`` calls followed up from a constructor
# optimizers whose step reads a tensor lr in the graph once built capturable
_TENSOR_LR = frozenset({"torch.optim.Adam", "torch.optim.AdamW"})
# torch schedulers that ``fill_`` a tensor lr in place and change nothing else
# (OneCycleLR and CyclicLR also cycle momentum or betas, as floats; SequentialLR
# and ChainedScheduler step whatever schedulers they were given)
_IN_PLACE = frozenset(
    f"torch.optim.lr_scheduler.{name}"
    for name in (
        "LambdaLR",
        "MultiplicativeLR",
        "StepLR",
        "MultiStepLR",
        "ConstantLR",
        "LinearLR",
        "ExponentialLR",
        "PolynomialLR",
        "CosineAnnealingLR",
        "CosineAnnealingWarmRestarts",
        "ReduceLROnPlateau",
    )
)


@dataclass(frozen=True, slots=True)
class _Finding:
    """A finding, reported at the end of the file once every finding on its
    optimizer is known: whether they all come from schedulers that update a
    tensor lr in place decides whether they carry the fix."""

    stmt: cst.CSTNode
    region: Region
    origin: cst.Call  # the optimizer's construction
    confidence: Confidence
    related: Sequence[tuple[cst.CSTNode, str]]
    consequence: str | None
    in_place: bool  # ``sched.step()`` of a scheduler of ``_IN_PLACE``


@dataclass(frozen=True, slots=True)
class _Given:
    """How a function holds an optimizer its caller gives it: the parameter, or
    the attribute of ``self`` (``attribute``)."""

    name: str
    attribute: bool


class LearningRateChanged(Rule):
    """A scheduler or `group["lr"] = ...` changes a float lr a graph captured."""

    code = "GL407"
    message = (
        "`{stmt}` changes a Python float hyper-parameter of the optimizer whose "
        "`step()` the graph at line {line} captured"
    )
    fix_title = (
        "Build the optimizer with `capturable=True` and a tensor `lr` "
        "(`lr=torch.tensor(0.01, device='cuda')`); schedulers then update it in place"
    )
    fix_applicability = Applicability.UNSAFE
    outcome = Outcome.SILENT_WRONG
    sees = Scope.FILE  # schedulers and ``lr`` writes run outside regions
    consequence = "replays keep the value seen at capture"

    def __init__(self, context: RuleContext) -> None:
        super().__init__(context)
        # the file's functions that set a hyper-parameter of an optimizer they are
        # given: the write, and the name of what holds the optimizer there
        self._setters: dict[cst.CSTNode, list[tuple[cst.CSTNode, _Given]]] = {}
        # outside regions, to a function of the file
        self._calls: list[tuple[cst.Call, cst.FunctionDef]] = []
        # the project's callables that set hyper-parameters, as the project pass
        # found them for this file's calls (``Job.setters``)
        self._elsewhere: dict[str, list[Setter]] = {}
        for setter in sorted(context.setters):
            self._elsewhere.setdefault(setter.function, []).append(setter)
        self._found: list[_Finding] = []

    def visit_Call(self, node: cst.Call) -> None:
        if not self.state.stepped or self.in_region_code(node):
            return  # no step of an optimizer captured: nothing to change
        function = self.local_function(node)
        if function is not None:
            self._calls.append((node, function))  # settled once every setter is known
        else:
            self.elsewhere(node)
        found = method(node)
        if found is None or found[1] != "step":
            return
        scheduler = self.value(found[0])
        if not (scheduler.cls or "").startswith("torch.optim.lr_scheduler."):
            return
        origin = scheduler.origin
        args = positional(origin) if origin is not None else []
        target = keyword(origin, "optimizer") if origin is not None else None
        in_place = scheduler.cls in _IN_PLACE
        self.check(node, target or (args[0] if args else None), in_place=in_place)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self.write(node, target.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.write(node, node.target)  # ``group["lr"] *= gamma``

    def write(self, node: cst.CSTNode, target: cst.BaseExpression) -> None:
        """``target`` written by ``node``: a hyper-parameter of a ``param_groups``
        entry is checked, and remembered for the calls of its function."""
        if not self.state.stepped or self.in_region_code(node):
            return
        key = self.state.key_of(target)
        if not (
            isinstance(target, cst.Subscript)
            and key is not None
            and key[0] == "item"
            and key[2] in _HYPERPARAMETERS
        ):
            return
        optimizer = self.optimizer_of_group(target.value)
        self.check(node, optimizer)
        given = self.given(optimizer)
        if given is not None:
            function = self.state.function_of(node)
            self._setters.setdefault(function, []).append((node, given))

    def leave_Module(self, original_node: cst.Module) -> None:
        """A call of a function of the file that sets a hyper-parameter of the
        optimizer it is given: a scheduler of the project's own (``sched.step()``,
        its ``self.optimizer`` from the constructor), a ``set_lr(opt, lr)``."""
        for call, function in self._calls:
            for write, given in self._setters.get(function, ()):
                for optimizer in self.passed(call, function, given):
                    self.check(call, optimizer, related=[(write, "sets it here")])
        fixes: dict[cst.Call, list[tuple[cst.CSTNode, cst.CSTNode | str]]] = {}
        for found in self._found:
            if found.origin not in fixes:
                # the fix silences every finding on the optimizer: only where
                # each one is a scheduler the tensor lr then follows
                fixable = all(
                    f.in_place for f in self._found if f.origin is found.origin
                )
                fixes[found.origin] = self.tensor_lr(found.origin) if fixable else []
            self.report(
                found.stmt,
                found.region,
                confidence=found.confidence,
                related=found.related,
                consequence=found.consequence,
                fix=fixes[found.origin],
                stmt=self.code_of(found.stmt),
                line=found.region.line,
            )

    def local_function(self, call: cst.Call) -> cst.FunctionDef | None:
        """The function of the file ``call`` runs: by name, or a method of a class
        of the file (``sched.step()``, ``Tools.set_lr(...)``), inherited too."""
        function = self.value(call.func).function
        if isinstance(function, cst.FunctionDef):
            return function
        found = method(call)
        owner = self.value(found[0]).local if found is not None else None
        if found is None or owner is None:
            return None
        values = self.context.facts.values
        return next(
            (c.methods[found[1]] for c in values.bases(owner) if found[1] in c.methods),
            None,
        )

    def elsewhere(self, call: cst.Call) -> None:
        """A call of a callable of another module of the project, given a captured
        optimizer (``set_lr(opt, lr)``, or ``sched.step()`` on ``sched =
        Scheduler(opt)``): pass one asks the project pass about it, which answers
        with ``setters`` for the file's second analysis. One finding a call."""
        for name, made in self.callees(call):
            given = [a.value for a in (*call.args, *(made.args if made else ()))]
            if not any(self.value(a).origin in self.state.stepped for a in given):
                continue
            self.context.asks.append(name)
            for setter in self._elsewhere.get(name, ()):
                passing = made if setter.attribute else call
                if passing is None:
                    continue
                found = keyword(passing, setter.parameter)
                args = positional(passing)
                if found is None and 0 <= setter.position < len(args):
                    found = args[setter.position]
                consequence = f"{self.consequence} (set at {setter.where})"
                if self.check(call, found, consequence=consequence):
                    return

    def callees(self, call: cst.Call) -> list[tuple[str, cst.Call | None]]:
        """What ``call`` runs, qualified, with the construction of the instance it
        is a method of, where the file shows it: an imported function (or a class's
        method named through an import), or the method of an instance bound once to
        the construction of an imported class."""
        found: list[tuple[str, cst.Call | None]] = []
        name = self.qualname(call.func)
        if name is not None and not name.startswith("torch."):
            found.append((name, None))
        receiver = method(call)
        if receiver is not None and isinstance(receiver[0], cst.Name):
            scope = self.context.facts.values.scope_of.get(receiver[0])
            bindings = scope.lookup(receiver[0].value) if scope is not None else None
            made = bindings[0].value if bindings and len(bindings) == 1 else None
            cls = self.qualname(made.func) if isinstance(made, cst.Call) else None
            if isinstance(made, cst.Call) and cls and not cls.startswith("torch."):
                found.append((f"{cls}.{receiver[1]}", made))
        return found

    def given(self, optimizer: cst.BaseExpression | None) -> _Given | None:
        """How the function around ``optimizer`` is given it: as a parameter
        (``opt``), or in an attribute of ``self`` (``self.optimizer``)."""
        if optimizer is None:
            return None
        scope = self.context.facts.values.scope_of.get(optimizer)
        if scope is None:
            return None
        if isinstance(optimizer, cst.Attribute) and isinstance(
            optimizer.value, cst.Name
        ):
            function = scope.function()
            if function is not None and function.self_name == optimizer.value.value:
                return _Given(optimizer.attr.value, attribute=True)
        elif isinstance(optimizer, cst.Name):
            bindings = scope.lookup(optimizer.value)
            if bindings and all(b.how == "param" for b in bindings):
                return _Given(optimizer.value, attribute=False)
        return None

    def passed(
        self, call: cst.Call, function: cst.FunctionDef, given: _Given
    ) -> Iterator[cst.BaseExpression]:
        """What ``call`` gives ``function`` as ``given``: the argument of the
        parameter; for ``self.x`` of a method called on an instance made in this
        file, what its construction passed the ``__init__`` parameter stored in
        ``self.x``."""
        if not given.attribute:
            found = argument_of(call, function, given.name)
            if found is not None:
                yield found
            return
        receiver = method(call)
        instance = self.value(receiver[0]) if receiver is not None else None
        if instance is None or instance.local is None or instance.origin is None:
            return
        values = self.context.facts.values
        # the classes whose ``__init__`` the construction may run, its own first
        # (four bases up, as the project pass follows them in other modules)
        owners = [c for c in values.bases(instance.local) if "__init__" in c.methods]
        owners = owners[: _MAX_SUPER + 1]
        for name in self.stored(owners, given.name):
            found = argument_of(instance.origin, owners[0].methods["__init__"], name)
            if found is not None:
                yield found

    def stored(self, owners: list[ClassInfo], attr: str) -> Iterator[str]:
        """The parameters of the ``__init__`` of ``owners[0]`` whose value ends in
        ``self.attr``: stored there, or handed to the next ``__init__`` up the
        bases that stores it (``super().__init__(optimizer)``)."""
        if not owners:
            return
        owner, rest = owners[0], owners[1:]
        init = owner.methods["__init__"]
        for stored, scope in owner.attrs.get(attr, ()):
            if scope.node is init and isinstance(stored, cst.Name):
                yield stored.value
        events = self.flow.events.get(init)
        if not rest or events is None:
            return
        up = rest[0].methods["__init__"]
        for site, callees in events.calls:
            call = site.node
            if up not in callees or not isinstance(call, cst.Call):
                continue
            through_super = isinstance(call.func, cst.Attribute) and isinstance(
                call.func.value, cst.Call
            )
            if not through_super:  # ``Base.__init__(self, ...)`` passes ``self``
                first = call.args[0].value if call.args else None
                if not (isinstance(first, cst.Name) and _is_self(init, first)):
                    continue
                call = call.with_changes(args=call.args[1:])
            for name in self.stored(rest, attr):
                handed = argument_of(call, up, name)
                if isinstance(handed, cst.Name):
                    yield handed.value

    def optimizer_of_group(
        self, group: cst.BaseExpression
    ) -> cst.BaseExpression | None:
        """``opt`` for ``opt.param_groups[0]`` or a loop over ``opt.param_groups``."""
        if isinstance(group, cst.Subscript):
            group = group.value
        elif isinstance(group, cst.Name):
            scope = self.context.facts.values.scope_of.get(group)
            bindings = scope.lookup(group.value) if scope else None
            if not bindings or len(bindings) != 1 or bindings[0].how != "iterate":
                return None
            iterable = bindings[0].value
            if iterable is None:
                return None
            group = iterable
        if isinstance(group, cst.Attribute) and group.attr.value == "param_groups":
            return group.value
        return None

    def check(
        self,
        stmt: cst.CSTNode,
        optimizer: cst.BaseExpression | None,
        related: list[tuple[cst.CSTNode, str]] | None = None,
        consequence: str | None = None,
        *,
        in_place: bool = False,
    ) -> bool:
        """Report ``stmt`` (at the end of the file) where ``optimizer`` is one whose
        captured step reads a float hyper-parameter; whether it did. ``in_place``:
        ``stmt`` is the step of a scheduler that would ``fill_`` a tensor lr."""
        if optimizer is None:
            return False
        origin = self.value(optimizer).origin
        region = self.state.stepped.get(origin) if origin is not None else None
        if origin is None or region is None:
            return False
        args = positional(origin)
        lr = keyword(origin, "lr") or (args[1] if len(args) > 1 else None)
        if lr is not None and self.value(lr).is_tensor:
            return False  # a tensor lr is updated in place
        after = (
            self.state.function_of(stmt) is self.state.region_function(region)
            and self.context.positions[stmt].start.line > region.end_line
        )
        self._found.append(
            _Finding(
                stmt,
                region,
                origin,
                Confidence.HIGH if after else Confidence.MEDIUM,
                related or (),
                consequence,
                in_place,
            )
        )
        return True

    def tensor_lr(
        self, origin: cst.Call
    ) -> list[tuple[cst.CSTNode, cst.CSTNode | str]]:
        """The edit that builds the optimizer with a device tensor lr and
        ``capturable=True``: for Adam and AdamW given a literal lr, with no param
        group that may carry its own and ``torch`` at hand; none otherwise."""
        if self.qualname(origin.func) not in _TENSOR_LR:
            return []
        args = positional(origin)
        lr = keyword(origin, "lr") or (args[1] if len(args) > 1 else None)
        torch = self.torch_name(origin)
        if lr is None or torch is None or not self.one_lr(origin):
            return []
        if isinstance(lr, cst.Integer) and lr.value.replace("_", "").isdigit():
            number = cst.Float(lr.value + ".0")  # a float32 tensor, not int64
        elif isinstance(lr, cst.Float):
            number = lr
        else:
            return []  # a name or an expression: its value may be a tensor already
        tensor = cst.Call(
            func=cst.Attribute(cst.Name(torch), cst.Name("tensor")),
            args=[
                cst.Arg(number),
                cst.Arg(
                    cst.SimpleString('"cuda"'),
                    keyword=cst.Name("device"),
                    equal=cst.AssignEqual(
                        whitespace_before=cst.SimpleWhitespace(""),
                        whitespace_after=cst.SimpleWhitespace(""),
                    ),
                ),
            ],
        )
        built = origin.with_changes(
            args=[
                arg.with_changes(value=tensor) if arg.value is lr else arg
                for arg in origin.args
            ]
        )
        span = self.context.positions[origin]
        fixed = with_keyword(
            built,
            "capturable",
            cst.Name("True"),
            one_line=span.start.line == span.end.line,
        )
        return [(origin, fixed)] if fixed is not None else []

    def torch_name(self, origin: cst.Call) -> str | None:
        """The name ``torch`` is imported as where ``origin`` is: the root of
        ``torch.optim.Adam`` (``th.optim.Adam``), else ``torch`` itself where the
        file imports it and nothing there rebinds it."""
        root = origin.func
        while isinstance(root, cst.Attribute):
            root = root.value
        if not isinstance(root, cst.Name):
            return None
        if root is not origin.func and self.qualname(root) == "torch":
            return root.value
        return "torch" if self.torch_in_scope(root) else None

    def one_lr(self, origin: cst.Call) -> bool:
        """Whether every param group of the optimizer takes the constructor's lr."""
        params = keyword(origin, "params") or next(iter(positional(origin)), None)
        return params is not None and self.plain_params(params, depth=0)

    def plain_params(self, params: cst.BaseExpression, depth: int) -> bool:
        """Whether ``params`` are parameters with no lr of their own:
        ``m.parameters()``, ``list(...)`` or ``itertools.chain(...)`` of those,
        a literal list of groups whose keys are all written out, none of them
        ``lr``, or a name bound once to one of those."""
        if isinstance(params, cst.Name) and depth == 0:
            scope = self.context.facts.values.scope_of.get(params)
            bindings = scope.lookup(params.value) if scope is not None else None
            if (
                not bindings
                or len(bindings) != 1
                or bindings[0].how != "assign"
                or bindings[0].path  # one of several targets: not the whole value
            ):
                return False
            bound = bindings[0].value
            return bound is not None and self.plain_params(bound, depth + 1)
        if isinstance(params, (cst.List, cst.Tuple)):
            return bool(params.elements) and all(
                isinstance(e, cst.Element)
                and isinstance(e.value, (cst.Dict, cst.Call))
                and _keys_without_lr(e.value)
                for e in params.elements
            )
        if not isinstance(params, cst.Call) or any(a.star for a in params.args):
            return False
        found = method(params)
        if found is not None and found[1] == "parameters":
            return True
        wrapper = self.builtin(params) or self.qualname(params.func)
        return (
            wrapper in ("list", "tuple", "itertools.chain")
            and bool(params.args)
            and all(self.plain_params(a.value, depth + 1) for a in params.args)
        )


def _keys_without_lr(group: cst.Dict | cst.Call) -> bool:
    """Whether a param group written as ``{...}`` or ``dict(...)`` has only keys
    that are written out, and no ``lr``."""
    if isinstance(group, cst.Call):
        names = [a.keyword.value if a.keyword else None for a in group.args]
        is_dict = isinstance(group.func, cst.Name) and group.func.value == "dict"
        return is_dict and None not in names and "lr" not in names
    keys = [
        e.key.evaluated_value
        if isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString)
        else None
        for e in group.elements
    ]
    return None not in keys and "lr" not in keys


def _is_self(method: cst.FunctionDef, name: cst.Name) -> bool:
    """Whether ``name`` is the first parameter of ``method``."""
    params = [*method.params.posonly_params, *method.params.params]
    return bool(params) and params[0].name.value == name.value
