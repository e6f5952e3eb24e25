"""What the probes share: each case runs as a program in a fresh interpreter, whose
last ``RESULT {json}`` line is its outcome; the probe prints the device and then one
JSON object per case.

Usage: a probe builds each case's program and calls ``report``; it is run on a GPU
machine as ``python ground-truth/<probe>.py [CASE ...] > out.jsonl`` (this folder is
on ``sys.path`` then, as a script's own folder is).
"""

from __future__ import annotations

import concurrent.futures
import json
import subprocess
import sys
from collections.abc import Callable, Sequence

_MARK = "RESULT "
# for a program: an error as its record says it (its type and first line)
SAID = """
def said(e):
    first = (str(e).strip().splitlines() or [""])[0]
    return f"{type(e).__name__}: {first}"[:400]
"""


def outcome(program: str, timeout: float = 300) -> dict[str, object]:
    """What ``program`` said of itself (its last ``RESULT`` line), or why it said
    nothing: it ran past ``timeout`` seconds, or crashed (its last line of error)."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", program],
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return {"outcome": "timeout"}
    lines = [line for line in done.stdout.splitlines() if line.startswith(_MARK)]
    if lines:
        found: dict[str, object] = json.loads(lines[-1][len(_MARK) :])
        return found
    tail = (done.stderr.strip().splitlines() or [""])[-1]
    return {"outcome": "crashed", "error": tail[:400]}


def report(
    names: Sequence[str], run: Callable[[str], dict[str, object]], threads: int = 6
) -> None:
    """Print the device and PyTorch, then ``run``'s record of each case named on the
    command line (all of ``names`` when none is), in that order."""
    import torch  # noqa: PLC0415 - on the GPU machine only

    device = torch.cuda.get_device_name()
    print(json.dumps({"device": device, "torch": torch.__version__}), flush=True)
    chosen = sys.argv[1:] or list(names)
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        for record in pool.map(run, chosen):
            print(json.dumps(record), flush=True)
