"""``graphlint confirm SCRIPT [-- ARGS]``: the driver.

The script runs in a fresh process per run (``graphlint.runtime.child``), because a
process is not clean after a failed capture. The first run surveys: it records the
capture sites the program reaches and observes the program's own captures. Then
each site is the target of a run of its own, which captures it (a marked region)
or compares its replays with eager (the program's own captures). That is one
trial. A capture stops at its first failure; when the failure is explained (a
finding confirmed there, or the region fails so eagerly too), the next trial runs
the script with that statement moved out of the capture, or the capture warmed up
(``graphlint.runtime.neutral``), so the findings behind it get their own chance.
The driver never imports torch beyond checking that a GPU is there.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from graphlint.runtime import session
from graphlint.runtime.sites import RunResult, Site, Status


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
    """One run of the script in a fresh process; past ``timeout`` seconds it is
    stopped, with every process it started."""
    with tempfile.TemporaryDirectory(prefix="graphlint-confirm-") as scratch:
        result_path = Path(scratch) / "result.json"
        env = {**os.environ, session.ENV: json.dumps(settings)}
        command = [sys.executable, "-m", "graphlint.runtime.child", str(result_path)]
        try:
            done = run_in_group([*command, str(script), *args], timeout, env=env)
        except subprocess.TimeoutExpired:
            late = f"the run took longer than {timeout:g} s"
            with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
                # the script ended; a call of the checker's ran on (``uncalled``)
                kept = RunResult.load(result_path.read_text(encoding="utf-8"))
                return replace(kept, ended=f"{late}, after the script's end")
            return RunResult([], late)
        if result_path.is_file():
            return RunResult.load(result_path.read_text(encoding="utf-8"))
        last = (done.stderr or done.stdout).strip().splitlines()[-1:]
        return RunResult(
            [],
            f"the run crashed (exit code {done.returncode})"
            + (f": {last[0]}" if last else ""),
        )


def run_in_group(
    command: list[str],
    timeout: float | None,
    started: Callable[[subprocess.Popen[str]], None] = lambda process: None,
    **popen: Any,
) -> subprocess.CompletedProcess[str]:
    """``command`` with its output captured, in a process session of its own: when
    it runs past ``timeout`` seconds (TimeoutExpired, with the output it gave), or
    the caller is interrupted, the whole session is killed, the processes the
    script started too (compile workers, data loaders), which would otherwise
    keep the GPU busy or the output pipes open. ``started`` gets the process as
    soon as it runs, for a caller that may have to stop it from another thread
    (``kill_group``)."""
    with subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="backslashreplace",
        start_new_session=True,
        **popen,
    ) as process:
        try:
            started(process)
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(process)
            out, err = process.communicate()
            raise subprocess.TimeoutExpired(command, timeout or 0, out, err) from None
        except BaseException:
            kill_group(process)
            raise
    return subprocess.CompletedProcess(command, process.returncode, out, err)


def kill_group(process: subprocess.Popen[str]) -> None:
    """Kill ``process`` and every process of its session (``run_in_group``), and
    the groups of the processes it started in sessions of their own: a
    ``graphlint confirm`` stopped this way runs its script in one."""
    if not hasattr(os, "killpg"):  # Windows: no sessions to kill
        process.kill()
        return
    groups = {process.pid}
    for pid in _descendants(process.pid):  # found before any is killed
        with contextlib.suppress(OSError):
            groups.add(os.getpgid(pid))
    for group in groups:
        with contextlib.suppress(OSError):  # already gone
            os.killpg(group, signal.SIGKILL)


def _descendants(pid: int) -> list[int]:
    """The processes ``pid`` started, and theirs (Linux's /proc; none elsewhere)."""
    children: dict[int, list[int]] = {}
    with contextlib.suppress(OSError):
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
            except OSError:  # gone meanwhile
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(entry.name))
    found: list[int] = []
    stack = [pid]
    while stack:
        for child in children.get(stack.pop(), ()):
            found.append(child)
            stack.append(child)
    return found


def _targets(survey: RunResult, done: set[str]) -> list[Site]:
    """The sites a run of their own can say more about: a marked region, which
    only such a run captures (in every trial: a variant may fail it elsewhere),
    and a capture of the program's whose replays no run has compared yet (in a
    variant too: its eager runs reuse what the moved statements gave the capture,
    as replays do)."""
    return [
        site
        for site in survey.sites
        if site.calls and site.key not in done and (site.kind.probed or not site.failed)
    ]


# What to change in the next variant, given a failed site of the last trial:
# ("neutralised", [path, line, mode]) or ("warm", site key); None to stop.
Step = tuple[str, Any]
Explain = Callable[[Site, RunResult], Step | None]


def _trial(
    script: Path,
    args: list[str],
    settings: dict[str, Any],
    timeout: float | None,
    done: set[str],
    progress: Callable[[str], None],
) -> tuple[RunResult, int]:
    """The script run once to survey, then once per site to say more about."""
    survey = run_once(script, args, {**settings, "target": None}, timeout)
    sites = {site.key: site for site in survey.sites}
    # the variant is what was asked for, even of a run that crashed before saying,
    # and the captures any of its runs warmed up (``capture._prime``)
    trial = replace(
        survey,
        sites=[],
        neutralised=settings["neutralised"],
        warm=list(dict.fromkeys([*settings["warm"], *survey.warm])),
    )
    targets = _targets(survey, done)
    for site in targets:
        progress(f"capturing {site.name} ({site.path}:{site.line})")
        run = run_once(script, args, {**settings, "target": site.key}, timeout)
        if not site.kind.probed:
            done.add(site.key)
        found = next((s for s in run.sites if s.key == site.key), None)
        if found is not None and found.calls:
            sites[site.key] = found
        elif run.ended is not None:
            sites[site.key] = replace(site, status=Status.CRASHED, detail=run.ended)
        for path, lines in run.executed.items():
            trial.executed[path] = sorted({*trial.executed.get(path, ()), *lines})
        for path, lines in run.captured.items():
            trial.captured[path] = sorted({*trial.captured.get(path, ()), *lines})
        trial.warm = list(dict.fromkeys([*trial.warm, *run.warm]))
    trial.sites = list(sites.values())
    return trial, 1 + len(targets)


def run_all(
    script: Path,
    args: list[str],
    settings: dict[str, Any],
    timeout: float | None = None,
    progress: Callable[[str], None] = lambda line: None,
    explain: Explain = lambda site, trial: None,
    variants: int = 0,
) -> tuple[list[RunResult], int]:
    """The trials of the script: as written first, then up to ``variants`` more,
    each taking out what ``explain`` says of the last trial's failed capture (so
    that the findings behind it get their own chance); and the number of runs.

    A trial surveys (a run that changes nothing in the script beyond its variant),
    then runs once per site it reached, to capture it or compare its replays."""
    trials: list[RunResult] = []
    done: set[str] = set()
    variant: dict[str, list[Any]] = {"neutralised": [], "warm": []}
    runs = 0
    while True:
        shown = RunResult([], neutralised=variant["neutralised"], warm=variant["warm"])
        progress(f"surveying {script} ({shown.variant})")
        trial, count = _trial(
            script, args, {**settings, **variant}, timeout, done, progress
        )
        trials.append(trial)
        runs += count
        if len(trials) > variants:
            break
        steps = (explain(site, trial) for site in trial.sites if site.failed)
        new = (s for s in steps if s is not None and s[1] not in variant[s[0]])
        step = next(new, None)
        if step is None:
            break
        variant = {**variant, step[0]: [*variant[step[0]], step[1]]}
    return trials, runs


__all__ = [
    "ConfirmError",
    "kill_group",
    "require_cuda",
    "run_all",
    "run_in_group",
    "run_once",
]
