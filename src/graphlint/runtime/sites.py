"""What the runtime checker learns about each capture site, in a form that crosses
from the process that ran the script to the one that reports (JSON, no torch)."""

from __future__ import annotations

import enum
import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from graphlint.diagnostics import RegionKind

# How a run ended when the checker stopped it (the process is not clean after a
# failed capture): the lines after that point were never given a chance.
STOPPED = "it was stopped at a failed capture (the process is not clean after one)"


class Status(str, enum.Enum):
    """A site's status after a run."""

    CAPTURED = "captured"  # captured; replays matched eager wherever compared
    CAPTURE_ERROR = "capture-error"  # the capture raised (``Outcome.CAPTURE_ERROR``)
    SILENT_WRONG = "silent-wrong"  # a replay differed from eager (``Outcome``'s too)
    WARMUP_ERROR = "warmup-error"  # it fails with no capture at all: no graph issue
    CRASHED = "crashed"  # the process running the script died before reporting

    @property
    def failed(self) -> bool:
        return self is not Status.CAPTURED


class Capture(str, enum.Enum):
    """How a site comes to be captured: a region kind (``RegionKind``), told apart
    more finely where the checker captures it in another way."""

    MARKED_FUNCTION = "marked function"
    MARKED_BLOCK = "marked block"
    GRAPH_BLOCK = "torch.cuda.graph"
    CAPTURE_PAIR = "capture_begin/capture_end"
    COMPILED = "torch.compile (CUDA graphs)"
    GRAPHED_CALLABLES = "make_graphed_callables"

    @property
    def region(self) -> RegionKind:
        """The kind of region the static analysis finds there."""
        return _REGION_KINDS[self]

    @property
    def probed(self) -> bool:
        """Whether the checker captures it itself (the user marked it); otherwise
        the program does, and a run that targets it compares its replays with
        eager."""
        return self.region is RegionKind.MARKED


_REGION_KINDS = {
    Capture.MARKED_FUNCTION: RegionKind.MARKED,
    Capture.MARKED_BLOCK: RegionKind.MARKED,
    Capture.GRAPH_BLOCK: RegionKind.MANUAL,
    Capture.CAPTURE_PAIR: RegionKind.MANUAL,
    Capture.COMPILED: RegionKind.COMPILE,
    Capture.GRAPHED_CALLABLES: RegionKind.GRAPHED,
}


@dataclass
class Site:
    """One place in the program that captures (or is marked to be captured)."""

    kind: Capture
    name: str  # "step()", "Runner.capture()"
    path: str  # absolute
    line: int  # the decorator, the ``with`` or the call
    end_line: int  # the last line of the function or block
    calls: int = 0  # times reached: calls, blocks entered, captures made
    status: Status = Status.CAPTURED
    detail: str = ""  # the first line of the error, the difference, a note
    error_path: str | None = None  # where the failure was raised, in the user's code
    error_line: int | None = None
    eager: str = ""  # the same failure, raised by the region run without capture
    compared: int = 0  # replays compared with eager
    random: bool = False  # the region draws random numbers
    eager_ms: float | None = None
    replay_ms: float | None = None
    tensors: list[str] = field(default_factory=list)  # the tensors that differed
    # torch.compile: where Dynamo broke the graph, [path, line, reason] each
    breaks: list[list[Any]] = field(default_factory=list)
    body: list[Any] = field(default_factory=list)  # [path, first, last] compiled
    # moved statements ("path:line", ``neutral``) that the capture gave a stand-in:
    # no run outside the capture kept their value
    stand_ins: list[str] = field(default_factory=list)
    # how the checker called it itself, where the program never did
    # (``compiled.drive``); empty when only the program called it
    driven: str = ""

    @property
    def key(self) -> str:
        return f"{self.path}:{self.line}"

    @property
    def failed(self) -> bool:
        return self.status.failed

    @property
    def speedup(self) -> float | None:
        if self.eager_ms and self.replay_ms:
            return self.eager_ms / self.replay_ms
        return None

    def compiles(self, path: str, line: int) -> bool:
        """Whether ``path:line`` is in the function this site compiled."""
        if not self.body:
            return False
        where, first, last = self.body
        return str(Path(path).resolve()) == where and int(first) <= line <= int(last)

    def covers(self, path: str, line: int) -> bool:
        """Whether a statically found region at ``path:line`` is this site."""
        return Path(path).resolve() == Path(self.path) and (
            self.line <= line <= self.end_line
        )


@dataclass
class RunResult:
    """What one run of the script reports; or a trial: the runs of one variant of
    the script (``neutral``), the survey and its target runs together."""

    sites: list[Site]
    ended: str | None = None  # how the script ended, when it did not end well
    # the user's lines that ran, and those that ran while a capture was under way
    executed: dict[str, list[int]] = field(default_factory=dict)
    captured: dict[str, list[int]] = field(default_factory=dict)
    # the variant: statements moved out of the capture ([path, line]), captures
    # warmed up first (keys)
    neutralised: list[list[Any]] = field(default_factory=list)
    warm: list[str] = field(default_factory=list)
    # functions the checker called itself: what each call did, by region key
    driven: dict[str, str] = field(default_factory=dict)

    def dump(self) -> str:
        return json.dumps({**asdict(self), "sites": [asdict(s) for s in self.sites]})

    @classmethod
    def load(cls, text: str) -> RunResult:
        data: dict[str, Any] = json.loads(text)
        names = {f.name for f in fields(Site)}
        sites = []
        for each in data["sites"]:
            site = Site(**{k: v for k, v in each.items() if k in names})
            site.kind, site.status = Capture(site.kind), Status(site.status)
            sites.append(site)
        return cls(
            sites,
            data.get("ended"),
            data.get("executed") or {},
            data.get("captured") or {},
            data.get("neutralised") or [],
            data.get("warm") or [],
            data.get("driven") or {},
        )

    def ran(self, path: str, line: int) -> bool | None:
        """Whether ``path:line`` ran; None when no line of ``path`` was followed."""
        lines = self.executed.get(str(Path(path).resolve()))
        return None if lines is None else line in lines

    def ran_capturing(self, path: str, line: int) -> bool:
        """Whether ``path:line`` ran while a CUDA graph was being captured."""
        return line in self.captured.get(str(Path(path).resolve()), ())

    @property
    def variant(self) -> str:
        """How this trial's script differs from the script as written."""
        parts = []
        for mode, says in (
            ("hoisted", "moved out of the capture"),
            ("ungraphed", "run without its capture"),
        ):
            places = ", ".join(
                f"{Path(p).name}:{n}"
                for p, n, *how in self.neutralised
                if (how[0] if how else "hoisted") == mode
            )
            if places:
                parts.append(f"{places} {says}")
        if self.warm:
            places = ", ".join(
                f"{Path(k.rsplit(':', 1)[0]).name}:{k.rsplit(':', 1)[1]}"
                for k in self.warm
            )
            parts.append(f"the capture at {places} warmed up first")
        return " and ".join(parts) or "as written"
