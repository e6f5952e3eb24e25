"""What graphlint knows about PyTorch's API surface: names and what they return."""

from __future__ import annotations

from typing import Final


def _words(text: str) -> frozenset[str]:
    """A set of names written as whitespace-separated words."""
    return frozenset(text.split())


TENSOR_TYPES: Final = frozenset(
    {"torch.Tensor", "torch.nn.Parameter", "torch.nn.parameter.Parameter"}
)

# ``with torch.cuda.stream(s):``: a block on a side stream (a warm-up, before a capture)
STREAM_CONTEXTS: Final = frozenset({"torch.cuda.stream", "torch.cuda.StreamContext"})
# a stream entered as a context manager (``with s:``) is the current stream in the
# block, as under ``torch.cuda.stream(s)`` (measured for new streams:
# ``ground-truth/stream_object_probe.py``), except the stream in use already: one
# these return, entered, changes nothing (measured: still the default stream)
# classes a parameter annotated with holds an object of (by the class the values name)
ANNOTATED_OBJECTS: Final[dict[str, str]] = {
    "torch.cuda.Stream": "torch.cuda.Stream",
    "torch.cuda.streams.Stream": "torch.cuda.Stream",
    "torch.Stream": "torch.cuda.Stream",
    "torch.accelerator.Graph": "torch.accelerator.Graph",
    "torch.accelerator.graphs.Graph": "torch.accelerator.Graph",
}
CURRENT_STREAMS: Final = frozenset(
    {"torch.cuda.current_stream", "torch.cuda.default_stream"}
)

# Instances of these classes (besides torch.nn modules and torch.optim optimizers).
OBJECT_FACTORIES: Final[dict[str, str]] = {
    "torch.cuda.Stream": "torch.cuda.Stream",
    "torch.cuda.streams.Stream": "torch.cuda.Stream",
    "torch.cuda.current_stream": "torch.cuda.Stream",
    "torch.cuda.default_stream": "torch.cuda.Stream",
    "torch.Stream": "torch.cuda.Stream",
    "torch.cuda.Event": "torch.cuda.Event",
    "torch.Event": "torch.cuda.Event",
    "torch.cuda.CUDAGraph": "torch.cuda.CUDAGraph",
    "torch.accelerator.Graph": "torch.accelerator.Graph",
    "torch.accelerator.graphs.Graph": "torch.accelerator.Graph",
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

# ``nn.Module`` methods that make a new generator on every call
MODULE_ITERATORS: Final = frozenset(
    {
        "parameters",
        "buffers",
        "children",
        "modules",
        "named_parameters",
        "named_buffers",
        "named_children",
        "named_modules",
    }
)

# the keys of an optimizer's ``param_groups`` entries that its captured ``step()``
# reads as Python numbers: baked into the graph (GL407)
HYPERPARAMETERS: Final = frozenset({"lr", "momentum", "weight_decay", "betas"})

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


# -- what a capture needs a warm-up for (GL703) --------------------------------------
# Measured by ``ground-truth/warmup_probe.py`` (an H100, PyTorch 2.11: each op captured
# in a fresh process with no warm-up before it): cuBLAS, cuDNN and NCCL fail the
# capture when their handle or communicator does not exist yet; a lazy module's first
# call and a stateful optimizer's first step capture, but record their one-time set-up
# in the graph, so each replay initialises the parameters or resets the state again.
# Fills, copies, views, elementwise and reduction ops, softmax, cross-entropy,
# ``LayerNorm``, ``Embedding``, indexing, random draws, ``backward()`` of those, a
# plain SGD step and ``clip_grad_norm_`` captured without one and replayed right.
CUBLAS: Final = "cuBLAS creates its handle on first use"
CUDNN: Final = "cuDNN creates its handle on first use"
NCCL: Final = "NCCL creates its communicator at the first collective"
LAZY: Final = "a lazy module creates and initialises its parameters at its first call"
OPTIMIZER_STATE: Final = "the first step creates the optimizer's state"
# what happens when the set-up is captured: it fails, or the graph records it and
# every replay does it again
WARMUP_FAILS: Final = frozenset({CUBLAS, CUDNN, NCCL})

_MATMUL: Final = ("a matmul", CUBLAS)
_CONV: Final = ("a convolution", CUDNN)
_COLLECTIVE: Final = ("an NCCL collective", NCCL)

# torch functions, by qualified name -> (what it is, why it needs a warm-up)
WARMUP_FUNCTIONS: Final[dict[str, tuple[str, str]]] = {
    **{
        f"torch.{name}": _MATMUL
        for name in _words(
            """
            matmul mm bmm addmm addbmm baddbmm mv addmv dot vdot inner tensordot
            einsum chain_matmul _scaled_mm linalg.matmul linalg.multi_dot
            nn.functional.linear nn.functional.bilinear
            """
        )
    },
    "torch.nn.functional.multi_head_attention_forward": ("attention", CUBLAS),
    "torch.nn.functional.scaled_dot_product_attention": ("attention", CUDNN),
    **{
        f"torch.{prefix}{name}": _CONV
        for prefix in ("", "nn.functional.")
        for name in _words(
            "conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d"
        )
    },
    **{
        f"torch.{name}": ("a batch norm", CUDNN)
        for name in _words(
            "batch_norm instance_norm nn.functional.batch_norm "
            "nn.functional.instance_norm"
        )
    },
    **{
        f"torch.distributed.{name}": _COLLECTIVE
        for name in _words(
            """
            all_reduce all_gather all_gather_into_tensor all_gather_object
            reduce_scatter reduce_scatter_tensor broadcast broadcast_object_list
            reduce all_to_all all_to_all_single send recv isend irecv barrier gather
            scatter batch_isend_irecv _all_gather_base _reduce_scatter_base
            """
        )
    },
}
# namespaces whose every function needs one
WARMUP_NAMESPACES: Final[dict[str, tuple[str, str]]] = {
    "torch.distributed.nn.": _COLLECTIVE,
    "torch.cuda.nccl.": _COLLECTIVE,
}
# tensor methods -> (what it is, why)
WARMUP_METHODS: Final[dict[str, tuple[str, str]]] = {
    name: _MATMUL
    for name in _words(
        """
        matmul mm bmm addmm addmm_ addbmm addbmm_ baddbmm baddbmm_ mv addmv addmv_
        dot vdot inner __matmul__ __rmatmul__
        """
    )
}
# torch.nn modules, by class name -> why calling one needs a warm-up
WARMUP_MODULES: Final[dict[str, str]] = {
    **dict.fromkeys(
        _words(
            """
            Linear Bilinear MultiheadAttention Transformer TransformerEncoder
            TransformerDecoder TransformerEncoderLayer TransformerDecoderLayer
            RNNCell LSTMCell GRUCell
            """
        ),
        CUBLAS,
    ),
    **dict.fromkeys(
        _words(
            """
            Conv1d Conv2d Conv3d ConvTranspose1d ConvTranspose2d ConvTranspose3d
            BatchNorm1d BatchNorm2d BatchNorm3d SyncBatchNorm InstanceNorm1d
            InstanceNorm2d InstanceNorm3d RNN LSTM GRU
            """
        ),
        CUDNN,
    ),
}

# Known not to need one: tensor methods (and the torch functions of the same name)
# that only launch PyTorch's own kernels, or run on the host.
NO_WARMUP_METHODS: Final = (
    (_TENSOR_OPS | REDUCTIONS | BOOLEAN_OPS | SHAPE_PRESERVING | TUPLE_FUNCTIONS_SHORT)
    - frozenset(WARMUP_METHODS)
) | TENSOR_PY_METHODS
NO_WARMUP_FUNCTIONS: Final = (
    NO_WARMUP_METHODS
    | FACTORIES
    | NON_TENSOR_FUNCTIONS
    | _words(
        """
        Tensor FloatTensor DoubleTensor HalfTensor BFloat16Tensor LongTensor IntTensor
        ShortTensor CharTensor ByteTensor BoolTensor
        cat concat concatenate stack hstack vstack zeros_like ones_like empty_like
        full_like rand_like randn_like randint_like softmax log_softmax relu sigmoid
        tanh exp log clamp where sigmoid_ relu_ nn.functional.relu nn.functional.relu_
        nn.functional.gelu nn.functional.silu nn.functional.sigmoid nn.functional.tanh
        nn.functional.softmax nn.functional.log_softmax nn.functional.dropout
        nn.functional.dropout1d nn.functional.dropout2d nn.functional.dropout3d
        nn.functional.cross_entropy nn.functional.nll_loss nn.functional.mse_loss
        nn.functional.l1_loss nn.functional.smooth_l1_loss nn.functional.layer_norm
        nn.functional.embedding nn.functional.one_hot nn.functional.pad
        nn.functional.leaky_relu nn.functional.elu nn.functional.softplus
        nn.functional.hardtanh nn.functional.relu6 nn.functional.mish
        nn.utils.clip_grad_norm_ nn.utils.clip_grad_value_ autograd.backward
        autograd.grad linalg.vector_norm
        """
    )
)
# torch namespaces known not to need one: host-side state and queries
NO_WARMUP_NAMESPACES: Final = ("torch.cuda.", "torch.backends.", "torch._foreach_")
# classes of custom autograd functions: ``Fn.apply(...)`` runs ``Fn.forward``, and
# ``Fn.backward`` when the backward pass runs
AUTOGRAD_FUNCTIONS: Final = frozenset(
    {"torch.autograd.Function", "torch.autograd.function.Function"}
)
# torch.nn modules (class names) known not to need one
NO_WARMUP_MODULES: Final = _words(
    """
    LayerNorm Embedding Dropout Dropout1d Dropout2d Dropout3d AlphaDropout ReLU ReLU6
    GELU SiLU Sigmoid Tanh Softmax LogSoftmax Softplus ELU LeakyReLU Hardtanh Mish
    Identity Flatten Unflatten CrossEntropyLoss NLLLoss MSELoss L1Loss SmoothL1Loss
    """
)
# classes whose methods only work on the host, or enqueue no kernel of a library
NO_WARMUP_OBJECTS: Final = frozenset(
    {
        "torch.cuda.Stream",
        "torch.cuda.Event",
        "torch.cuda.CUDAGraph",
        "torch.accelerator.Graph",
        "torch.Generator",
        "torch.device",
        "logging.Logger",
    }
)
# methods of modules that only change or read the module on the host
NO_WARMUP_MODULE_METHODS: Final = MODULE_SELF_METHODS | _words(
    """
    zero_grad parameters named_parameters buffers named_buffers modules
    named_modules children named_children state_dict
    """
)
