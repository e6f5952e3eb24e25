"""Every code graphlint knows: its name and whether it is on by default.

What the command line, the configuration and the output need about codes, without
importing the rules (and LibCST with them): a run that finds nothing to analyse, or
takes every result from the cache, never imports them.
``python -m graphlint._dev sync-docs`` writes the table from the rule classes, and
CI checks that it is up to date.
"""

from __future__ import annotations

from typing import Final, NamedTuple


class Code(NamedTuple):
    name: str  # the rule's slug: "device-to-host-copy"
    default: bool  # on when the configuration selects nothing
    summary: str  # one sentence: the first line of the rule's docstring
    outcome: str  # what a real capture does with the hazard: "capture-error" ...
    # its severity outside torch.compile: "error", "warning", "information"
    # (torch.compile makes a hazard that fails capture a warning: a graph break)
    severity: str
    fix: str | None = None  # "safe" or "unsafe": what its mechanical fixes are


CODES: Final[dict[str, Code]] = {
    # codes:start
    "GL001": Code(
        "unparsable-file",
        True,
        "The file is not valid Python.",
        "tool",
        "error",
    ),
    "GL002": Code(
        "undecodable-file",
        True,
        "The file is not valid UTF-8 or has a bad coding declaration.",
        "tool",
        "error",
    ),
    "GL003": Code(
        "oversized-file",
        True,
        "The file is over the size limit and was not analysed.",
        "tool",
        "warning",
    ),
    "GL004": Code(
        "unreadable-file",
        True,
        "The path cannot be read as a regular file.",
        "tool",
        "error",
    ),
    "GL005": Code(
        "parser-limit-exceeded",
        True,
        "The file was too deep, large or slow for the limits, or crashed the parser.",
        "tool",
        "error",
    ),
    "GL006": Code(
        "empty-file",
        False,
        "The file is empty (an empty ``__init__.py`` is not reported).",
        "tool",
        "information",
    ),
    "GL007": Code(
        "unknown-suppression",
        True,
        "A suppression comment names a code that graphlint does not have.",
        "tool",
        "warning",
    ),
    "GL008": Code(
        "unused-suppression",
        False,
        "A suppression comment suppresses nothing.",
        "tool",
        "warning",
    ),
    "GL009": Code(
        "internal-error",
        True,
        "graphlint failed on this file: a bug to report.",
        "tool",
        "error",
    ),
    "GL101": Code(
        "device-to-host-copy",
        True,
        "A device tensor is copied to the host (`.item()`, `.cpu()`, `float(t)` ...).",
        "capture-error",
        "error",
    ),
    "GL102": Code(
        "tensor-formatted-on-host",
        True,
        "A tensor is turned into text, which reads its values on the host.",
        "capture-error",
        "error",
    ),
    "GL103": Code(
        "host-synchronization",
        True,
        "The host waits for the device: `torch.cuda.synchronize()`, `.query()` ...",
        "capture-error",
        "error",
        "unsafe",
    ),
    "GL104": Code(
        "tensor-compared-on-host",
        True,
        "Tensors compared into a Python value: `torch.equal`, `allclose`, `max(a, b)`.",
        "capture-error",
        "error",
    ),
    "GL105": Code(
        "dynamic-shape-op",
        True,
        "The output shape depends on the data (`nonzero`, `x[mask]`, `unique` ...).",
        "capture-error",
        "error",
    ),
    "GL106": Code(
        "scalar-tensor-index",
        True,
        "A tensor is indexed by a 0-d tensor (`x[t.argmax()]`), read on the host.",
        "capture-error",
        "error",
    ),
    "GL107": Code(
        "clip-grad-norm-error-if-nonfinite",
        True,
        "`clip_grad_norm_(..., error_if_nonfinite=True)` reads the norm on the host.",
        "capture-error",
        "error",
        "safe",
    ),
    "GL201": Code(
        "tensor-truth-value",
        True,
        "`if`/`while`/`assert`/`and`/`not`/`any()` on a tensor value.",
        "capture-error",
        "error",
        "unsafe",
    ),
    "GL202": Code(
        "tensor-loop-bound",
        True,
        "`range(int(t))`, `range(t.item())`: a loop count read from a tensor.",
        "capture-error",
        "error",
    ),
    "GL203": Code(
        "host-state-branch",
        True,
        "An `if`/`while`/ternary under capture tests host state that changes later.",
        "silent-wrong",
        "error",
    ),
    "GL301": Code(
        "static-input-rebound",
        True,
        "A tensor the graph reads is rebound (`x = new`) instead of copied into.",
        "silent-wrong",
        "error",
        "unsafe",
    ),
    "GL302": Code(
        "static-input-data-replaced",
        True,
        "`t.data = new` on a tensor the graph reads swaps its memory under the graph.",
        "silent-wrong",
        "error",
        "unsafe",
    ),
    "GL303": Code(
        "graph-output-kept",
        True,
        "A graph output is kept across replays or compiled calls without `.clone()`.",
        "silent-wrong",
        "error",
        "safe",
    ),
    "GL304": Code(
        "compiled-grads-accumulated",
        True,
        "A backward adds to the gradients that the last backward of a",
        "capture-error",
        "error",
    ),
    "GL401": Code(
        "host-io",
        True,
        "`print`, logging, file or network I/O under capture runs only at capture.",
        "silent-wrong",
        "error",
        "unsafe",
    ),
    "GL402": Code(
        "host-clock-or-random",
        True,
        "`time.time()`, `random.random()`, `np.random.*` under capture: one value.",
        "silent-wrong",
        "error",
    ),
    "GL403": Code(
        "host-iterator-advanced",
        True,
        "`next(it)` under capture takes one item, once; replays reuse it.",
        "silent-wrong",
        "error",
    ),
    "GL404": Code(
        "host-state-mutated",
        True,
        "`lst.append(x)`, `d[k] = v`, `n += 1` under capture run once, at capture.",
        "silent-wrong",
        "error",
    ),
    "GL405": Code(
        "cpu-tensor-math",
        True,
        "Arithmetic on CPU tensors under capture is not recorded: it runs once.",
        "silent-wrong",
        "error",
    ),
    "GL406": Code(
        "stale-host-value",
        True,
        "A Python number read under capture is baked in, though it changes later.",
        "silent-wrong",
        "error",
    ),
    "GL407": Code(
        "learning-rate-changed",
        True,
        'A scheduler or `group["lr"] = ...` changes a float lr a graph captured.',
        "silent-wrong",
        "error",
        "unsafe",
    ),
    "GL501": Code(
        "unregistered-generator",
        True,
        "A custom generator is used under capture but never registered with the graph.",
        "capture-error",
        "error",
        "unsafe",
    ),
    "GL502": Code(
        "rng-state-in-region",
        True,
        "Seeding the RNG under capture fails unless that seed is already set.",
        "capture-error",
        "warning",
    ),
    "GL503": Code(
        "rng-state-restored",
        True,
        "Restoring under capture a CUDA RNG state saved before it: replays ignore it.",
        "silent-wrong",
        "error",
    ),
    "GL601": Code(
        "pageable-host-to-device-copy",
        True,
        "Host data copied to the device under capture (`torch.tensor(..., device=)`).",
        "capture-error",
        "error",
    ),
    "GL602": Code(
        "list-index-on-device-tensor",
        True,
        "`x[[0, 2, 5]]` copies the index list from the host to the device.",
        "capture-error",
        "error",
    ),
    "GL603": Code(
        "tensor-serialized-in-region",
        True,
        "`torch.save`/`torch.load` under capture copy tensors between host and device.",
        "capture-error",
        "error",
    ),
    "GL701": Code(
        "optimizer-not-capturable",
        True,
        "`opt.step()` under capture for Adam & co. built without `capturable=True`.",
        "capture-error",
        "error",
        "safe",
    ),
    "GL702": Code(
        "grad-scaler-step-in-region",
        True,
        "`scaler.step(opt)` under capture reads `found_inf` on the host.",
        "capture-error",
        "error",
    ),
    "GL703": Code(
        "capture-without-warmup",
        True,
        "A `torch.cuda.graph` capture of code that needs a warm-up, none before it.",
        "capture-error",
        "warning",
        "unsafe",
    ),
    "GL704": Code(
        "capture-on-default-stream",
        True,
        "`g.capture_begin()` outside any `with torch.cuda.stream(...)` block.",
        "capture-error",
        "error",
    ),
    "GL705": Code(
        "ddp-warmup-too-short",
        True,
        "DDP needs 11 warm-up iterations before capture; fewer are visible here.",
        "capture-error",
        "error",
        "unsafe",
    ),
    "GL706": Code(
        "graphed-callables-under-autocast",
        True,
        "`make_graphed_callables` under `torch.autocast` without `cache_enabled=False`.",
        "capture-error",
        "error",
        "safe",
    ),
    "GL707": Code(
        "hooks-before-graphed-callables",
        True,
        "A module handed to `make_graphed_callables` already has hooks registered.",
        "capture-error",
        "error",
    ),
    "GL708": Code(
        "reentrant-checkpoint-in-graphed-callable",
        True,
        "`checkpoint(..., use_reentrant=True)` in code `make_graphed_callables` graphs.",
        "capture-error",
        "error",
        "unsafe",
    ),
    # codes:end
}


def default_enabled() -> frozenset[str]:
    """The codes on when the configuration selects nothing."""
    return frozenset(code for code, found in CODES.items() if found.default)


_BY_NAME = {found.name: code for code, found in CODES.items()}


def code_of(text: str) -> str:
    """A code, prefix or rule name as written (``gl101``, ``device-to-host-copy``):
    the code or prefix it stands for, in upper case."""
    word = text.strip()
    return _BY_NAME.get(word.lower(), word.upper())


def key(code: str) -> str | None:
    """``GL101-device-to-host-copy``: the code's doc page and fixture folder."""
    found = CODES.get(code)
    return f"{code}-{found.name}" if found is not None else None
