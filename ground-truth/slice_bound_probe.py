"""What a real capture does with slice bounds and ``narrow`` lengths read from tensors.

Each case runs in its own process, as ``../shared/ground-truth/capture_harness.py``
does: the case defines ``make()`` (static inputs), ``feed(st, k)`` (new values copied
into them) and ``body(st)`` (the captured code). Three warm-up iterations on a side
stream, a capture with ``torch.cuda.graph``, then three replays on new inputs, each
compared with eager execution of the same body on the same inputs. One JSON object
per case on stdout, the first line naming the device and PyTorch.

Outcomes: ``capture-error`` (the capture raised; ``error`` is its message),
``replay-error``, ``silent-wrong`` (replay differs from eager: ``max_diff``), ``ok``,
``warmup-error`` (fails in eager execution too).

Usage: ``python ground-truth/slice_bound_probe.py [CASE ...] > out.jsonl`` on a GPU
machine (6 cases at a time). ``host_copy_probe.py`` uses the same runner.
"""

from __future__ import annotations

import textwrap

from _probe import outcome, report

PRELUDE = """
import torch
dev = "cuda"
N = 8
def rnd(k, *shape):
    g = torch.Generator(device="cpu")
    g.manual_seed(1000 + k)
    return torch.randn(*shape, generator=g).to(dev)
def lengths(k):
    # a different length per row and per input: a bound baked at capture shows
    return torch.tensor([(k + j) % (N - 1) + 1 for j in range(4)]).to(dev)
"""

STATIC = """
def make():
    return {"x": torch.zeros(4, N, N, device=dev),
            "lens": torch.zeros(4, dtype=torch.long, device=dev)}
def feed(st, k):
    st["x"].copy_(rnd(k, 4, N, N))
    st["lens"].copy_(lengths(k))
"""

# name -> (what it is, the body; ``st`` holds x (4, N, N) and lens (4,) on the device)
CASES: dict[str, tuple[str, str]] = {
    "slice_bound_0d_tensor": (
        "x[:, :, :n] where n is a 0-d device tensor",
        "n = st['lens'][0]\nreturn st['x'][:, :, :n].sum(-1)",
    ),
    "slice_bound_tensor_element": (
        "x[i, :, :seq_len[i]] in a loop, seq_len a device tensor",
        "return torch.stack(\n"
        "    [st['x'][i, :, : st['lens'][i]].sum(-1) for i in range(4)]\n)",
    ),
    "slice_bound_python_int": (
        "x[:, :, :3], a Python int bound (control)",
        "return st['x'][:, :, :3].sum(-1)",
    ),
    "slice_bound_shape": (
        "x[:, :, : x.shape[2] // 2], a bound from a shape (control)",
        "return st['x'][:, :, : st['x'].shape[2] // 2].sum(-1)",
    ),
    "narrow_tensor_length": (
        "x.narrow(2, 0, n) where n is a 0-d device tensor",
        "return st['x'].narrow(2, 0, st['lens'][0]).sum(-1)",
    ),
    "narrow_tensor_start": (
        "x.narrow(2, start, 2) where start is a 0-d device tensor",
        "return st['x'].narrow(2, st['lens'][0] % (N - 2), 2).sum(-1)",
    ),
}

RUNNER = r"""
def main():
    result = {}
    try:
        st = make()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                feed(st, 0)
                body(st)
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
    except Exception as e:
        return {"outcome": "warmup-error", "error": f"{type(e).__name__}: {e}"[:400]}
    g = torch.cuda.CUDAGraph()
    feed(st, 0)
    try:
        with torch.cuda.graph(g):
            out = body(st)
    except Exception as e:
        first = (str(e).strip().splitlines() or [""])[0]
        error = f"{type(e).__name__}: {first}"[:400]
        return {"outcome": "capture-error", "error": error}
    try:
        diffs = []
        for k in (1, 2, 3):
            feed(st, k)
            g.replay()
            torch.cuda.synchronize()
            r = out.detach().clone()
            e = body(st).detach().clone()
            torch.cuda.synchronize()
            if r.shape != e.shape:
                diffs.append(float("inf"))
            else:
                diffs.append(float((r.float() - e.float()).abs().max()))
    except Exception as e:
        return {"outcome": "replay-error", "error": f"{type(e).__name__}: {e}"[:400]}
    bad = max(diffs) > 1e-4
    return {"outcome": "silent-wrong" if bad else "ok", "max_diff": max(diffs)}
print("RESULT " + json.dumps(main()))
"""


def program(setup: str, body: str) -> str:
    return (
        "import json\n"
        + PRELUDE
        + setup
        + "def body(st):\n"
        + textwrap.indent(body, "    ")
        + "\n"
        + RUNNER
    )


def main(cases: dict[str, tuple[str, str, str]]) -> None:
    """Run ``cases`` (name -> (note, make/feed source, body)), or those named."""

    def run_case(name: str) -> dict[str, object]:
        note, setup, body = cases[name]
        return {"case": name, "note": note, **outcome(program(setup, body))}

    report(list(cases), run_case)


if __name__ == "__main__":
    main({name: (note, STATIC, body) for name, (note, body) in CASES.items()})
