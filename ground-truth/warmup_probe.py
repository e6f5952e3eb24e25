"""What a capture with no warm-up before it does, op by op (GL703).

PyTorch's documentation asks for a few warm-up iterations on a side stream before a
capture. This probe measures which ops need them. Each case runs in its own process,
so that nothing an earlier case created (a cuBLAS handle, a cuDNN handle, an NCCL
communicator, autograd's streams) hides the effect: the case builds its static inputs
with ``make()`` (on the host, then copied: no kernel that needs a handle runs), may
run ``before(st)`` eagerly (the controls: a warm-up that is not the region's code), is
captured with ``torch.cuda.graph`` with **no** warm-up, then replayed three times on
new inputs (``feed(st, k)``). Each replay is compared, by the case's mode, with:

- ``eager``: eager execution of the same body on the same objects and inputs, right
  after the replay;
- ``twin``: a second set of objects built the same way (``make()``, ``before``) and
  run eagerly in step with the replays: for state the first call creates (an
  optimizer's momentum, Adam's moments), which a replay must carry on, not reset;
- ``replay``: nothing (random draws): the replays must only run;
- ``stable``: the same input at every replay: the output must not change from replay
  to replay (work done once at the first call, such as a lazy module's parameter
  initialisation, must not run again at each replay), and must equal eager execution
  after the replays.

Outcomes: ``capture-error`` (the capture raised; ``error`` is the first line of what
surfaced, ``cause`` that of the exception it was raised from or during, if any),
``replay-error``, ``silent-wrong`` (``max_diff``: replay against the comparison),
``ok``. One JSON object per case on stdout, the first line naming the device and
PyTorch.

Usage: ``python ground-truth/warmup_probe.py [CASE ...] > out.jsonl`` on a GPU
machine (6 cases at a time).
"""

from __future__ import annotations

import textwrap

from _probe import outcome, report

PRELUDE = """
import os
import torch
import torch.nn.functional as F
dev = "cuda"
N = 16
def rnd(k, *shape):
    g = torch.Generator(device="cpu")
    g.manual_seed(1000 + k)
    return torch.randn(*shape, generator=g).to(dev)
"""

PLAIN = """
def make():
    return {"x": torch.zeros(4, N, device=dev), "y": torch.zeros(4, N, device=dev),
            "w": rnd(99, N, N)}
def feed(st, k):
    st["x"].copy_(rnd(k, 4, N))
"""

BATCHED = """
def make():
    return {"x": torch.zeros(2, 4, N, device=dev), "w": rnd(99, 2, N, N)}
def feed(st, k):
    st["x"].copy_(rnd(k, 2, 4, N))
"""


def module(build: str, shape: str = "4, N", grad: bool = False) -> str:
    """Static input ``x`` of ``shape`` and a module ``m`` built on the host, moved."""
    reset = "\n    for p in st['m'].parameters(): p.grad = None" if grad else ""
    return f"""
def make():
    torch.manual_seed(0)
    return {{"x": torch.zeros({shape}, device=dev), "m": ({build}).to(dev)}}
def feed(st, k):
    st["x"].copy_(rnd(k, {shape})){reset}
"""


LEAF = """
def make():
    return {"x": torch.zeros(4, N, device=dev),
            "w": rnd(99, 4, N).requires_grad_()}
def feed(st, k):
    st["x"].copy_(rnd(k, 4, N))
    st["w"].grad = None
"""


def optimizer(build: str) -> str:
    """A parameter ``p`` with a gradient, reset by ``feed``, and an optimizer."""
    return f"""
def make():
    p = torch.nn.Parameter(torch.zeros(4, N, device=dev))
    p.grad = torch.zeros(4, N, device=dev)
    return {{"p": p, "opt": {build}}}
def feed(st, k):
    with torch.no_grad():
        st["p"].copy_(rnd(k, 4, N))
        st["p"].grad.copy_(rnd(k + 50, 4, N))
"""


NCCL = """
import torch.distributed as dist
def make():
    torch.cuda.set_device(0)
    dist.init_process_group(
        "nccl", init_method=f"file:///tmp/pg_{os.getpid()}", rank=0, world_size=1
    )
    return {"x": torch.zeros(4, N, device=dev), "y": torch.zeros(4, N, device=dev)}
def feed(st, k):
    st["x"].copy_(rnd(k, 4, N))
"""

ALLREDUCE = "st['y'].copy_(st['x'])\ndist.all_reduce(st['y'])\nreturn st['y'] * 1"

# name -> (what it is, make/feed source, eager code run before the capture, body,
# the comparison: eager, twin or stable)
CASES: dict[str, tuple[str, str, str, str, str]] = {
    "nowarm_fill": (
        "fill_/zero_ of a static tensor and torch.full/zeros_like in the region",
        PLAIN,
        "",
        "st['y'].zero_()\nst['y'].fill_(3.0)\n"
        "return st['y'] + torch.full((4, N), 2.0, device=dev) "
        "+ torch.zeros_like(st['x'])",
        "eager",
    ),
    "nowarm_elementwise": (
        "elementwise arithmetic and activations (mul, add, relu, exp, clamp, sigmoid)",
        PLAIN,
        "",
        "return torch.relu(st['x'] * 2 + 1).exp().clamp(max=5) - st['x'].sigmoid()",
        "eager",
    ),
    "nowarm_copy_view": (
        "copy_ into a static tensor, views, reshape, transpose, contiguous, cat",
        PLAIN,
        "",
        "st['y'].copy_(st['x'].view(-1).reshape(4, N).t().contiguous().t())\n"
        "return torch.cat([st['y'], st['x'][:, :3]], dim=1)",
        "eager",
    ),
    "nowarm_reduction_softmax": (
        "sum, mean, amax, softmax, log_softmax, cross_entropy",
        PLAIN,
        "",
        "t = torch.zeros(4, dtype=torch.long, device=dev)\n"
        "return (st['x'].softmax(-1) + st['x'].log_softmax(-1)).sum(-1) "
        "+ st['x'].mean() + st['x'].amax(-1) + F.cross_entropy(st['x'], t)",
        "eager",
    ),
    "nowarm_layer_norm": (
        "nn.LayerNorm module (no cuBLAS or cuDNN)",
        module("torch.nn.LayerNorm(N)"),
        "",
        "return st['m'](st['x'])",
        "eager",
    ),
    "nowarm_embedding_index": (
        "nn.Embedding, index_select, gather",
        module("torch.nn.Embedding(32, N)"),
        "",
        "i = (st['x'][:, 0].abs() * 4).long() % 32\n"
        "return st['m'](i) + st['x'].index_select(0, i % 4) "
        "+ st['x'].gather(1, (i % N)[:, None].expand(4, N))",
        "eager",
    ),
    "nowarm_random": (
        "torch.randn and F.dropout in the region (default generator; only replayed)",
        PLAIN,
        "",
        "st['y'].copy_(F.dropout(st['x'], 0.5) + torch.randn(4, N, device=dev))\n"
        "return None",
        "replay",
    ),
    "nowarm_matmul": (
        "x @ w (cuBLAS)",
        PLAIN,
        "",
        "return st['x'] @ st['w']",
        "eager",
    ),
    "nowarm_einsum": (
        "torch.einsum contracting a dimension (a batched matmul: cuBLAS)",
        BATCHED,
        "",
        "return torch.einsum('bij,bjk->bik', st['x'], st['w'])",
        "eager",
    ),
    "nowarm_bmm": (
        "torch.bmm (cuBLAS)",
        BATCHED,
        "",
        "return torch.bmm(st['x'], st['w'])",
        "eager",
    ),
    "nowarm_f_linear": (
        "F.linear (cuBLAS)",
        PLAIN,
        "",
        "return F.linear(st['x'], st['w'])",
        "eager",
    ),
    "nowarm_nn_linear": (
        "an nn.Linear module (cuBLAS)",
        module("torch.nn.Linear(N, N)"),
        "",
        "return st['m'](st['x'])",
        "eager",
    ),
    "nowarm_conv2d": (
        "an nn.Conv2d module (cuDNN)",
        module("torch.nn.Conv2d(3, 4, 3)", "2, 3, N, N"),
        "",
        "return st['m'](st['x'])",
        "eager",
    ),
    "nowarm_batch_norm": (
        "an nn.BatchNorm2d module in training mode (cuDNN batch norm)",
        module("torch.nn.BatchNorm2d(3)", "2, 3, N, N"),
        "",
        "return st['m'](st['x'])",
        "eager",
    ),
    "nowarm_sdpa": (
        "F.scaled_dot_product_attention, fp16 (flash attention)",
        """
def make():
    return {"q": torch.zeros(2, 4, 64, 64, device=dev, dtype=torch.half)}
def feed(st, k):
    st["q"].copy_(rnd(k, 2, 4, 64, 64))
""",
        "",
        "q = st['q']\nreturn F.scaled_dot_product_attention(q, q * 0.5, q)",
        "eager",
    ),
    "nowarm_lazy_linear": (
        "an nn.LazyLinear module, first called in the region",
        module("torch.nn.LazyLinear(N)"),
        "",
        "return st['m'](st['x'])",
        "eager",
    ),
    "nowarm_lazy_linear_cublas_ready": (
        "nn.LazyLinear first called in the region, after an eager matmul elsewhere",
        module("torch.nn.LazyLinear(N)"),
        "torch.ones(4, 4, device=dev) @ torch.ones(4, 4, device=dev)",
        "return st['m'](st['x'])",
        "stable",
    ),
    "nowarm_matmul_cublas_ready": (
        "x @ w after an eager matmul of other tensors on the current stream",
        PLAIN,
        "torch.ones(4, 4, device=dev) @ torch.ones(4, 4, device=dev)",
        "return st['x'] @ st['w']",
        "eager",
    ),
    "nowarm_backward_elementwise": (
        "loss.backward() of elementwise ops (AccumulateGrad into a leaf)",
        LEAF,
        "",
        "((st['x'] * st['w']).tanh() ** 2).sum().backward()\nreturn st['w'].grad",
        "eager",
    ),
    "nowarm_backward_elementwise_autograd_ready": (
        "the same, after an eager backward of other tensors on the current stream",
        LEAF,
        "(torch.ones(3, device=dev, requires_grad=True) * 2).sum().backward()",
        "((st['x'] * st['w']).tanh() ** 2).sum().backward()\nreturn st['w'].grad",
        "eager",
    ),
    "nowarm_backward_linear": (
        "loss.backward() through an nn.Linear",
        module("torch.nn.Linear(N, N)", grad=True),
        "",
        "st['m'](st['x']).pow(2).sum().backward()\nreturn st['m'].weight.grad",
        "eager",
    ),
    "nowarm_sgd_step": (
        "SGD.step() on a parameter with a gradient",
        optimizer("torch.optim.SGD([p], lr=0.1)"),
        "",
        "st['opt'].step()\nreturn st['p']",
        "twin",
    ),
    "nowarm_sgd_momentum_step": (
        "SGD(momentum=0.9).step(), its first step (momentum buffer created)",
        optimizer("torch.optim.SGD([p], lr=0.1, momentum=0.9)"),
        "",
        "st['opt'].step()\nreturn st['p']",
        "twin",
    ),
    "nowarm_sgd_momentum_step_state_ready": (
        "SGD(momentum=0.9).step() after an eager step (momentum buffer exists)",
        optimizer("torch.optim.SGD([p], lr=0.1, momentum=0.9)"),
        "st['opt'].step()",
        "st['opt'].step()\nreturn st['p']",
        "twin",
    ),
    "nowarm_adam_capturable_step": (
        "Adam(capturable=True).step(), its first step (state created in the region)",
        optimizer("torch.optim.Adam([p], lr=0.1, capturable=True)"),
        "",
        "st['opt'].step()\nreturn st['p']",
        "twin",
    ),
    "nowarm_adam_capturable_step_state_ready": (
        "Adam(capturable=True).step() after an eager step (state exists)",
        optimizer("torch.optim.Adam([p], lr=0.1, capturable=True)"),
        "st['opt'].step()",
        "st['opt'].step()\nreturn st['p']",
        "twin",
    ),
    "nowarm_clip_grad_norm": (
        "torch.nn.utils.clip_grad_norm_ on a parameter's gradient",
        optimizer("None"),
        "",
        "torch.nn.utils.clip_grad_norm_([st['p']], 0.5)\nreturn st['p'].grad",
        "eager",
    ),
    "nowarm_nccl_all_reduce": (
        "dist.all_reduce on a one-rank NCCL group, first collective in the region",
        NCCL,
        "",
        ALLREDUCE,
        "eager",
    ),
    "nowarm_nccl_all_reduce_comm_ready": (
        "the same after an eager all_reduce of another tensor (communicator made)",
        NCCL,
        "dist.all_reduce(torch.ones(4, device=dev))",
        ALLREDUCE,
        "eager",
    ),
}

RUNNER = r"""
def first(e):
    text = (str(e).strip().splitlines() or [""])[0]
    return f"{type(e).__name__}: {text}"[:400]
def snapshot(t):
    t = t.detach().clone()
    torch.cuda.synchronize()
    return t
def diff(r, e):
    if r.shape != e.shape:
        return float("inf")
    return float((r.float() - e.float()).abs().max())
def main():
    st = make()
    before(st)
    if MODE == "twin":
        ref = make()
        before(ref)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    feed(st, 0)
    try:
        with torch.cuda.graph(g):
            out = body(st)
    except Exception as e:
        result = {"outcome": "capture-error", "error": first(e)}
        inner = e.__cause__ or e.__context__
        if inner is not None:
            result["cause"] = first(inner)
        return result
    try:
        diffs = []
        replays = []
        for k in (1, 2, 3):
            feed(st, 1 if MODE == "stable" else k)
            g.replay()
            torch.cuda.synchronize()
            if MODE == "replay":
                continue
            r = snapshot(out)
            replays.append(r)
            if MODE == "eager":
                feed(st, k)
                diffs.append(diff(r, snapshot(body(st))))
            elif MODE == "twin":
                feed(ref, k)
                diffs.append(diff(r, snapshot(body(ref))))
            else:
                diffs.append(diff(r, replays[0]))
        if MODE == "stable":
            feed(st, 1)
            diffs.append(diff(replays[-1], snapshot(body(st))))
    except Exception as e:
        return {"outcome": "replay-error", "error": first(e)}
    if not diffs:
        return {"outcome": "ok"}
    bad = max(diffs) > 1e-3
    return {"outcome": "silent-wrong" if bad else "ok", "max_diff": max(diffs)}
print("RESULT " + json.dumps(main()))
"""


def program(setup: str, before: str, body: str, mode: str) -> str:
    return (
        f"import json\nMODE = {mode!r}\n"
        + PRELUDE
        + setup
        + "def before(st):\n"
        + textwrap.indent(before or "pass", "    ")
        + "\ndef body(st):\n"
        + textwrap.indent(body, "    ")
        + "\n"
        + RUNNER
    )


def run_case(name: str) -> dict[str, object]:
    note, setup, before, body, mode = CASES[name]
    program_text = program(setup, before, body, mode)
    return {"case": name, "note": note, "compared": mode, **outcome(program_text)}


if __name__ == "__main__":
    report(list(CASES), run_case)
