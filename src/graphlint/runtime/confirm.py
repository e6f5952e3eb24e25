"""``graphlint confirm SCRIPT [-- ARGS]``: run a script with its marked regions
captured on the GPU, then report what each capture did."""

from __future__ import annotations

import os
import runpy
import sys
import traceback
from pathlib import Path

from graphlint.runtime import session


class ConfirmError(Exception):
    """Something the user must fix before a run can start (one line, exit 2)."""


def require_cuda() -> str:
    """The device's name; a ConfirmError saying what is missing otherwise."""
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
    return str(torch.cuda.get_device_name())


def run_script(script: Path, args: list[str]) -> str | None:
    """Run ``script`` as ``__main__`` with the probes on; say how it ended, if badly."""
    if not script.is_file():
        raise ConfirmError(f"no such file: {script}")
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [str(script), *args]
    sys.path.insert(0, str(script.resolve().parent))
    os.environ[session.ENV] = "1"
    try:
        runpy.run_path(str(script), run_name="__main__")
    except SystemExit as stop:
        if stop.code not in (None, 0):
            return f"the script exited with {stop.code}"
    except Exception as error:
        where = traceback.extract_tb(error.__traceback__)[-1]
        return (
            f"the script raised {type(error).__name__}: {error} "
            f"({where.filename}:{where.lineno})"
        )
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
        os.environ.pop(session.ENV, None)
    return None


def report(device: str, ended: str | None) -> tuple[str, bool]:
    """The report on every probe, and whether anything failed."""
    lines = [f"graphlint confirm on {device}"]
    failed = ended is not None
    for probe in session.PROBES:
        verdict = probe.verdict
        if probe.calls == 0:
            lines.append(f"  not reached   {verdict.region}")
            continue
        where = f" (line {verdict.error_line})" if verdict.error_line else ""
        if verdict.status == "ok":
            speed = verdict.speedup
            tail = (
                f": eager {verdict.eager_ms:.3f} ms, replay "
                f"{verdict.replay_ms:.3f} ms, {speed:.1f}x"
                if speed
                else ""
            )
            lines.append(f"  captured      {verdict.region}{tail}")
        else:
            failed = True
            lines.append(
                f"  {verdict.status:<13} {verdict.region}{where}: {verdict.detail}"
            )
    if not session.PROBES:
        lines.append("  no region marked with graphlint.capture_region was defined")
    if ended is not None:
        lines.append(f"  {ended}")
    return "\n".join(lines) + "\n", failed
