"""The pre-commit hook works for another repository, with the real pre-commit."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

BAD = (
    "import torch\n\nx = torch.randn(4, device='cuda')\ng = torch.cuda.CUDAGraph()\n"
    "with torch.cuda.stream(torch.cuda.Stream()):\n    x.sum()\n"
    "with torch.cuda.graph(g):\n    y = x.sum().item()\n"
)


def git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=False
    )


def snapshot_of_this_repo(dest: Path) -> str:
    """Commit the working tree (tracked and new files) to a scratch repo: the hook
    under test is the code being tested, not the last commit."""
    listed = git(ROOT, "ls-files", "-co", "--exclude-standard").stdout.splitlines()
    for rel in listed:
        source = ROOT / rel
        if source.is_file():
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    git(dest, "init", "-q")
    git(dest, "add", "-A")
    git(dest, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "snapshot")
    return git(dest, "rev-parse", "HEAD").stdout.strip()


@pytest.mark.slow
def test_pre_commit_hook(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    pre_commit = [sys.executable, "-m", "pre_commit"]
    hooks_repo = tmp_path / "graphlint"
    rev = snapshot_of_this_repo(hooks_repo)
    user = tmp_path / "user"
    user.mkdir()
    git(user, "init", "-q")
    (user / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hooks_repo}\n    rev: {rev}\n    hooks:\n      - id: graphlint\n"
    )
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache")}

    def commit(message: str) -> subprocess.CompletedProcess[str]:
        git(user, "add", "-A")
        return subprocess.run(
            [*pre_commit, "run"],
            cwd=user,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )

    # a commit with no Python files: the hook is skipped, not failed
    (user / "README.md").write_text("hello\n")
    result = commit("docs")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no files to check" in result.stdout

    # a capture hazard fails the hook and names the line
    (user / "train.py").write_text(BAD)
    result = commit("bad")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "train.py:8:9: GL101" in result.stdout

    # fixed (suppressed) code passes
    (user / "train.py").write_text(
        BAD.replace(".item()", ".item()  # graphlint: ignore")
    )
    result = commit("fixed")
    assert result.returncode == 0, result.stdout + result.stderr

    # a commit that changes only a model file that a region elsewhere captures: the
    # hook sees the region (issue #15's first report: this commit used to pass)
    (user / "app").mkdir()
    (user / "app" / "__init__.py").write_text("")
    (user / "app" / "layers.py").write_text(LAYERS)
    (user / "app" / "train.py").write_text(TRAIN)
    assert commit("model").returncode == 0
    git(user, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "model")
    (user / "app" / "layers.py").write_text(
        LAYERS.replace(
            "        return self.proj(x)",
            "        if x.isnan().any():\n            print(x.abs().max().item())\n"
            "        return self.proj(x)",
        )
    )
    result = commit("callee only")
    assert git(user, "diff", "--cached", "--name-only").stdout == "app/layers.py\n"
    assert result.returncode == 1, result.stdout + result.stderr
    assert "app/layers.py:10:12: GL201" in result.stdout
    assert "region at app/train.py:" in result.stdout


LAYERS = """\
import torch


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x)
"""

TRAIN = """\
import torch

from app.layers import Block

model = Block().cuda()
x = torch.randn(4, 8, device="cuda")
s = torch.cuda.Stream()
with torch.cuda.stream(s):
    for _ in range(3):
        model(x)
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    y = model(x)
"""


def test_the_readme_hook_block_names_this_release() -> None:
    """The version is written once (graphlint.__version__, which the package metadata
    reads); the README's hook block names the tag of that release."""
    from graphlint import __version__  # noqa: PLC0415

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"rev: v{__version__}  # a release tag" in readme
    assert 'dynamic = ["version"]' in (ROOT / "pyproject.toml").read_text()
