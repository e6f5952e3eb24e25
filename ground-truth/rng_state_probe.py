"""What a real capture does with RNG-state calls inside the region (GL502).

Each case runs in its own process: a small model with dropout, warmed up on a side
stream (the warm-up runs the region's body too, as real code does), then captured
with ``torch.cuda.graph`` and replayed three times. The seed the process holds when
the capture starts is part of the case: seeding inside a capture to the seed already
set is not the same call as seeding to a new one. One JSON object per case on
stdout, the first line naming the device and PyTorch.

Outcomes: ``ok`` (captured and replayed), ``capture-error`` (the capture raised;
``error`` is its first line), ``replay-error``.

Usage: ``python ground-truth/rng_state_probe.py > out.jsonl`` on a GPU machine.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

PRELUDE = """
import torch
from torch.utils.checkpoint import checkpoint
layer = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.Dropout(0.1)).cuda()
x = torch.randn(8, 64, device="cuda", requires_grad=True)
"""

# name -> (what it is, the seed set before the warm-up or None, the region's body);
# the warm-up runs the body, except where a case says it runs only ``y = layer(x)``
CASES: dict[str, tuple[str, int | None, str]] = {
    "manual_seed_new": (
        "torch.manual_seed(0) inside, the process never seeded",
        None,
        "torch.manual_seed(0)\ny = layer(x)",
    ),
    "manual_seed_new_not_warmed": (
        "torch.manual_seed(0) inside, never seeded, the warm-up does not seed",
        None,
        "torch.manual_seed(0)\ny = layer(x)",
    ),
    "manual_seed_other_not_warmed": (
        "torch.manual_seed(0) inside, seeded 1 before, the warm-up does not seed",
        1,
        "torch.manual_seed(0)\ny = layer(x)",
    ),
    "manual_seed_other": (
        "torch.manual_seed(0) inside, seeded 1 before the warm-up",
        1,
        "torch.manual_seed(0)\ny = layer(x)",
    ),
    "manual_seed_same_first": (
        "torch.manual_seed(0) as the first statement, seeded 0 before the warm-up",
        0,
        "torch.manual_seed(0)\ny = layer(x)",
    ),
    "cuda_manual_seed_new": (
        "torch.cuda.manual_seed(0) inside, the process never seeded",
        None,
        "torch.cuda.manual_seed(0)\ny = layer(x)",
    ),
    "cuda_manual_seed_all_new": (
        "torch.cuda.manual_seed_all(0) inside, the process never seeded",
        None,
        "torch.cuda.manual_seed_all(0)\ny = layer(x)",
    ),
    "seed_inside": (
        "torch.seed() inside (a new random seed)",
        0,
        "torch.seed()\ny = layer(x)",
    ),
    "cuda_get_rng_state": (
        "torch.cuda.get_rng_state() inside",
        0,
        "state = torch.cuda.get_rng_state()\ny = layer(x)",
    ),
    "get_rng_state_cpu": (
        "torch.get_rng_state() inside (the CPU generator)",
        0,
        "state = torch.get_rng_state()\ny = layer(x)",
    ),
    "cuda_set_rng_state": (
        "torch.cuda.set_rng_state(saved) inside, saved before the capture",
        0,
        "torch.cuda.set_rng_state(saved)\ny = layer(x)",
    ),
    "checkpoint_preserve_rng": (
        "checkpoint(layer, x, use_reentrant=False) with dropout, RNG state preserved",
        0,
        "y = checkpoint(layer, x, use_reentrant=False)\ny.sum().backward()",
    ),
    "checkpoint_no_preserve_rng": (
        "checkpoint(..., preserve_rng_state=False) with dropout",
        0,
        "y = checkpoint(layer, x, use_reentrant=False, preserve_rng_state=False)\n"
        "y.sum().backward()",
    ),
}


def script(seed: int | None, body: str, warm: str) -> str:
    seeded = f"torch.manual_seed({seed})\n" if seed is not None else ""
    return (
        PRELUDE
        + seeded
        + "saved = torch.cuda.get_rng_state()\n"
        + "side = torch.cuda.Stream()\nside.wait_stream(torch.cuda.current_stream())\n"
        + "with torch.cuda.stream(side):\n    for _ in range(3):\n"
        + textwrap.indent(warm, "        ")
        + "\ntorch.cuda.current_stream().wait_stream(side)\n"
        + "g = torch.cuda.CUDAGraph()\n"
        + "try:\n    with torch.cuda.graph(g):\n"
        + textwrap.indent(body, "        ")
        + "\nexcept Exception as error:\n"
        + "    first = (str(error).strip().splitlines() or [''])[0]\n"
        + "    print('capture-error', type(error).__name__ + ': ' + first)\n"
        + "    raise SystemExit(0)\n"
        + "try:\n    for _ in range(3):\n        g.replay()\n"
        + "    torch.cuda.synchronize()\n"
        + "except Exception as error:\n"
        + "    print('replay-error', type(error).__name__ + ': ' + str(error)[:200])\n"
        + "    raise SystemExit(0)\n"
        + "print('ok', '')\n"
    )


def run(name: str) -> dict[str, str]:
    note, seed, body = CASES[name]
    warm = "y = layer(x)" if name.endswith("_not_warmed") else body
    done = subprocess.run(
        [sys.executable, "-c", script(seed, body, warm)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    last = (done.stdout.strip().splitlines() or [""])[-1]
    outcome, _, error = last.partition(" ")
    if outcome not in {"ok", "capture-error", "replay-error"}:
        tail = (done.stderr.strip().splitlines() or [""])[-1]
        outcome, error = "crashed", tail
    return {"case": name, "note": note, "outcome": outcome, "error": error}


def main() -> None:
    import torch  # noqa: PLC0415 - on the GPU machine only

    device = torch.cuda.get_device_name()
    print(json.dumps({"device": device, "torch": torch.__version__}), flush=True)
    for name in sys.argv[1:] or list(CASES):
        print(json.dumps(run(name)), flush=True)


if __name__ == "__main__":
    main()
