"""The regions a ``graphlint confirm`` run has probed, and the switch that makes
``graphlint.capture_region`` probe them."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

ENV = "GRAPHLINT_CONFIRM"  # set by `graphlint confirm` for the script it runs
SETTINGS: dict[str, float] = {"warmup": 3, "atol": 1e-5, "rtol": 1e-4}
PROBES: list[Any] = []  # graphlint.runtime.capture.Probe, in order of definition


def active() -> bool:
    return os.environ.get(ENV) == "1"


def probe(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a marked function in a capture probe (torch is imported here)."""
    from graphlint.runtime.capture import Probe  # noqa: PLC0415 - needs torch

    code = fn.__code__
    found = Probe(
        fn,
        name=fn.__qualname__,
        path=code.co_filename,
        line=code.co_firstlineno,
        warmup=int(SETTINGS["warmup"]),
        atol=SETTINGS["atol"],
        rtol=SETTINGS["rtol"],
    )
    PROBES.append(found)
    return found
