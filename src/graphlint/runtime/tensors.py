"""The tensors a region can reach, and snapshots of them.

A comparison runs a region twice, once replayed and once eagerly, on the same state.
Both runs may update tensors in place (an optimizer step, a buffer, an output
written with ``copy_``), so the state is snapshotted before the first run and
restored before the second; the two results are then compared tensor by tensor,
named by the path that reaches them (``model.weight``, ``opt.state[0]['exp_avg']``).
"""

from __future__ import annotations

import types
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

MAX_DEPTH = 4  # how deep plain objects, lists and dicts are searched for tensors
_OPAQUE = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType)


def named_tensors(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    """The tensors of a (nested) result, with their paths: ``return[0]``."""
    import torch  # noqa: PLC0415 - the runtime extra

    if isinstance(value, torch.Tensor):
        yield path, value
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from named_tensors(item, f"{path}[{i}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from named_tensors(item, f"{path}[{key!r}]")


@dataclass
class State:
    """What a region can reach: its tensors by path, and the objects, dicts and
    lists that hold them (an eager re-run may rebind ``self.out``)."""

    tensors: dict[str, Any]
    holders: list[Any]
    generators: list[Any]  # torch.Generator objects: random draws are state too
    leaves: list[Any] = field(default_factory=list)  # tensors that take a .grad


def reachable(roots: Mapping[str, Any]) -> State:
    """Every tensor reachable from ``roots``: module parameters, buffers and their
    gradients, optimizer state, and the tensors held by lists, dicts and plain
    objects, each once, under the first path that reaches it."""
    import torch  # noqa: PLC0415

    state = State({}, [], [])
    seen: set[int] = set()

    def visit(path: str, value: Any, depth: int) -> None:
        if id(value) in seen:
            return
        if isinstance(value, torch.Tensor):
            seen.add(id(value))
            state.tensors[path] = value
            if value.is_leaf and value.requires_grad:
                state.leaves.append(value)
            if value.is_leaf and value.requires_grad and value.grad is not None:
                visit(f"{path}.grad", value.grad, depth)
            return
        if depth > MAX_DEPTH:
            return
        if isinstance(value, type) and not _library(value.__module__):
            # a class of the user's: its attributes are state too (a generator,
            # a dict of results held by the class rather than an instance)
            seen.add(id(value))
            for key, item in vars(value).items():
                if not key.startswith("__"):
                    visit(f"{path}.{key}", item, depth + 1)
            return
        if isinstance(value, _OPAQUE):
            return
        seen.add(id(value))
        if isinstance(value, torch.Generator):
            state.generators.append(value)
        elif isinstance(value, torch.nn.Module):
            state.holders.append(value)
            for name, tensor in value.named_parameters():
                visit(f"{path}.{name}", tensor, depth + 1)
            for name, tensor in value.named_buffers():
                visit(f"{path}.{name}", tensor, depth + 1)
            for name, item in vars(value).items():
                if not name.startswith("_") and name != "training":
                    visit(f"{path}.{name}", item, depth + 1)
        elif isinstance(value, torch.optim.Optimizer):
            state.holders.append(value.state)
            for i, group in enumerate(value.param_groups):
                for key, item in group.items():
                    visit(f"{path}.param_groups[{i}][{key!r}]", item, depth + 1)
            for i, per_param in enumerate(value.state.values()):
                state.holders.append(per_param)
                for key, item in per_param.items():
                    visit(f"{path}.state[{i}][{key!r}]", item, depth + 1)
        elif isinstance(value, dict):
            state.holders.append(value)
            for key, item in value.items():
                visit(f"{path}[{key!r}]", item, depth + 1)
        elif isinstance(value, (list, tuple)):
            if isinstance(value, list):
                state.holders.append(value)
            for i, item in enumerate(value):
                visit(f"{path}[{i}]", item, depth + 1)
        elif _walkable(value):
            state.holders.append(value)
            for key, item in vars(value).items():
                visit(f"{path}.{key}", item, depth + 1)

    for name, value in roots.items():
        visit(name, value, 0)
    return state


def _walkable(value: Any) -> bool:
    """A plain object whose attributes may hold state: the user's own classes and
    ``GradScaler``, not the internals of torch or other libraries."""
    module = type(value).__module__
    if module.startswith("torch.amp") or module.startswith("torch.cuda.amp"):
        return True
    return not _library(module) and hasattr(value, "__dict__")


def _library(module: str) -> bool:
    """Whether ``module`` is torch's or another library's whose internals are not
    the program's state."""
    return module.split(".", maxsplit=1)[0] in {"torch", "numpy", "builtins", "typing"}


def _settled() -> None:
    """Wait for the device: a host tensor may still be written by a copy in flight
    (``host.copy_(y, non_blocking=True)`` into pinned memory, in a replay)."""
    import torch  # noqa: PLC0415

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def values(tensors: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of each tensor's current value, once the device is done with it."""
    _settled()
    return {path: tensor.detach().clone() for path, tensor in tensors.items()}


def reached_values(roots: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of the current value of every tensor reachable from ``roots``."""
    return values(reachable(roots).tensors)


class Snapshot:
    """A state at one moment, to put back later: the tensors' values and what each
    holder binds."""

    def __init__(self, state: State) -> None:
        _settled()
        self.saved = [(t, t.detach().clone()) for t in state.tensors.values()]
        self.bindings = [(h, _bindings(h)) for h in state.holders]
        self.generators = [(g, g.get_state()) for g in state.generators]

    def restore(self, *, bindings: bool = True) -> None:
        """Put the values back; and what each holder binds, unless ``bindings`` is
        False (state that warm-ups create, such as an optimizer's, must stay: the
        graph captured it)."""
        import torch  # noqa: PLC0415

        for holder, saved in self.bindings if bindings else ():
            _rebind(holder, saved)
        for generator, seed_and_offset in self.generators:
            generator.set_state(seed_and_offset)
        with torch.no_grad():
            for tensor, value in self.saved:
                if tensor.shape == value.shape:
                    tensor.copy_(value)


class Bindings:
    """What each holder of a state binds, and each leaf's gradient (None
    included), at one moment: a capture binds new tensors whose values it never
    computed (a gradient that was None, a GradScaler's scale made on first use),
    so an eager run to compare with its first replay starts from the bindings the
    capture began with, and the program's are put back after it."""

    def __init__(self, state: State) -> None:
        self.holders = [(h, _bindings(h)) for h in state.holders]
        self.grads = [(t, t.grad) for t in state.leaves]

    def now(self) -> Bindings:
        """The same holders' and leaves' bindings as they are now."""
        later = Bindings(State({}, [], []))
        later.holders = [(h, _bindings(h)) for h, _ in self.holders]
        later.grads = [(t, t.grad) for t, _ in self.grads]
        return later

    def apply(self) -> None:
        for holder, saved in self.holders:
            _rebind(holder, saved)
        for tensor, grad in self.grads:
            tensor.grad = grad


def _rebind(holder: Any, saved: Any) -> None:
    if isinstance(holder, list):
        holder[:] = saved
    else:
        target = holder if isinstance(holder, dict) else vars(holder)
        target.clear()
        target.update(saved)


def _bindings(holder: Any) -> Any:
    if isinstance(holder, list):
        return list(holder)
    return dict(holder if isinstance(holder, dict) else vars(holder))


@dataclass(frozen=True)
class Difference:
    """Where a replay and an eager run disagree."""

    largest: float
    tensors: tuple[str, ...]  # paths, the largest difference first

    def describe(self, limit: int = 3) -> str:
        shown = ", ".join(f"`{p}`" for p in self.tensors[:limit])
        more = len(self.tensors) - limit
        return f"{shown} and {more} more" if more > 0 else shown


def compare(
    replayed: Mapping[str, Any],
    eager: Mapping[str, Any],
    atol: float,
    rtol: float,
) -> Difference | None:
    """The tensors whose replayed and eager values differ beyond the tolerance
    (``|r - e| > atol + rtol * |e|`` somewhere), or None when all match."""
    worst: list[tuple[float, str]] = []
    for path, want in eager.items():
        got = replayed.get(path)
        if got is None:
            continue
        if got.shape != want.shape or got.dtype != want.dtype:
            worst.append((float("inf"), path))
            continue
        if not got.numel() or not (got.is_floating_point() or got.is_complex()):
            if got.numel() and not bool((got == want).all()):
                worst.append((float((got.double() - want.double()).abs().max()), path))
            continue
        gap = (got.double() - want.double()).abs()
        limit = atol + rtol * want.double().abs()
        both_nan = got.isnan() & want.isnan()
        if bool(((gap > limit) & ~both_nan).any()):
            worst.append((float(gap[~both_nan].max()), path))
    if not worst:
        return None
    worst.sort(key=lambda item: -item[0])
    return Difference(worst[0][0], tuple(path for _, path in worst))


__all__ = [
    "Difference",
    "Snapshot",
    "State",
    "compare",
    "named_tensors",
    "reachable",
    "reached_values",
    "values",
]
