"""Shared test helpers: fixture discovery, expectation markers, the gpu marker."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from graphlint.config import LIMIT_ENV
from graphlint.diagnostics import Diagnostic
from graphlint.engine import lint_source
from graphlint.settings import Settings
from tests.confirming import ConfirmPool, cost, environment, shard

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


@pytest.fixture
def libcst_parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts handed to LibCST's ``parse_module`` from here on, in order."""
    import libcst as cst  # noqa: PLC0415 - only the tests that count parses

    texts: list[str] = []
    real = cst.parse_module

    def recording(text: str) -> cst.Module:
        texts.append(text)
        return real(text)

    monkeypatch.setattr(cst, "parse_module", recording)
    return texts


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
    parser.addoption(
        "--gpu-jobs",
        type=int,
        default=min(16, os.cpu_count() or 1),
        metavar="N",
        help="GPU tests: files that graphlint confirm runs at once on the one GPU "
        "(default: the CPUs, at most 16)",
    )
    parser.addoption(
        "--gpu-json",
        type=Path,
        metavar="FILE",
        help="GPU tests: write what graphlint confirm said of each file here, as "
        "bench/confirm_table.py --json does (read it with --from)",
    )
    parser.addoption(
        "--gpu-shard",
        metavar="K/N",
        help="GPU tests: run the Kth of N parts only, to split the suite over "
        "several runs (the parts are about as long)",
    )


def pytest_collection_modifyitems(
    config: pytest.Config, items: list[pytest.Item]
) -> None:
    spec = config.getoption("--gpu-shard")
    if spec:
        gpu = [item for item in items if "gpu" in item.keywords]
        costs = [
            sum(cost(v) for v in item.callspec.params.values() if isinstance(v, Path))
            if hasattr(item, "callspec")
            else 1
            for item in gpu
        ]
        kept = {id(gpu[i]) for i in shard(costs, spec)}
        left = [i for i in gpu if id(i) not in kept]
        if left:
            config.hook.pytest_deselected(items=left)
            items[:] = [i for i in items if "gpu" not in i.keywords or id(i) in kept]
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


POOL = pytest.StashKey[ConfirmPool]()


@pytest.fixture(scope="session")
def confirmed(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ConfirmPool]:
    """``graphlint confirm`` on the files the selected GPU tests take as a
    parameter (a ``Path``), ``--gpu-jobs`` at a time: ``confirmed(path)``."""
    env = environment(tmp_path_factory.mktemp("cache"), tmp_path_factory.mktemp("c"))
    pool = ConfirmPool(env, request.config.getoption("--gpu-jobs"))
    request.config.stash[POOL] = pool
    pool.start(
        value
        for item in request.session.items
        if "confirmed" in getattr(item, "fixturenames", ())
        and hasattr(item, "callspec")
        for value in item.callspec.params.values()
        if isinstance(value, Path)
    )
    try:
        yield pool
    finally:
        pool.close()


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """The files that graphlint confirm took longest over, as --durations does."""
    pool = config.stash.get(POOL, None)
    if pool is None:
        return
    saved = config.getoption("--gpu-json")
    if saved is not None:
        saved.write_text(json.dumps(pool.table(), indent=1), encoding="utf-8")
    slowest = pool.slowest(10)
    if slowest:
        terminalreporter.section("slowest graphlint confirm files")
        for done in slowest:
            shown = (
                done.path.relative_to(ROOT)
                if done.path.is_relative_to(ROOT)
                else done.path
            )
            terminalreporter.write_line(f"{done.seconds:7.1f}s {shown}")
