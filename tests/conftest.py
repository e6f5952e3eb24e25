"""Shared test helpers: fixture discovery, expectation markers, the gpu marker."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from graphlint.config import LIMIT_ENV
from graphlint.diagnostics import Diagnostic
from graphlint.engine import lint_source
from graphlint.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
RULE_DOCS = ROOT / "rules"
EXPECT = re.compile(r"#\s*expect(?P<offset>[+-]\d+)?:\s*(?P<codes>(?:GL\d{3}[\s,]*)+)")


def expectations(source: str) -> set[tuple[int, str]]:
    """``(line, code)`` pairs from ``# expect: GL101`` / ``# expect+1: GL101`` comments."""
    found = set()
    for number, line in enumerate(source.splitlines(), 1):
        match = EXPECT.search(line)
        if match:
            offset = int(match.group("offset") or 0)
            for code in re.findall(r"GL\d{3}", match.group("codes")):
                found.add((number + offset, code))
    return found


GRAPHLINT = [sys.executable, "-m", "graphlint"]
WARMED = """\
import torch
g = torch.cuda.CUDAGraph()
x = torch.zeros(1, device="cuda")
with torch.cuda.stream(torch.cuda.Stream()):
    for _ in range(3):
        x.add_(1)
with torch.cuda.graph(g):
"""  # a warmed-up capture region, its body to follow (indented by four)


def graphlint(
    *args: str, cwd: Path, timeout: float = 120, **popen: Any
) -> subprocess.CompletedProcess[str]:
    """``graphlint ARGS`` in a fresh process; a hang fails the test at ``timeout``,
    and a traceback fails it at once."""
    done = subprocess.run(
        [*GRAPHLINT, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        errors="backslashreplace",
        timeout=timeout,
        check=False,
        **popen,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done


@pytest.fixture(autouse=True)
def _private_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tests never write to the user's real cache folder."""
    monkeypatch.setenv("GRAPHLINT_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture(autouse=True)
def _private_config(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tests never read the user's own configuration, or limits set in the
    environment of whoever runs them."""
    monkeypatch.setenv("GRAPHLINT_CONFIG_DIR", str(tmp_path_factory.mktemp("config")))
    for variable in LIMIT_ENV.values():
        monkeypatch.delenv(variable, raising=False)


def lint(source: str, *codes: str) -> list[Diagnostic]:
    """Lint a dedented snippet with only ``codes`` enabled (all when none given)."""
    enabled = frozenset(codes) if codes else Settings().enabled
    return lint_source(textwrap.dedent(source), settings=Settings(enabled=enabled))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-snapshots",
        action="store_true",
        help="rewrite tests/snapshots/ from the current output (tests/test_snapshots.py)",
    )


def pytest_collection_modifyitems(
    config: pytest.Config, items: list[pytest.Item]
) -> None:
    try:
        import torch  # noqa: PLC0415 - optional and slow to import

        has_cuda = bool(torch.cuda.is_available())
    except Exception:
        has_cuda = False
    if has_cuda:
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
