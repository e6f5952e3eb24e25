"""The pre-commit hook on a callee-only commit, timed on a copy of Megatron-LM.

    python bench/precommit.py --megatron ~/rw-trees/megatron-lm

It commits the tree with graphlint's hook (installed from a snapshot of this working
tree, as tests/test_precommit.py does), then stages a change to one model file only:
a host sync added to ``moe_utils.permute``, which a capture region in a test file
reaches. It times ``pre-commit run`` twice, with graphlint's cache empty and after
the first (a second such commit), and says whether the hook blocked the commit.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.test_precommit import git, snapshot_of_this_repo

MODEL = Path("megatron/core/transformer/moe/moe_utils.py")
HAZARD = "    if tokens.isnan().any():  # edit {n}\n        print(tokens.abs().max())\n"


def with_hazard(text: str, n: int) -> str:
    """``permute`` with a branch on a device tensor after its docstring."""
    lines = text.splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.startswith("def permute("))
    quotes = [i for i in range(start, len(lines)) if '"""' in lines[i]]
    end = quotes[1] if lines[quotes[0]].count('"""') == 1 else quotes[0]
    return "".join([*lines[: end + 1], HAZARD.format(n=n), *lines[end + 1 :]])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megatron", type=Path, required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch_name:
        scratch = Path(scratch_name)
        rev = snapshot_of_this_repo(scratch / "graphlint")
        user = scratch / "megatron"
        shutil.copytree(args.megatron, user, symlinks=True)
        git(user, "init", "-q")
        (user / ".pre-commit-config.yaml").write_text(
            f"repos:\n  - repo: {scratch / 'graphlint'}\n    rev: {rev}\n"
            "    hooks:\n      - id: graphlint\n"
        )
        env = {
            **os.environ,
            "PRE_COMMIT_HOME": str(scratch / "pre-commit"),
            "GRAPHLINT_CACHE_DIR": str(scratch / "cache"),
        }
        identity = ["-c", "user.name=bench", "-c", "user.email=bench@example.com"]
        git(user, "add", "-A")
        git(user, *identity, "commit", "-qm", "tree")
        pre_commit = [sys.executable, "-m", "pre_commit"]
        subprocess.run(
            [*pre_commit, "install-hooks"],
            cwd=user,
            env=env,
            check=True,
            capture_output=True,
        )
        text = (user / MODEL).read_text()
        print("| callee-only commit | pre-commit run | blocked |")
        print("|---|---|---|")
        for n, label in enumerate(
            ["graphlint's cache empty", "cache warm (next commit)"]
        ):
            (user / MODEL).write_text(with_hazard(text, n))
            git(user, "add", str(MODEL))
            start = time.perf_counter()
            done = subprocess.run(
                [*pre_commit, "run"], cwd=user, env=env, capture_output=True, text=True
            )
            took = time.perf_counter() - start
            blocked = done.returncode == 1 and f"{MODEL}:" in done.stdout
            print(
                f"| {label} | {took:.2f} s | {'yes' if blocked else 'NO'} |", flush=True
            )
            git(user, *identity, "commit", "-qm", f"edit {n}", "--no-verify")


if __name__ == "__main__":
    main()
