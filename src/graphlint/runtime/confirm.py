"""``graphlint confirm SCRIPT [-- ARGS]``: the driver.

The script runs in a fresh process per run (``graphlint.runtime.child``), because a
process is not clean after a failed capture. The first run surveys: it records the
capture sites the program reaches and observes the program's own captures. Then
each site is the target of a run of its own, which captures it (a marked region)
or compares its replays with eager (a ``torch.cuda.graph`` block). The driver never
imports torch beyond checking that a GPU is there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from graphlint.runtime import session
from graphlint.runtime.sites import CRASHED, GRAPH_BLOCK, PROBED, RunResult, Site


class ConfirmError(Exception):
    """Something the user must fix before a run can start (one line, exit 2)."""


def require_cuda() -> str:
    """The device's name and PyTorch's version; a ConfirmError saying what is
    missing otherwise."""
    try:
        import torch  # noqa: PLC0415 - the runtime extra
    except ImportError:
        raise ConfirmError(
            "graphlint confirm needs PyTorch: pip install 'torch-graphlint[runtime]'"
        ) from None
    if not torch.cuda.is_available():
        raise ConfirmError(
            f"graphlint confirm needs a CUDA GPU; PyTorch {torch.__version__} sees none"
        )
    return f"{torch.cuda.get_device_name()}, PyTorch {torch.__version__}"


def run_once(
    script: Path,
    args: list[str],
    settings: dict[str, Any],
    timeout: float | None,
) -> RunResult:
    """One run of the script in a fresh process."""
    with tempfile.TemporaryDirectory(prefix="graphlint-confirm-") as scratch:
        result_path = Path(scratch) / "result.json"
        env = {**os.environ, session.ENV: json.dumps(settings)}
        command = [sys.executable, "-m", "graphlint.runtime.child", str(result_path)]
        try:
            done = subprocess.run(
                [*command, str(script), *args],
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return RunResult([], f"the run took longer than {timeout:g} s")
        if result_path.is_file():
            return RunResult.load(result_path.read_text(encoding="utf-8"))
        last = (done.stderr or done.stdout).strip().splitlines()[-1:]
        return RunResult(
            [],
            f"the run crashed (exit code {done.returncode})"
            + (f": {last[0]}" if last else ""),
        )


def _targets(survey: RunResult) -> list[Site]:
    """The sites a run of their own can say more about."""
    return [
        site
        for site in survey.sites
        if site.calls
        and (site.kind in PROBED or (site.kind == GRAPH_BLOCK and not site.failed))
    ]


def run_all(
    script: Path,
    args: list[str],
    settings: dict[str, Any],
    timeout: float | None = None,
    progress: Callable[[str], None] = lambda line: None,
) -> tuple[list[Site], str | None, int]:
    """Every site the script reaches, with its verdict; how the script ended (from
    the survey, which changes nothing in it); and the number of runs."""
    progress(f"run 1: surveying {script}")
    survey = run_once(script, args, {**settings, "target": None}, timeout)
    sites = {site.key: site for site in survey.sites}
    targets = _targets(survey)
    for number, site in enumerate(targets, start=2):
        progress(f"run {number}: capturing {site.name} ({site.path}:{site.line})")
        run = run_once(script, args, {**settings, "target": site.key}, timeout)
        found = next((s for s in run.sites if s.key == site.key), None)
        if found is not None and found.calls:
            sites[site.key] = found
        elif run.ended is not None:
            sites[site.key] = replace(site, status=CRASHED, detail=run.ended)
    return list(sites.values()), survey.ended, 1 + len(targets)


__all__ = ["ConfirmError", "require_cuda", "run_all", "run_once"]
