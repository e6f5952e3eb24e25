"""What a real capture does when the region saves and restores the global RNG state.

``rng_state_probe.py`` measured that ``torch.cuda.get_rng_state()`` and
``torch.cuda.set_rng_state(s)`` capture without an error. This probe checks whether
the replays then do what eager execution does. Each case runs in its own process:
``a`` and ``b`` are dropout masks drawn by the region's body; the body runs twice
eagerly, three times on a side stream (warm-up), is captured with
``torch.cuda.graph`` and replayed three times. What is compared depends on the case:

- ``same``: eager draws ``b`` with the state restored to the one ``a`` was drawn
  from, so ``a == b``; each replay must keep ``a == b`` and draw new masks;
- ``fixed``: the body restores a state saved before the capture, so eager draws the
  same ``a`` on every call; each replay must draw that ``a``;
- ``fresh``: nothing is restored; the replays must draw new masks;
- ``differ``: the CPU generator is saved and restored, which the CUDA dropout does not
  use; eager draws ``a != b``, and so must each replay.

Outcomes: ``ok``, ``silent-wrong`` (a replay broke what eager does: ``detail``),
``random-frozen`` (the replays drew the same masks), ``capture-error``,
``replay-error``. One JSON object per case, the first line naming the device and
PyTorch.

Usage: ``python ground-truth/rng_restore_probe.py [CASE ...] > out.jsonl`` on a GPU
machine.
"""

from __future__ import annotations

import textwrap

from _probe import outcome, report

PRELUDE = """
import json
import torch
import torch.nn.functional as F
torch.manual_seed(0)
x = torch.ones(4096, device="cuda")
saved = torch.cuda.get_rng_state()
"""

# name -> (what it is, what is compared, the body: it sets ``a`` and ``b`` (or None))
CASES: dict[str, tuple[str, str, str]] = {
    "cuda_rng_fork_restore": (
        "get_rng_state(), a = dropout, set_rng_state(state), b = dropout (torch.cuda)",
        "same",
        "state = torch.cuda.get_rng_state()\n"
        "a = F.dropout(x, 0.5)\n"
        "torch.cuda.set_rng_state(state)\n"
        "b = F.dropout(x, 0.5)",
    ),
    "cuda_set_rng_state_saved": (
        "torch.cuda.set_rng_state(saved) then dropout, saved before the capture",
        "fixed",
        "torch.cuda.set_rng_state(saved)\na = F.dropout(x, 0.5)\nb = None",
    ),
    "cuda_get_rng_state_only": (
        "state = torch.cuda.get_rng_state() then dropout, the state not restored",
        "fresh",
        "state = torch.cuda.get_rng_state()\na = F.dropout(x, 0.5)\nb = None",
    ),
    "fork_rng_context": (
        "with torch.random.fork_rng(devices=[0]): a = dropout; then b = dropout",
        "same",
        "with torch.random.fork_rng(devices=[0]):\n"
        "    a = F.dropout(x, 0.5)\n"
        "b = F.dropout(x, 0.5)",
    ),
    "cpu_rng_fork_restore": (
        "torch.get_rng_state() / torch.set_rng_state() around a CUDA dropout",
        "differ",
        "state = torch.get_rng_state()\n"
        "a = F.dropout(x, 0.5)\n"
        "torch.set_rng_state(state)\n"
        "b = F.dropout(x, 0.5)",
    ),
}

RUNNER = r"""
def body():
{body}
    return a, b
def snap(pair):
    a, b = pair
    return a.clone(), (None if b is None else b.clone())
def main(kind):
    eager = [snap(body()) for _ in range(2)]
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            body()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(g):
            out = body()
    except Exception as e:
        first = (str(e).strip().splitlines() or [""])[0]
        error = f"{{type(e).__name__}}: {{first}}"[:400]
        return {{"outcome": "capture-error", "error": error}}
    try:
        replays = []
        for _ in range(3):
            g.replay()
            torch.cuda.synchronize()
            replays.append(snap(out))
    except Exception as e:
        error = f"{{type(e).__name__}}: {{e}}"[:400]
        return {{"outcome": "replay-error", "error": error}}
    eq = torch.equal
    fresh = not all(eq(replays[0][0], r[0]) for r in replays[1:])
    if kind == "same":
        held = eq(eager[0][0], eager[0][1])
        kept = all(eq(a, b) for a, b in replays)
        detail = f"eager a == b: {{held}}; every replay a == b: {{kept}}"
        wrong = held and not kept
    elif kind == "fixed":
        held = eq(eager[0][0], eager[1][0])
        kept = all(eq(a, eager[0][0]) for a, _ in replays)
        detail = f"eager draws the same a: {{held}}; every replay draws it: {{kept}}"
        wrong = held and not kept
        fresh = True
    elif kind == "differ":
        held = not eq(eager[0][0], eager[0][1])
        kept = all(not eq(a, b) for a, b in replays)
        detail = f"eager a != b: {{held}}; every replay a != b: {{kept}}"
        wrong = held and not kept
    else:
        detail = ""
        wrong = False
    detail += f"; replays draw new masks: {{fresh}}"
    if wrong:
        return {{"outcome": "silent-wrong", "detail": detail}}
    return {{"outcome": "ok" if fresh else "random-frozen", "detail": detail}}
print("RESULT " + json.dumps(main({kind!r})))
"""


def run_case(name: str) -> dict[str, object]:
    note, kind, body = CASES[name]
    program = PRELUDE + RUNNER.format(body=textwrap.indent(body, "    "), kind=kind)
    return {"case": name, "note": note, **outcome(program)}


if __name__ == "__main__":
    report(list(CASES), run_case)
