"""What ``capture_begin()`` does under a stream object entered as a context manager
(``with s:``, PyTorch's ``Stream.__enter__`` makes it the current stream), beside the
forms GL704 already tells apart: ``with torch.cuda.stream(s):`` and none at all.

Each case runs in its own process: ``x`` on the device, a warm-up of ``x * 2``, then
``g.capture_begin()``, ``y = x * 2``, ``g.capture_end()`` under the case's context,
then a replay compared with eager execution. Outcomes: ``capture-error`` (the
message's first line), ``ok``, ``silent-wrong``, ``replay-error``.

Usage: ``python ground-truth/stream_object_probe.py [CASE ...] > out.jsonl`` on a GPU
machine.
"""

from __future__ import annotations

import textwrap

from _probe import SAID, outcome, report

PROGRAM = """
import json
import torch
x = torch.randn(64, device="cuda")
SAID
def main():
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        x * 2
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    try:
CAPTURE
        torch.cuda.synchronize()
    except Exception as e:
        return {"outcome": "capture-error", "error": said(e)}
    try:
        x.copy_(torch.randn(64, device="cuda"))
        g.replay()
        torch.cuda.synchronize()
        bad = float((y - x * 2).abs().max()) > 1e-4
    except Exception as e:
        return {"outcome": "replay-error", "error": said(e)}
    return {"outcome": "silent-wrong" if bad else "ok"}
print("RESULT " + json.dumps(main()))
"""

SPAN = "g.capture_begin()\ny = x * 2\ng.capture_end()"


def under(context: str) -> str:
    """The capture under ``with context:``."""
    return f"with {context}:\n" + textwrap.indent(SPAN, "    ")


# name -> (what it is, the capture under its context)
CASES: dict[str, tuple[str, str]] = {
    "stream_object_entered": (
        "with s: (a torch.cuda.Stream entered as a context manager)",
        under("s"),
    ),
    "torch_stream_object_entered": (
        "with t: where t = torch.Stream() (the device-generic stream)",
        "t = torch.Stream()\n" + under("t"),
    ),
    "stream_made_in_with": (
        "with torch.cuda.Stream(): (a new stream made and entered)",
        under("torch.cuda.Stream()"),
    ),
    "current_stream_entered": (
        "with torch.cuda.current_stream(): (the default stream entered)",
        under("torch.cuda.current_stream()"),
    ),
    "stream_context": (
        "with torch.cuda.stream(s): (control)",
        under("torch.cuda.stream(s)"),
    ),
    "no_stream": ("no stream at all (control)", SPAN),
}


def run_case(name: str) -> dict[str, object]:
    note, capture = CASES[name]
    program = PROGRAM.replace("SAID", SAID).replace(
        "CAPTURE", textwrap.indent(capture, " " * 8)
    )
    return {"case": name, "note": note, **outcome(program)}


if __name__ == "__main__":
    report(list(CASES), run_case)
