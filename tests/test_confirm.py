"""``graphlint confirm``: what does not need a GPU (arguments, missing PyTorch or
CUDA, the report), and, on a GPU (marker ``gpu``), real captures of the runtime
scenarios in fixtures/runtime."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import pytest

from graphlint.runtime import confirm, session
from graphlint.runtime.capture import Verdict
from tests.conftest import FIXTURES
from tests.test_cli import run

SCENARIOS = FIXTURES / "runtime"


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


class _Probe:
    def __init__(self, verdict: Verdict, calls: int) -> None:
        self.verdict = verdict
        self.calls = calls


def test_report_lists_every_region_and_fails_on_any_problem(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ok = Verdict("a.py:3 step()", "a.py", 3, "ok", eager_ms=2.0, replay_ms=0.5)
    bad = Verdict(
        "b.py:7 train()", "b.py", 7, "capture-error", "AcceleratorError: x", 9
    )
    never = Verdict("c.py:1 spare()", "c.py", 1, "ok")
    monkeypatch.setattr(
        session, "PROBES", [_Probe(ok, 4), _Probe(bad, 1), _Probe(never, 0)]
    )
    text, failed = confirm.report("NVIDIA H200", None)
    assert failed
    assert "captured      a.py:3 step(): eager 2.000 ms, replay 0.500 ms, 4.0x" in text
    assert "capture-error b.py:7 train() (line 9): AcceleratorError: x" in text
    assert "not reached   c.py:1 spare()" in text
    monkeypatch.setattr(session, "PROBES", [_Probe(ok, 4)])
    assert confirm.report("NVIDIA H200", None)[1] is False
    assert confirm.report("NVIDIA H200", "the script exited with 3")[1] is True


def _confirm(name: str) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-m", "graphlint", "confirm", str(SCENARIOS / name)],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.returncode, done.stdout + done.stderr


@pytest.mark.gpu
def test_gpu_sync_fails_capture_at_its_line() -> None:
    code, out = _confirm("sync_in_region.py")
    assert code == 1, out
    assert "capture-error" in out and "(line 10)" in out


@pytest.mark.gpu
def test_gpu_frozen_counter_is_silently_wrong() -> None:
    code, out = _confirm("frozen_counter.py")
    assert code == 1, out
    assert "silent-wrong" in out and "replay differs from eager" in out


@pytest.mark.gpu
def test_gpu_clean_step_captures_and_reports_speedup() -> None:
    code, out = _confirm("clean_step.py")
    assert code == 0, out
    assert "captured" in out and "x\n" in out
