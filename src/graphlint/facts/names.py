"""Resolve names to the dotted names they stand for, through a module's imports.

A lighter pass than LibCST's ``QualifiedNameProvider`` (which costs ~9x the parse on a
large tree, see ../shared/reference/performance.md): one table of import aliases per
file, plus plain aliases such as ``graph_fn = torch.cuda.graph``. Flow- and
scope-insensitive by design; a name bound by an import keeps that meaning.
"""

from __future__ import annotations

import libcst as cst

from graphlint.facts.syntax import dotted

# Public spellings PyTorch re-exports under a shorter name: resolve to the short one.
_CANONICAL: dict[str, str] = {
    "torch.cuda.graphs.graph": "torch.cuda.graph",
    "torch.cuda.graphs.CUDAGraph": "torch.cuda.CUDAGraph",
    "torch.cuda.graphs.make_graphed_callables": "torch.cuda.make_graphed_callables",
    "torch.cuda.graphs.is_current_stream_capturing": (
        "torch.cuda.is_current_stream_capturing"
    ),
    "torch.cuda.amp.GradScaler": "torch.amp.GradScaler",
    "torch.cuda.amp.grad_scaler.GradScaler": "torch.amp.GradScaler",
    "torch.amp.grad_scaler.GradScaler": "torch.amp.GradScaler",
    "torch.nn.modules.module.Module": "torch.nn.Module",
    "torch._tensor.Tensor": "torch.Tensor",
    "torch.nn.utils.clip_grad.clip_grad_norm_": "torch.nn.utils.clip_grad_norm_",
    "torch.functional.unique": "torch.unique",
    "torch.functional.norm": "torch.norm",
    "graphlint.markers.capture_region": "graphlint.capture_region",
    "torch._dynamo.optimize": "torch.compile",
}


def canonical(name: str) -> str:
    """Map a qualified name to the spelling graphlint's tables use."""
    for long, short in _CANONICAL.items():
        if name == long or name.startswith(long + "."):
            return short + name[len(long) :]
    return name


class Names:
    """Import aliases of one module."""

    def __init__(self) -> None:
        self._imports: dict[str, str] = {}
        self._assigned: dict[str, set[str | None]] = {}

    def add_import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = dotted(alias.name)
            if full is None:
                continue
            if alias.asname is not None and type(alias.asname.name) is cst.Name:
                self._imports[alias.asname.name.value] = full
            else:
                # `import torch.cuda` binds `torch`
                head = full.split(".")[0]
                self._imports[head] = head

    def add_import_from(self, node: cst.ImportFrom, package: str | None) -> None:
        if isinstance(node.names, cst.ImportStar):
            return
        module = dotted(node.module) if node.module is not None else ""
        if module is None:
            return
        if node.relative:
            module = _resolve_relative(package, len(node.relative), module)
        for alias in node.names:
            name = dotted(alias.name)
            if name is None:
                continue
            local = name
            if alias.asname is not None and type(alias.asname.name) is cst.Name:
                local = alias.asname.name.value
            self._imports[local] = f"{module}.{name}" if module else name

    def add_assignment(self, target: str, value: cst.BaseExpression) -> None:
        """Record ``target = value``; a plain name alias if ``value`` resolves."""
        self._assigned.setdefault(target, set()).add(self._resolve_raw(value))

    def _resolve_raw(self, expr: cst.BaseExpression) -> str | None:
        if type(expr) is cst.Name:
            return self._lookup(expr.value)
        if type(expr) is cst.Attribute:
            base = self._resolve_raw(expr.value)
            return None if base is None else f"{base}.{expr.attr.value}"
        return None

    def _lookup(self, name: str) -> str | None:
        if name in self._imports:
            return self._imports[name]
        seen = self._assigned.get(name)
        if seen is not None and len(seen) == 1:
            return next(iter(seen))  # None when the one assignment is not an alias
        return None

    def qualify(self, expr: cst.BaseExpression) -> str | None:
        """The canonical dotted name ``expr`` refers to, or None."""
        raw = self._resolve_raw(expr)
        return None if raw is None else canonical(raw)


def _resolve_relative(package: str | None, level: int, module: str) -> str:
    """``from ..a import b`` inside package ``p.q.r`` -> ``p.q.a``."""
    parts = package.split(".") if package else []
    base = parts[: len(parts) - (level - 1)] if level - 1 <= len(parts) else []
    prefix = ".".join(base) if base else "." * level
    if not module:
        return prefix
    return f"{prefix}.{module}" if base else prefix + module
