"""A hostile repository cannot make graphlint run code, write outside the tree, hang,
exhaust memory or lose the run (issue #11): the cache, the workers, the limits and
the configuration. File discovery is in test_hostile_files.py, output escaping in
test_hostile_output.py."""

from __future__ import annotations

import json
import os
import pickle
import select
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from graphlint import runner
from graphlint.cache import FORMAT, Cache
from graphlint.diagnostics import FileResult
from graphlint.project.summary import ModuleSummary
from graphlint.settings import Job, Settings
from tests.conftest import GRAPHLINT, graphlint, lint
from tests.test_cli import run

REGION_CALLS_HELPER = textwrap.dedent(
    """\
    import torch
    from pkg.helper import helper

    x = torch.zeros(4, device="cuda")
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        helper(x)
    """
)


def _package(root: Path, helper: str | bytes) -> Path:
    """``root/pkg``: a region in ``train.py`` that calls ``helper.helper``."""
    pkg = root / "pkg"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "train.py").write_text(REGION_CALLS_HELPER)
    target = pkg / "helper.py"
    if isinstance(helper, bytes):
        target.write_bytes(helper)
    else:
        target.write_text(helper)
    return pkg


def _lsp(args: list[str], cwd: Path, **env: str) -> tuple[int, list[dict[str, object]]]:
    result = graphlint(
        "check", "--format", "lsp", *args, cwd=cwd, env={**os.environ, **env}
    )
    return result.returncode, json.loads(result.stdout) if result.stdout else []


def _codes(found: list[dict[str, object]]) -> set[tuple[str, str]]:
    return {
        (str(entry["uri"]).rsplit("/", 1)[-1], str(d["code"]))
        for entry in found
        for d in entry["diagnostics"]  # type: ignore[attr-defined]
    }


# -- the cache is data, kept out of the tree ------------------------------------------
def test_a_pickle_shipped_in_the_tree_is_never_loaded(tmp_path: Path) -> None:
    """0.1 read ``.graphlint_cache/<sha256(...)>`` from the tree with pickle.load."""
    tree = tmp_path / "repo"
    pkg = _package(tree, "def helper(x):\n    return x.item()\n")
    sentinel = tmp_path / "pwned"

    class Payload:
        def __reduce__(self) -> tuple[object, tuple[str]]:
            return (os.system, (f"touch {sentinel}",))

    shipped = tree / ".graphlint_cache"
    shipped.mkdir()
    data = (pkg / "helper.py").read_bytes()
    import hashlib  # noqa: PLC0415

    for module in ("pkg.helper", "helper"):
        key = hashlib.sha256(b"\0".join([b"1", module.encode(), data])).hexdigest()
        (shipped / key).write_bytes(pickle.dumps(Payload()))
    code, found = _lsp(["pkg/train.py"], tree, GRAPHLINT_CACHE_DIR=str(tmp_path / "c"))
    assert code == 1 and ("helper.py", "GL101") in _codes(found)
    assert not sentinel.exists()
    # and nothing of ours lands in the tree
    assert sorted(p.name for p in shipped.iterdir()) == sorted(
        p.name for p in shipped.iterdir() if p.stat().st_size > 0
    )
    assert not (tree / "pkg" / ".graphlint_cache").exists()


def _cache_of(tree: Path, base: Path) -> Cache:
    return Cache.for_project(Path(os.path.realpath(tree)), base)


@pytest.mark.parametrize(
    "content",
    [
        b"\x80\x09garbage",  # what a pickle-era entry or a torn write looks like
        b"\xff\xfe not utf-8",
        b'{"format": 2, "key": "k", "value": {"name": []}}',  # valid JSON, wrong shape
        b'{"format": 999, "key": "k", "value": {}}',
        b"[]" * 100_000,
        b"[" * 100_000,  # deeper than any decoder's recursion
    ],
)
def test_corrupt_entries_are_ignored_and_rewritten(
    tmp_path: Path, content: bytes
) -> None:
    tree = tmp_path / "repo"
    _package(tree, "def helper(x):\n    return x.item()\n")
    base = tmp_path / "c"
    first = _lsp(["pkg/train.py"], tree, GRAPHLINT_CACHE_DIR=str(base))
    cache = _cache_of(tree, base)
    entries = [p for p in cache.folder.iterdir() if not p.name.startswith(".")]
    assert entries
    for entry in entries:
        entry.write_bytes(content)
    for _ in range(2):  # the next run repairs the entry, the one after reads it
        assert _lsp(["pkg/train.py"], tree, GRAPHLINT_CACHE_DIR=str(base)) == first
    for entry in entries:
        assert json.loads(entry.read_bytes())["format"] == FORMAT


@pytest.mark.parametrize("kind", ["fifo", "link"])
def test_fifo_and_symlinked_entries_are_not_followed(tmp_path: Path, kind: str) -> None:
    tree = tmp_path / "repo"
    _package(tree, "def helper(x):\n    return x.item()\n")
    base = tmp_path / "c"
    first = _lsp(["pkg/train.py"], tree, GRAPHLINT_CACHE_DIR=str(base))
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    entries = sorted(_cache_of(tree, base).folder.iterdir())
    assert entries
    for entry in entries:
        entry.unlink()
        if kind == "fifo":
            os.mkfifo(entry)
        else:
            entry.symlink_to(victim)
    assert _lsp(["pkg/train.py"], tree, GRAPHLINT_CACHE_DIR=str(base)) == first
    assert victim.read_text() == "precious\n"
    for entry in entries:  # replaced by plain entries, never written through
        assert not entry.is_symlink() and entry.is_file()


def test_a_symlinked_cache_folder_is_not_used(tmp_path: Path) -> None:
    tree = tmp_path / "repo"
    _package(tree, "def helper(x):\n    return x.item()\n")
    base = tmp_path / "c"
    outside = tmp_path / "outside"
    outside.mkdir()
    cache = _cache_of(tree, base)
    base.mkdir()
    cache.project.symlink_to(outside)
    code, found = _lsp(["pkg/train.py"], tree, GRAPHLINT_CACHE_DIR=str(base))
    assert code == 1 and ("helper.py", "GL101") in _codes(found)
    assert list(outside.iterdir()) == []


def test_cache_round_trip_validates_types(tmp_path: Path) -> None:
    cache = Cache(tmp_path / "c")
    key = Cache.key(b"x")
    cache.put(key, ModuleSummary("m", "m.py"))
    assert isinstance(cache.get(key, ModuleSummary), ModuleSummary)
    assert cache.get(Cache.key(b"other"), ModuleSummary) is None
    (cache.folder / key).write_bytes(b'{"format": 2, "key": "' + key.encode() + b'"}')
    assert cache.get(key, ModuleSummary) is None


# -- workers die with the run, and keep none of its stdio -----------------------------
def _slow_tree(root: Path, files: int = 400) -> Path:
    """Files whose analysis takes a while: regions with a long chain each (400 take
    about 12 s on 2 cores; the tests stop the run as soon as its workers are up)."""
    root.mkdir()
    chain = " + ".join(["x"] * 900)
    for number in range(files):
        (root / f"m{number}.py").write_text(
            "import torch\nx = torch.ones(3, device='cuda')\n"
            "g = torch.cuda.CUDAGraph()\n"
            f"with torch.cuda.graph(g):\n    y = {chain}\n    z = y.item()\n"
        )
    return root


def _workers_of(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline and int(entry.name) != os.getpid():
                found.append(int(entry.name))
    return found


def _started(tree: Path, process: subprocess.Popen[bytes], count: int) -> bool:
    """Wait until the run on ``tree`` has ``count`` processes (itself and its
    workers): it has started its work. No fixed delay: a busy machine takes longer.
    False if it ended first."""
    deadline = time.monotonic() + 120  # an upper bound, not an expectation
    while time.monotonic() < deadline and process.poll() is None:
        if len(_workers_of(str(tree))) >= count:
            return True
        time.sleep(0.05)
    return False


def _read_to_eof(stream: object, seconds: float) -> bool:
    """Whether ``stream`` (a pipe) reaches end of file within ``seconds``."""
    fd = stream.fileno()  # type: ignore[attr-defined]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready and not os.read(fd, 65536):
            return True
    return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
def test_killed_run_leaves_no_workers_and_releases_stdout(
    tmp_path: Path, how: signal.Signals
) -> None:
    tree = _slow_tree(tmp_path / f"slow-{how.name}")
    with subprocess.Popen(
        [*GRAPHLINT, "check", "--jobs", "2", str(tree)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as process:
        assert _started(tree, process, 3), "the run must still be going"
        process.send_signal(how)
        process.wait(timeout=10)
        assert _read_to_eof(process.stdout, 10), "a worker kept our stdout open"
        assert _read_to_eof(process.stderr, 10), "a worker kept our stderr open"
    deadline = time.monotonic() + 10
    while _workers_of(str(tree)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _workers_of(str(tree)) == []


def _default_interrupt() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_ctrl_c_exits_130_with_one_line(tmp_path: Path) -> None:
    tree = _slow_tree(tmp_path / "slow-int")
    with subprocess.Popen(
        [*GRAPHLINT, "check", "--jobs", "2", str(tree)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group, as a terminal's job
        # and Ctrl-C's default action, as a terminal's job has it: a test run started
        # in the background (``pytest &`` in a script) ignores SIGINT, and so
        # would the run
        preexec_fn=_default_interrupt,
    ) as process:
        assert _started(tree, process, 3), "the run must still be going"
        os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C sends: the whole group
        out, err = process.communicate(timeout=30)
    assert process.returncode == 130, err[-600:]
    assert err.decode().strip() == "graphlint: interrupted"
    assert out == b""
    assert _workers_of(str(tree)) == []


CRASH = """
import ctypes, faulthandler, os, sys
from pathlib import Path
faulthandler.enable(file=os.fdopen(os.dup(2), "w"))  # as pytest does
from graphlint import runner
from graphlint.settings import Settings
def crash(job, settings):
    ctypes.string_at(0)
runner.check_file = crash
(result,) = runner.check_files([Path(sys.argv[1])], Settings(), jobs=1)
print(*(d.message for d in result.diagnostics))
"""


def test_a_worker_crash_prints_nothing(tmp_path: Path) -> None:
    """A segfaulting worker gets GL005; its crash dump does not reach our stderr,
    not even through a copy of it that faulthandler holds."""
    (tmp_path / "boom.py").write_text("x = 1\n")
    result = subprocess.run(
        [sys.executable, "-c", CRASH, str(tmp_path / "boom.py")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "parser crashed (SIGSEGV)" in result.stdout
    assert result.stderr == ""


def _hog(job: Job, settings: Settings) -> FileResult:
    hold = bytearray(600 * 1024 * 1024)  # over the 256 MiB limit set below
    return FileResult(str(job.path), (), roots=(str(len(hold)),))


def test_memory_limit_turns_into_gl005(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "hog.py").write_text("x = 1\n")
    monkeypatch.setattr(runner, "check_file", _hog)
    settings = Settings(max_memory=256)
    (result,) = runner.check_files([tmp_path / "hog.py"], settings, jobs=1)
    (diagnostic,) = result.diagnostics
    assert diagnostic.code == "GL005" and "256 MiB memory limit" in diagnostic.message


# -- reached modules: same limits, in the workers, and reported -----------------------
def test_a_huge_reached_module_is_reported_not_parsed(tmp_path: Path) -> None:
    helper = "def helper(x):\n    return x.item()\n" + "y = 1\n" * 2_000_000  # 12 MB
    _package(tmp_path, helper)
    code, found = _lsp(["pkg/train.py"], tmp_path)
    assert code == 1 and ("helper.py", "GL003") in _codes(found)


@pytest.mark.parametrize(
    ("helper", "code"),
    [
        (b"def helper(x):\n    return x.item(\n", "GL001"),
        (b"def helper(x):\n    return '\xff'\n", "GL002"),
        (
            b"def helper(x):\n    return " + b"(" * 300 + b"x" + b")" * 300 + b"\n",
            "GL001",
        ),
    ],
)
def test_a_reached_module_that_cannot_be_summarised_is_reported(
    tmp_path: Path, helper: bytes, code: str
) -> None:
    _package(tmp_path, helper)
    result, found = _lsp(["pkg/train.py"], tmp_path)
    assert result == 1 and ("helper.py", code) in _codes(found)


def test_a_reached_fifo_does_not_hang(tmp_path: Path) -> None:
    pkg = _package(tmp_path, "")
    (pkg / "helper.py").unlink()
    os.mkfifo(pkg / "helper.py")
    result, found = _lsp(["pkg/train.py"], tmp_path)
    assert result == 1 and ("helper.py", "GL004") in _codes(found)


# -- configuration cannot switch limits off -------------------------------------------
@pytest.mark.parametrize(
    "line",
    [
        "timeout = nan",
        "timeout = inf",
        "timeout = 1e300",
        "timeout = 0",
        "timeout = 601",
        "max-file-size = 0.5",
        "max-file-size = inf",
        "max-file-size = nan",
        "max-file-size = 1e300",
        "max-file-size = 17000000",
        "max-memory = 100000",
        "max-memory = 10",
        "max-memory = true",
        'target-version = "2.7"',
        'target-version = "3.99"',
        "target-version = 3.12",
    ],
)
def test_limits_cannot_be_switched_off(tmp_path: Path, line: str) -> None:
    (tmp_path / "pyproject.toml").write_text(f"[tool.graphlint]\n{line}\n")
    (tmp_path / "a.py").write_text("x = 1\n")
    code, out, err = run("check", "a.py", cwd=tmp_path)
    assert code == 2 and out == ""
    assert err.startswith("graphlint: error: ") and err.count("\n") == 1


def test_a_repository_lowers_limits_and_asks_in_vain_to_raise_them(
    tmp_path: Path,
) -> None:
    """Values up to the ceilings are valid; a repository's raise is refused with a
    warning, its lowering taken (tests/test_config_limits.py has the details)."""
    (tmp_path / "pyproject.toml").write_text(
        "[tool.graphlint]\ntimeout = 600\nmax-file-size = 16777216\nmax-memory = 512\n"
    )
    (tmp_path / "a.py").write_text("x = 1\n")
    code, _, err = run("check", "a.py", cwd=tmp_path)
    assert code == 0
    assert "timeout" in err and "max-file-size" in err and "max-memory" not in err


def test_malformed_pyproject_that_mentions_graphlint_is_an_error(
    tmp_path: Path,
) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.graphlint]\nselect = [\n")
    (tmp_path / "a.py").write_text("x = 1\n")
    code, _, err = run("check", "a.py", cwd=tmp_path)
    assert code == 2 and "not valid TOML" in err


@pytest.mark.parametrize("kind", ["deep", "fifo", "zero", "binary", "huge"])
def test_a_broken_pyproject_above_the_target_is_skipped(
    tmp_path: Path, kind: str
) -> None:
    """Someone else's broken pyproject.toml above the target: one that does not
    mention graphlint is not even parsed; one that cannot be read (without hanging
    on a FIFO or reading /dev/zero) is skipped with one warning; the run goes on."""
    outer = tmp_path / "pyproject.toml"
    if kind == "deep":
        outer.write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    elif kind == "fifo":
        os.mkfifo(outer)
    elif kind == "zero":
        outer.symlink_to("/dev/zero")
    elif kind == "binary":
        outer.write_bytes(b"\xff\xfe\x00")
    else:  # what makes tomllib quadratic, and more than the config size limit
        outer.write_text("[" + ".".join(["a"] * 100_000) + "]\n")
    inner = tmp_path / "project"
    inner.mkdir()
    (inner / "bad.py").write_text(
        "import torch\nx = torch.ones(1, device='cuda')\ng = torch.cuda.CUDAGraph()\n"
        "with torch.cuda.graph(g):\n    x.item()\n"
    )
    result = graphlint("check", "bad.py", cwd=inner, timeout=60)
    assert result.returncode == 1, result.stderr
    assert "GL101" in result.stdout
    if kind in ("deep", "binary"):
        assert result.stderr == ""
    else:
        assert result.stderr.startswith("graphlint: warning: skipping ")
        assert result.stderr.count("\n") == 1


# -- syntax newer than the running interpreter ----------------------------------------
NEWER = {
    (3, 11): ("3.12", "def first[T](items: list[T]) -> T:\n    return items[0]\n"),
    (3, 12): ("3.13", "def f[T = int](x: T) -> T:\n    return x\n"),
    (3, 13): ("3.14", "try:\n    pass\nexcept ValueError, TypeError:\n    pass\n"),
}


@pytest.mark.skipif(sys.version_info[:2] not in NEWER, reason="no newer syntax known")
def test_syntax_of_a_newer_target_version_is_not_broken(tmp_path: Path) -> None:
    version, source = NEWER[(sys.version_info.major, sys.version_info.minor)]
    (tmp_path / "new.py").write_text(source)
    assert run("check", "new.py", cwd=tmp_path)[0] == 1  # GL001 for this Python
    code, out, err = run("check", "--target-version", version, "new.py", cwd=tmp_path)
    assert (code, err) == (0, ""), out
    (tmp_path / "pyproject.toml").write_text(
        f'[tool.graphlint]\ntarget-version = "{version}"\n'
    )
    assert run("check", "new.py", cwd=tmp_path)[0] == 0


def test_syntax_newer_than_an_older_target_is_reported(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("match 1:\n    case 1:\n        pass\n")
    assert run("check", "m.py", cwd=tmp_path)[0] == 0
    code, out, _ = run("check", "--target-version", "3.9", "m.py", cwd=tmp_path)
    assert code == 1 and "GL001" in out and "for Python 3.9" in out


def test_error_messages_escape_what_the_tree_named(tmp_path: Path) -> None:
    code, out, err = run("check", "no\x1b]0;pwned\x07such\n.py", cwd=tmp_path)
    assert code == 2 and out == ""
    assert "\x1b" not in err and err.count("\n") == 1
    assert "no\\x1b]0;pwned\\x07such\\n.py" in err


def test_a_chain_beyond_the_analysis_is_gl005_at_once(tmp_path: Path) -> None:
    """LibCST needs 20-45 s for a 3,000-term chain that CPython parses in 10 ms."""
    chain = " + ".join(["x.item()"] * 3000)
    (tmp_path / "chain.py").write_text(
        f"import torch\ng = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n"
        f"    y = {chain}\n"
    )
    code, out, _ = run("check", "chain.py", cwd=tmp_path)
    assert code == 1 and "chain.py:4:1: GL005" in out
    assert "nested more than 1000 levels deep (line 4)" in out


def test_warnings_as_errors_do_not_change_the_verdict(tmp_path: Path) -> None:
    """``-W error`` (or pytest's filterwarnings) must not turn a SyntaxWarning into
    GL001 and hide the file's hazards."""
    (tmp_path / "w.py").write_text(
        "import torch\nx = torch.ones(1, device='cuda')\ng = torch.cuda.CUDAGraph()\n"
        "with torch.cuda.graph(g):\n    y = x.sum().item()\n    p = '\\d'\n"
    )
    result = graphlint(
        "check",
        "--select",
        "GL0,GL1",
        "w.py",
        cwd=tmp_path,
        env={**os.environ, "PYTHONWARNINGS": "error"},
    )
    assert result.returncode == 1, result.stderr
    assert "GL101" in result.stdout and "GL001" not in result.stdout


# -- what the main process does stays bounded, and reached files are reported ----------
def test_name_lookups_that_fan_out_stay_cheap(tmp_path: Path) -> None:
    """Tuples of tuples of one function: 60**3 paths to it, one function reached."""
    levels = [f"a{i} = ({', '.join([f'a{i - 1}'] * 60)},)" for i in range(1, 4)]
    helper = "\n".join(
        ["def f(x):", "    return x.item()", "a0 = f", *levels, "def helper(x):"]
    )
    _package(tmp_path, helper + "\n    for b in a3:\n        b(x)\n")
    code, found = _lsp(["pkg/train.py"], tmp_path)
    assert code == 1 and ("helper.py", "GL101") in _codes(found)


def test_dataclass_fields_that_fan_out_stay_cheap(tmp_path: Path) -> None:
    """Boxes of boxes, each field holding the box below, read 40 fields deep from a
    parameter annotated with the class (in preview: every construction in the
    project): each field of each construction is resolved once, and the function
    at the bottom is reached."""
    levels = [f"b{i} = Box(b{i - 1}, b{i - 1})" for i in range(1, 40)]
    helper = "\n".join(
        [
            "from dataclasses import dataclass",
            "@dataclass",
            "class Box:",
            "    a: object = None",
            "    b: object = None",
            "def f(x):",
            "    return x.item()",
            "b0 = Box(f, f)",
            *levels,
            "def go(x, box: Box):",
            "    box" + ".a.b" * 20 + "(x)",
            "def helper(x):",
            "    go(x, b39)",
        ]
    )
    _package(tmp_path, helper + "\n")
    code, found = _lsp(["--preview", "pkg/train.py"], tmp_path)
    assert code == 1 and ("helper.py", "GL101") in _codes(found)


def test_compile_wrappers_that_fan_out_stay_cheap(tmp_path: Path) -> None:
    """Two helpers with hundreds of returns that call each other, a name rebound
    hundreds of times to their calls, hundreds of calls of it: whether a call
    compiles with CUDA graphs has a budget per file, and the real region is still
    found."""
    lines = ["import torch", "def h(a):"]
    lines += [f"    if a == {i}:\n        return g" for i in range(300)]
    lines += ["    return g", "def g(a):"]
    lines += [f"    if a == {i}:\n        return h(a)(a)" for i in range(300)]
    lines += ["    return h", *["x = h(x)"] * 300]
    lines += ["@torch.compile(mode='reduce-overhead')", "def f(t: torch.Tensor):"]
    lines += ["    return t.sum().item()", *["y = x(f)"] * 300]
    (tmp_path / "fan.py").write_text("\n".join(lines) + "\n")
    code, found = _lsp(["fan.py"], tmp_path)
    assert code == 1 and _codes(found) == {("fan.py", "GL101")}


def test_a_resolution_over_budget_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from graphlint.project import resolve  # noqa: PLC0415

    monkeypatch.setattr(resolve, "BUDGET", 0)
    _package(tmp_path, "def helper(x):\n    return x.item()\n")
    code, out, _ = run("check", "pkg/train.py", cwd=tmp_path)
    assert code == 1
    assert (
        "pkg/train.py:7:5: GL005 call of `helper` not followed: resolving it took "
        "over 0 steps, so the project code it may run was not checked; the rest of "
        "the file was checked"
    ) in out


@pytest.mark.parametrize("form", ["text", "lsp"])
def test_link_loops_in_the_tree_and_among_reached_modules(
    tmp_path: Path, form: str
) -> None:
    pkg = _package(tmp_path, "")
    (pkg / "helper.py").unlink()
    (pkg / "helper.py").symlink_to("helper.py")
    (tmp_path / "loop.py").symlink_to("loop.py")
    for target in ("pkg/train.py", "."):
        done = graphlint("check", "--format", form, target, cwd=tmp_path)
        assert done.returncode == 1, done.stderr
        assert "GL004" in done.stdout and "symbolic links" in done.stdout


def test_a_reached_file_too_deep_to_analyse_is_reported(tmp_path: Path) -> None:
    deep = "z = a" + "[0]" * 1600
    _package(tmp_path, f"def helper(x):\n    {deep}\n    return x.item()\n")
    code, found = _lsp(["pkg/train.py"], tmp_path)
    assert code == 1 and ("helper.py", "GL005") in _codes(found)


def test_the_cache_never_changes_the_findings(tmp_path: Path) -> None:
    """Cached and uncached runs agree: after a module moves into a package's
    ``__init__.py`` (same name, other package) and with a summary too deep to store."""
    pkg = _package(tmp_path, "def helper(x):\n    return x.item()\n")
    (tmp_path / "pkg.py").write_text("")  # shadowed by the package: not a source
    deep = "z = a" + "[0]" * 1000
    (pkg / "helper.py").write_text(f"def helper(x):\n    {deep}\n    return x.item()\n")
    for _ in range(2):
        assert _lsp(["pkg/train.py"], tmp_path) == _lsp(
            ["--no-cache", "pkg/train.py"], tmp_path
        )
    (pkg / "inner.py").write_text("def helper(x):\n    return x.item()\n")
    (pkg / "helper.py").write_text("from .inner import helper\n")
    cached, uncached = (
        _lsp([*flags, "pkg/train.py"], tmp_path) for flags in ([], ["--no-cache"])
    )
    assert cached == uncached and ("inner.py", "GL101") in _codes(cached[1])


def test_python_m_graphlint_does_not_import_the_checked_tree(tmp_path: Path) -> None:
    """``python -m graphlint`` run in the checked tree: the tree's modules do not
    stand in for the ones graphlint imports (``-m`` puts the folder on the path)."""
    marker = tmp_path / "ran"
    for name in ("msgspec", "libcst", "typer", "pathspec"):
        (tmp_path / f"{name}.py").write_text(
            f"open({str(marker)!r}, 'w').write({name!r})\nraise SystemExit(7)\n"
        )
    (tmp_path / "clean.py").write_text("x = 1\n")
    done = subprocess.run(
        [sys.executable, "-m", "graphlint", "check", "--no-cache", "clean.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONSAFEPATH": ""},
    )
    assert not marker.exists(), marker.read_text()
    assert done.returncode == 0, done.stderr


def test_a_deep_attribute_chain_read_under_capture_stays_cheap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A region reading ``x.a.a.a...`` hundreds deep (a fuzzer's mutant took 15 s):
    every location the read lies in is indexed by its loose form, each taken from
    the read's own, not made again for each: the work grows with the square of the
    depth (each enclosing location is read too), not its cube."""
    from graphlint.facts import state  # noqa: PLC0415 - the function counted

    made = 0
    loose = state.loose

    def counted(location: object) -> object:
        nonlocal made
        made += 1
        return loose(location)

    monkeypatch.setattr(state, "loose", counted)
    depth = 300
    source = (
        "import torch\n"
        "x = torch.zeros(8, device='cuda')\n"
        "g = torch.cuda.CUDAGraph()\n"
        "with torch.cuda.graph(g):\n"
        f"    y = x{'.a' * depth} * 2\n"
    )
    lint(source)
    assert 0 < made < 3 * depth * depth  # was 13.8 million at this depth
