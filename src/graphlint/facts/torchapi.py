"""What graphlint knows about PyTorch's API surface: names and what they return."""

from __future__ import annotations

from typing import Final


def _words(text: str) -> frozenset[str]:
    """A set of names written as whitespace-separated words."""
    return frozenset(text.split())


TENSOR_TYPES: Final = frozenset(
    {"torch.Tensor", "torch.nn.Parameter", "torch.nn.parameter.Parameter"}
)

# Instances of these classes (besides torch.nn modules and torch.optim optimizers).
OBJECT_FACTORIES: Final[dict[str, str]] = {
    "torch.cuda.Stream": "torch.cuda.Stream",
    "torch.cuda.current_stream": "torch.cuda.Stream",
    "torch.cuda.default_stream": "torch.cuda.Stream",
    "torch.Stream": "torch.cuda.Stream",
    "torch.cuda.Event": "torch.cuda.Event",
    "torch.Event": "torch.cuda.Event",
    "torch.cuda.CUDAGraph": "torch.cuda.CUDAGraph",
    "torch.Generator": "torch.Generator",
    "torch.amp.GradScaler": "torch.amp.GradScaler",
    "torch.cuda.amp.GradScaler": "torch.amp.GradScaler",
    "torch.device": "torch.device",
    "logging.getLogger": "logging.Logger",
}

# Optimizers whose step() refuses capture unless built with capturable=True
# (they call _cuda_graph_capture_health_check; SGD, Adagrad and others do not).
CAPTURE_CHECKED_OPTIMIZERS: Final = frozenset(
    f"torch.optim.{name}"
    for name in _words(
        "Adam AdamW Adamax ASGD NAdam RAdam RMSprop Rprop Adadelta Adafactor"
    )
)

STREAM_CLASSES: Final = frozenset({"torch.cuda.Stream"})
EVENT_CLASSES: Final = frozenset({"torch.cuda.Event"})

MODULE_CONTAINERS: Final = frozenset(
    {"torch.nn.Sequential", "torch.nn.ModuleList", "torch.nn.ModuleDict"}
)

# nn.Module methods returning the module itself.
MODULE_SELF_METHODS: Final = _words(
    """
    cuda to cpu eval train half float double bfloat16 requires_grad_ share_memory apply
    type to_empty xpu
    """
)
MODULE_TENSOR_ATTRS: Final = frozenset(
    {"weight", "bias", "running_mean", "running_var"}
)
MODULE_PY_ATTRS: Final = frozenset({"training", "in_features", "out_features"})

DTYPES: Final = frozenset(
    f"torch.{name}"
    for name in _words(
        """
        float float16 float32 float64 bfloat16 half double int int8 int16 int32 int64
        long short uint8 bool complex64 complex128 cfloat cdouble float8_e4m3fn
        float8_e5m2
        """
    )
)
PYTHON_CONSTANTS: Final = frozenset(
    {"torch.inf", "torch.nan", "torch.pi", "torch.e", "math.pi", "math.inf", "math.e"}
)

TENSOR_ATTRS: Final = frozenset(
    {"T", "mT", "H", "mH", "data", "grad", "real", "imag", "values", "indices"}
)
TENSOR_PY_ATTRS: Final = _words(
    """
    shape dtype device ndim is_cuda is_cpu requires_grad is_leaf layout names itemsize
    nbytes is_sparse is_quantized is_meta grad_fn is_nested output_nr
    """
)

# Tensor methods returning a Python value (not a tensor).
TENSOR_PY_METHODS: Final = _words(
    """
    item tolist numpy dim ndimension size numel nelement element_size is_contiguous
    is_floating_point is_complex is_signed data_ptr stride storage_offset get_device
    equal allclose is_pinned is_shared is_set_to is_nonzero register_hook backward
    __len__ __bool__ __int__ __float__ __index__ has_names untyped_storage storage
    dim_order record_stream
    """
)

# Common tensor methods besides those below (``TENSOR_METHODS`` has them all).
_TENSOR_OPS: Final = _words(
    """
    add add_ sub sub_ mul mul_ div div_ pow pow_ matmul mm bmm addmm baddbmm addcmul
    addcmul_ addcdiv addcdiv_ lerp lerp_ neg neg_ abs abs_ sqrt sqrt_ rsqrt exp exp_
    log log_ sigmoid sigmoid_ tanh tanh_ relu relu_ softmax log_softmax clamp clamp_
    clip clip_ sign floor ceil round trunc reciprocal maximum minimum where masked_fill
    masked_fill_ masked_scatter_ index_select index_add_ index_copy_ index_fill_
    index_put_ gather scatter scatter_ scatter_add scatter_add_ nonzero masked_select
    unique unique_consecutive view view_as reshape reshape_as permute transpose
    transpose_ t t_ contiguous expand expand_as repeat repeat_interleave unsqueeze
    unsqueeze_ squeeze squeeze_ flatten unflatten narrow select unfold roll flip chunk
    split unbind tensor_split split_with_sizes cumsum cumprod topk sort argsort kthvalue
    copy_ fill_ zero_ normal_ uniform_ bernoulli_ random_ exponential_ clone detach
    detach_ to cuda cpu float double half bfloat16 long int short bool type type_as
    new_zeros new_ones new_empty new_full new_tensor requires_grad_ retain_grad
    pin_memory share_memory_ backward item tolist numpy size dim numel stride
    data_ptr untyped_storage record_stream
    """
)

# Full reductions: called with the tensor alone they give a 0-d tensor.
REDUCTIONS: Final = _words(
    """
    sum mean max min argmax argmin norm prod std var all any amax amin median logsumexp
    count_nonzero dot vdot nansum nanmean
    """
)
BOOLEAN_OPS: Final = _words(
    """
    eq ne gt lt ge le greater less greater_equal less_equal not_equal isnan isinf
    isfinite isneginf isposinf isreal logical_and logical_or logical_not logical_xor
    isin isclose signbit any all bool
    """
)
# Methods after which a 0-d tensor stays 0-d.
SHAPE_PRESERVING: Final = _words(
    """
    float double half bfloat16 long int short bool to cuda cpu clone detach contiguous
    abs neg sqrt rsqrt exp log sigmoid tanh relu clamp clip sign reciprocal floor ceil
    round trunc type_as squeeze
    """
)
# torch functions that return a tuple/list of tensors.
TUPLE_FUNCTIONS: Final = _words(
    """
    torch.chunk torch.split torch.unbind torch.tensor_split torch.meshgrid
    torch.broadcast_tensors torch.autograd.grad torch.std_mean torch.var_mean
    """
)
TUPLE_FUNCTIONS_SHORT: Final = frozenset(
    {"chunk", "split", "unbind", "tensor_split", "split_with_sizes"}
)

# Common tensor methods: a call of one on a value the project analysis does not track
# (``h = x + y; h.add_(1)``) is almost always PyTorch's, and is checked where it is
# made rather than counted as a call not followed.
TENSOR_METHODS: Final = (
    _TENSOR_OPS
    | TENSOR_PY_METHODS
    | REDUCTIONS
    | BOOLEAN_OPS
    | SHAPE_PRESERVING
    | TUPLE_FUNCTIONS_SHORT
)

# torch.<name>(...) that creates a tensor on the default device (CPU) unless device=.
FACTORIES: Final = _words(
    """
    tensor as_tensor zeros ones empty full rand randn randint randperm arange range
    linspace logspace eye empty_strided tril_indices triu_indices scalar_tensor
    from_numpy frombuffer asarray
    """
)
CPU_FACTORIES: Final = frozenset({"torch.from_numpy", "torch.frombuffer"})

# torch.* callables that are not tensor operations.
NON_TENSOR_FUNCTIONS: Final = _words(
    """
    is_tensor is_storage is_floating_point is_complex is_nonzero numel equal allclose
    manual_seed seed initial_seed get_default_dtype set_default_dtype set_default_device
    get_default_device set_grad_enabled no_grad enable_grad inference_mode autocast
    compile device dtype Size finfo iinfo set_rng_state use_deterministic_algorithms
    are_deterministic_algorithms_enabled is_grad_enabled is_inference_mode_enabled
    set_printoptions save load set_float32_matmul_precision get_float32_matmul_precision
    is_autocast_enabled set_num_threads get_num_threads Generator Stream Event
    """
)
# Sub-namespaces of torch whose functions return tensors.
TENSOR_NAMESPACES: Final = (
    "torch.nn.functional.",
    "torch.linalg.",
    "torch.fft.",
    "torch.special.",
)
NON_TENSOR_NAMESPACES: Final = (
    "torch.cuda.",
    "torch.backends.",
    "torch.distributed.",
    "torch.utils.",
    "torch.autograd.",
    "torch.compiler.",
    "torch.jit.",
    "torch.profiler.",
    "torch.fx.",
    "torch._dynamo.",
    "torch.library.",
    "torch.hub.",
    "torch.onnx.",
    "torch.testing.",
    "torch.multiprocessing.",
    "torch.optim.",
    "torch.amp.",
    "torch.export.",
    "torch.accelerator.",
    "torch.random.",
)

PYTHON_BUILTINS: Final = _words(
    """
    len int float bool str repr isinstance issubclass hasattr callable id hash type
    format ord chr print dict open input divmod pow bin hex oct all any
    """
)

# Builtins whose call is never None, and generic types whose values are not None
# (``Tuple[int, ...]``, unlike ``Optional[...]``): for a parameter's None-ness.
NEVER_NONE_BUILTINS: Final = _words(
    """
    int float complex str bytes bool tuple list dict set frozenset range len sorted
    zip enumerate sum abs round isinstance
    """
)
NEVER_NONE_GENERICS: Final = _words(
    """
    Tuple tuple List list Dict dict Set set FrozenSet frozenset Sequence
    MutableSequence Mapping MutableMapping Iterable Iterator Callable Type type Deque
    deque DefaultDict defaultdict OrderedDict Counter
    """
)


# classes of nn.Module outside ``torch.nn``: TorchScript's modules
_SCRIPT_MODULES = frozenset(
    {
        "torch.jit.ScriptModule",
        "torch.jit.RecursiveScriptModule",
        "torch.jit._script.ScriptModule",
        "torch.jit._script.RecursiveScriptModule",
    }
)


def is_module_class(q: str) -> bool:
    """``torch.nn.Linear``, ``torch.nn.Module``, DDP, ``torch.jit.ScriptModule``
    ...: classes of nn.Module."""
    if q in _SCRIPT_MODULES:
        return True
    if q in ("torch.nn.Parameter", "torch.nn.parameter.Parameter"):
        return False
    if not q.startswith("torch.nn."):
        return False
    last = q.rsplit(".", 1)[-1]
    parts = q.split(".")
    if parts[2] in ("functional", "init", "utils"):
        return False
    return last[:1].isupper()


def is_object_class(q: str) -> bool:
    """Optimizers, LR schedulers and similar: instances graphlint tracks by class."""
    last = q.rsplit(".", 1)[-1]
    return q.startswith("torch.optim.") and last[:1].isupper()


def returns_tensor(q: str) -> bool:
    """Whether calling the torch function ``q`` returns a tensor."""
    if q.startswith(TENSOR_NAMESPACES) or q == "torch.nn.utils.clip_grad_norm_":
        return True
    if q.startswith("torch.cuda.") and q.endswith("Tensor"):
        return True
    if q.startswith(NON_TENSOR_NAMESPACES):
        return False
    if not q.startswith("torch."):
        return False
    rest = q[len("torch.") :]
    if "." in rest:
        return False
    if rest.endswith("Tensor"):
        return True
    return (
        rest[:1].islower()
        and rest not in NON_TENSOR_FUNCTIONS
        and not rest.startswith(("is_", "set_", "get_"))
    )


# the markers graphlint itself provides (``capture-markers`` adds more)
BUILTIN_MARKERS: Final = frozenset({"graphlint.capture_region"})

# torch.compile's CUDA-graph modes and the Inductor option that turns them on
CUDAGRAPH_COMPILE_MODES: Final = frozenset({"reduce-overhead", "max-autotune"})
CUDAGRAPHS_OPTION: Final = "triton.cudagraphs"
CUDAGRAPHS_SWITCH: Final = "torch._inductor.config.triton.cudagraphs"


def cudagraph_keyword(keyword: str, value: str | bool) -> str | None:
    """The region label of a ``torch.compile`` keyword argument that makes it
    capture CUDA graphs: ``backend="cudagraphs"``, a CUDA-graph ``mode``, or
    ``options`` with ``triton.cudagraphs`` (``value`` True: the option is on)."""
    if keyword == "backend" and value == "cudagraphs":
        return 'torch.compile(backend="cudagraphs")'
    if keyword == "mode" and value in CUDAGRAPH_COMPILE_MODES:
        return f'torch.compile(mode="{value}")'
    if keyword == "options" and value is True:
        return 'torch.compile(options={"triton.cudagraphs": True})'
    return None
