"""``graphlint confirm``: what does not need a GPU (arguments, missing PyTorch or
CUDA, merging verdicts with findings, the reports, the driver's runs, attribution,
block extraction), and, on a GPU (marker ``gpu``), real captures of every runtime
scenario in fixtures/runtime."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

from graphlint.diagnostics import (
    Confidence,
    Diagnostic,
    FileResult,
    Outcome,
    RegionKind,
    RegionRef,
    Severity,
)
from graphlint.runtime import attribution, confirm, report
from graphlint.runtime.sites import Capture, RunResult, Site, Status
from graphlint.runtime.source import block_at
from tests.confirming import ConfirmPool
from tests.conftest import FIXTURES, expectations
from tests.test_cli import run

SCENARIOS = FIXTURES / "runtime"
# what a wait for the device raises under capture (ground-truth/, E900)
SYNC = "AcceleratorError: CUDA error: operation not permitted when stream is capturing"


def test_missing_script_is_one_line_exit_2(tmp_path: Path) -> None:
    code, out, err = run("confirm", "missing.py", cwd=tmp_path)
    assert code == 2 and "no such file: missing.py" in err
    assert "Traceback" not in out + err


def test_without_torch_it_says_what_to_install(tmp_path: Path) -> None:
    script = tmp_path / "s.py"
    script.write_text("print('ran')\n")
    driver = (
        "import sys; sys.modules['torch'] = None; sys.argv = ['graphlint', "
        f"'confirm', {str(script)!r}]; from graphlint.cli import main; main()"
    )
    done = subprocess.run(
        [sys.executable, "-c", driver], capture_output=True, text=True, check=False
    )
    assert done.returncode == 2
    assert "needs PyTorch: pip install 'torch-graphlint[runtime]'" in done.stderr
    assert "ran" not in done.stdout and "Traceback" not in done.stderr


def test_without_cuda_it_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = types.ModuleType("torch")
    fake.__version__ = "9.9-test"  # type: ignore[attr-defined]
    fake.cuda = types.SimpleNamespace(is_available=lambda: False)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch", fake)
    (tmp_path / "s.py").write_text("print('ran')\n")
    code, out, err = run("confirm", "s.py", cwd=tmp_path)
    assert code == 2
    assert "needs a CUDA GPU; PyTorch 9.9-test sees none" in err
    assert "ran" not in out


def _site(path: Path, line: int, end: int, **fields: object) -> Site:
    site = Site(
        Capture.MARKED_FUNCTION, "step()", str(path.resolve()), line, end, calls=3
    )
    for name, value in fields.items():
        setattr(site, name, value)
    return site


def _failed(path: Path, line: int, end: int, detail: str, at: int) -> Site:
    """A site whose capture failed with ``detail`` at line ``at`` of ``path``."""
    return _site(
        path,
        line,
        end,
        status=Status.CAPTURE_ERROR,
        detail=detail,
        error_path=str(path.resolve()),
        error_line=at,
    )


def _finding(
    path: Path, line: int, code: str, outcome: Outcome, region: int
) -> Diagnostic:
    return Diagnostic(
        str(path),
        code,
        "name",
        f"{code} message",
        line,
        4,
        line,
        9,
        Severity.ERROR,
        Confidence.HIGH,
        outcome,
        RegionRef(RegionKind.MARKED, region, "marked"),
    )


def _merge(tmp_path: Path, sites: list[Site], found: list[Diagnostic]) -> report.Report:
    result = FileResult(str(tmp_path / "a.py"), tuple(found))
    return report.merge([result], [RunResult(sites)], device="GPU", runs=1 + len(sites))


def test_a_failure_at_the_finding_line_confirms_it(tmp_path: Path) -> None:
    a = tmp_path / "a.py"
    site = _failed(a, 3, 9, SYNC, at=5)
    merged = _merge(
        tmp_path,
        [site],
        [
            _finding(a, 5, "GL101", Outcome.CAPTURE_ERROR, 3),
            _finding(a, 7, "GL102", Outcome.CAPTURE_ERROR, 3),
        ],
    )
    first, second = merged.findings
    assert (first.status, second.status) == ("confirmed", "no verdict")
    assert f"fails here: {SYNC}" in first.note
    assert f"failed first, at {a.resolve()}:5" in second.note or "a.py:5" in second.note
    assert merged.missed == () and merged.failed


def test_a_failure_no_rule_predicted_is_missed(tmp_path: Path) -> None:
    a = tmp_path / "a.py"
    site = _failed(a, 3, 9, "RuntimeError: x", at=6)
    merged = _merge(
        tmp_path, [site], [_finding(a, 5, "GL101", Outcome.CAPTURE_ERROR, 3)]
    )
    assert merged.findings[0].status == "no verdict"
    (missed,) = merged.missed
    assert (missed.line, missed.site) == (6, site)
    assert "no rule said so: RuntimeError: x" in missed.message


def test_silent_errors_confirm_silent_findings_only(tmp_path: Path) -> None:
    a = tmp_path / "a.py"
    site = _site(a, 3, 9, status=Status.SILENT_WRONG, detail="replay differs by 2")
    merged = _merge(
        tmp_path,
        [site],
        [
            _finding(a, 4, "GL203", Outcome.SILENT_WRONG, 3),
            _finding(a, 5, "GL101", Outcome.CAPTURE_ERROR, 3),
        ],
    )
    assert [f.status for f in merged.findings] == ["confirmed", "not reproduced"]
    assert merged.missed == ()
    unexplained = _merge(tmp_path, [site], [])
    assert "silently wrong, and no rule said so" in unexplained.missed[0].message


def test_clean_captures_do_not_reproduce_and_unrun_regions_are_not_reached(
    tmp_path: Path,
) -> None:
    a = tmp_path / "a.py"
    clean = _site(a, 3, 9, compared=4, eager_ms=2.0, replay_ms=0.5)
    idle = _site(a, 20, 30, calls=0)
    unread = _site(a, 40, 50)  # captured, never compared
    merged = _merge(
        tmp_path,
        [clean, idle, unread],
        [
            _finding(a, 5, "GL101", Outcome.CAPTURE_ERROR, 3),
            _finding(a, 22, "GL101", Outcome.CAPTURE_ERROR, 20),
            _finding(a, 42, "GL203", Outcome.SILENT_WRONG, 40),
            _finding(a, 60, "GL101", Outcome.CAPTURE_ERROR, 58),
        ],
    )
    assert [f.status for f in merged.findings] == [
        "not reproduced",
        "no verdict",
        "no verdict",
        "no verdict",
    ]
    assert "4 replays matched eager" in merged.findings[0].note
    assert "no replay of step() was compared" in merged.findings[2].note
    assert not merged.failed
    assert "4.0x faster" in report.describe(clean)


def test_text_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    a = tmp_path / "a.py"
    ok = _site(a, 3, 9, compared=4, eager_ms=2.0, replay_ms=0.5)
    bad = _failed(a, 12, 19, SYNC, at=14)
    merged = _merge(
        tmp_path, [ok, bad], [_finding(a, 14, "GL101", Outcome.CAPTURE_ERROR, 12)]
    )
    text = report.format_text(merged)
    assert "graphlint confirm on GPU (3 runs of the script)" in text
    assert (
        "captured      a.py:3 step() [marked function]: matches eager over 4 " in text
    )
    assert "eager 2.000 ms, replay 0.500 ms: 4.0x faster" in text
    assert (
        f"capture-error a.py:12 step() [marked function]: {SYNC} (at a.py:14)" in text
    )
    assert "  confirmed      " in text and "a.py:14:5: GL101 GL101 message" in text
    assert text.rstrip().endswith(
        "1 finding: 1 confirmed, 0 not reproduced, 0 not executed, 0 with no verdict; "
        "0 missed. "
        "2 capture sites ran: 1 captured, 1 failed."
    )


def test_lsp_report_is_checks_shape_with_runtime_data(tmp_path: Path) -> None:
    a = tmp_path / "a.py"
    bad = _failed(a, 12, 19, "AcceleratorError: x", at=16)
    merged = _merge(
        tmp_path, [bad], [_finding(a, 14, "GL101", Outcome.CAPTURE_ERROR, 12)]
    )
    (document,) = json.loads(report.format_lsp(merged))
    assert document["uri"] == a.resolve().as_uri()
    finding, site, missed = document["diagnostics"]
    assert finding["code"] == "GL101" and finding["source"] == "graphlint"
    assert finding["data"]["runtime"]["status"] == "no verdict"
    assert (site["code"], site["source"]) == ("capture-error", "graphlint confirm")
    assert site["range"]["start"]["line"] == 11
    assert missed["data"]["runtime"]["status"] == "missed"
    assert missed["range"]["start"]["line"] == 15
    assert missed["data"]["runtime"]["site"]["error_line"] == 16


def test_run_results_cross_processes_as_json(tmp_path: Path) -> None:
    site = _site(tmp_path / "a.py", 3, 9, tensors=["return"], random=True)
    back = RunResult.load(RunResult([site], "the script exited with 3").dump())
    assert back.sites == [site] and back.ended == "the script exited with 3"
    assert site.covers(str(tmp_path / "a.py"), 5)
    assert not site.covers(str(tmp_path / "a.py"), 10)


def test_the_driver_surveys_then_targets_each_site(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = tmp_path / "a.py"
    marked, unrun = _site(a, 3, 9), _site(a, 20, 25, calls=0)
    failed_graph = _site(
        a, 30, 33, kind=Capture.GRAPH_BLOCK, status=Status.CAPTURE_ERROR
    )
    graph = _site(a, 40, 44, kind=Capture.GRAPH_BLOCK)
    graphed = _site(a, 50, 50, kind=Capture.GRAPHED_CALLABLES)
    targets: list[object] = []

    def run_once(
        script: Path,
        args: list[str],
        settings: dict[str, object],
        timeout: float | None,
    ) -> RunResult:
        target = settings["target"]
        targets.append(target)
        if target is None:
            return RunResult([marked, unrun, failed_graph, graph, graphed])
        if target == graph.key:
            return RunResult([], "the run crashed (exit code -11)")
        if target == graphed.key:  # compared like a graph block (issue #30)
            return RunResult([_site(a, 50, 50, kind=graphed.kind, compared=1)])
        return RunResult([_site(a, 3, 9, compared=2)])

    monkeypatch.setattr(confirm, "run_once", run_once)
    trials, runs = confirm.run_all(a, [], {"warmup": 3})
    ((sites, ended),) = [(trial.sites, trial.ended) for trial in trials]
    assert targets == [None, marked.key, graph.key, graphed.key]
    assert runs == 4 and ended is None
    by_line = {s.line: s for s in sites}
    assert by_line[3].compared == 2 and by_line[50].compared == 1
    assert by_line[40].status == "crashed" and "exit code -11" in by_line[40].detail
    assert by_line[20].calls == 0


def test_a_crashed_run_says_how(tmp_path: Path) -> None:
    script = tmp_path / "s.py"
    script.write_text("print('hi')\n")
    done = confirm.run_once(script, [], {"target": None}, timeout=60)
    # no CUDA build is needed to get this far: the child either ran the script
    # (torch installed) or died importing torch, and says so either way
    assert done.ended is None or done.ended.startswith("the run crashed (exit code")


def test_attribution_follows_the_hidden_first_failure(tmp_path: Path) -> None:
    user = tmp_path / "user_code.py"
    user.write_text(
        textwrap.dedent("""\
        def inner():
            raise RuntimeError("operation not permitted when stream is capturing")

        def outer():
            try:
                inner()
            finally:
                raise ValueError("capture_end failed")
        """)
    )
    scope: dict[str, object] = {}
    exec(compile(user.read_text(), str(user), "exec"), scope)
    with pytest.raises(ValueError, match="capture_end failed") as caught:
        scope["outer"]()  # type: ignore[operator]
    assert attribution.user_frame(caught.value) == (str(user.resolve()), 2)
    assert attribution.first_line(caught.value) == (
        "RuntimeError: operation not permitted when stream is capturing"
    )
    assert not attribution.is_user_file(json.__file__)


def test_block_bodies_compile_with_their_outputs(tmp_path: Path) -> None:
    source = tmp_path / "blocks.py"
    source.write_text(
        textwrap.dedent("""\
        def step(x, w):
            with region():
                h = x * w
                y = [t for t in range(h)]
            return y

        def early(x):
            with region():
                return x
        """)
    )
    block = block_at(str(source), 2)
    assert block is not None and block.code is not None
    assert (block.line, block.end_line) == (2, 4)
    assert block.assigned == {"h", "y"} and {"x", "w", "t"} <= block.names
    scope: dict[str, object] = {"x": 2, "w": 3}
    exec(block.code, scope)
    assert scope["y"] == [0, 1, 2, 3, 4, 5]  # ran with the names it was given
    early = block_at(str(source), 8)
    assert early is not None and early.code is None
    assert "cannot run on its own ('return' outside function)" in early.reason
    assert block_at(str(source), 1) is None


def _scenarios() -> list[Path]:
    return sorted(SCENARIOS.glob("gl*_*.py"))


def test_every_rule_family_has_a_bad_and_a_good_scenario() -> None:
    names = [path.stem for path in _scenarios()]
    for family in range(1, 8):
        assert any(n.startswith(f"gl{family}_") and n.endswith("_bad") for n in names)
        assert any(n.startswith(f"gl{family}_") and n.endswith("_good") for n in names)


@pytest.mark.gpu
@pytest.mark.parametrize("scenario", _scenarios(), ids=lambda p: p.stem)
def test_gpu_scenario(scenario: Path, confirmed: ConfirmPool) -> None:
    """Bad: every static finding is confirmed and none is missed. Good: every
    site captured and matched eager on compared replays, nothing found."""
    done = confirmed(scenario)
    code, items = done.code, done.items
    findings = [d for d in items if d["source"] == "graphlint"]
    sites = [
        d["data"]["runtime"]["site"]
        for d in items
        if d["source"] == "graphlint confirm"
        and d["data"]["runtime"]["status"] != "missed"
        and d["code"] != "script"
    ]
    missed = [d for d in items if d["data"]["runtime"]["status"] == "missed"]
    assert missed == [], missed
    (script,) = [d for d in items if d["code"] == "script"]  # how it ended, said
    expected = expectations(scenario.read_text())
    got = {(d["range"]["start"]["line"] + 1, d["code"]) for d in findings}
    assert got == expected
    assert sites, "no capture site ran"
    if scenario.stem.endswith("_bad"):
        assert code == 1
        assert {d["data"]["runtime"]["status"] for d in findings} == {"confirmed"}
    else:
        assert code == 0, items
        assert script["data"]["runtime"]["status"] == "ran to its end", script
        for site in sites:
            assert site["status"] == "captured", site
            assert site["compared"] > 0, site


def test_a_region_finding_is_confirmed_by_its_kind_of_failure_anywhere_in_it(
    tmp_path: Path,
) -> None:
    """GL703 sits on the capture's first line; an unwarmed region fails at its first
    cuBLAS call, wherever that is (issue #16)."""
    a = tmp_path / "a.py"
    cublas = (
        "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling "
        "`cublasCreate(handle)`"
    )
    site = _failed(a, 3, 9, cublas, at=6)
    warmup = _finding(a, 3, "GL703", Outcome.CAPTURE_ERROR, 3)
    elsewhere = _finding(a, 5, "GL101", Outcome.CAPTURE_ERROR, 3)
    merged = _merge(tmp_path, [site], [warmup, elsewhere])
    assert [f.status for f in merged.findings] == ["confirmed", "no verdict"]
    assert "a failure of this kind anywhere in the region" in merged.findings[0].note
    assert merged.missed == ()
    # another failure is not GL703's: still missed
    other = _failed(a, 3, 9, "RuntimeError: x", at=6)
    merged = _merge(tmp_path, [other], [warmup])
    assert merged.findings[0].status == "no verdict"
    assert len(merged.missed) == 1


def test_every_format_says_how_the_script_ended(tmp_path: Path) -> None:
    a = tmp_path / "a.py"
    site = _site(a, 3, 9, compared=2)
    result = FileResult(str(a), ())
    for ended, severity, line in [
        (None, 3, "The script ran to its end."),
        (
            "the script raised KeyError: 'x'",
            1,
            "The script did not finish: the script ",
        ),
    ]:
        merged = report.merge(
            [result], [RunResult([site], ended)], device="GPU", runs=2, script=str(a)
        )
        assert line in report.format_text(merged)
        files = json.loads(report.format_lsp(merged))
        (entry,) = [f for f in files if f["uri"] == a.resolve().as_uri()]
        (script,) = [d for d in entry["diagnostics"] if d["code"] == "script"]
        assert script["severity"] == severity and script["message"].startswith(line)
        assert script["data"]["runtime"]["detail"] == ended


def test_a_differing_replay_is_never_said_to_match(tmp_path: Path) -> None:
    a = tmp_path / "a.py"
    site = _site(
        a, 3, 9, status=Status.SILENT_WRONG, detail="replay differs by 2", compared=3
    )
    merged = _merge(
        tmp_path, [site], [_finding(a, 5, "GL101", Outcome.CAPTURE_ERROR, 3)]
    )
    (finding,) = merged.findings
    assert finding.status == "not reproduced"
    assert "matched eager" not in finding.note
    assert "its replays differ from eager (replay differs by 2)" in finding.note


def test_a_package_entry_file_runs_as_a_module_of_its_package(tmp_path: Path) -> None:
    """``from .model import Net`` fails in a script: such a file runs as
    ``python -m pkg.main`` would, with the folder above its package first (#16)."""
    from graphlint.runtime.child import entry  # noqa: PLC0415

    pkg = tmp_path / "src" / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "main.py").write_text("from .model import Net\n")
    (pkg / "plain.py").write_text("import model\n")
    (tmp_path / "script.py").write_text("from pkg import main\n")
    root, here = str((tmp_path / "src").resolve()), str(pkg.resolve())
    assert entry(str(pkg / "main.py")) == ("pkg.main", [root, here])
    assert entry(str(pkg / "plain.py")) == (None, [here])  # runs as the file it is
    assert entry(str(tmp_path / "script.py")) == (None, [str(tmp_path.resolve())])


@pytest.mark.gpu
def test_gpu_a_package_entry_file(tmp_path: Path, confirmed: ConfirmPool) -> None:
    """A package's main module, which imports its model relatively, runs as a module:
    its marked region is captured and the host sync in the model confirmed."""
    pkg = tmp_path / "app"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "model.py").write_text(
        "import torch\n\n\ndef step(x):\n    return x.sum().item()\n"
    )
    (pkg / "main.py").write_text(
        "import torch\n\nimport graphlint\n\nfrom .model import step\n\n\n"
        "@graphlint.capture_region\ndef run(x):\n    return step(x)\n\n\n"
        "run(torch.ones(4, device='cuda'))\n"
    )
    done = confirmed(pkg / "main.py")
    code, items = done.code, done.items
    (script,) = [d for d in items if d["code"] == "script"]
    assert script["data"]["runtime"]["status"] == "ran to its end", script
    held = [
        d
        for d in items
        if d["source"] == "graphlint" and d["data"]["runtime"]["status"] == "confirmed"
    ]
    assert [d["code"] for d in held] == ["GL101"], items
    assert code == 1


@pytest.mark.gpu
def test_gpu_a_capture_entered_on_an_exit_stack_is_observed(
    tmp_path: Path, confirmed: ConfirmPool
) -> None:
    """``stack.enter_context(torch.cuda.graph(g))`` is the region's site (at that
    line): it captures, and says its replays are not compared (no block)."""
    script = tmp_path / "stack.py"
    script.write_text(
        "import contextlib\n\nimport torch\n\n"
        "x = torch.randn(8, device='cuda')\ng = torch.cuda.CUDAGraph()\n"
        "stack = contextlib.ExitStack()\n"
        "stack.enter_context(torch.cuda.graph(g))\n"
        "y = x * 2 + 1\nstack.close()\ng.replay()\n"
    )
    done = confirmed(script)
    items = done.items
    (script_ended,) = [d for d in items if d["code"] == "script"]
    assert script_ended["data"]["runtime"]["status"] == "ran to its end", items
    sites = [
        d["data"]["runtime"]["site"]
        for d in items
        if "site" in d["data"]["runtime"] and d["code"] != "script"
    ]
    assert [(s["line"], s["status"]) for s in sites] == [(8, "captured")], sites
    assert "not entered by a with block" in sites[0]["detail"], sites
    assert [d for d in items if d["source"] == "graphlint"] == []
    assert done.code == 0
