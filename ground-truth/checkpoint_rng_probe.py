"""What `make_graphed_callables` does with a project's own reentrant checkpoint.

Frameworks write their own activation checkpoint as an autograd Function (Megatron-LM's
`CheckpointFunction`): `forward` keeps the CUDA RNG state in `ctx` and runs the
function without grad; `backward` restores that state, reruns the function with grad
(so dropout draws the forward's mask again), puts its own state back and back-propagates
through the rerun. `make_graphed_callables` captures the forward and the backward as two
graphs. This probe asks whether the rerun in the backward graph still draws the
forward's mask at replay.

The block is `y = dropout(x * w)` with `w` all ones, so `y != 0` is the forward's mask
and `x.grad != 0` the rerun's: eager, they are equal on every call. Each case runs in
its own process: the block is graphed, then called five times on new inputs
(forward and backward replays); it compares the two masks on each call, and that the
masks change from call to call.

Cases: the checkpoint with the RNG state kept and restored (`own_checkpoint_graphed`);
without it (`own_checkpoint_graphed_no_rng`, the rerun draws fresh numbers: wrong
eagerly too, a control); with the validity check torch's own checkpoint makes before
rerunning (`own_checkpoint_graphed_valid_check`); and the restoring checkpoint with the
whole step, forward and backward, captured in one `torch.cuda.graph`
(`own_checkpoint_whole_step`).

Outcomes: `ok`, `silent-wrong` (a call's masks differ where eager's agree: `detail`),
`random-frozen` (every call drew the same mask), `capture-error`, `replay-error`. One
JSON object per case, the first line naming the device and PyTorch.

Usage: `python ground-truth/checkpoint_rng_probe.py [CASE ...] > out.jsonl` on a GPU
machine.
"""

from __future__ import annotations

from _probe import outcome, report

PROGRAM = r"""
import json
import torch
import torch.nn.functional as F

RESTORE = {restore!r}
VALID_CHECK = {valid_check!r}
WHOLE = {whole!r}  # capture the whole step (forward and backward) in one graph


class CheckpointFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, run_function, *args):
        ctx.run_function = run_function
        if RESTORE:
            ctx.fwd_cuda_rng_state = torch.cuda.get_rng_state()
        ctx.save_for_backward(*args)
        with torch.no_grad():
            outputs = run_function(*args)
        return outputs

    @staticmethod
    def backward(ctx, *grads):
        if VALID_CHECK and not torch.autograd._is_checkpoint_valid():
            raise RuntimeError("Checkpointing is not compatible with .grad()")
        inputs = ctx.saved_tensors
        if RESTORE:
            bwd_cuda_rng_state = torch.cuda.get_rng_state()
            torch.cuda.set_rng_state(ctx.fwd_cuda_rng_state)
        detached = [x.detach().requires_grad_() for x in inputs]
        with torch.enable_grad():
            outputs = ctx.run_function(*detached)
        if RESTORE:
            torch.cuda.set_rng_state(bwd_cuda_rng_state)
        torch.autograd.backward(outputs, grads)
        return (None,) + tuple(x.grad for x in detached)


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(4096, device="cuda"))

    def inner(self, x):
        return F.dropout(x * self.w, 0.5, training=True)

    def forward(self, x):
        return CheckpointFunction.apply(self.inner, x)


def call(block, k):
    g = torch.Generator(device="cpu")
    g.manual_seed(100 + k)
    x = (torch.rand(4096, generator=g) + 1).cuda().requires_grad_()
    y = block(x)
    y.sum().backward()
    return (y != 0).clone(), (x.grad != 0).clone()


def graphed_calls(block):
    sample = torch.ones(4096, device="cuda", requires_grad=True)
    graphed = torch.cuda.make_graphed_callables(block, (sample,))
    return lambda k: call(graphed, k)


def whole_step(block):
    x = torch.ones(4096, device="cuda", requires_grad=True)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            x.grad = None
            block(x).sum().backward()
    torch.cuda.current_stream().wait_stream(side)
    x.grad = None
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = block(x)
        y.sum().backward()

    def replay(k):
        g = torch.Generator(device="cpu")
        g.manual_seed(100 + k)
        with torch.no_grad():
            x.copy_((torch.rand(4096, generator=g) + 1).cuda())
        graph.replay()
        return (y != 0).clone(), (x.grad != 0).clone()

    return replay


def main():
    torch.manual_seed(0)
    block = Block()
    eager = [call(block, k) for k in range(2)]
    agree = all(torch.equal(a, b) for a, b in eager)
    try:
        replay = whole_step(block) if WHOLE else graphed_calls(block)
    except Exception as e:
        first = (str(e).strip().splitlines() or [""])[0]
        error = f"{{type(e).__name__}}: {{first}}"[:400]
        return {{"outcome": "capture-error", "error": error}}
    try:
        calls = [replay(k) for k in range(5)]
        torch.cuda.synchronize()
    except Exception as e:
        error = f"{{type(e).__name__}}: {{e}}"[:400]
        return {{"outcome": "replay-error", "error": error}}
    kept = [torch.equal(a, b) for a, b in calls]
    fresh = not all(torch.equal(calls[0][0], a) for a, _ in calls[1:])
    detail = (
        f"eager forward and rerun masks agree: {{agree}}; "
        f"graphed, per call: {{kept}}; masks change between calls: {{fresh}}"
    )
    if agree and not all(kept):
        return {{"outcome": "silent-wrong", "detail": detail}}
    return {{"outcome": "ok" if fresh else "random-frozen", "detail": detail}}


print("RESULT " + json.dumps(main()))
"""

# name -> (what it is, restore the RNG state, check validity, whole step)
CASES: dict[str, tuple[str, bool, bool, bool]] = {
    "own_checkpoint_graphed": (
        "make_graphed_callables of a block using a reentrant checkpoint Function "
        "that keeps the CUDA RNG state in ctx and restores it for the rerun",
        True,
        False,
        False,
    ),
    "own_checkpoint_graphed_no_rng": (
        "the same Function without the RNG state (control: wrong eagerly too)",
        False,
        False,
        False,
    ),
    "own_checkpoint_graphed_valid_check": (
        "the RNG-restoring Function with torch's _is_checkpoint_valid() check",
        True,
        True,
        False,
    ),
    "own_checkpoint_whole_step": (
        "the RNG-restoring Function, forward and backward captured in one "
        "torch.cuda.graph",
        True,
        False,
        True,
    ),
}


def run_case(name: str) -> dict[str, object]:
    note, restore, valid_check, whole = CASES[name]
    program = PROGRAM.format(restore=restore, valid_check=valid_check, whole=whole)
    return {"case": name, "note": note, **outcome(program)}


if __name__ == "__main__":
    report(list(CASES), run_case, threads=3)
