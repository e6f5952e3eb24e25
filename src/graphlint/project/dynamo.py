"""Which of PyTorch's own modules ``torch.compile`` traces into.

Dynamo skips the functions of ``torch`` (it is on its built-in skip list) unless
their module is on one of its inline lists: a call into a skipped module graph-breaks
and runs eagerly, so what that code does is no part of a CUDA graph. The lists are
``MOD_INLINELIST`` and ``LEGACY_MOD_INLINELIST`` of ``torch/_dynamo/trace_rules.py``
in PyTorch 2.13 (a listed module covers its submodules); they matter only when the
checked tree is PyTorch itself or vendors its modules.
"""

from __future__ import annotations

from typing import Final

INLINED: Final = frozenset(
    {
        # MOD_INLINELIST
        "torch._decomp",
        "torch._dynamo._trace_wrapped_higher_order_op",
        "torch._dynamo.compiled_autograd",
        "torch._dynamo.comptime",
        "torch._dynamo.polyfills",
        "torch._dynamo.test_case",
        "torch._export.non_strict_utils",
        "torch._functorch._aot_autograd.subclass_parametrization",
        "torch._functorch.autograd_function",
        "torch._functorch.eager_transforms",
        "torch._functorch.functional_call",
        "torch._functorch.pyfunctorch",
        "torch._functorch.vmap",
        "torch._inductor.test_operators",
        "torch._library.autograd",
        "torch._library.custom_ops",
        "torch._ops",
        "torch._prims",
        "torch._refs",
        "torch._tensor",
        "torch.amp.autocast_mode",
        "torch.ao.nn",
        "torch.ao.quantization.fx._decomposed",
        "torch.autograd.function",
        "torch.backends.cuda",
        "torch.cuda.amp.autocast_mode",
        "torch.distributed",
        "torch.distributions",
        "torch.export._patches",
        "torch.export._tree_utils",
        "torch.export._unlift",
        "torch.export._wrapper_utils",
        "torch.fx._pytree",
        "torch.fx._symbolic_trace",
        "torch.fx.experimental.proxy_tensor",
        "torch.fx.passes.shape_prop",
        "torch.fx.traceback",
        "torch.nn",
        "torch.overrides",
        "torch.random",
        "torch.return_types",
        "torch.sparse",
        "torch.testing",
        "torch.utils._content_store",
        "torch.utils._contextlib",
        "torch.utils._cxx_pytree",
        "torch.utils._device",
        "torch.utils._foreach_utils",
        "torch.utils._ordered_set",
        "torch.utils._python_dispatch",
        "torch.utils._pytree",
        "torch.utils.hooks",
        # LEGACY_MOD_INLINELIST
        "torch._dynamo.external_utils",
        "torch._export.db.examples",
        "torch._export.wrappers",
        "torch._functorch.apis",
        "torch._functorch.deprecated",
        "torch._library.fake_class_registry",
        "torch.utils._typing_utils",
        "torch.ao.quantization.stubs",
        "torch.ao.quantization.pt2e",
        "torch.ao.quantization.quantizer.xnnpack_quantizer",
        "torch.export.unflatten",
    }
)


def skipped(module: str) -> bool:
    """Whether Dynamo runs the functions of ``module`` eagerly instead of tracing
    them: a module of ``torch`` that no inline list covers."""
    if module != "torch" and not module.startswith("torch."):
        return False
    parts = module.split(".")
    return not any(".".join(parts[:n]) in INLINED for n in range(2, len(parts) + 1))


# decorators that exclude a function from tracing: Dynamo graph-breaks at its call
# (and reports it), and the function runs eagerly, outside any CUDA graph
DISABLED: Final = frozenset(
    {"torch.compiler.disable", "torch._dynamo.disable", "torch._disable_dynamo"}
)


__all__ = ["DISABLED", "INLINED", "skipped"]
