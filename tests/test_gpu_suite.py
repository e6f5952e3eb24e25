"""The GPU suite's own machinery, on the CPU: files confirmed in their own process
groups under a time limit, a pool that reports file by file, shards (issue #30)."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from graphlint.runtime.confirm import run_in_group
from tests.confirming import ConfirmPool, confirm_file, shard, slowest_first

PYTHON = sys.executable


def _gone(pid: int) -> bool:
    """Whether process ``pid`` has ended (a zombie, not yet reaped, has)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def _assert_stopped(pid: int) -> None:
    """Process ``pid`` ends (SIGKILL ends it at once: the wait is a safety limit);
    killed here if it did not, so that a failing test leaves nothing behind."""
    try:
        for _ in range(50):
            if _gone(pid):
                break
            time.sleep(0.1)
        assert _gone(pid)
    finally:
        if not _gone(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.skipif(not hasattr(os, "killpg"), reason="process groups are POSIX")
def test_a_file_past_its_limit_is_stopped_with_what_it_started(tmp_path: Path) -> None:
    """The file's test fails with the last progress lines, and the processes the
    script started are killed too (they would hold the GPU)."""
    pid_file = tmp_path / "pid"
    hangs = (
        "import subprocess, sys, time\n"
        f"child = subprocess.Popen([{PYTHON!r}, '-c', 'import time; time.sleep(60)'],"
        " stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "print('graphlint confirm: capturing step() (a.py:3)', file=sys.stderr,"
        " flush=True)\n"
        "time.sleep(60)\n"
    )
    done = confirm_file(
        tmp_path / "a.py",
        dict(os.environ),
        file_timeout=1,
        command=(PYTHON, "-c", hangs),
    )
    assert done.problem is not None
    assert f"graphlint confirm {tmp_path / 'a.py'} ran past its limit of 1 s" in (
        done.problem
    )
    assert done.problem.endswith("capturing step() (a.py:3)")
    _assert_stopped(int(pid_file.read_text()))


def test_the_pool_reports_each_file_or_fails_its_test(tmp_path: Path) -> None:
    report = tmp_path / "report.py"
    silent = tmp_path / "silent.py"
    report.write_text("")
    silent.write_text("")
    # the command stands in for graphlint confirm: it gets the file's path last
    answer = (
        "import json, sys\n"
        "if sys.argv[-1].endswith('report.py'):\n"
        "    print(json.dumps([{'uri': 'x', 'diagnostics': [{'code': 'script'}]}]))\n"
        "    sys.exit(1)\n"
        "print('Traceback: boom', file=sys.stderr)\n"
    )
    pool = ConfirmPool(dict(os.environ), jobs=2, command=(PYTHON, "-c", answer))
    try:
        pool.start([report, silent, report])
        done = pool(report)
        assert (done.path, done.code, done.items) == (report, 1, [{"code": "script"}])
        with pytest.raises(pytest.fail.Exception, match="gave no report") as failed:
            pool(silent)
        assert "(exit code 0):\nTraceback: boom" in str(failed.value)
        extra = tmp_path / "extra_report.py"  # not started: runs when asked for
        assert pool(extra).code == 1
        # what ended, as the verdict table reads it back (--gpu-json, then --from)
        table = {entry["path"]: entry for entry in pool.table()}
        assert set(table) == {str(report), str(silent), str(extra)}
        assert table[str(report)]["items"] == [{"code": "script"}]
        assert table[str(report)]["set"] == "fixtures"
        assert "gave no report" in table[str(silent)]["error"]
    finally:
        pool.close()


def test_files_likely_to_take_longest_run_first(tmp_path: Path) -> None:
    plain, compiled, marked = (tmp_path / f"{n}.py" for n in "abc")
    plain.write_text("import torch\nx.item()  # expect: GL101\n")
    compiled.write_text("import torch\nf = torch.compile(abs)\n")
    marked.write_text("".join(f"x{i}.item()  # expect: GL101\n" for i in range(9)))
    assert slowest_first([plain, compiled, marked, plain]) == [marked, compiled, plain]


def test_shards_split_the_gpu_tests_into_parts_about_as_long() -> None:
    costs = [9, 1, 1, 5, 4, 1, 1]
    parts = [shard(costs, f"{k}/3") for k in (1, 2, 3)]
    assert parts == [[0], [2, 3, 6], [1, 4, 5]]
    assert [sum(costs[i] for i in part) for part in parts] == [9, 7, 6]
    assert sorted(i for part in parts for i in part) == list(range(7))
    assert shard(costs, "1/1") == list(range(7))
    for spec in ("0/2", "3/2", "2", "a/b"):
        with pytest.raises(pytest.UsageError, match="--gpu-shard"):
            shard(costs, spec)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_file_past_its_limit_is_stopped_with_the_scripts_run_too(
    tmp_path: Path,
) -> None:
    """graphlint confirm runs the script in a session of its own (run_in_group,
    for its --timeout): stopping the file must reach that run too, or the
    script keeps the GPU after its test failed."""
    pid_file = tmp_path / "pid"
    script = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid()))"
    confirms = (  # as graphlint confirm runs the script: runtime.confirm.run_once
        "from graphlint.runtime.confirm import run_in_group\n"
        f"run_in_group([{PYTHON!r}, '-c', {script + '; time.sleep(60)'!r}], None)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = confirm_file(
        tmp_path / "a.py", env, file_timeout=3, command=(PYTHON, "-c", confirms)
    )
    assert done.problem is not None and "ran past its limit" in done.problem
    _assert_stopped(int(pid_file.read_text()))


@pytest.mark.skipif(not hasattr(os, "killpg"), reason="process groups are POSIX")
def test_a_file_that_starts_while_the_pool_closes_is_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker that took its file before close() but starts its process after
    close() killed the running ones: that process is stopped too, not waited for
    up to the file's limit (an interrupted session)."""
    taken, go = threading.Event(), threading.Event()

    def late(*args: object, **kwargs: object) -> object:
        taken.set()
        go.wait(10)
        return run_in_group(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr("tests.confirming.run_in_group", late)
    sleeps = (PYTHON, "-c", "import time; time.sleep(60)")
    pool = ConfirmPool(dict(os.environ), jobs=1, command=sleeps)
    (tmp_path / "a.py").write_text("")
    pool.start([tmp_path / "a.py"])
    assert taken.wait(10)
    begun = time.monotonic()
    closing = threading.Thread(target=pool.close)
    closing.start()
    time.sleep(0.5)  # close() has killed what ran, and waits for the worker
    go.set()
    closing.join(30)
    assert not closing.is_alive() and time.monotonic() - begun < 20
