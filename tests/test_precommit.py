"""The pre-commit hook works for another repository, with the real pre-commit."""

from __future__ import annotations

import json
import os
import re
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


def readme_blocks() -> list[str]:
    """The YAML blocks of the README's pre-commit section, as a user copies them."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## pre-commit\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```yaml\n(.*?)```", section, re.S)


def test_the_readme_pins_a_commit_or_a_local_hook() -> None:
    """A release tag does not travel with the repository as it is published: the
    README pins a commit (a full hash) or runs graphlint installed locally."""
    pinned, local = readme_blocks()
    assert re.search(r"rev: [0-9a-f]{40}\b", pinned)
    assert "id: graphlint" in pinned
    assert "repo: local" in local and "entry: graphlint check --force-exclude" in local


@pytest.mark.slow
@pytest.mark.parametrize("block", [0, 1], ids=["pinned commit", "local hook"])
def test_pre_commit_hook(tmp_path: Path, block: int) -> None:
    """The README's block, with its placeholders filled, as the user's config."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    pre_commit = [sys.executable, "-m", "pre_commit"]
    hooks_repo = tmp_path / "graphlint"
    rev = snapshot_of_this_repo(hooks_repo)
    user = tmp_path / "user"
    user.mkdir()
    git(user, "init", "-q")
    config = readme_blocks()[block]
    config = re.sub(r"repo: https://\S+", f"repo: {hooks_repo}", config)
    config = re.sub(r"rev: [0-9a-f]{40}", f"rev: {rev}", config)
    (user / ".pre-commit-config.yaml").write_text(config)
    # the local hook runs the graphlint installed with these tests
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache"), "PATH": path}

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

    # a notebook is checked too, and named by its cell
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "source": BAD}
    notebook = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (user / "explore.ipynb").write_text(json.dumps(notebook))
    result = commit("notebook")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "explore.ipynb:cell 1:8:9: GL101" in result.stdout
    (user / "explore.ipynb").unlink()

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


def test_the_version_is_written_once() -> None:
    """graphlint.__version__, which the package metadata reads."""
    assert 'dynamic = ["version"]' in (ROOT / "pyproject.toml").read_text()
