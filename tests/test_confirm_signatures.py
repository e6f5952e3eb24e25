"""A capture failure confirms only the findings whose rule predicts it (issue #30):
each rule's signatures, checked against the failures measured on a GPU, and the
verdicts and missed failures built on them. No GPU needed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphlint import signatures
from graphlint.checks import Check
from graphlint.diagnostics import Diagnostic, FileResult, Outcome
from graphlint.rule import all_checks
from graphlint.runtime import report
from graphlint.runtime.sites import Capture, RunResult, Site, Status
from tests.test_confirm import SYNC, _failed, _finding, _site
from tests.test_ground_truth_map import MEASURED, table

NOT_CAPTURABLE = (
    "RuntimeError: Attempting CUDA graph capture of step() for an instance of Adam "
    "but param_groups' capturable is False."
)
PAGEABLE = (
    "RuntimeError: Cannot copy between CPU and CUDA tensors during CUDA graph "
    "capture unless the CPU tensor is pinned. Please use tensor.pin_memory() or "
    "allocate the tensor with pin_memory=True."
)


def _measured() -> dict[str, tuple[str, str]]:
    """case -> (outcome, the first line of its error), over every measurement."""
    found = {}
    for path in MEASURED:
        if not path.is_file():
            continue
        for text in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(text)
            if "case" in record and record.get("error"):
                first = record["error"].strip().splitlines()[0]
                found[record["case"]] = (record["outcome"], first)
    return found


def _check(code: str) -> type[Check]:
    return all_checks()[code]


# torch.compile's errors (ground-truth/h100-torch2.11-compile.jsonl) that fail a
# site: Dynamo's own classes (compiled._compile_error). Reading an overwritten
# output makes the sites silently wrong instead; Python's AssertionError
# (compiled_fullgraph_unique) is not recorded as a compile error.
DYNAMO_ERRORS = ("Unsupported: ", "UserError: ")
# What the checker records is the first failure of the chain; the measurements
# kept what surfaced last. For these codes the two differ, and the rule matches
# the first: GL703's cuBLAS, cuDNN or NCCL set-up failure surfaces as "operation
# failed due to a previous error during capture" (issue #16, warmup_probe.py).
FIRST_FAILURE_DIFFERS = {"GL703"}


def test_every_measured_capture_failure_is_explained_by_its_codes() -> None:
    """rules/README.md maps each measured pattern to its codes: each of them
    explains the failure measured for it, so no real confirmation is lost."""
    measured = _measured()
    checked = 0
    for case, (outcome, codes) in table().items():
        if case not in measured or outcome not in ("capture-error", "error"):
            continue
        _, failure = measured[case]
        if outcome == "error" and not failure.startswith(DYNAMO_ERRORS):
            continue  # torch.compile's other errors: no capture failure (see above)
        for code in codes - FIRST_FAILURE_DIFFERS:
            assert _check(code).explains(failure), (case, code, failure)
            checked += 1
    # the measurements were read: the shared table beside the checkout, where it is
    # there (a clean checkout alone has the repository's own ground-truth/)
    assert checked >= (50 if MEASURED[0].is_file() else 10)


def test_a_sync_is_explained_by_what_it_raises_first_and_last() -> None:
    first = SYNC
    last = (
        "AcceleratorError: CUDA error: operation failed due to a previous error "
        "during capture"
    )
    older = "RuntimeError: CUDA error: operation not permitted when stream is capturing"
    event = (  # an event recorded in the capture, then waited on
        "AcceleratorError: CUDA error: operation not permitted on an event last "
        "recorded in a capturing stream"
    )
    for failure in (first, last, older, event):
        assert signatures.SYNC.matches(failure)
        assert _check("GL101").explains(failure)
    assert _check("GL103").explains(event)
    assert not signatures.SYNC.matches("ValueError: operation not permitted")


def test_each_rule_predicting_a_capture_error_declares_what_it_raises() -> None:
    """Without a signature its findings could never be confirmed by a failure."""
    for code, check in all_checks().items():
        if check.outcome is Outcome.CAPTURE_ERROR:
            assert check.capture_failures or check.region_failures, code


def test_no_rule_explains_another_hazards_failure() -> None:
    assert not _check("GL701").explains(SYNC)  # GradScaler's inf check: GL702's
    assert _check("GL702").explains(SYNC)
    assert _check("GL701").explains(NOT_CAPTURABLE)
    assert not _check("GL702").explains(NOT_CAPTURABLE)
    assert not _check("GL601").explains(NOT_CAPTURABLE)
    assert not _check("GL602").explains(SYNC)
    for code in ("GL203", "GL301", "GL401", "GL406"):  # silent: replays confirm
        assert not _check(code).explains(SYNC)
    for code in ("GL007", "GL008", "GL001"):  # the tool's own: never
        assert not _check(code).explains(SYNC)


def _merge(
    a: Path, sites: list[Site], found: list[Diagnostic], trials: int = 1
) -> report.Report:
    result = FileResult(str(a), tuple(found))
    return report.merge([result], [RunResult(sites)], device="GPU", runs=trials)


def test_a_failure_confirms_only_the_finding_on_its_line_that_predicts_it(
    tmp_path: Path,
) -> None:
    """GradScaler.step on a non-capturable optimizer: both rules find the line; its
    sync confirms GL702, not GL701."""
    a = tmp_path / "a.py"
    site = _failed(a, 3, 9, SYNC, at=5)
    scaler = _finding(a, 5, "GL702", Outcome.CAPTURE_ERROR, 3)
    optimizer = _finding(a, 5, "GL701", Outcome.CAPTURE_ERROR, 3)
    merged = _merge(a, [site], [optimizer, scaler])
    by_code = {f.diagnostic.code: f for f in merged.findings}
    assert by_code["GL702"].status == "confirmed"
    assert by_code["GL701"].status == "no verdict"
    assert by_code["GL701"].note.startswith("not explained by this failure: ")
    assert f"fails here with {SYNC}, which GL701 does not predict" in (
        by_code["GL701"].note
    )
    assert merged.missed == ()  # GL702 predicted it
    site = _failed(a, 3, 9, NOT_CAPTURABLE, at=5)  # a fused optimizer's step
    statuses = {
        f.diagnostic.code: f.status
        for f in _merge(a, [site], [optimizer, scaler]).findings
    }
    assert statuses == {"GL701": "confirmed", "GL702": "no verdict"}


def test_a_failure_no_finding_on_its_line_predicts_is_missed(tmp_path: Path) -> None:
    a = tmp_path / "a.py"
    site = _failed(a, 3, 9, PAGEABLE, at=5)
    sync = _finding(a, 5, "GL104", Outcome.CAPTURE_ERROR, 3)  # predicts a sync
    merged = _merge(a, [site], [sync])
    assert merged.findings[0].status == "no verdict"
    (missed,) = merged.missed
    assert (missed.line, missed.variant) == (5, "")
    assert "no rule said so: RuntimeError: Cannot copy" in missed.message
    explain = report.Explainer(lambda paths: [FileResult(str(a), (sync,))])
    assert explain(site, RunResult([site])) is None  # unexplained: the trials stop
    assert explain(_failed(a, 3, 9, SYNC, at=5), RunResult([site])) == (
        "neutralised",
        [str(a.resolve()), 5, "hoisted", [[5, 4, 5, 9]]],
    )


def test_the_tools_own_findings_are_never_judged_by_a_run(tmp_path: Path) -> None:
    """A GL007 on an unknown code in a suppression comment says nothing of the
    capture, though it sits on the line that fails."""
    a = tmp_path / "a.py"
    site = _failed(a, 3, 9, SYNC, at=5)
    comment = _finding(a, 5, "GL007", Outcome.TOOL, 3)
    merged = _merge(a, [site], [comment])
    assert merged.findings[0].status == "no verdict"
    assert "graphlint's own reading of the file" in merged.findings[0].note
    assert len(merged.missed) == 1  # no rule predicted the sync


def test_a_graph_break_confirms_only_a_finding_that_reads_the_device(
    tmp_path: Path,
) -> None:
    a = tmp_path / "a.py"
    site = _site(a, 3, 9, kind=Capture.COMPILED)
    site.breaks = [[str(a.resolve()), 6, "Tensor.item"]]
    found = [
        _finding(a, 6, "GL101", Outcome.CAPTURE_ERROR, 3),
        _finding(a, 6, "GL402", Outcome.SILENT_WRONG, 3),
    ]
    first, second = _merge(a, [site], found).findings
    assert first.status == "confirmed"
    assert second.status == "no verdict"
    assert "breaks its CUDA graph here (Tensor.item), and GL402 predicts no" in (
        second.note
    )


def test_a_region_findings_failure_at_a_line_whose_finding_does_not_predict_it(
    tmp_path: Path,
) -> None:
    """DDP's own sync surfaces at the user's line that calls the model: a finding
    there that predicts another failure does not take it from GL705, whose note
    says what such a failure cannot tell apart."""
    a = tmp_path / "a.py"
    site = _failed(a, 3, 9, SYNC, at=6)
    ddp = _finding(a, 3, "GL705", Outcome.CAPTURE_ERROR, 3)
    optimizer = _finding(a, 6, "GL701", Outcome.CAPTURE_ERROR, 3)
    first, second = _merge(a, [site], [ddp, optimizer]).findings
    assert (first.status, second.status) == ("confirmed", "no verdict")
    assert "any wait for the device under capture reads the same" in first.note


@pytest.mark.parametrize(
    ("code", "failure"),
    [
        (
            "GL704",
            "RuntimeError: CUDA graphs must be captured on a non-default stream.",
        ),
        (
            "GL707",
            "AssertionError: Modules must not have hooks registered at the time they "
            "are passed. However, registering hooks on modules after passing them "
            "through make_graphed_callables is allowed.",
        ),
        (
            "GL706",
            "RuntimeError: make_graphed_callables does not support the autocast "
            "caching. Please set `cache_enabled=False`.",
        ),
    ],
)
def test_torchs_own_checks_are_their_rules_failures(code: str, failure: str) -> None:
    """Raised by PyTorch's checks before a capture or graphing starts (their
    words, from its source), not measured in ground-truth/."""
    assert _check(code).explains(failure)
    others = [c for c, check in all_checks().items() if check.explains(failure)]
    assert others == [code]


OVERWRITTEN = (
    "RuntimeError: Error: accessing tensor output of CUDAGraphs that has been "
    "overwritten by a subsequent run. Stack trace: [Could not find stack trace]."
)


def test_torchs_detected_overwrite_confirms_the_rule_that_measured_it(
    tmp_path: Path,
) -> None:
    """CUDA-graph trees raise when a backward adds to gradients a replay overwrote:
    the compiled region goes wrong with that error, which GL304 measured for its
    whole region (it surfaces inside the backward): confirmed, and not missed. A
    finding of the same region that predicts a sync is not confirmed by it."""
    a = tmp_path / "a.py"
    site = _site(
        a,
        3,
        9,
        kind=Capture.COMPILED,
        status=Status.SILENT_WRONG,
        detail=OVERWRITTEN,
    )
    grads = _finding(a, 8, "GL304", Outcome.CAPTURE_ERROR, 3)
    sync = _finding(a, 6, "GL103", Outcome.CAPTURE_ERROR, 3)
    merged = _merge(a, [site], [grads, sync])
    by_code = {f.diagnostic.code: f for f in merged.findings}
    assert by_code["GL304"].status == "confirmed"
    assert by_code["GL103"].status != "confirmed"
    assert merged.missed == ()
    merged = _merge(a, [site], [sync])
    assert len(merged.missed) == 1  # no finding predicted it


def test_a_fullgraph_compile_error_is_read_from_either_end_of_its_chain() -> None:
    """The probe recorded Dynamo's ``UserError``; confirm records the first failure
    of the chain, PyTorch's ``GuardOnDataDependentSymNode``: both are GL101's."""
    outer = (
        "UserError: Consider annotating your code using torch._check*(). Could not "
        "guard on data-dependent expression zuf0 > 0.0 (unhinted: zuf0 > 0.0)."
    )
    inner = (
        "GuardOnDataDependentSymNode: Could not guard on data-dependent expression "
        "zuf0 > 0.0 (unhinted: zuf0 > 0.0)."
    )
    for failure in (outer, inner):
        assert _check("GL101").explains(failure)
        assert not _check("GL501").explains(failure)
