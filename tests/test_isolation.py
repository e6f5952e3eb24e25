"""No file of a checked repository is ever imported by a graphlint process.

The tree is planted, as it was when the hole was found: a module for every name of
the standard library, graphlint and its dependencies, each leaving a mark when it
runs. ``graphlint check`` runs there with each start method its workers have, and the
language server (the ``graphlint`` command, started in the folder as an editor does)
opens a file there and checks it. Nothing may leave a mark, and the checks must work.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.lsp_client import Client

GRAPHLINT = str(Path(sys.executable).with_name("graphlint"))
TRAIN = """\
import torch
g = torch.cuda.CUDAGraph()
x = torch.zeros(2, device="cuda")
with torch.cuda.graph(g):
    y = x.sum().item()
"""
# what graphlint, its dependencies and their dependencies import by these names
THIRD_PARTY = [
    "graphlint", "libcst", "typer", "click", "msgspec", "platformdirs", "pathspec",
    "re2", "pygls", "lsprotocol", "cattrs", "attrs", "attr", "rich", "shellingham",
    "typing_extensions", "yaml", "exceptiongroup", "tomli", "_distutils_hack",
    "sitecustomize", "usercustomize",
]  # fmt: skip


def _planted(folder: Path) -> Path:
    """``folder`` with a train.py to check and a marking module for every name."""
    names = {*sys.stdlib_module_names, *THIRD_PARTY} - {"__main__"}
    for name in names:
        (folder / f"{name}.py").write_text(
            f"open({str(folder / ('RAN-' + name))!r}, 'w').close()\n"
        )
    for name in ("multiprocessing", "json", "graphlint", "encodings"):
        (folder / name).mkdir(exist_ok=True)
        (folder / name / "__init__.py").write_text(
            f"open({str(folder / ('RAN-pkg-' + name))!r}, 'w').close()\n"
        )
    (folder / "train.py").write_text(TRAIN)
    return folder


def _marks(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("RAN-"))


@pytest.fixture
def planted(tmp_path: Path) -> Path:
    return _planted(tmp_path)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHLINT_")}
    env.pop("PYTHONSAFEPATH", None)  # the hole showed without it
    return {**env, **extra}


METHODS = ["spawn", *(["fork"] if sys.platform.startswith("linux") else [])]


@pytest.mark.parametrize("method", METHODS)
def test_check_imports_nothing_from_the_tree(planted: Path, method: str) -> None:
    done = subprocess.run(
        [GRAPHLINT, "check", "--no-cache", "--jobs", "2", "."],
        cwd=planted,
        env=_env(GRAPHLINT_WORKER_START=method),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert "GL101" in done.stdout, done.stdout + done.stderr
    assert _marks(planted) == []


# ``python -m`` without -P imports runpy's own needs from the working folder before
# any code of graphlint's runs: nothing graphlint can do (SECURITY.md)
SERVERS = {
    "command": [GRAPHLINT, "server"],
    **({"python -P -m": [sys.executable, "-P", "-m", "graphlint", "server"]}
       if sys.version_info >= (3, 11) else {}),
}  # fmt: skip


@pytest.mark.parametrize("started", SERVERS)
def test_the_language_server_imports_nothing_from_the_tree(
    planted: Path, started: str
) -> None:
    client = Client(planted, SERVERS[started], env=_env())
    try:
        client.initialize(planted)
        uri = client.open(planted / "train.py", TRAIN)
        assert "GL101" in {d["code"] for d in client.diagnostics(uri, version=1)}
        client.change(uri, TRAIN + "    z = x.tolist()\n", version=2)
        codes = [d["code"] for d in client.diagnostics(uri, version=2)]
        assert codes.count("GL101") == 2
        assert client.close() == 0
    finally:
        client.dispose()
    assert _marks(planted) == []


def _descendants(pid: int) -> set[int]:
    """The processes below ``pid`` (Linux's /proc)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier}
        found |= frontier
    return found


def _editors_pipes(pid: int, client: Client) -> set[str]:
    """Which of the server's standard streams (the editor's pipes) process ``pid``
    holds: an editor reads the server's output to its end, which comes when every
    holder has closed it."""
    streams = {
        f"pipe:[{os.fstat(stream.fileno()).st_ino}]": name
        for name, stream in (
            ("stdin", client.process.stdin),
            ("stdout", client.process.stdout),
            ("stderr", client.process.stderr),
        )
        if stream is not None
    }
    held = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            held.add(streams.get(os.readlink(fd), ""))
        except OSError:
            continue
    return held - {""}


def _gone(pids: set[int], within: float) -> Iterator[int]:
    """Those of ``pids`` still alive after ``within`` seconds (a guard against a
    hang: they are expected to end at once)."""
    deadline = time.monotonic() + within
    left = set(pids)
    while left and time.monotonic() < deadline:
        left = {p for p in left if Path(f"/proc/{p}").exists() and not _zombie(p)}
        time.sleep(0.05)
    yield from left


def _zombie(pid: int) -> bool:
    try:
        return ") Z " in Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
def test_the_servers_workers_end_with_it(tmp_path: Path, how: signal.Signals) -> None:
    """However the server ends, its workers end too and keep none of the editor's
    pipes open: the editor reads the end of the server's output."""
    (tmp_path / "train.py").write_text(TRAIN)
    client = Client(tmp_path, [GRAPHLINT, "server"], env=_env())
    try:
        client.initialize(tmp_path)
        client.diagnostics(client.open(tmp_path / "train.py", TRAIN), version=1)
        helpers = _descendants(client.process.pid)
        assert helpers, "the server checks in worker processes"
        holding = {p: held for p in helpers if (held := _editors_pipes(p, client))}
        assert holding == {}
        client.process.send_signal(how)
        client.process.wait(timeout=60)
        assert list(_gone(helpers, within=60)) == []
        assert client.ended(timeout=60), "a helper still holds the server's output"
    finally:
        client.dispose()
