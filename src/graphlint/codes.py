"""Every code graphlint knows: its name and whether it is on by default.

What the command line, the configuration and the output need about codes, without
importing the rules (and LibCST with them): a run that finds nothing to analyse, or
takes every result from the cache, never imports them.
``python -m graphlint._dev sync-docs`` writes the table from the rule classes, and
CI checks that it is up to date.
"""

from __future__ import annotations

from typing import Final

CODES: Final[dict[str, tuple[str, bool]]] = {  # code: (name, on by default)
    # codes:start
    "GL001": ("unparsable-file", True),
    "GL002": ("undecodable-file", True),
    "GL003": ("oversized-file", True),
    "GL004": ("unreadable-file", True),
    "GL005": ("parser-limit-exceeded", True),
    "GL006": ("empty-file", False),
    "GL009": ("internal-error", True),
    "GL101": ("device-to-host-copy", True),
    "GL102": ("tensor-formatted-on-host", True),
    "GL103": ("host-synchronization", True),
    "GL104": ("tensor-compared-on-host", True),
    "GL105": ("dynamic-shape-op", True),
    "GL106": ("scalar-tensor-index", True),
    "GL107": ("clip-grad-norm-error-if-nonfinite", True),
    "GL201": ("tensor-truth-value", True),
    "GL202": ("tensor-loop-bound", True),
    "GL203": ("host-state-branch", True),
    "GL301": ("static-input-rebound", True),
    "GL302": ("static-input-data-replaced", True),
    "GL303": ("graph-output-kept", True),
    "GL401": ("host-io", True),
    "GL402": ("host-clock-or-random", True),
    "GL403": ("host-iterator-advanced", True),
    "GL404": ("host-state-mutated", True),
    "GL405": ("cpu-tensor-math", True),
    "GL406": ("stale-host-value", True),
    "GL407": ("learning-rate-changed", True),
    "GL501": ("unregistered-generator", True),
    "GL502": ("rng-state-in-region", False),
    "GL601": ("pageable-host-to-device-copy", True),
    "GL602": ("list-index-on-device-tensor", True),
    "GL603": ("tensor-serialized-in-region", True),
    "GL701": ("optimizer-not-capturable", True),
    "GL702": ("grad-scaler-step-in-region", True),
    "GL703": ("capture-without-warmup", True),
    "GL704": ("capture-on-default-stream", True),
    "GL705": ("ddp-warmup-too-short", True),
    "GL706": ("graphed-callables-under-autocast", True),
    "GL707": ("hooks-before-graphed-callables", True),
    "GL708": ("reentrant-checkpoint-in-graphed-callable", True),
    # codes:end
}


def default_enabled() -> frozenset[str]:
    """The codes on when the configuration selects nothing."""
    return frozenset(code for code, (_, on) in CODES.items() if on)


def key(code: str) -> str | None:
    """``GL101-device-to-host-copy``: the code's doc page and fixture folder."""
    found = CODES.get(code)
    return f"{code}-{found[0]}" if found is not None else None
