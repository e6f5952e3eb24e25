"""Capture guards: what a condition is worth while the current stream is capturing.

Code written for CUDA graphs protects host-only work with a check of the capture
state: ``if not torch.cuda.is_current_stream_capturing(): print(...)``, an early exit
(``if is_capturing(): raise ...`` or ``return``), or a check inside a larger
condition (``if not (torch.cuda.is_available() and is_capturing()):``,
``if debug and not is_capturing():``). Both syntax trees graphlint reads (LibCST for
the file under analysis, ``ast`` for the project summaries) turn a test into the same
small ``Formula``; ``under_capture`` evaluates it in three-valued logic, with every
capture check true, every call known to be true on a capturing machine true, and
anything else unknown. A block whose condition is false under capture never runs
while capturing, nor does the right operand of an ``and`` whose left operand is false
under capture (of an ``or``, true); nothing else is excluded.

A function that regions elsewhere reach may also test a parameter for None (``if
grid is None: grid = sizes.tolist()``). Where every call under capture passes None,
or a value that cannot be None, the test is settled too (``Settled``, found by the
project pass): ``["none", "grid"]`` is the test ``grid is None``.

Formulas are plain nested lists, so the project summaries can store them as JSON:
``["call", "torch.cuda.is_current_stream_capturing"]``, ``["none", "param"]``,
``["flag", "param"]`` (the parameter's truth, as ``if fused:`` tests it), ``["not",
f]``, ``["and", f, g, ...]``, ``["or", f, g, ...]``, ``["const", true]``,
``["test", "cfg.size > 1"]`` (a comparison, as text: unknown unless a caller's
argument settles it), ``["unknown"]``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Final, TypeAlias

from graphlint.diagnostics import Settled

Formula: TypeAlias = list[object]

# Checks of the capture state shipped with PyTorch and common libraries; projects add
# theirs with ``capture-checks`` (and helpers that return one are found by the project
# pass).
CAPTURING_CHECKS: Final = frozenset(
    {
        "torch.cuda.is_current_stream_capturing",
        "torch.cuda.graphs.is_current_stream_capturing",
        "torch._C._cuda_isCurrentStreamCapturing",
        "transformer_engine.pytorch.graph.is_graph_capturing",
        "transformer_engine.pytorch.utils.is_graph_capturing",
        "transformer_engine.pytorch.is_graph_capturing",
    }
)
# Calls that are true on any machine that is capturing a CUDA graph.
TRUE_WHILE_CAPTURING: Final = frozenset(
    {"torch.cuda.is_available", "torch.cuda.is_initialized"}
)

UNKNOWN: Final[Formula] = ["unknown"]
MAX_DEPTH: Final = 32  # deeper tests are unknown: formulas stay small and shallow


IsNone = Callable[[str], "bool | None"]  # a parameter's None-ness under capture


def _unsettled(name: str) -> bool | None:
    return None


def negate(formula: Formula) -> Formula:
    return ["not", formula]


def under_capture(
    formula: Formula,
    is_check: Callable[[str], bool],
    is_none: IsNone = _unsettled,
    holds: IsNone = _unsettled,
    truth: IsNone = _unsettled,
) -> bool | None:
    """The formula's value while the stream is capturing: True, False or None
    (unknown). ``is_check(name)`` says whether calling ``name`` checks the capture
    state (beyond the built-in tables); ``is_none(param)`` whether the parameter is
    None under capture (None: unknown); ``holds(text)`` the value of a comparison
    (``["test", "cfg.size > 1"]``, which the project summaries keep as text)."""
    head = formula[0] if formula else "unknown"
    if head == "call":
        name = str(formula[1])
        if name in CAPTURING_CHECKS or name in TRUE_WHILE_CAPTURING or is_check(name):
            return True
        return None
    if head == "none":
        return is_none(str(formula[1]))
    if head == "flag":
        return truth(str(formula[1]))
    if head == "test":
        return holds(str(formula[1]))
    if head == "const":
        return bool(formula[1])
    if head == "not":
        inner = under_capture(_sub(formula, 1), is_check, is_none, holds, truth)
        return None if inner is None else not inner
    if head in ("and", "or"):
        parts = [
            under_capture(_sub(formula, i), is_check, is_none, holds, truth)
            for i in range(1, len(formula))
        ]
        decisive = head == "or"  # True decides an ``or``, False an ``and``
        if decisive in parts:
            return decisive
        return None if None in parts else not decisive
    return None


def never_under_capture(
    formulas: Sequence[Formula],
    is_check: Callable[[str], bool],
    is_none: IsNone = _unsettled,
    truth: IsNone = _unsettled,
) -> bool:
    """Whether code that runs only when every formula holds is never captured."""
    return any(
        under_capture(f, is_check, is_none, truth=truth) is False for f in formulas
    )


def mentions_call(formula: Formula, *, or_none: bool = False) -> bool:
    """Whether a formula calls anything (only those can be capture checks), or,
    with ``or_none``, tests a parameter for None or for its truth."""
    if not formula:
        return False
    if formula[0] == "call" or (or_none and formula[0] in ("none", "flag")):
        return True
    return any(
        isinstance(part, list) and mentions_call(part, or_none=or_none)
        for part in formula[1:]
    )


def encode(formula: Formula) -> str:
    return json.dumps(formula, separators=(",", ":"))


def decode(text: str) -> Formula:
    """A formula stored by ``encode``; anything malformed is unknown."""
    try:
        found = json.loads(text)
    except ValueError:
        return UNKNOWN
    return found if isinstance(found, list) else UNKNOWN


def _sub(formula: Formula, index: int) -> Formula:
    part = formula[index] if index < len(formula) else None
    return part if isinstance(part, list) else UNKNOWN


__all__ = [
    "CAPTURING_CHECKS",
    "MAX_DEPTH",
    "TRUE_WHILE_CAPTURING",
    "UNKNOWN",
    "Formula",
    "IsNone",
    "Settled",
    "decode",
    "encode",
    "mentions_call",
    "negate",
    "never_under_capture",
    "under_capture",
]
