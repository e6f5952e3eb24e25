"""The data graphlint produces: diagnostics and the enums that qualify them."""

from __future__ import annotations

import enum
from collections.abc import Container
from dataclasses import dataclass, field, replace

from graphlint.columns import utf16


class Severity(enum.IntEnum):
    """LSP severities: the numbers are the protocol's."""

    ERROR = 1
    WARNING = 2
    INFORMATION = 3
    HINT = 4


class Confidence(str, enum.Enum):
    """How sure a finding is (pylint's levels, trimmed)."""

    HIGH = "high"  # the construct is what it looks like (a resolved torch API)
    MEDIUM = "medium"  # rests on a guess: an inferred tensor, a conditional region


class Outcome(str, enum.Enum):
    """What a real capture does with the hazard (see ../shared/ground-truth)."""

    CAPTURE_ERROR = "capture-error"  # the capture raises
    SILENT_WRONG = "silent-wrong"  # capture and replay run, the numbers are wrong
    PERF = "perf"  # correct but slow, split or skipped graphs
    VERSION_DEPENDENT = "version-dependent"  # fails on some PyTorch versions only
    TOOL = "tool"  # graphlint could not analyse the file


class Applicability(str, enum.Enum):
    """Whether a fix may be applied without a look (ruff's applicability)."""

    SAFE = "safe"  # the program means the same on every path, and capture now works
    UNSAFE = "unsafe"  # it changes behaviour in a way the user must check


class RegionKind(str, enum.Enum):
    """How code comes to run under capture; a hazard's consequence depends on it."""

    MANUAL = (
        "torch.cuda.graph"  # with torch.cuda.graph(...) / capture_begin ... capture_end
    )
    GRAPHED = "make_graphed_callables"
    COMPILE = "torch.compile"  # a CUDA-graph mode of torch.compile
    MARKED = "marked"  # a region the user marked

    @property
    def is_compile(self) -> bool:
        return self is RegionKind.COMPILE


def position(line: int, cell: int | None, col: int | None = None) -> str:
    """``line:col`` as the text output writes a place in a file; in a notebook
    ``cell 3:2:5`` (ruff's way: the cell, counting every cell from 1, then the line
    in it). Without ``col``, ``line``."""
    where = f"cell {cell}:{line}" if cell is not None else str(line)
    return where + (f":{col + 1}" if col is not None else "")


def place(path: str, line: int, cell: int | None, col: int | None = None) -> str:
    """``path:line:col``, or ``path:cell 3:2:5`` in a notebook (``position``)."""
    return f"{path}:{position(line, cell, col)}"


def cell_line(line: int, cell: int | None) -> str:
    """``line 12``; in a notebook, ``cell 3, line 2``."""
    return f"cell {cell}, line {line}" if cell is not None else f"line {line}"


@dataclass(frozen=True, slots=True)
class Hop:
    """One call on the way from a capture region to the code it runs."""

    path: str  # the file of the call
    line: int  # 1-based
    col: int  # 0-based
    function: str  # what it calls: "step()", "Block.forward()"
    # a hand-off, not a call: where the code a capture runs was passed to the code
    # that captures it (``function`` is that call: "Wrapper(step)", "capture(fn)")
    handoff: bool = False
    cell: int | None = None  # in a notebook: the cell, and ``line`` is in it

    @property
    def shown(self) -> str:
        """As a chain shows it: ``step()``, or ``Wrapper(step) at train.py:12``."""
        if self.handoff:
            return f"{self.function} at {place(self.path, self.line, self.cell)}"
        return self.function

    def note(self, first: bool) -> str:
        """What the hop's location is, for a related location (LSP, SARIF)."""
        if self.handoff:
            return f"hands the captured code over: {self.function}"
        where = " inside the capture region" if first else ""
        return f"calls {self.function}{where}"


@dataclass(frozen=True, slots=True)
class Settled:
    """A parameter of a function that regions reach, to which every call under
    capture passes None (``none``) or else a value that cannot be None (with its
    truth, where every call passes the same constant flag); it holds
    what was passed before the line ``until`` (0: in the whole function), where the
    function may rebind it."""

    name: str
    none: bool
    until: int = 0
    # every call passes a constant True or False (``fused=True``), where known
    truth: bool | None = None

    def holds(self, line: int) -> bool:
        return not self.until or line < self.until


# which region: its file, line, kind and label (``RegionRef.key``)
RegionKey = tuple[str | None, int, RegionKind, str]


@dataclass(frozen=True, slots=True)
class RegionRef:
    """A capture region, as everything past one file's analysis names it.

    - Found in a checked file (``FileResult.regions``, the survey): where it
      captures (``path`` set) and what (``targets``), how sure graphlint is that
      it captures (a compile wrapper's setting that only some of its values give:
      medium).
    - The one a diagnostic sits in (``path`` None: the diagnostic's file).
    - How a function in another place comes to run under it (the project pass):
      its ``via`` ends at that function, and the facts the calls there settle
      travel with it to the function's analysis; ``confidence`` is then how sure
      the reach is (a hand-off inferred from an attribute's name: medium).
    """

    kind: RegionKind
    line: int  # 1-based line where the region starts
    label: str  # e.g. "torch.cuda.graph", "torch.compile(mode='reduce-overhead')"
    path: str | None = None  # the region's file, when it is not the diagnostic's
    via: tuple[Hop, ...] = ()  # the calls from the region to the diagnostic's code
    cell: int | None = None  # in a notebook: the cell, and ``line`` is in it
    confidence: Confidence = Confidence.HIGH
    # a reached function's parameters that the calls under capture settle as None
    # or not None, and those that every such call passes a device tensor
    settled: tuple[Settled, ...] = ()
    tensors: tuple[str, ...] = ()
    # the functions it captures, when it captures functions: defined in the file
    # ("Model.forward"), or elsewhere, as written at the capture ("model")
    targets: tuple[str, ...] = ()

    @property
    def key(self) -> RegionKey:
        """Which region it is, whatever it is found to capture."""
        return (self.path, self.line, self.kind, self.label)

    @property
    def found(self) -> tuple[RegionKey, tuple[str, ...], int | None]:
        """Which region it is and what it is found to capture, however sure: one
        place compiled twice, surely and maybe, is found once."""
        return (self.key, self.targets, self.cell)

    def reaching(self, via: tuple[Hop, ...] = ()) -> RegionRef:
        """The region as a diagnostic of code it reaches through ``via`` names it."""
        return replace(self, via=via, targets=())

    @property
    def shown(self) -> RegionRef:
        """As a diagnostic shows it: without the facts a reached function's
        analysis was given."""
        return replace(self, confidence=Confidence.HIGH, settled=(), tensors=())

    @property
    def chain(self) -> str:
        """``reached from train.py:42 via step() -> Block.forward()``."""
        calls = [hop for hop in self.via if not hop.handoff]
        if not calls:
            return ""
        first = calls[0]
        hops = " -> ".join(hop.shown for hop in self.via)
        return f"reached from {place(first.path, first.line, first.cell)} via {hops}"


@dataclass(frozen=True, slots=True)
class Related:
    """Another place in the diagnostic's file that is part of its evidence."""

    line: int  # 1-based
    col: int  # 0-based
    message: str
    cell: int | None = None  # in a notebook: the cell, and ``line`` is in it


@dataclass(frozen=True, slots=True)
class Edit:
    """Text of the diagnostic's file to replace, part of its fix."""

    line: int  # 1-based
    col: int  # 0-based
    end_line: int
    end_col: int
    text: str
    # the text the span held when the file was checked: the fixer applies the edit
    # only where the file still holds it ("": not known)
    old: str = ""


@dataclass(frozen=True, slots=True)
class Wide:
    """A line that holds characters outside the Basic Multilingual Plane, which
    UTF-16 counts as two code units and graphlint's columns as one
    (``graphlint.columns``)."""

    path: str
    line: int  # 1-based
    cols: tuple[int, ...]  # 0-based code-point columns of those characters
    cell: int | None = None  # in a notebook: the cell, and ``line`` is in it


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One finding. Lines are 1-based, columns 0-based code points (LibCST's
    convention): each output converts them to what its consumer counts."""

    path: str
    code: str
    name: str  # the rule's slug, e.g. "tensor-to-host"
    message: str
    line: int
    col: int
    end_line: int
    end_col: int
    severity: Severity
    confidence: Confidence
    outcome: Outcome
    region: RegionRef | None = None
    fix_hint: str | None = None
    related: tuple[Related, ...] = ()
    edits: tuple[Edit, ...] = ()  # the fix, where it is a mechanical edit
    applicability: Applicability | None = None  # of ``edits``; None without them
    # a digest of the flagged code (``columns.anchor``), which SARIF fingerprints
    # are made of; "" where the file's text was not at hand
    anchor: str = ""
    # the lines its positions are on (its own, its edits', its related locations',
    # the calls of its chain) that hold characters outside the BMP
    wide: tuple[Wide, ...] = ()
    # in a notebook (``graphlint.notebook``): the cell (every cell counted from 1),
    # and ``line``, ``end_line`` are the lines in it; None elsewhere
    cell: int | None = None

    @property
    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.path, self.line, self.col, self.code)

    def utf16(self, path: str, line: int, col: int, cell: int | None = None) -> int:
        """The column ``col`` of ``line`` in ``path`` (one of the places this
        diagnostic names; in a notebook, of the ``cell``) in UTF-16 code units, as
        LSP and SARIF count."""
        for entry in self.wide:
            if entry.line == line and entry.path == path and entry.cell == cell:
                return utf16(col, entry.cols)
        return col

    def describe(self) -> str:
        """The message with its region, as every output gives it: ``... [torch.cuda.
        graph region at train.py:27, reached from train.py:29 via step()]``, and
        `` (inferred)`` when the evidence is partial (medium confidence)."""
        text = self.message
        region = self.region
        if region is not None and region.via:
            at = place(str(region.path), region.line, region.cell)
            where = f"{at}, {region.chain}"
            text += f" [{region.label} region at {where}]"
        elif region is not None:
            text += f" [{region.label} region, {cell_line(region.line, region.cell)}]"
        if self.confidence is Confidence.MEDIUM:
            text += " (inferred)"
        return text


@dataclass(frozen=True, slots=True)
class Suppression:
    """A suppression comment: the line it covers, the column it starts at, and the
    codes and prefixes it names that graphlint has (None: every code); one that
    covers the whole file (``# graphlint: ignore-file``) is written on ``line``."""

    line: int  # 1-based
    col: int  # 0-based
    codes: tuple[str, ...] | None
    whole_file: bool = False


@dataclass(frozen=True, slots=True)
class WarmupVerdict:
    """What a capture's code needs a warm-up for (GL703), as far as one file shows,
    for the project pass to settle. Pass one gives one for each capture it reports
    whose code calls into code it cannot see from there, or whose callers are
    elsewhere (``function`` empty, ``line`` the capture's); the project pass gives
    one for each function a capture reaches (``function`` its path, ``line`` its
    first)."""

    function: str
    line: int
    need: str = ""  # the first op that needs a warm-up, as written: "x @ w"
    need_line: int = 0
    need_what: str = ""  # "a matmul"
    need_why: str = ""  # "cuBLAS creates its handle on first use"
    unknown: bool = False  # it runs code that could not be checked
    # calls left to the project pass, which follows them: (line, callee as written)
    deferred: tuple[tuple[int, str], ...] = ()
    # the functions of this file on the ways to the capture it shows, with nothing
    # run before them that warms it up, which other files may call
    # ("Runner.capture"): whether those callers warm it up decides the finding
    callers: tuple[str, ...] = ()


# How ``Entry.tensors`` marks an argument slot beside a device tensor's: a
# container of device tensors, a tensor made on the host, an ``nn.Module``
TENSORS_MARK, HOST_MARK, MODULE_MARK = "*", "!", "~"
_SHORT = 60  # characters of a computed callee's source that a summary keeps


def shorten(text: str) -> str:
    """``text`` on one line, at most ``_SHORT`` characters."""
    line = " ".join(text.split())
    return line if len(line) <= _SHORT else line[: _SHORT - 3] + "..."


@dataclass(frozen=True)
class Entry:
    """A call made inside a capture region, as pass one of the engine found it:
    what the project pass follows."""

    path: str  # the file, as displayed
    module: str  # its dotted module name
    function: str | None  # path of the enclosing function ("Cls.method"), if any
    line: int
    col: int
    callee: str  # dotted, as written
    region: RegionRef  # the region it is made in (no ``targets``)
    # the callee is an expression, not a dotted name: ``callee`` is its source and
    # the call is recorded as not followed
    computed: bool = False
    # the arguments that are device tensors: positions ("0", "1") and keywords
    tensors: tuple[str, ...] = ()


@dataclass(frozen=True)
class CompileSite:
    """A function handed to a wrapper imported from elsewhere.

    ``compiler`` is the wrapper's qualified name; ``called``: the wrapper is called
    first and its result compiles (``get_compile_fn(backend)(fn)``), with the literal
    string ``arguments`` of that call (by parameter position, or keyword); else the
    wrapper compiles the function itself (``compile_fn(fn)``, ``@compile_fn``).
    ``target`` names the function as the code at ``function`` (a function path, or
    None for module level) sees it.
    """

    path: str
    module: str
    function: str | None
    line: int
    col: int
    compiler: str
    called: bool
    target: str
    positional: tuple[str | None, ...] = ()
    keywords: tuple[tuple[str, str | None], ...] = ()


@dataclass(frozen=True, slots=True)
class FileResult:
    """Everything graphlint says about one file."""

    path: str
    diagnostics: tuple[Diagnostic, ...]
    internal_error: bool = False  # a bug in graphlint stopped the analysis of this file
    # for the project pass: calls made inside regions, functions handed to compile
    # wrappers defined elsewhere (which it asks whether they capture), and
    # functions that are regions
    entries: tuple[Entry, ...] = ()
    compiles: tuple[CompileSite, ...] = ()
    roots: tuple[str, ...] = ()
    regions: tuple[RegionRef, ...] = ()  # found by pass one; () for a reached file
    # its suppression comments, and the (line, code) of each finding one dropped:
    # together, after every pass, they tell which suppressions are unused (GL008)
    suppressions: tuple[Suppression, ...] = ()
    used: tuple[tuple[int, str], ...] = ()
    warmups: tuple[WarmupVerdict, ...] = ()  # for GL703, settled by the project pass
    # project callables (qualified) its code calls outside regions with an optimizer
    # whose step a graph captured: GL407 asks whether they set its hyper-parameters
    asks: tuple[str, ...] = ()
    # the lines of the file that hold characters outside the BMP, with their columns
    # (``columns.astral_lines``): the project pass gives each diagnostic the entries
    # of the places it names (``Diagnostic.wide``)
    wide: tuple[tuple[int, tuple[int, ...]], ...] = ()


class Reason(str, enum.Enum):
    """Why a call made under capture was not followed into the code it runs."""

    PARAMETER = "parameter"  # the callee comes in as an argument
    UNTRACKED = "untracked value"  # a local, attribute or call result not modelled
    OUTSIDE = "outside the checked files"  # a module not under the source roots
    UNSUMMARISED = "not summarised"  # its module could not be read or parsed (GL0xx)
    UNRESOLVED = "unresolved name"  # bound nowhere the summaries see
    ATTRIBUTE = "dynamic attribute"  # a class or module without that attribute
    COMPUTED = "computed callee"  # ``self.layers[i](x)``, ``make()(x)``
    NOT_CALLABLE = "not callable"  # a project value with no code to run when called
    BUDGET = "budget exhausted"  # resolution took over ``resolve.BUDGET`` steps
    EAGER = "eager function"  # ``eager-functions`` says it never runs under capture


@dataclass(frozen=True, slots=True)
class Unfollowed:
    """A call in a region or in code a region reaches that was not followed."""

    path: str
    line: int  # 1-based
    col: int  # 0-based
    callee: str  # as written
    reason: Reason
    detail: str  # where resolution stopped, in words
    cell: int | None = None  # in a notebook: the cell, and ``line`` is in it

    @property
    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.path, self.line, self.col, self.callee)


@dataclass(frozen=True, slots=True)
class ReachedFunction:
    """A project function that runs under capture because a region calls it."""

    path: str
    line: int
    function: str  # "Block.forward"
    excluded: bool = False  # in a file the configuration excludes: not analysed
    region: bool = False  # a region itself (listed with its own reach)
    cell: int | None = None  # in a notebook: the cell, and ``line`` is in it


@dataclass(frozen=True, slots=True)
class RegionReach:
    """A region and the functions its calls reach, in every file."""

    region: RegionRef
    reached: tuple[ReachedFunction, ...]
    # the hand-offs followed: where code it runs was passed to the code that
    # captures it (``Wrapper(step)`` elsewhere in the project)
    handoffs: tuple[Hop, ...] = ()


@dataclass(frozen=True, slots=True)
class Survey:
    """What the analysis saw: the regions, what they reach, the calls not followed.
    Formatters show it; nothing here is a finding."""

    regions: tuple[RegionReach, ...] = ()
    unfollowed: tuple[Unfollowed, ...] = ()

    def about(self, paths: Container[str]) -> Survey:
        """What concerns these files: the regions in them or reaching into them, and
        the calls not followed in them."""
        return Survey(
            tuple(
                r
                for r in self.regions
                if r.region.path in paths or any(f.path in paths for f in r.reached)
            ),
            tuple(c for c in self.unfollowed if c.path in paths),
        )


@dataclass(frozen=True)
class Checked:
    """What checking a project gives: a result per file, and what the analysis saw."""

    results: list[FileResult]
    survey: Survey = field(default_factory=Survey)

    def about(self, paths: Container[str]) -> Checked:
        """What concerns these files: their results, the diagnostics elsewhere whose
        region is in one of them, graphlint's own failures, and the survey's part."""
        results = []
        for result in self.results:
            if result.path in paths or result.internal_error:
                results.append(result)
                continue
            theirs = tuple(
                d
                for d in result.diagnostics
                if d.region is not None and d.region.path in paths
            )
            if theirs:
                results.append(replace(result, diagnostics=theirs))
        return Checked(results, self.survey.about(paths))
