"""How the workers end, told right: a parser that aborts on the memory limit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

GRAPHLINT = str(Path(sys.executable).with_name("graphlint"))
METHODS = ["spawn", *(["fork"] if sys.platform.startswith("linux") else [])]


def _large(path: Path) -> None:
    """Just under 1 MB of statements in a region: LibCST's parser (Rust) needs
    well over 256 MiB for it, and aborts when an allocation fails."""
    lines = ["import torch", "g = torch.cuda.CUDAGraph()", "with torch.cuda.graph(g):"]
    size, number = 0, 0
    while size < 950_000:
        line = f"    y{number} = torch.add(x, {number}) * (x + {number}) - f(x)"
        lines.append(line)
        size += len(line) + 1
        number += 1
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="needs RLIMIT_AS")
@pytest.mark.parametrize("method", METHODS)
def test_the_memory_limit_is_named_when_the_parser_aborts(
    tmp_path: Path, method: str
) -> None:
    _large(tmp_path / "big.py")
    (tmp_path / "pyproject.toml").write_text("[tool.graphlint]\nmax-memory = 256\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHLINT_")}
    done = subprocess.run(
        [GRAPHLINT, "check", "--no-cache", "big.py"],
        cwd=tmp_path,
        env={**env, "GRAPHLINT_WORKER_START": method},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert "GL005" in done.stdout, done.stdout + done.stderr
    assert "needed more than the 256 MiB memory limit" in done.stdout
    assert "crashed" not in done.stdout
    assert done.stderr == ""
