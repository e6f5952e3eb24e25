"""What a real capture raises for each hazard, as measured on PyTorch 2.11
(../shared/ground-truth/, ground-truth/): the failures ``graphlint confirm`` lets
confirm a rule's finding. A capture failure confirms a finding only when the
finding's rule declares its signature (``Check.capture_failures``). Light: no torch,
no LibCST."""

from __future__ import annotations

import re
from dataclasses import dataclass

# a CUDA error: ``torch.AcceleratorError`` since PyTorch 2.8, a RuntimeError before
_CUDA_ERROR = ("AcceleratorError", "RuntimeError")


@dataclass(frozen=True)
class Signature:
    """A failure a real capture raised for a hazard: the exception's class names and
    a regular expression (case-insensitive) that the first line of its message
    matches. ``graphlint confirm`` records a failure as ``Name: first line``."""

    what: str  # in words, for notes and rule pages
    types: tuple[str, ...]
    pattern: str

    def matches(self, failure: str) -> bool:
        """Whether ``failure`` (``Name: first line``) is this one."""
        name, _, text = failure.partition(": ")
        return name in self.types and (
            re.search(self.pattern, text, re.IGNORECASE) is not None
        )


# A wait for the device while a graph is captured: the call raises
# cudaErrorStreamCaptureUnsupported (900) at its line, and the capture's end then
# raises cudaErrorStreamCaptureInvalidated (901), which is what surfaces from
# ``torch.cuda.graph`` (item_sync, print_tensor, cuda_synchronize, nonzero, ...). The
# checker records the first failure of the chain, so either may be the one read.
# An event recorded inside the capture and then waited on (``done.record()``,
# ``done.synchronize()``) raises cudaErrorCapturedEvent (907) instead (measured by
# ``graphlint confirm`` on fixtures/GL103-host-synchronization/bad.py:20, H200,
# PyTorch 2.11; ground-truth event_synchronize records the chain's end, 901).
SYNC = Signature(
    "a wait for the device under capture",
    _CUDA_ERROR,
    r"operation not permitted when stream is capturing"
    r"|operation not permitted on an event last recorded in a capturing stream"
    r"|operation failed due to a previous error during capture",
)
# A copy between the device and pageable host memory (cpu_sync, tolist_sync,
# tensor_from_list, cpu_to_cuda, torch_save, index_python_list, ...).
PAGEABLE_COPY = Signature(
    "a copy between the device and pageable host memory",
    ("RuntimeError",),
    r"Cannot copy between CPU and CUDA tensors during CUDA graph capture unless the "
    r"CPU tensor is pinned",
)
# torch.compile(fullgraph=True): the graph break a host read makes is an error
# (ground-truth/h100-torch2.11-compile.jsonl: compiled_fullgraph_tensor_branch,
# "Unsupported: Data-dependent branching"; compiled_fullgraph_item_branch,
# "UserError: ... Could not guard on data-dependent expression").
# The probe recorded the outermost exception; ``graphlint confirm`` records the first
# failure of the chain, and Dynamo's ``UserError`` ("Consider annotating your code
# ... Could not guard on data-dependent expression") is raised from PyTorch's
# ``GuardOnDataDependentSymNode``, whose message follows "...torch._check*().".
DATA_DEPENDENT_COMPILE = Signature(
    "a fullgraph compile stopped by a value read on the host",
    ("Unsupported", "UserError", "GuardOnDataDependentSymNode"),
    r"data-dependent",
)
# adam_not_capturable, adam_fused_not_capturable, scaler_step_fused
NOT_CAPTURABLE = Signature(
    "an optimizer step captured with capturable=False",
    ("RuntimeError",),
    r"graph capture of step\(\) for an instance of \w+ but param_groups' "
    r"capturable is False",
)
# custom_gen_unregistered
UNREGISTERED_GENERATOR = Signature(
    "a generator the graph does not know",
    ("RuntimeError",),
    r"Attempt to increase offset for a CUDA generator not in capture mode",
)
# ground-truth/h100-torch2.11-rng.jsonl: manual_seed_new_not_warmed, seed_inside
SEED_CHANGED = Signature(
    "a new seed set under capture",
    ("RuntimeError",),
    r"set_current_seed can be called during stream capture only if new seed is the "
    r"same",
)
# The checks PyTorch makes before a capture or a graphing starts (its sources:
# CUDAGraph::capture_begin, torch.cuda.make_graphed_callables), raised at the call.
DEFAULT_STREAM = Signature(
    "a capture on the default stream",
    ("RuntimeError",),
    r"CUDA graphs must be captured on a non-default stream",
)
AUTOCAST_CACHE = Signature(
    "graphing under autocast with its cast cache",
    ("RuntimeError",),
    r"make_graphed_callables does not support the autocast caching",
)
HOOKS_REGISTERED = Signature(
    "graphing a module with hooks",
    ("AssertionError",),
    r"Modules must not have hooks registered at the time they are passed",
)
# CUDA-graph trees (torch.compile): an output of a compiled callable's graph read
# after a later replay wrote over it (ground-truth/h100-torch2.11-compile.jsonl:
# compiled_output_kept, compiled_output_fed_back; ground-truth/
# h200-torch2.11-compile-train.jsonl: gradients added to across backwards,
# compiled_train_grads_accumulate_across_steps, compiled_train_microbatches, ...).
OUTPUT_OVERWRITTEN = Signature(
    "a read of a CUDA-graph output that a later replay overwrote",
    ("RuntimeError",),
    r"accessing tensor output of CUDAGraphs that has been overwritten by a "
    r"subsequent run",
)
