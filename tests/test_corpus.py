"""The shared labelled corpus, scored as held-back code is scored (skipped without it)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT

CORPUS = ROOT.parent / "shared" / "corpus"


@pytest.mark.skipif(not (CORPUS / "score.py").is_file(), reason="no ../shared/corpus")
def test_corpus_precision() -> None:
    cmd = f"{sys.executable} -m graphlint check --format lsp"
    result = subprocess.run(
        [
            sys.executable,
            str(CORPUS / "score.py"),
            str(CORPUS / "cases"),
            "--cmd",
            cmd,
            "--min-precision",
            "0.95",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
