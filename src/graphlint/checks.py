"""What every graphlint code carries (``Check``), and the registry the classes enter
when they are defined. Light on purpose: the tool's own codes (GL0xx) are reported by
the collecting process, which imports neither LibCST nor the rules."""

from __future__ import annotations

import re
from typing import Any, ClassVar

from graphlint.diagnostics import Applicability, Outcome, Severity
from graphlint.signatures import Signature

CODE_RE = re.compile(r"^GL\d{3}$")
REGISTRY: dict[str, type[Check]] = {}


def slug_of(class_name: str) -> str:
    """``HostSyncInCapture`` -> ``host-sync-in-capture``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "-", class_name).lower()


class Check:
    """Metadata every graphlint code carries, for rules and tool diagnostics alike."""

    code: ClassVar[str]
    message: ClassVar[str]  # one sentence, a str.format template
    fix_title: ClassVar[str | None] = None  # imperative, shown as the fix hint
    # the applicability of the mechanical fixes the rule makes (the most permissive,
    # where it makes both kinds); None: it makes none, and its page says why
    fix_applicability: ClassVar[Applicability | None] = None
    outcome: ClassVar[Outcome]
    severity: ClassVar[Severity | None] = None  # None: derived from outcome and region
    # what the hazard does, when the outcome's standard wording does not fit
    consequence: ClassVar[str | None] = None
    # what torch.compile(fullgraph=True) raises on the hazard, measured; None: the
    # hazard is no compile error there
    fullgraph_error: ClassVar[str | None] = None
    # what a real capture raises for the hazard wherever in the region the failing
    # call is (a finding on a whole region; a failure raised inside torch), as
    # measured (case-insensitive substrings); ``graphlint confirm`` matches them
    # anywhere in the finding's region
    region_failures: ClassVar[tuple[str, ...]] = ()
    # what a real capture raises at the finding's line for the hazard, as measured
    # (``graphlint.signatures``): a capture failure at the line confirms the finding
    # only when it is one of these, or one of ``region_failures``
    capture_failures: ClassVar[tuple[Signature, ...]] = ()
    # what a failure that confirms this rule's finding cannot tell apart, when its
    # measured failure is one other hazards raise too: ``graphlint confirm`` says it
    failure_caveat: ClassVar[str | None] = None
    # the hazard is host work that a replay never repeats: ``graphlint confirm``
    # confirms it when its line runs while a CUDA graph is being captured
    host_work: ClassVar[bool] = False
    # the fix is a warm-up before the capture: ``graphlint confirm`` tries the
    # capture warmed up next, and a run that warms any capture says nothing of it
    fixed_by_warmup: ClassVar[bool] = False
    default_enabled: ClassVar[bool] = True
    name: ClassVar[str]  # derived from the class name

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("abstract", False):
            return
        code = cls.__dict__.get("code")
        if not isinstance(code, str) or not CODE_RE.match(code):
            raise TypeError(f"{cls.__name__}: code must look like GL123, got {code!r}")
        if code in REGISTRY and REGISTRY[code].__qualname__ != cls.__qualname__:
            raise TypeError(
                f"{cls.__name__}: code {code} already used by {REGISTRY[code].__name__}"
            )
        if not getattr(cls, "message", ""):
            raise TypeError(f"{cls.__name__}: a message is required")
        if not (cls.__doc__ or "").strip():
            raise TypeError(f"{cls.__name__}: a one-line docstring is required")
        if not hasattr(cls, "outcome"):
            raise TypeError(f"{cls.__name__}: an outcome is required")
        cls.name = slug_of(cls.__name__)
        REGISTRY[code] = cls

    @classmethod
    def explains(cls, failure: str) -> bool:
        """Whether a capture failing with ``failure`` (``Name: first line``) is this
        rule's hazard, as measured; never for the tool's own codes (GL0xx)."""
        if cls.outcome is Outcome.TOOL:
            return False
        lowered = failure.lower()
        return any(s.matches(failure) for s in cls.capture_failures) or any(
            kind.lower() in lowered for kind in cls.region_failures
        )

    @classmethod
    def key(cls) -> str:
        """``GL101-tensor-to-host``: names the rule's doc page and fixture folder."""
        return f"{cls.code}-{cls.name}"

    @classmethod
    def summary(cls) -> str:
        return (cls.__doc__ or "").strip().splitlines()[0]
