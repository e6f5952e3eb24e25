"""What a real capture does with host tensors copied to the device (GL601's edges).

``cpu_to_cuda`` and ``pinned_to_cuda_nonblocking`` of ``../shared/ground-truth/``
measured a pageable copy (fails capture) and a pinned, non-blocking one (fine). These
cases measure the rest of what GL601 decides on: a pinned tensor copied without
``non_blocking``, a tensor pinned inside the region, ``torch.Tensor([...]).cuda()``
and a host ``arange`` moved with ``.to(x.device)``. The runner is
``slice_bound_probe.py``'s (same outcomes).

Usage: ``python ground-truth/host_copy_probe.py [CASE ...] > out.jsonl`` on a GPU
machine.
"""

from __future__ import annotations

from slice_bound_probe import main

PINNED = """
def make():
    return {"x": torch.zeros(N, device=dev), "h": torch.zeros(N).pin_memory()}
def feed(st, k):
    st["x"].copy_(rnd(k, N))
    st["h"].fill_(float(k))
"""

PLAIN = """
def make():
    return {"x": torch.zeros(N, device=dev)}
def feed(st, k):
    st["x"].copy_(rnd(k, N))
"""

CASES: dict[str, tuple[str, str, str]] = {
    "pinned_to_cuda_blocking": (
        "a pinned CPU tensor copied with .to(dev), non_blocking=False",
        PINNED,
        "return st['x'] * st['h'].to(dev)",
    ),
    "pinned_cuda_method_nonblocking": (
        "a pinned CPU tensor copied with .cuda(non_blocking=True)",
        PINNED,
        "return st['x'] * st['h'].cuda(non_blocking=True)",
    ),
    "pin_memory_inside_nonblocking": (
        "torch.arange(N).float().pin_memory().to(dev, non_blocking=True) inside",
        PLAIN,
        "h = torch.arange(N).float().pin_memory()\n"
        "return st['x'] * h.to(dev, non_blocking=True)",
    ),
    "torch_Tensor_list_cuda": (
        "torch.Tensor([...]).cuda() in the region",
        PLAIN,
        "return st['x'] * torch.Tensor([float(i) for i in range(N)]).cuda()",
    ),
    "arange_to_device_of": (
        "torch.arange(N).to(x.device) in the region",
        PLAIN,
        "return st['x'] * torch.arange(N).to(st['x'].device)",
    ),
}

if __name__ == "__main__":
    main(CASES)
