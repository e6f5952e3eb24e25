"""The state of one run of the user's script under ``graphlint confirm``.

The driver starts the script in a fresh process per run; ``GRAPHLINT_CONFIRM`` holds
that run's settings as JSON. One run surveys (nothing is captured beyond what the
program captures itself); each other run captures one target site, because a
process is not clean after a failed capture. torch-free.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from types import FrameType
from typing import Any

from graphlint.runtime.sites import Capture, RunResult, Site, Status

ENV = "GRAPHLINT_CONFIRM"
DEFAULTS: dict[str, Any] = {
    "target": None,  # the key of the one site to capture, or None to survey
    "warmup": 3,
    "atol": 1e-5,
    "rtol": 1e-4,
    "compare": 10,  # replays compared with eager, per site
    "neutralised": [],  # [path, line, mode]: statements this run moves (``neutral``)
    "warm": [],  # keys of the program's captures this run warms up first
    # functions holding a region, to call when the program never does (``uncalled``)
    "drive": [],
}
SITES: dict[str, Site] = {}
PRIMED: list[str] = []  # keys of captures whose region this run ran eagerly first
# what the checker's own call of a function did, by the key of a region in it
# (``uncalled``): for the verdicts of a region the call did not reach
DRIVEN: dict[str, str] = {}


class StopRun(BaseException):
    """Ends the script after a failed capture: the process is not clean any more."""


@functools.cache
def settings() -> dict[str, Any]:
    """This run's settings (read once: the environment does not change under it)."""
    raw = os.environ.get(ENV)
    return {**DEFAULTS, **json.loads(raw)} if raw else dict(DEFAULTS)


def active() -> bool:
    return ENV in os.environ


def is_target(site: Site) -> bool:
    return bool(settings()["target"] == site.key)


def site_of(kind: Capture, filename: str, line: int, end_line: int, name: str) -> Site:
    """The site at ``filename:line``, registered on first sight."""
    path = os.path.realpath(filename)
    key = f"{path}:{line}"
    if key not in SITES:
        SITES[key] = Site(kind, name, path, line, end_line)
    return SITES[key]


def caller_name(frame: FrameType) -> str:
    name = getattr(frame.f_code, "co_qualname", frame.f_code.co_name)
    return "module level" if name == "<module>" else f"{name}()"


def fail(site: Site, status: Status, error: BaseException) -> None:
    """Record a failure; a failed capture also ends the run (raises StopRun)."""
    from graphlint.runtime.attribution import first_line, user_frame  # noqa: PLC0415

    site.status = status
    site.detail = first_line(error)
    where = user_frame(error)
    if where is not None:
        site.error_path, site.error_line = where
    if status is Status.CAPTURE_ERROR:
        sys.stdout.flush()
        raise StopRun from error


def result(ended: str | None) -> RunResult:
    from graphlint.runtime import lines  # noqa: PLC0415

    return RunResult(
        list(SITES.values()),
        ended,
        lines.by_file(lines.EXECUTED),
        lines.by_file(lines.CAPTURED),
        list(settings()["neutralised"]),
        list(dict.fromkeys([*settings()["warm"], *PRIMED])),
        dict(DRIVEN),
    )
