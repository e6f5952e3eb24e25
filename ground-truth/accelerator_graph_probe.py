"""What a real capture does under ``torch.accelerator.Graph``, PyTorch's device-generic
graph (a context manager that captures on the current stream).

Each case runs in its own process, as ``slice_bound_probe.py`` does: ``make()``,
``feed(st, k)`` and ``body(st)``, three warm-up iterations on a side stream, then a
capture, then three replays on new inputs compared with eager execution (or, for
``RANDOM`` cases, with each other). The capture is one of:

- ``stream``: ``with torch.cuda.stream(side), graph:`` (the documented use);
- ``bare``: ``with graph:`` on the default stream;
- ``as``: ``with torch.accelerator.Graph() as graph:``.

Outcomes as ``slice_bound_probe.py``'s, plus ``random-frozen`` (replays repeat the same
random numbers) and ``unavailable`` (this PyTorch has no ``torch.accelerator.Graph``).

Usage: ``python ground-truth/accelerator_graph_probe.py [CASE ...] > out.jsonl`` on a
GPU machine.
"""

from __future__ import annotations

import textwrap

from _probe import SAID, outcome, report

PRELUDE = """
import json, random
import torch
dev = "cuda"
N = 64
def rnd(k, *shape):
    g = torch.Generator(device="cpu")
    g.manual_seed(1000 + k)
    return torch.randn(*shape, generator=g).to(dev)
def make():
    return {"x": torch.zeros(N, N, device=dev), "w": rnd(0, N, N), "step": [0]}
def feed(st, k):
    st["x"].copy_(rnd(k, N, N))
    st["step"][0] = k
"""

CAPTURES = {
    "stream": "with torch.cuda.stream(side), graph:\n    out = body(st)",
    "bare": "with graph:\n    out = body(st)",
    "as": "with torch.accelerator.Graph() as graph:\n    out = body(st)",
}

# name -> (what it is, capture, body, random)
CASES: dict[str, tuple[str, str, str, bool]] = {
    "stream_matmul": (
        "plain compute (control)",
        "stream",
        "return st['x'] @ st['w']",
        False,
    ),
    "stream_item": (
        ".item() in the region",
        "stream",
        "s = st['x'].sum().item()\nreturn st['x'] * s",
        False,
    ),
    "stream_print_tensor": (
        "print(tensor) in the region",
        "stream",
        "print(st['x'][0, 0])\nreturn st['x'] * 2",
        False,
    ),
    "stream_if_tensor": (
        "an if on a device tensor in the region",
        "stream",
        "if st['x'].sum() > 0:\n    return st['x'] * 2\nreturn st['x'] * 3",
        False,
    ),
    "stream_counter_baked": (
        "an if on a Python step counter (baked at capture)",
        "stream",
        "if st['step'][0] % 2 == 0:\n    return st['x'] * 2\nreturn st['x'] * 3",
        False,
    ),
    "stream_py_random_baked": (
        "random.random() in the region (baked at capture)",
        "stream",
        "return st['x'] * random.random()",
        False,
    ),
    "stream_randn": (
        "torch.randn with the default generator",
        "stream",
        "return st['x'] + torch.randn(N, N, device=dev)",
        True,
    ),
    "stream_cpu_sync": (
        ".cpu() in the region",
        "stream",
        "return (st['x'].cpu() * 2).to(dev)",
        False,
    ),
    "bare_matmul": (
        "plain compute, the graph entered on the default stream",
        "bare",
        "return st['x'] @ st['w']",
        False,
    ),
    "as_matmul": (
        "plain compute, the graph made in the with statement and bound by as",
        "as",
        "return st['x'] @ st['w']",
        False,
    ),
}

RUNNER = r"""
SAID
def main():
    if not hasattr(torch, "accelerator") or not hasattr(torch.accelerator, "Graph"):
        return {"outcome": "unavailable"}
    st = make()
    side = torch.cuda.Stream()
    try:
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                feed(st, 0)
                body(st)
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
    except Exception as e:
        return {"outcome": "warmup-error", "error": f"{type(e).__name__}: {e}"[:400]}
    graph = torch.accelerator.Graph()
    feed(st, 0)
    try:
CAPTURE
        torch.cuda.synchronize()
    except Exception as e:
        return {"outcome": "capture-error", "error": said(e)}
    try:
        replays, diffs = [], []
        for k in (1, 2, 3):
            feed(st, k)
            graph.replay()
            torch.cuda.synchronize()
            r = out.detach().clone()
            replays.append(r)
            if not RANDOM:
                e = body(st).detach().clone()
                torch.cuda.synchronize()
                diffs.append(float((r.float() - e.float()).abs().max()))
    except Exception as e:
        return {"outcome": "replay-error", "error": said(e)}
    if RANDOM:
        same = all(torch.equal(replays[0], r) for r in replays[1:])
        return {"outcome": "random-frozen" if same else "ok"}
    bad = max(diffs) > 1e-4
    return {"outcome": "silent-wrong" if bad else "ok", "max_diff": max(diffs)}
print("RESULT " + json.dumps(main()))
"""


def program(capture: str, body: str, random: bool) -> str:
    runner = RUNNER.replace("SAID", SAID).replace(
        "CAPTURE", textwrap.indent(CAPTURES[capture], " " * 8)
    )
    return (
        PRELUDE
        + f"RANDOM = {random}\n"
        + "def body(st):\n"
        + textwrap.indent(body, "    ")
        + "\n"
        + runner
    )


def run_case(name: str) -> dict[str, object]:
    note, capture, body, random = CASES[name]
    return {"case": name, "note": note, **outcome(program(capture, body, random))}


if __name__ == "__main__":
    report(list(CASES), run_case)
